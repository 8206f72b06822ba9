"""Lab 1's hidden checks. They run in the grader's process, against a world the grader owns.

Each `check_<id>(lab)` builds a fresh world here (a clock at 19:14, an empty
moto with the lesson's queue, DLQ and table, a payment gateway), hands the
learner's function plain data and proxies for that world (`lab.call`), and
then reads its verdict from this process's own state: the gateway's ledger,
moto's table, the queues, the poller's timeline. What the learner's function
returns is judged as data. An instructor can read every check here; learners
never see this file.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
from dataclasses import dataclass, field
from decimal import Decimal

from mercadofresco import orders, queues, world
from mercadofresco.clock import VirtualClock
from mercadofresco.course.checker import Check
from mercadofresco.lessons.delivery.experiments import INCIDENT_ORDER
from mercadofresco.models import gateway, lambda_poller

CHECKS = [
    Check(
        "mechanism_visibility",
        "(a) mechanism 1: with a single SDK attempt, a gateway slower than the visibility timeout must make the "
        "queue deliver the order again (receive #2) and the gateway charge it twice.",
    ),
    Check(
        "mechanism_sdk_retries",
        "(a) mechanism 2: with one delivery only, the SDK's retries after a lost answer must charge the order "
        "twice; make the visibility timeout longer than every attempt together.",
    ),
    Check(
        "more_likely",
        "(b) what does each mechanism need in order to happen, and which of those did the gateway's logs at 19:14 "
        "show? Set the numbers of the incident side by side.",
    ),
    Check(
        "fix_order",
        "(c) rank the fixes by what each does to a duplicate that still arrives: which make it harmless, and which "
        "only make it rarer? Which protection still holds where the other one cannot reach?",
    ),
    Check(
        "config_relations",
        "(c) fixed_config: a message must stay hidden longer than one delivery can take (read timeout × SDK "
        "attempts), one layer (the queue) is in charge of retries and the SDK retries at most once more, and the "
        "attempts per order (SDK attempts × receives) stay at or under 15.",
    ),
    Check(
        "record_contract",
        "(d) after a charge the table must hold clave cobro:<pedido_id> with estado COMPLETADO, the charge's "
        "referencia_cobro in resultado and expira_en 24 h ahead, and the gateway must receive the same key as "
        "Idempotency-Key.",
    ),
    Check(
        "incident_replay",
        "(d) replay of the incident (visibility 120 s, read timeout 180 s, 5 SDK attempts, a 150 s spike, lost "
        "answers) with many orders: each must be charged exactly once and none may end in the DLQ.",
    ),
    Check(
        "parallel_duplicates",
        "(d) copies of the same order arriving while a first consumer holds it (EN_CURSO) must not charge, and "
        "must be reported in batchItemFailures so they come back later; a two-state table or a check-then-write "
        "race fails here.",
    ),
    Check(
        "crash_recovery",
        "(d) a consumer that dies after charging, after writing COMPLETADO or before deleting the message must "
        "leave the order charged exactly once when the message comes back: the key must reach the gateway, and "
        "COMPLETADO must be answered without charging.",
    ),
    Check(
        "lock_expires",
        "(d) a consumer that dies right after claiming leaves EN_CURSO behind: the claim must expire "
        "(caduca_bloqueo, shorter than the queue's visibility timeout) so that a later delivery can charge the "
        "order.",
    ),
    Check(
        "producer_resends",
        "(d) the producer may send the same order again as a new message (a new MessageId) minutes or hours "
        "later: the key must come from the order, not from the message or the attempt.",
    ),
    Check(
        "key_behaviour",
        "(d) the key names the operation and the order: another operation already done on the same order (a "
        "shipment) must not stop the charge, two orders never share a key, and the same order sent again as a "
        "new message is not charged again.",
    ),
    Check(
        "permanent_failure_kept",
        "(d) a declined card is a permanent failure: record FALLIDO and never call the gateway again for that order.",
    ),
    Check(
        "transient_releases",
        "(d) a transient gateway error (503) must release the claim and report the message as failed, so that "
        "the next delivery charges the order.",
    ),
    Check(
        "expired_record_ignored",
        "(d) DynamoDB deletes expired items late (moto never does): a record whose expira_en has passed must "
        "count as absent, so compare expira_en in your condition.",
    ),
    Check(
        "fifo_experiment",
        "(e) on a FIFO queue the producer's re-send within 5 minutes is dropped (1 message waits), but a lost "
        "answer still brings the same message back and the naive consumer charges twice.",
    ),
]
FIXES = ("gateway_key", "idempotency_table", "p99_alarm_breaker", "timeout_30_attempts_2", "visibility_400")
PRICE = Decimal("48.20")


class Hook(lambda_poller.CrashPlan):
    """Stands in for a CrashPlan: runs `action` the first time the consumer reaches `step`."""

    def __init__(self, step=None, action=None):
        super().__init__()
        self.step, self.action, self.seen = step, action, []

    def reached(self, step):
        self.seen.append(step)
        if step == self.step and self.action is not None:
            action, self.action = self.action, None
            action()


def setup(lab):
    """What the learner's code may hold of the checker's world: the clock, the gateway, Lambda's context."""
    lab.expose("clock", VirtualClock)
    lab.expose("gateway", RecordingGateway)  # the experiments' gateway: its ledger and notes are the evidence
    lab.accept(gateway.Fault, gateway.LatencyProfile, gateway.LatencySpike)  # what the kernel may set it up with
    lab.expose("gateway_client", gateway.GatewayClient)
    lab.expose("invocation", lambda_poller.Invocation)
    lab.expose("crashes", lambda_poller.CrashPlan)


@contextlib.contextmanager
def fresh(lab, visibility=120, max_receive_count=4):
    """A new clock at 19:14 and an empty moto with the lesson's queue, DLQ and table (the checker's own)."""
    lab.reset_world()
    clock = VirtualClock().start()
    try:
        config = world.WorldConfig(visibility_timeout_seconds=visibility, max_receive_count=max_receive_count)
        session = lab.session()
        clients = {name: lab.client(name) for name in ("sqs", "dynamodb")}
        pair = queues.create_queue_pair(
            clients["sqs"],
            world.ORDERS_QUEUE,
            world.ORDERS_DLQ,
            visibility_timeout_seconds=visibility,
            max_receive_count=max_receive_count,
        )
        world.create_idempotency_table(clients["dynamodb"])
        yield clock, world.World(config, session, pair, "", "", {}, "", _clients=clients)
    finally:
        clock.stop()


def order(number):
    return orders.Order(orders.order_id(900_000 + number), PRICE)


def client_for(clock, key=True, max_attempts=1, read_timeout=30, latency=None):
    provider = gateway.PaymentGateway(clock, latency=latency or gateway.LatencyProfile())
    client = gateway.GatewayClient(
        provider, read_timeout_seconds=read_timeout, max_attempts=max_attempts, send_idempotency_key=key
    )
    return provider, client


def record_of(order_, message_id):
    return {
        "messageId": message_id,
        "receiptHandle": f"handle-{message_id}",
        "body": orders.order_body(order_),
        "attributes": {"ApproximateReceiveCount": "1"},
        "eventSource": "aws:sqs",
        "eventSourceARN": "grader",
    }


def deliver(aws, clock, handler, records, hook=None, number=1):
    """One invocation, called directly; the messageIds to retry (all of them if the handler raised)."""
    poller = lambda_poller.Poller(aws.sqs, aws.orders.url, handler, clock, crashes=hook or Hook())
    context = lambda_poller.Invocation(poller, f"grader-{number}", number)
    try:
        response = handler({"Records": records}, context) or {}
    except lambda_poller.ConsumerCrash:
        raise
    except Exception:
        return {record["messageId"] for record in records}
    if not isinstance(response, dict) or not isinstance(response.get("batchItemFailures", []), list):
        return {record["messageId"] for record in records}
    return {str(item.get("itemIdentifier")) for item in response.get("batchItemFailures", []) if isinstance(item, dict)}


def deliver_each(aws, clock, handler, records, retried):
    """Copies delivered one after another while the first consumer is paused at a step."""
    for number, record in enumerate(records):
        retried.update(deliver(aws, clock, handler, [record], number=number + 2))


def poll(aws, clock, handler, order_list, crashes=None, seconds=4_000):
    for each in order_list:
        orders.send_order(aws.sqs, aws.orders.url, each)
    config = lambda_poller.PollerConfig(
        batch_size=1, max_concurrency=4, function_timeout_seconds=900, max_idle_poll_seconds=20
    )
    poller = lambda_poller.Poller(
        aws.sqs, aws.orders.url, handler, clock, config=config, crashes=crashes or lambda_poller.CrashPlan()
    )
    poller.run_until_idle(seconds)
    left = sum(queues.queue_counts(aws.sqs, aws.orders.url).values())
    dlq = sum(queues.queue_counts(aws.sqs, aws.orders.dlq_url).values())
    return poller, left, dlq


def item_of(aws, clave):
    return aws.dynamodb.get_item(TableName=world.IDEMPOTENCY_TABLE, Key={"clave": {"S": clave}}).get("Item")


def order_message_ids(lab, pedido_id, fifo=False):
    """MessageIds the checker's moto gave the messages sent for `pedido_id` (to a FIFO queue, or to the others)."""
    ids = []
    for call in lab.aws_calls:
        request, answer = call["request"], call["answer"]
        if call["action"] != "SendMessage" or not isinstance(request, dict) or not isinstance(answer, dict):
            continue
        if str(request.get("QueueUrl", "")).endswith(".fifo") == fifo and is_order(
            request.get("MessageBody"), pedido_id
        ):
            ids.append(answer.get("MessageId"))
    return ids


def is_order(body, pedido_id):
    try:
        return orders.parse_order(str(body)).pedido_id == pedido_id
    except orders.MalformedOrderError:
        return False


def deliveries(lab, message_ids):
    """(instant, MessageId) of each time the checker's moto handed out one of `message_ids`, in order."""
    handed = []
    for call in lab.aws_calls:
        if call["action"] == "ReceiveMessage" and isinstance(call["answer"], dict):
            messages = call["answer"].get("Messages") or []
            handed += [(call["at"], m["MessageId"]) for m in messages if m.get("MessageId") in message_ids]
    return handed


def charges_in(run):
    """Charges per order in a DeliveryRun the learner's code returned (as data)."""
    counts = {}
    for charge in run.get("ledger", []) if isinstance(run, dict) else []:
        pedido = charge.get("pedido_id") if isinstance(charge, dict) else None
        counts[pedido] = counts.get(pedido, 0) + 1
    return counts


def receives_in(run):
    timeline = run.get("timeline", []) if isinstance(run, dict) else []
    return [row.get("detail") for row in timeline if isinstance(row, dict) and row.get("event") == "received"]


@dataclass
class RecordingGateway(gateway.PaymentGateway):
    """The checker's gateway for the experiments: it also notes each call, when it started and how it ended.

    A charge made is in the ledger; these notes say whether it happened inside a delivery, and how: a call that
    was still running when the message came back, or a retry after an answer that was lost.
    """

    notes: list = field(default_factory=list)  # (pedido_id, started, ended, how: "answered" or the error's class)

    def charge(self, pedido_id, importe, *, idempotency_key=None, read_timeout_seconds=30.0, waiter=None):
        clock = waiter or self.clock
        started, how = clock.now(), "answered"
        try:
            return super().charge(
                pedido_id,
                importe,
                idempotency_key=idempotency_key,
                read_timeout_seconds=read_timeout_seconds,
                waiter=waiter,
            )
        except gateway.GatewayError as error:
            how = type(error).__name__
            raise
        finally:
            self.notes.append((pedido_id, started, clock.now(), how))


def experiment(lab, name):
    """Run the learner's experiment `name` on a fresh world and the checker's own gateway (at normal speed).

    Returns what the learner's function reported (as data) and what the checker saw of the same run: the messages
    sent for the incident's order, each time its moto handed one out, and each call its gateway served for the
    order (when it started, when it ended, how), the charge it made included.
    """
    with fresh(lab) as (clock, aws):
        provider = RecordingGateway(clock)
        reported = lab.call(name, aws, clock, provider)
        visibility = visibility_of(aws)
    pedido = INCIDENT_ORDER.pedido_id
    sent = order_message_ids(lab, pedido)
    calls = [(started, ended, how) for who, started, ended, how in provider.notes if who == pedido]
    measured = {"sent": sent, "handed": [at for at, _ in deliveries(lab, set(sent))], "calls": calls}
    return reported, measured | {
        "charged": [c.cobrado_en for c in provider.charges_for(pedido)],
        "visibility": visibility,
    }


def visibility_of(aws):
    """The orders queue's visibility timeout as the checker's moto has it now (0 if the queue is gone)."""
    if aws.orders.url not in aws.sqs.list_queues().get("QueueUrls", []):
        return 0
    attributes = aws.sqs.get_queue_attributes(QueueUrl=aws.orders.url, AttributeNames=["VisibilityTimeout"])
    return int(attributes["Attributes"]["VisibilityTimeout"])


def agrees(name, reported, measured):
    """The learner's numbers are the checker's: their run's charges and receives of the order."""
    pedido = INCIDENT_ORDER.pedido_id
    said = (charges_in(reported).get(pedido, 0), len(receives_in(reported)))
    seen = (len(measured["charged"]), len(measured["handed"]))
    assert said == seen, (
        f"what {name} returned ({said[0]} charges, {said[1]} receives of {pedido}) is not what happened on the "
        f"grader's gateway and queue ({seen[0]} charges, {seen[1]} receives)"
    )


# -- (a) --------------------------------------------------------------------------------------
def check_mechanism_visibility(lab):
    reported, run = experiment(lab, "visibility_mechanism")
    calls, handed = run["calls"], run["handed"]
    assert len(run["sent"]) == 1, f"{len(run['sent'])} messages of the order were sent; the incident had one"
    assert len(run["charged"]) >= 2, f"the grader's gateway charged the order {len(run['charged'])} time(s), not twice"
    assert len(handed) >= 2, f"the grader's queue handed the order's message out {len(handed)} time(s), not twice"
    assert all(how == "answered" for *_, how in calls), (
        f"a call to the gateway failed ({', '.join(how for *_, how in calls if how != 'answered')}): in this mechanism "
        "nothing fails, the gateway is only slow"
    )
    first, second = calls[0], calls[1]
    assert handed[0] <= first[0] < handed[1], "the first charge was not made in the first delivery"
    assert first[1] > handed[1], (
        "the message came back only after the first call had answered: nothing was slower than the visibility"
    )
    assert second[0] >= handed[1], "the second charge came before the second delivery"
    agrees("visibility_mechanism", reported, run)


def check_mechanism_sdk_retries(lab):
    reported, run = experiment(lab, "sdk_retry_mechanism")
    calls, handed = run["calls"], run["handed"]
    assert len(run["sent"]) == 1, f"{len(run['sent'])} messages of the order were sent; the incident had one"
    assert len(run["charged"]) >= 2, f"the grader's gateway charged the order {len(run['charged'])} time(s), not twice"
    assert len(handed) == 1, f"the grader's queue handed the order's message out {len(handed)} time(s), not once"
    first, retry = calls[0], calls[1]
    assert first[0] >= handed[0], "a charge came before the only delivery"
    assert first[2] in ("ResponseLostError", "GatewayTimeoutError"), (
        "the first call's answer reached the consumer: the second charge is not a retry of a lost answer"
    )
    assert first[1] <= retry[0] < handed[0] + dt.timedelta(seconds=run["visibility"]), (
        "the second charge is not a retry inside the same delivery"
    )
    agrees("sdk_retry_mechanism", reported, run)


# -- (b), (c) -----------------------------------------------------------------------------------
def check_more_likely(lab):
    assert lab.value("more_likely") == "visibility", "not the mechanism the numbers point at"
    assert lab.value("because") == "slow_is_enough", "not the reason the numbers give"


def check_fix_order(lab):
    ranking = lab.value("fix_order")
    assert isinstance(ranking, list) and sorted(map(str, ranking)) == sorted(FIXES), "fix_order is not a ranking"
    assert ranking[:2] == ["idempotency_table", "gateway_key"], "the first two places are not right"
    assert lab.value("root_fix") == "idempotency_table", "root_fix is not the fix that removes the problem at the root"


def check_config_relations(lab):
    cfg = lab.value("fixed_config")
    assert isinstance(cfg, dict), "fixed_config is not a dict"
    numbers = [cfg.get(key) for key in ("visibility_timeout_seconds", "read_timeout_seconds")]
    numbers += [cfg.get(key) for key in ("sdk_max_attempts", "max_receive_count")]
    assert all(type(n) in (int, float) for n in numbers), "fixed_config's four values must be numbers"
    visibility, read, attempts, receives = numbers
    assert visibility > read * attempts, f"one delivery can take {read * attempts} s, visibility is {visibility} s"
    assert attempts <= 2, f"the SDK makes {attempts} attempts inside every delivery"
    assert attempts * receives <= 15, f"worst case {attempts * receives} calls to the gateway per order"


# -- (d) -----------------------------------------------------------------------------------------
def check_record_contract(lab):
    with fresh(lab) as (clock, aws):
        provider, client = client_for(clock, key=True)
        handler = lab.call("build_handler", aws.dynamodb, client)
        order_ = order(1)
        failed = deliver(aws, clock, handler, [record_of(order_, "m-1")])
        now = clock.timestamp()
        item = item_of(aws, f"cobro:{order_.pedido_id}")
        ledger = list(provider.ledger)
    assert not failed, "the message was reported as failed"
    assert len(ledger) == 1, f"{len(ledger)} charges for one message"
    assert ledger[0].idempotency_key == f"cobro:{order_.pedido_id}", "the gateway did not receive cobro:<pedido_id>"
    assert item is not None, "no item with clave cobro:<pedido_id> in mercadofresco-idempotencia"
    assert item.get("estado", {}).get("S") == "COMPLETADO", f"estado is {item.get('estado')}"
    assert ledger[0].referencia_cobro in str(item.get("resultado")), "resultado does not hold the referencia_cobro"
    expires = float(item.get("expira_en", {}).get("N", 0))
    assert now + 23 * 3600 <= expires <= now + 25 * 3600, "expira_en is not 24 h ahead in epoch seconds"


def check_incident_replay(lab):
    with fresh(lab, visibility=120, max_receive_count=4) as (clock, aws):
        spike = gateway.spike_at(clock.now(), minutes=10, latency_seconds=150)
        provider, client = client_for(clock, key=True, max_attempts=5, read_timeout=180, latency=spike)
        provider.fail_next(gateway.Fault.RESPONSE_LOST, times=3)
        batch = [order(100 + n) for n in range(12)]  # order numbers no other check uses
        _poller, left, dlq = poll(aws, clock, lab.call("build_handler", aws.dynamodb, client), batch)
        charges = provider.charges_per_order()
    wrong = {o.pedido_id: charges[o.pedido_id] for o in batch if charges[o.pedido_id] != 1}
    assert not wrong, f"orders not charged exactly once: {wrong}"
    assert dlq == 0 and left == 0, f"{dlq} message(s) in the DLQ, {left} left in the queue"


def check_parallel_duplicates(lab):
    for step in ("after_lock", "after_charge"):
        with fresh(lab) as (clock, aws):
            provider, client = client_for(clock, key=False)  # the table alone must hold: no gateway key
            handler = lab.call("build_handler", aws.dynamodb, client)
            order_ = order(2)
            copies = [record_of(order_, f"copy-{n}") for n in range(20)]
            retried = set()
            hook = Hook(step, functools.partial(deliver_each, aws, clock, handler, copies, retried))
            first = deliver(aws, clock, handler, [record_of(order_, "first")], hook=hook)
            charges = len(provider.ledger)
        assert step in hook.seen, f"the handler never called context.crashes.reached({step!r})"
        assert charges == 1, f"{charges} charges with 20 copies arriving at {step}"
        assert not first, "the first consumer reported its own message as failed"
        assert retried == {c["messageId"] for c in copies}, f"copies arriving at {step} were acknowledged, not retried"


def check_crash_recovery(lab):
    for step in ("received", "after_charge", "after_complete", "before_delete"):
        with fresh(lab, visibility=400, max_receive_count=4) as (clock, aws):
            provider, client = client_for(clock, key=True, max_attempts=2)
            plan = lambda_poller.CrashPlan({step: 1})
            _poller, left, dlq = poll(aws, clock, lab.call("build_handler", aws.dynamodb, client), [order(3)], plan)
            charges = len(provider.ledger)
        assert plan.crashed_at == [step], f"the consumer never reached {step!r}"
        assert charges == 1, f"{charges} charges after a crash at {step}"
        assert dlq == 0 and left == 0, f"after a crash at {step}: {dlq} in the DLQ, {left} left in the queue"


def check_lock_expires(lab):
    with fresh(lab, visibility=400, max_receive_count=4) as (clock, aws):
        provider, client = client_for(clock, key=True, max_attempts=2)
        plan = lambda_poller.CrashPlan({"after_lock": 1})
        _poller, _left, dlq = poll(aws, clock, lab.call("build_handler", aws.dynamodb, client), [order(4)], plan)
        charges = len(provider.ledger)
    assert plan.crashed_at == ["after_lock"], "the consumer never reached 'after_lock'"
    assert charges == 1, f"{charges} charges after a crash right after the claim"
    assert dlq == 0, "the order ended in the DLQ: its claim never expired"


def check_producer_resends(lab):
    with fresh(lab) as (clock, aws):
        provider, client = client_for(clock, key=False)
        handler = lab.call("build_handler", aws.dynamodb, client)
        order_ = order(5)
        failed = set()
        for number, gap in enumerate((0, 60, 6 * 3600)):
            clock.advance(gap)
            failed |= deliver(aws, clock, handler, [record_of(order_, f"resend-{number}")], number=number + 1)
        charges = len(provider.ledger)
    assert charges == 1, f"{charges} charges for one order sent three times"
    assert not failed, "a re-send of an order already charged was not acknowledged"


def check_key_behaviour(lab):
    with fresh(lab) as (clock, aws):
        provider, client = client_for(clock, key=True)
        handler = lab.call("build_handler", aws.dynamodb, client)
        first, second = order(9), order(10)
        now = int(clock.timestamp())
        for clave in (f"envio:{first.pedido_id}", first.pedido_id):  # other operations on the same order, done
            other = {"clave": {"S": clave}, "estado": {"S": "COMPLETADO"}, "resultado": {"S": "otra-operacion"}}
            aws.dynamodb.put_item(TableName=world.IDEMPOTENCY_TABLE, Item=other | {"expira_en": {"N": str(now + 3600)}})
        failed = deliver(aws, clock, handler, [record_of(first, "op-1")])
        failed |= deliver(aws, clock, handler, [record_of(second, "op-2")], number=2)
        clock.advance(600)
        failed |= deliver(aws, clock, handler, [record_of(first, "op-3-a-new-message-id")], number=3)
        charges = provider.charges_per_order()
        keys = {charge.idempotency_key for charge in provider.ledger}
    assert charges.get(first.pedido_id) == 1, f"{charges.get(first.pedido_id, 0)} charges for an order sent twice"
    assert charges.get(second.pedido_id) == 1, "a second order was not charged: its key collides with the first order's"
    assert len(keys) == 2, f"two orders charged with the keys {sorted(map(str, keys))}"
    assert not failed, f"messages reported as failed: {sorted(failed)}"


def check_permanent_failure_kept(lab):
    with fresh(lab) as (clock, aws):
        provider, client = client_for(clock, key=False)
        order_ = order(6)
        provider.declined_orders.add(order_.pedido_id)
        handler = lab.call("build_handler", aws.dynamodb, client)
        for number in range(3):
            deliver(aws, clock, handler, [record_of(order_, f"declined-{number}")], number=number + 1)
            clock.advance(500)
        calls, item = provider.calls, item_of(aws, f"cobro:{order_.pedido_id}")
    assert calls == 1, f"the gateway was called {calls} times for a declined card"
    assert item is not None and item.get("estado", {}).get("S") == "FALLIDO", "no FALLIDO record for the declined order"


def check_transient_releases(lab):
    with fresh(lab) as (clock, aws):
        provider, client = client_for(clock, key=False, max_attempts=1)
        provider.fail_next(gateway.Fault.UNAVAILABLE)
        handler = lab.call("build_handler", aws.dynamodb, client)
        order_ = order(7)
        first = deliver(aws, clock, handler, [record_of(order_, "t-1")])
        clock.advance(1)
        second = deliver(aws, clock, handler, [record_of(order_, "t-1")], number=2)
        charges = len(provider.ledger)
    assert first == {"t-1"}, "the message that met a 503 was not reported as failed"
    assert charges == 1 and not second, f"the next delivery did not charge the order ({charges} charges)"


def check_expired_record_ignored(lab):
    with fresh(lab) as (clock, aws):
        provider, client = client_for(clock, key=False)
        order_ = order(8)
        now = int(clock.timestamp())
        old = {
            "clave": {"S": f"cobro:{order_.pedido_id}"},
            "estado": {"S": "COMPLETADO"},
            "resultado": {"S": "ch_old"},
            "expira_en": {"N": str(now - 60)},
            "caduca_bloqueo": {"N": str(now - 3600)},
        }
        aws.dynamodb.put_item(TableName=world.IDEMPOTENCY_TABLE, Item=old)
        handler = lab.call("build_handler", aws.dynamodb, client)
        failed = deliver(aws, clock, handler, [record_of(order_, "e-1")])
        charges = len(provider.ledger)
    assert charges == 1 and not failed, f"{charges} charges for an order whose old record expired a minute ago"


# -- (e) -----------------------------------------------------------------------------------------
def check_fifo_experiment(lab):
    with fresh(lab) as (clock, aws):
        provider = RecordingGateway(clock)
        result = lab.call("fifo_experiment", aws, clock, provider)
    pedido = INCIDENT_ORDER.pedido_id
    sent = order_message_ids(lab, pedido, fifo=True)
    handed = deliveries(lab, set(sent))
    entered = len({message_id for _, message_id in handed})  # the copies that ever waited in the FIFO queue
    charged = len(provider.charges_for(pedido))
    calls = [(started, how) for who, started, _, how in provider.notes if who == pedido]
    assert isinstance(result, dict), f"fifo_experiment returned {type(result).__name__}, not a dict"
    assert len(sent) >= 2, f"the order was sent {len(sent)} time(s) to a FIFO queue of the grader's, not twice"
    assert entered == 1, f"{entered} copies of the order reached the grader's FIFO queue"
    assert len(handed) >= 2, "the grader's FIFO queue never handed the order's message out again"
    assert charged == 2, f"the grader's gateway charged the order {charged} time(s)"
    (first, how), (second, _) = calls[0], calls[1]
    assert handed[0][0] <= first < handed[1][0] and how != "answered" and second >= handed[1][0], (
        "the two charges are not the first delivery's, whose answer was lost, and the redelivery's"
    )
    said = (result.get("copies_waiting_after_resend"), result.get("charges_after_redelivery"))
    assert said == (entered, charged), (
        f"fifo_experiment says {said[0]} copies waited and {said[1]} charges; the grader's queue and gateway saw "
        f"{entered} and {charged}"
    )
    answer = lab.value("fifo_would_have")
    assert isinstance(answer, dict), "fifo_would_have is not a dict"
    assert answer.get("dropped_the_producer_resend") is True, "what did FIFO do with the producer's re-send?"
    assert answer.get("prevented_the_double_charge") is False, "what did FIFO do with the redelivery?"
