"""Lab 2's hidden checks. They run in the grader's process, against incidents the grader owns.

Each `check_<id>(lab)` seeds a fresh incident here (12 version-2 orders in
mercadofresco-pedidos-fallidos, the clock at Monday 09:00), hands the learner's
function proxies for that world (`lab.call`), and then reads its verdict from
this process's own state: the messages moto keeps (bodies, send times, receive
counts), the gateway's ledger, and the AWS calls the learner's code made, as
the checker served them. What the learner's function returns is judged as
data. An instructor can read every check here; learners never see this file.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
from decimal import Decimal

from mercadofresco import alarms, orders, queues, world
from mercadofresco.clock import MADRID, VirtualClock
from mercadofresco.course.checker import Check, Failed, ProcessDied
from mercadofresco.course.checker.boundary import RemoteError
from mercadofresco.lessons.dlq import incidents
from mercadofresco.lessons.exercises import dlq_content, dlq_properties, dlq_redrive, dlq_runbook
from mercadofresco.models import gateway, lambda_poller, queue_age

SERVICES = ("sqs",)
MESSAGES = 12  # per hidden incident: the lab's shape at a size that keeps grading fast
HIDDEN_EXAMPLES, HIDDEN_SEED = 12, 20_261_206  # worlds a property plays beyond the lesson's own, and their seed
RUNBOOK_EXAMPLES = 4  # a runbook's world runs the fixed consumer for an hour of virtual time: fewer of them
CHECKS = [
    Check(
        "inspection_deletes_nothing",
        "(a) inspect_dlq must return the messages asked for, oldest first, and delete none: after 5 s every "
        "message is back in the DLQ.",
    ),
    Check(
        "inspection_keeps_evidence",
        "(a) inspecting must keep each message's evidence: after inspect_dlq every message still has its original "
        "SentTimestamp and a receive count that only grew (no delete-and-resend).",
    ),
    Check(
        "contain_measures",
        "(a) contain must count the DLQ, measure the age of the source queue's oldest message from its "
        "SentTimestamp, and call the problem alive when that age passes 5 minutes or the DLQ grows. Measuring must "
        "not receive from the live source queue.",
    ),
    Check(
        "classify_by_content",
        '(a) classify by content: a burst of bodies with "version": 2 is poison, while a burst of valid orders is '
        "transient; the time window alone cannot tell them apart.",
    ),
    Check(
        "answers_b_c",
        "(b)/(c) what began at the start of the window: did something fail, or did something new start sending? "
        "Which fix removes the cause, and which one adapts to it?",
    ),
    Check(
        "fixed_consumer",
        "(c) the fixed consumer charges version 1 and version 2, and still refuses a version it does not know "
        "(reported in batchItemFailures).",
    ),
    Check(
        "v2_amount",
        "(c) the fixed consumer must charge what a version-2 order says: a 48.20 € order is charged 48.20 €, not "
        "0.482 or 4820.",
    ),
    Check(
        "redrive_rate_limited",
        "(d) redrive_dlq moves every message back to the source queue and deletes it from the DLQ, never more than "
        "max_per_second in any second (pace it on the virtual clock).",
    ),
    Check(
        "redrive_loses_nothing",
        "(d) a redrive moves every message, readable or not: none may disappear (deleted from the DLQ without "
        "reaching the source queue).",
    ),
    Check(
        "rate_answers",
        "(d) what would 340 orders at once on Monday morning do to what sits behind the consumer? And how long does "
        "the redrive take at the rate the lesson uses?",
    ),
    Check(
        "runbook_end_to_end",
        "(d) the runbook must deploy the fix before redriving, redrive at a limited rate, let the fixed consumer "
        "charge every order exactly once, and verify the DLQ at zero.",
    ),
    Check(
        "redrive_idempotent",
        "(d) some dead-lettered orders had been charged before: the redrive must go through an idempotent consumer "
        "(the order's key cobro:<pedido_id> reaches the gateway), so every order ends charged exactly once.",
    ),
    Check(
        "safeguard",
        "(e) which of the DLQ's metrics, above which threshold and over which period, says that the first message "
        "arrived, and when would it have fired? Which order of deployment, and which kind of change to a message's "
        "contract, keeps this incident from happening?",
    ),
]


def setup(lab):
    """What the learner's code may hold of the checker's world: the clock, a gateway client, Lambda's context."""
    lab.expose("clock", VirtualClock)
    lab.expose("gateway_client", gateway.GatewayClient)
    lab.expose("invocation", lambda_poller.Invocation)
    lab.expose("crashes", lambda_poller.CrashPlan)  # the context's crash hook (no check here plans a crash)
    lab.answer("queue_age", functools.partial(queue_age_here, lab))  # source_queue_age, read from our moto


def queue_age_here(lab, queue_url, now):
    """The model of ApproximateAgeOfOldestMessage, on the checker's moto (the kernel's clients reach no other)."""
    if type(queue_url) is not str or type(now) is not dt.datetime:
        raise TypeError("source_queue_age takes a queue URL and a datetime")
    return queue_age.age_of_oldest_message(lab.client("sqs"), queue_url, now)


@contextlib.contextmanager
def fresh(lab, seed):
    """A new clock, an empty moto, and exercise 2's incident with MESSAGES orders; the clock ends Monday 09:00."""
    lab.reset_world()
    clock = VirtualClock().start()
    try:
        config = world.WorldConfig()
        sqs = lab.client("sqs")
        pair = queues.create_queue_pair(
            sqs, world.ORDERS_QUEUE, world.ORDERS_DLQ, visibility_timeout_seconds=120, max_receive_count=4
        )
        aws = world.World(config, lab.session(), pair, "", "", {}, "", _clients={"sqs": sqs})
        incident = incidents.seed_exercise2_incident(aws, clock, seed=seed, count=MESSAGES)
        yield clock, aws, incident
    finally:
        clock.stop()


def peek_all(sqs, url):
    """Every message of a queue: MessageId -> (body, SentTimestamp, ApproximateReceiveCount), visible again in 1 s."""
    seen = {}
    while True:
        batch = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=1,
            WaitTimeSeconds=0,
            MessageSystemAttributeNames=["All"],
        ).get("Messages", [])
        if not batch or all(m["MessageId"] in seen for m in batch):
            return seen
        for m in batch:
            attributes = m["Attributes"]
            seen[m["MessageId"]] = (
                m["Body"],
                int(attributes["SentTimestamp"]),
                int(attributes["ApproximateReceiveCount"]),
            )


def bodies(sqs, url):
    return sorted(body for body, _sent, _count in peek_all(sqs, url).values())


def calls_on(lab, actions, url):
    """The learner's calls of `actions` on the queue `url`, as the checker served them."""
    return [
        call
        for call in lab.aws_calls
        if call["action"] in actions and isinstance(call["request"], dict) and call["request"].get("QueueUrl") == url
    ]


def invoke(handler, clock, bodies_by_id):
    """One invocation of a handler the learner's code built, with the checker's Lambda context."""
    context = lambda_poller.Invocation(lambda_poller.Poller(None, "", handler, clock), "grader", 1)
    records = [{"messageId": key, "body": body, "attributes": {}} for key, body in bodies_by_id.items()]
    response = handler({"Records": records}, context) or {}
    assert isinstance(response, dict), f"the handler returned a {type(response).__name__}, not a dict"
    return {str(item.get("itemIdentifier")) for item in response.get("batchItemFailures", []) if isinstance(item, dict)}


def rule_of(value):
    """An AlarmRule from the fields the learner's object carried (the package's own checks run again here)."""
    assert isinstance(value, dict) and value.get("__type__") == "AlarmRule", "safeguard_alarm is not an AlarmRule"
    fields = {key: item for key, item in value.items() if key != "__type__"}
    try:
        return alarms.AlarmRule(**fields)
    except (TypeError, ValueError) as exc:
        raise AssertionError(f"safeguard_alarm is not a valid AlarmRule ({exc})") from None


# -- (a) --------------------------------------------------------------------------------------
def check_inspection_deletes_nothing(lab):
    with fresh(lab, seed=11) as (clock, aws, _incident):
        before = bodies(aws.sqs, aws.orders.dlq_url)
        clock.advance(2)
        rows = lab.call("inspect_dlq", aws.sqs, aws.orders.dlq_url, 10)
        clock.advance(6)
        after = bodies(aws.sqs, aws.orders.dlq_url)
        deletes = calls_on(lab, ("DeleteMessage", "DeleteMessageBatch"), aws.orders.dlq_url)
    assert isinstance(rows, list) and len(rows) == 10, f"asked for 10 messages, got {rows!r:.80}"
    assert all(isinstance(row, dict) and {"sent", "receive_count", "body"} <= set(row) for row in rows), (
        "rows lack sent/receive_count/body"
    )
    returned = [row["body"] for row in rows]
    assert len(set(returned)) == 10 and set(returned) <= set(before), "the rows are not 10 messages of the DLQ"
    sent = [row["sent"] for row in rows]
    assert all(isinstance(each, dt.datetime) for each in sent), "each row's sent must be a datetime"
    assert sent == sorted(sent), "rows are not oldest first"
    assert not deletes, f"inspect_dlq called {deletes[0]['action']} on the DLQ ({len(deletes)} call(s))"
    assert after == before, f"the DLQ held {len(before)} messages before inspecting and {len(after)} after"


def check_inspection_keeps_evidence(lab):
    prove(lab, dlq_properties.inspection_keeps_the_dlq)
    with fresh(lab, seed=13) as (clock, aws, _incident):
        before = {body: (sent, count) for body, sent, count in peek_all(aws.sqs, aws.orders.dlq_url).values()}
        clock.advance(2)
        rows = lab.call("inspect_dlq", aws.sqs, aws.orders.dlq_url, 10)
        clock.advance(6)
        after = {body: (sent, count) for body, sent, count in peek_all(aws.sqs, aws.orders.dlq_url).values()}
        resent = calls_on(lab, ("SendMessage", "SendMessageBatch"), aws.orders.dlq_url)
        received = calls_on(lab, ("ReceiveMessage",), aws.orders.dlq_url)
    returned = [row.get("body") for row in rows if isinstance(row, dict)] if isinstance(rows, list) else []
    assert received and returned and all(body in before for body in returned), (
        "inspect_dlq did not return the DLQ's messages, read from the DLQ: there is no evidence to keep"
    )
    lost = [body for body in before if body not in after]
    moved_in_time = [body for body in before if body in after and after[body][0] != before[body][0]]
    reset = [body for body in before if body in after and after[body][1] <= before[body][1]]
    assert not lost, f"{len(lost)} messages gone after the inspection"
    assert not resent, f"inspect_dlq sent messages to the DLQ ({len(resent)} call(s)): delete-and-resend"
    assert not moved_in_time, f"{len(moved_in_time)} messages have a new SentTimestamp: deleted and sent again"
    assert not reset, f"{len(reset)} messages lost their receive count"


def check_contain_measures(lab):
    prove(lab, dlq_properties.contain_tells_a_live_incident)
    with fresh(lab, seed=12) as (clock, aws, _incident):
        calm = lab.call("contain", aws, clock)
        received = calls_on(lab, ("ReceiveMessage",), aws.orders.url)
        looked = aws.sqs.receive_message(
            QueueUrl=aws.orders.url, VisibilityTimeout=1, WaitTimeSeconds=0, MessageSystemAttributeNames=["All"]
        ).get("Messages", [])
        clock.advance(2)
        orders.send_order(aws.sqs, aws.orders.url, orders.Order("PED-2026-777001", Decimal("5.00")))
        clock.advance(2 * 3600)  # a source queue nobody drains: its oldest message is now 2 h old
        stuck = lab.call("contain", aws, clock)
    assert isinstance(calm, dict) and isinstance(stuck, dict), "contain must return a dict"
    assert calm.get("dlq_messages") == MESSAGES, f"dlq_messages {calm.get('dlq_messages')}, the DLQ held {MESSAGES}"
    oldest = calm.get("source_oldest_seconds")
    assert type(oldest) in (int, float) and 11 <= oldest <= 13, f"source_oldest_seconds {oldest!r}, expected 12"
    assert not received, "contain received from the live source queue: measure its age without a receive"
    assert [int(m["Attributes"]["ApproximateReceiveCount"]) for m in looked] == [1], (
        "the source queue's waiting order was received before the grader looked"
    )
    assert calm.get("still_bleeding") is False, "a calm incident was called alive"
    assert stuck.get("still_bleeding") is True, "a source queue whose oldest message is 2 h old was called calm"


def check_classify_by_content(lab):
    prove(lab, dlq_content.classify_by_what_the_messages_say)
    with fresh(lab, seed=14) as (clock, aws, _incident):
        poison = lab.call("classify_dlq", aws.sqs, aws.orders.dlq_url)
        # Another DLQ: valid version-1 orders dead-lettered by a 503 burst, Tuesday 18:12-18:41.
        burst = queues.create_queue_pair(
            aws.sqs,
            "cola-mercadofresco-rafaga",
            "mercadofresco-rafaga-fallidos",
            visibility_timeout_seconds=120,
            max_receive_count=4,
        )
        start = dt.datetime(2026, 10, 20, 18, 12, tzinfo=MADRID)
        for n in range(20):
            clock.advance_to(start + dt.timedelta(seconds=87 * n))
            body = orders.order_body(orders.Order(orders.order_id(400_000 + n), Decimal("19.90")))
            aws.sqs.send_message(QueueUrl=burst.dlq_url, MessageBody=body)
        transient = lab.call("classify_dlq", aws.sqs, burst.dlq_url)
    assert poison == "poison", f"the version-2 burst was classified {poison!r}"
    assert transient == "transient", f"a burst of valid orders (a 503 outage) was classified {transient!r}"


# -- (b), (c) -----------------------------------------------------------------------------------
def check_answers_b_c(lab):
    assert lab.value("misleading_because") == "window_is_the_deploy", "not what the window coincides with"
    assert lab.value("chosen_fix") == "deploy_consumer_v2", "not the fix that leaves the system as it should be"
    assert lab.value("other_fix") == "translate_v2_to_v1", "not the other fix that saves every order"


def check_fixed_consumer(lab):
    with fresh(lab, seed=16) as (clock, _mf, _incident):
        provider = gateway.PaymentGateway(clock)
        handler = lab.call("build_fixed_handler", gateway.GatewayClient(provider))
        failed = invoke(
            handler,
            clock,
            {
                "m0": incidents.version2_body("PED-2026-888001", "10.00"),
                "m1": orders.order_body(orders.Order("PED-2026-888002", Decimal("10.00"))),
                "m2": '{"importe": "10.00", "pedido_id": "PED-2026-888003", "version": 3}',
            },
        )
        charged = set(provider.charges_per_order())
    assert charged == {"PED-2026-888001", "PED-2026-888002"}, f"charged {sorted(charged)}"
    assert failed == {"m2"}, f"reported as failed: {sorted(failed)} (a version-3 order must be refused, the others not)"


def check_v2_amount(lab):
    with fresh(lab, seed=15) as (clock, _mf, _incident):
        provider = gateway.PaymentGateway(clock)
        handler = lab.call("build_fixed_handler", gateway.GatewayClient(provider))
        amounts = {"PED-2026-888101": "48.20", "PED-2026-888102": "7.05", "PED-2026-888103": "120.00"}
        invoke(
            handler,
            clock,
            {f"a{i}": incidents.version2_body(p, importe) for i, (p, importe) in enumerate(amounts.items())},
        )
        charged = {charge.pedido_id: charge.importe for charge in provider.ledger}
    wrong = {p: str(charged.get(p)) for p, importe in amounts.items() if charged.get(p) != Decimal(importe)}
    assert not wrong, f"charged {wrong} for version-2 orders of {amounts}"


# -- (d) -----------------------------------------------------------------------------------------
def check_redrive_rate_limited(lab):
    prove(lab, dlq_redrive.redrive_keeps_its_rate)
    rate = 5
    with fresh(lab, seed=22) as (clock, aws, incident):
        moved = lab.call("redrive_dlq", aws, clock, rate)
        arrived = peek_all(aws.sqs, aws.orders.url).values()
        left = queues.queue_counts(aws.sqs, aws.orders.dlq_url)
    ids = {p for body, _sent, _count in arrived for p in incident.pedido_ids if p in body}
    stamps = [sent for body, sent, _count in arrived if any(p in body for p in incident.pedido_ids)]
    assert moved == MESSAGES, f"redrive_dlq returned {moved!r}, the DLQ held {MESSAGES}"
    assert sum(left.values()) == 0, f"the DLQ still holds {left} after the redrive"
    assert ids == set(incident.pedido_ids), f"{MESSAGES - len(ids)} orders never reached the source queue"
    most = dlq_properties.most_in_one_second([stamp / 1000 for stamp in stamps])
    assert most <= rate, f"at max_per_second={rate}, {most} messages arrived within one second"
    span = (max(stamps) - min(stamps)) / 1000
    assert span >= MESSAGES / rate - 1 - 1e-6, f"{MESSAGES} messages at {rate}/s arrived within {span:.1f} s"


def check_redrive_loses_nothing(lab):
    prove(lab, dlq_redrive.redrive_moves_every_message)
    odd = ["not an order at all", '{"pedido_id": "PED-2026-777101", "version": 2}', '{"importe": "1.00", "version": 3}']
    with fresh(lab, seed=19) as (clock, aws, _incident):
        for body in odd:
            aws.sqs.send_message(QueueUrl=aws.orders.dlq_url, MessageBody=body)
        clock.advance(1)
        held = bodies(aws.sqs, aws.orders.dlq_url)
        clock.advance(2)
        lab.call("redrive_dlq", aws, clock, 10)
        clock.advance(31)
        source = bodies(aws.sqs, aws.orders.url)
        still = bodies(aws.sqs, aws.orders.dlq_url)
    gone = [body for body in held if body not in source and body not in still]
    assert len(held) == MESSAGES + len(odd), f"the grader's DLQ held {len(held)} messages"
    assert not gone, f"{len(gone)} message(s) disappeared, e.g. {gone[0]!r}" if gone else ""
    assert not still, f"{len(still)} message(s) were never moved out of the DLQ: a redrive moves them all"


def check_rate_answers(lab):
    assert lab.value("why_rate_limit") == "protect_dependencies", "not why the rate matters here"
    seconds = lab.value("seconds_for_340")
    assert type(seconds) in (int, float) and abs(seconds - 34) < 0.5, "340 messages at 10 per second take how long?"


def check_runbook_end_to_end(lab):
    prove(lab, dlq_runbook.runbook_acts_only_on_what_it_understood, RUNBOOK_EXAMPLES)
    with fresh(lab, seed=30) as (clock, aws, incident):
        provider = gateway.PaymentGateway(clock)
        result = lab.call("runbook", aws, clock, gateway.GatewayClient(provider))
        charges = provider.charges_per_order()
        dlq_left = sum(queues.queue_counts(aws.sqs, aws.orders.dlq_url).values())
        source_left = sum(queues.queue_counts(aws.sqs, aws.orders.url).values())
    wrong = {p: charges[p] for p in incident.pedido_ids if charges[p] != 1}
    assert dlq_left == 0, f"{dlq_left} messages back in the DLQ after the runbook"
    assert not wrong, f"{len(wrong)} orders not charged exactly once, e.g. {dict(list(wrong.items())[:3])}"
    assert source_left == 0, f"{source_left} messages left in the source queue"
    fields = {"moved", "dlq_after", "deleted", "cause", "change", "earlier_warning"}
    assert isinstance(result, dict) and fields <= set(result), f"the record lacks {sorted(fields - set(result or {}))}"
    assert result["dlq_after"] == 0 and result["deleted"] >= result["moved"] == MESSAGES, f"the record says {result}"


def check_redrive_idempotent(lab):
    with fresh(lab, seed=32) as (clock, aws, incident):
        provider = gateway.PaymentGateway(clock)
        already = incident.pedido_ids[::3]  # charged by a consumer that then failed before deleting its message
        for pedido in already:
            provider.charge(pedido, Decimal("10.00"), idempotency_key=f"cobro:{pedido}")
        lab.call("runbook", aws, clock, gateway.GatewayClient(provider))
        charges = provider.charges_per_order()
    twice = sorted(p for p in already if charges[p] != 1)
    never = sorted(p for p in incident.pedido_ids if charges[p] == 0)
    assert not twice, (
        f"{len(twice)} orders charged before the incident were charged again, e.g. {twice[0]}" if twice else ""
    )
    assert not never, f"{len(never)} orders never charged"


# -- (e) -----------------------------------------------------------------------------------------
def check_safeguard(lab):
    with fresh(lab, seed=31) as (_reloj, aws, _incident):
        arrivals = [
            dt.datetime.fromtimestamp(sent / 1000, MADRID)
            for _body, sent, _count in peek_all(aws.sqs, aws.orders.dlq_url).values()
        ]
    rule = rule_of(lab.value("safeguard_alarm"))
    one = incidents.first_alarm_at(rule, [incidents.SUNDAY_2204], incidents.SUNDAY_2204 + dt.timedelta(hours=1))
    assert one is not None, "one paid-for order alone in the DLQ never fires the alarm: the lesson's threshold is 0"
    assert not rule.breached_by(0.0), "an empty DLQ (0 messages) breaches the alarm: it would never return to OK"
    assert rule.period_seconds == 300, "SQS publishes its metrics every 5 minutes: the lesson's period is 300 s"
    fired = incidents.first_alarm_at(rule, arrivals, incidents.MONDAY_0900)
    assert fired is not None, "the alarm never fires on the incident"
    assert fired <= min(arrivals) + dt.timedelta(minutes=5), f"the alarm fires at {fired:%a %H:%M}, not by 22:09"
    assert dict(rule.dimensions).get("QueueName") == world.ORDERS_DLQ, "the alarm does not watch the DLQ"
    assert lab.value("design_safeguard") == "consumer_first_additive", "not the design rule that prevents it"


# -- the properties' bench -------------------------------------------------------------------
def prove(lab, holds, examples=HIDDEN_EXAMPLES):
    """Look for a world that breaks `holds` (more worlds than a public check, on another seed)."""
    bench = GraderDlqBench(lab)
    try:
        found = holds(bench, examples=examples, seed=HIDDEN_SEED)
    finally:
        bench.close()
    if found is not None:
        raise Failed(found.why, found.story)


class GraderDlqBench:
    """The grader's bench for lab 2's properties: a fresh moto and clock a world, the learner's functions across
    the wire, the calls they made read from what the checker served."""

    def __init__(self, lab):
        self.lab, self.clock = lab, None

    def close(self):
        if self.clock is not None:
            self.clock.stop()

    def fresh(self):
        self.close()
        self.lab.reset_world()
        self.clock = VirtualClock().start()
        self.clock.advance_to(incidents.SUNDAY_2204)
        self.sqs = self.lab.client("sqs")
        pair = queues.create_queue_pair(
            self.sqs, world.ORDERS_QUEUE, world.ORDERS_DLQ, visibility_timeout_seconds=120, max_receive_count=4
        )
        self.source_url, self.dlq_url = pair.url, pair.dlq_url
        clients = {"sqs": self.sqs}
        self.aws = world.World(world.WorldConfig(), self.lab.session(), pair, "", "", {}, "", _clients=clients)
        self.lab.aws_calls.clear()

    def inspect(self, max_messages):
        return self.lab.call("inspect_dlq", self.sqs, self.dlq_url, max_messages)

    def contain(self):
        return self.lab.call("contain", self.aws, self.clock)

    def classify(self):
        return self.lab.call("classify_dlq", self.sqs, self.dlq_url)

    def redrive(self, max_per_second, dies_at_send):
        """The learner's redrive; its process dies at the `dies_at_send`-th send to the source queue (the checker
        sees each request before moto does: that send never reaches it, and nothing after it runs)."""
        self.dies_at, self.dead = dies_at_send, False
        self.lab.before_aws = self._watch
        try:
            answer = self.lab.call("redrive_dlq", self.aws, self.clock, max_per_second)
        except (ProcessDied, RemoteError) as error:
            answer = error
        finally:
            self.lab.before_aws = None
        return answer, self.dead

    def _watch(self, _service, action, request):
        if self.dead:
            raise ProcessDied("the process had already died")
        sending = action in ("SendMessage", "SendMessageBatch") and isinstance(request, dict)
        if sending and request.get("QueueUrl") == self.source_url and self.dies_at is not None:
            self.dies_at -= 1
            if self.dies_at == 0:
                self.dead = True
                raise ProcessDied("the redrive's process died at this send")

    def attachments(self):
        return [
            (call["at"], call["request"].get("QueueUrl"))
            for call in self.lab.aws_calls
            if call["action"] == "GetQueueAttributes"
            and isinstance(call["request"], dict)
            and "QueueArn" in (call["request"].get("AttributeNames") or ())
        ]

    def runbook(self):
        provider = gateway.PaymentGateway(self.clock)
        try:
            answer = self.lab.call("runbook", self.aws, self.clock, gateway.GatewayClient(provider))
        except RemoteError as error:  # it stopped: what a runbook does when it must not go on
            answer = error
        return answer, dict(provider.charges_per_order())

    def receives(self):
        return [
            (call["request"].get("QueueUrl"), call["request"])
            for call in self.lab.aws_calls
            if call["action"] == "ReceiveMessage" and isinstance(call["request"], dict)
        ]

    def sends(self):
        found = []
        for call in self.lab.aws_calls:
            request = call["request"] if isinstance(call["request"], dict) else {}
            if call["action"] == "SendMessage":
                found.append((call["at"], request.get("QueueUrl"), 1))
            elif call["action"] == "SendMessageBatch" and isinstance(request.get("Entries"), list):
                found.append((call["at"], request.get("QueueUrl"), len(request["Entries"])))
        return found
