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
from decimal import Decimal

from mercadofresco import orders, queues, world
from mercadofresco.clock import VirtualClock
from mercadofresco.course.checker import Check, Failed
from mercadofresco.lessons.delivery.experiments import INCIDENT_ORDER
from mercadofresco.lessons.exercises import consumer_properties, mechanisms
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
        "exactly_once",
        "(d) every order is charged exactly once with the table alone, however its copies arrive: later, at once, or "
        "during another copy's work. The claim is one conditional write; its lock outlasts one delivery's attempts and "
        "ends before the queue's visibility timeout; a transient failure releases it.",
        points=2,
    ),
    Check(
        "exactly_once_despite_crashes",
        "(d) a consumer may die after any step and an answer may be lost or late: the key cobro:<pedido_id> reaches "
        "the gateway, COMPLETADO is answered without charging, and a consumer that died runs no more code.",
        points=2,
    ),
    Check(
        "declined_stays_failed",
        "(d) a declined card is a permanent failure: FALLIDO is kept, the gateway is never asked again for that order, "
        "and its messages are acknowledged.",
    ),
    Check(
        "poison_reaches_the_dlq",
        "(d) a body the consumer cannot read is reported as failed every time, so the queue takes it to the DLQ: it "
        "is never acknowledged, never charged.",
    ),
    Check(
        "fifo_experiment",
        "(e) on a FIFO queue the producer's re-send within 5 minutes is dropped (1 message waits), but a lost "
        "answer still brings the same message back and the naive consumer charges twice.",
    ),
]
FIXES = ("gateway_key", "idempotency_table", "p99_alarm_breaker", "timeout_30_attempts_2", "visibility_400")
PRICE = Decimal("48.20")
HIDDEN_EXAMPLES, HIDDEN_SEED = 30, 20_261_206  # worlds each property plays beyond the lesson's own, and their seed


def setup(lab):
    """What the learner's code may hold of the checker's world: the clock, the gateway, Lambda's context."""
    lab.expose("clock", VirtualClock)
    lab.expose("gateway", mechanisms.RecordingGateway)  # the experiments' gateway: its notes are the evidence
    lab.accept(gateway.Fault, gateway.LatencyProfile, gateway.LatencySpike)  # what the kernel may set it up with
    lab.expose("gateway_client", gateway.GatewayClient)
    lab.expose("invocation", lambda_poller.Invocation)
    lab.expose("crashes", lambda_poller.CrashPlan)  # the worlds' Steps are CrashPlans too


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
    poller = lambda_poller.Poller(aws.sqs, aws.orders.url, handler, clock, crashes=hook or lambda_poller.CrashPlan())
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


def experiment(lab, name, fifo=False, prepare=None):
    """Run the learner's experiment `name` on a fresh world and the checker's own gateway (at normal speed).

    What the checker saw of the run (`mechanisms.Run`): what the learner's function returned (as data), the order's
    messages and deliveries in its moto, its gateway's calls for the order, its charges, the queue's visibility.
    `prepare(provider)` sets the gateway up first: the experiment must isolate its mechanism anyway.
    """
    with fresh(lab) as (clock, aws):
        provider = mechanisms.RecordingGateway(clock)
        if prepare is not None:
            prepare(provider)
        lab.aws_calls.clear()
        reported = lab.call(name, aws, clock, provider)
        visibility = visibility_of(aws)
    pedido = INCIDENT_ORDER.pedido_id
    seen = mechanisms.deliveries(lab.aws_calls, pedido, fifo)
    return mechanisms.Run(reported, seen, provider.calls_for(pedido), len(provider.charges_for(pedido)), visibility)


def visibility_of(aws):
    """The orders queue's visibility timeout as the checker's moto has it now (0 if the queue is gone)."""
    if aws.orders.url not in aws.sqs.list_queues().get("QueueUrls", []):
        return 0
    attributes = aws.sqs.get_queue_attributes(QueueUrl=aws.orders.url, AttributeNames=["VisibilityTimeout"])
    return int(attributes["Attributes"]["VisibilityTimeout"])


def agrees(name, run):
    """The learner's numbers are the checker's: their run's charges and receives of the order."""
    pedido = INCIDENT_ORDER.pedido_id
    said = (charges_in(run.reported).get(pedido, 0), len(receives_in(run.reported)))
    assert said == (run.charges, len(run.seen.handed)), (
        f"what {name} returned ({said[0]} charges, {said[1]} receives of {pedido}) is not what happened on the "
        f"grader's gateway and queue ({run.charges} charges, {len(run.seen.handed)} receives)"
    )


# -- (a) --------------------------------------------------------------------------------------
def check_mechanism_visibility(lab):
    run = experiment(lab, "visibility_mechanism")
    why = mechanisms.not_visibility_mechanism(run)
    assert why is None, why
    agrees("visibility_mechanism", run)
    why = mechanisms.not_one_call_a_delivery(
        experiment(lab, "visibility_mechanism", prepare=mechanisms.one_lost_answer)
    )
    assert why is None, f"when an answer is lost, {why}"


def check_mechanism_sdk_retries(lab):
    run = experiment(lab, "sdk_retry_mechanism")
    why = mechanisms.not_sdk_retry_mechanism(run)
    assert why is None, why
    agrees("sdk_retry_mechanism", run)
    slow = experiment(lab, "sdk_retry_mechanism", prepare=mechanisms.slow_and_lossy)
    why = mechanisms.not_retried_in_one_delivery(slow)
    assert why is None, f"with slow calls and more lost answers, {why}"


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


def check_exactly_once(lab):
    prove(lab, consumer_properties.exactly_once)


def check_exactly_once_despite_crashes(lab):
    prove(lab, consumer_properties.exactly_once_despite_crashes)


def check_declined_stays_failed(lab):
    prove(lab, consumer_properties.declined_stays_failed)


def check_poison_reaches_the_dlq(lab):
    prove(lab, consumer_properties.poison_reaches_the_dlq)


def prove(lab, holds):
    """Look for a world that breaks `holds` (more worlds than the public checks play, on another seed)."""
    with fresh(lab) as (clock, _aws):
        found = holds(GraderBench(lab, clock), examples=HIDDEN_EXAMPLES, seed=HIDDEN_SEED)
    if found is not None:
        raise Failed(found.why, found.story)


class GraderBench:
    """The grader's world for the properties: its clock and DynamoDB; the learner's build_handler across the wire.

    Before each DynamoDB request the learner's code sends, the checker sees it (`lab.before_aws`), so a world can
    have a copy arrive between the learner's read and its write.
    """

    def __init__(self, lab, clock):
        self.lab, self.clock, self.dynamodb = lab, clock, lab.client("dynamodb")
        self._build = lab.function("build_handler")

    def build_handler(self, client):
        return self._build(self.dynamodb, client)

    def record(self, clave):
        return self.lab.dynamodb_item(world.IDEMPOTENCY_TABLE, {"clave": {"S": clave}})

    def before_dynamodb(self, hook):
        def seen(service, action, request):
            if service == "dynamodb":
                hook(action, request if isinstance(request, dict) else {})

        self.lab.before_aws = None if hook is None else seen


# -- (e) -----------------------------------------------------------------------------------------
def check_fifo_experiment(lab):
    run = experiment(lab, "fifo_experiment", fifo=True)
    assert isinstance(run.reported, dict), f"fifo_experiment returned {type(run.reported).__name__}, not a dict"
    why = mechanisms.not_fifo_run(run)
    assert why is None, why
    entered = len({message_id for _, message_id in run.seen.handed})  # the copies that ever waited in the FIFO queue
    said = (run.reported.get("copies_waiting_after_resend"), run.reported.get("charges_after_redelivery"))
    assert said == (entered, run.charges), (
        f"fifo_experiment says {said[0]} copies waited and {said[1]} charges; the grader's queue and gateway saw "
        f"{entered} and {run.charges}"
    )
    answer = lab.value("fifo_would_have")
    assert isinstance(answer, dict), "fifo_would_have is not a dict"
    assert answer.get("dropped_the_producer_resend") is True, "what did FIFO do with the producer's re-send?"
    assert answer.get("prevented_the_double_charge") is False, "what did FIFO do with the redelivery?"
