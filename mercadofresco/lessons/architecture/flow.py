"""MercadoFresco's whole flow on moto, end to end, with a fault at each hop (notebook 16).

    cola-mercadofresco-pedidos -> ConfirmOrders: charge (gateway, shared breaker) + write (pedidos + outbox)
    outbox -> publish_pending -> bus-mercadofresco
        rule -> cola-mercadofresco-almacen -> preparation
        rule -> mercadofresco-pedido-confirmado -> cola-mercadofresco-correo -> email
                                                -> cola-mercadofresco-erp    -> ERP

Every queue has its DLQ (maxReceiveCount 4) and the DLQ alarms of notebook 10.
What is real: SQS, SNS, EventBridge's rule to a queue, DynamoDB, CloudWatch's
alarms as stored definitions. What is a model or a stand-in, and says so: the
gateway, Lambda's poller, the alarm evaluation, the move task, the outbox
(`shop.confirm.OrderBook` and `publish_pending` here; notebook 13 has the real
one), and the rule's SNS target: moto raises NotImplementedError for it, so
`publish_pending` delivers to the topic what that target would.
`lessons.architecture.report` reads a finished run.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field, fields
from decimal import Decimal
from typing import Any

from mercadofresco import alarms, orders, queues, world
from mercadofresco.clock import VirtualClock
from mercadofresco.errors import check_range
from mercadofresco.i18n import T_, _, moment, number
from mercadofresco.models import alarm_evaluation, move_task
from mercadofresco.models import gateway as gw
from mercadofresco.models.lambda_poller import CrashPlan, Poller, PollerConfig
from mercadofresco.patterns import backoff, breaker, breaker_store, dlq, idempotency, retry
from mercadofresco.shop import confirm, fulfilment
from mercadofresco.shop.handlers import IdempotentChargeOrders

CONSUMER_QUEUES = {
    "preparacion": world.WAREHOUSE_QUEUE,
    "correo": "cola-mercadofresco-correo",
    "erp": "cola-mercadofresco-erp",
}
DLQS = {
    world.WAREHOUSE_QUEUE: "mercadofresco-almacen-fallidos",
    "cola-mercadofresco-correo": "mercadofresco-correo-fallidos",
    "cola-mercadofresco-erp": "mercadofresco-erp-fallidos",
}
NOTIFY_RULE = "regla-mercadofresco-notificar"
NOTIFY_PATTERN = {"source": [world.ORDER_SOURCE], "detail-type": [confirm.EVENT_TYPE]}
CONSUMER_VISIBILITY_SECONDS = 30
MAX_RECEIVES = 4
CHARGE_POLLER = PollerConfig(
    batch_size=10, max_concurrency=2, function_timeout_seconds=60, idle_poll_seconds=5, max_idle_poll_seconds=20
)
CONSUMER_POLLER = PollerConfig(
    batch_size=10, max_concurrency=2, function_timeout_seconds=20, idle_poll_seconds=5, max_idle_poll_seconds=20
)
# The lesson opens after 20 failures in a row; a run of a few orders makes at most 4 failed charges each before
# they reach the DLQ, so the run opens after 3. Open longer than the queue's 120 s visibility timeout, so the
# redeliveries find it still open and are refused without calling (notebook 16 shows both choices' cost).
BREAKER_POLICY = breaker.BreakerPolicy(failure_threshold=3, open_seconds=180)
CLIENT_POLICY = retry.RetryPolicy(backoff.FullJitter(base=0.2, cap=2.0), max_attempts=2)


@dataclass(frozen=True)
class Faults:
    """One fault per hop; any combination can be switched on."""

    response_lost: bool = False  # charge: the gateway charges and the answer is lost
    gateway_down: bool = False  # charge: 503s until the shared breaker opens
    crash_after_charge: bool = False  # charge: the consumer dies right after the gateway charged
    crash_before_write: bool = False  # confirm: dies after COMPLETADO, before writing the order
    publisher_dies: bool = False  # outbox stand-in: dies after put_events, before marking the row
    crash_before_delete: bool = False  # consumers: the effect is done, the process dies before DeleteMessage
    crash_after_effect: bool = False  # consumers: dies after the provider acted, before COMPLETADO
    erp_down: bool = False  # ERP: down; its messages reach the DLQ, the alarm fires, a redrive after it is back

    def names(self) -> list[str]:
        return [f.name for f in fields(self) if getattr(self, f.name)]


EVERY_FAULT = Faults(**{f.name: True for f in fields(Faults)})


@dataclass
class Flow:
    """Everything one run touches: the world, the models, the stores and what each hop recorded."""

    aws: world.World
    clock: VirtualClock
    gateway: gw.PaymentGateway
    breaker: breaker_store.SharedBreaker
    client: confirm.BreakerGuardedClient
    store: idempotency.IdempotencyStore
    book: confirm.OrderBook
    providers: dict[str, fulfilment.Provider]
    pairs: dict[str, queues.QueuePair]
    inbox_url: str
    origin: dt.datetime
    timeline: list[dict[str, Any]] = field(default_factory=list)
    published: int = 0
    redriven: dict[str, int] = field(default_factory=dict)
    alarms_seen: list[str] = field(default_factory=list)

    def record(self, hop: str, event: str, pedido_id: str = "", detail: str = "") -> None:
        seconds = round((self.clock.now() - self.origin).total_seconds(), 3)
        self.timeline.append({"seconds": seconds, "hop": hop, "event": event, "pedido_id": pedido_id, "detail": detail})


def build_flow(
    aws: world.World,
    clock: VirtualClock,
    honours_key: bool = True,
    breaker_policy: breaker.BreakerPolicy = BREAKER_POLICY,
) -> Flow:
    """Add to the world what the whole flow needs: DLQs and alarms, the second rule, the breaker, the stores."""
    pairs = {world.ORDERS_QUEUE: aws.orders}
    for name, dlq_name in DLQS.items():
        pairs[name] = queues.create_queue_pair(
            aws.sqs,
            name,
            dlq_name,
            visibility_timeout_seconds=CONSUMER_VISIBILITY_SECONDS,
            max_receive_count=MAX_RECEIVES,
        )
    for dlq_name in (world.ORDERS_DLQ, *DLQS.values()):  # the two DLQ alarms of notebook 10 on each
        dlq.define_alarms(aws.client("cloudwatch"), aws.alerts_topic_arn, dlq_name)
    # A rule with no target in moto: its SNS target would make put_events raise NotImplementedError.
    aws.client("events").put_rule(Name=NOTIFY_RULE, EventBusName=world.BUS, EventPattern=json.dumps(NOTIFY_PATTERN))
    provider = gw.PaymentGateway(clock)
    alarm = alarm_evaluation.OpenAlarm(
        aws.client("cloudwatch"), aws.client("sns"), aws.alerts_topic_arn, "pasarela-pagos"
    )
    shared = breaker_store.SharedBreaker(breaker_store.embedded_store(), breaker_policy, alarm=alarm)
    client = gw.GatewayClient(provider, read_timeout_seconds=30, policy=CLIENT_POLICY)
    return Flow(
        aws=aws,
        clock=clock,
        gateway=provider,
        breaker=shared,
        client=confirm.BreakerGuardedClient(client, shared, clock),
        store=idempotency.IdempotencyStore(aws.dynamodb, clock),
        book=confirm.OrderBook(),
        providers={name: fulfilment.Provider(name, honours_key=honours_key) for name in CONSUMER_QUEUES},
        pairs=pairs,
        inbox_url=alarms.subscribe_inbox(aws.client("sns"), aws.sqs, aws.alerts_topic_arn),
        origin=clock.now(),
    )


def send_orders(flow: Flow, count: int, first: int = 84_417) -> list[str]:
    """The shop puts `count` orders in cola-mercadofresco-pedidos; return their pedido_ids."""
    ids = [orders.order_id(first + n) for n in range(count)]
    for pedido_id in ids:
        orders.send_order(flow.aws.sqs, flow.aws.orders.url, orders.Order(pedido_id, Decimal("48.20")))
    return ids


# -- the hops ---------------------------------------------------------------------------------------
def confirm_stage(flow: Flow, faults: Faults) -> Poller:
    """Charge and write every order in cola-mercadofresco-pedidos."""
    if faults.response_lost:
        flow.gateway.fail_next(gw.Fault.RESPONSE_LOST)
    if faults.gateway_down:
        # 503s until the breaker opens: each failed charge is CLIENT_POLICY.max_attempts calls
        flow.gateway.fail_next(
            gw.Fault.UNAVAILABLE, times=CLIENT_POLICY.max_attempts * flow.breaker.policy.failure_threshold
        )
    crashes = {"after_charge": int(faults.crash_after_charge), "after_complete": int(faults.crash_before_write)}
    handler = confirm.ConfirmOrders(IdempotentChargeOrders(flow.client, flow.store), flow.book)
    poller = _poller(flow, world.ORDERS_QUEUE, handler, CHARGE_POLLER, crashes)
    poller.run_until_idle(max_seconds=3_600)
    return poller


def publish_pending(flow: Flow, dies_after_publishing: int | None = None) -> int:
    """Stand-in for notebook 13's outbox publisher: put_events each pending row, then mark it published.

    The rule to the warehouse queue is moto's own; the rule to the topic is a
    model (its target is not implemented in moto): the same envelope is published
    to `mercadofresco-pedido-confirmado`. `dies_after_publishing=n` kills the
    publisher after the n-th event went out and before its row was marked.
    """
    events, sns = flow.aws.client("events"), flow.aws.client("sns")
    for n, row in enumerate(flow.book.pending(), start=1):
        payload = json.loads(row["payload"])
        entry = {"Source": world.ORDER_SOURCE, "DetailType": row["tipo"], "Detail": row["payload"]}
        events.put_events(Entries=[entry | {"EventBusName": world.BUS}])
        envelope = {"version": "0", "detail-type": row["tipo"], "source": world.ORDER_SOURCE, "detail": payload}
        sns.publish(TopicArn=flow.aws.topic_arn, Message=json.dumps(envelope))  # the rule's SNS target, modelled
        flow.published += 1
        flow.record("outbox", T_("published"), payload["pedido_id"], _("outbox row {id}").format(id=number(row["id"])))
        if n == dies_after_publishing:
            flow.record("outbox", T_("publisher died"), payload["pedido_id"], T_("before marking the row"))
            return n
        row["publicado"] = True
    return len(flow.book.outbox)


def fulfil_stage(flow: Flow, faults: Faults) -> dict[str, Poller]:
    """Each consumer works through its queue; the ERP may be down (its messages then reach its DLQ)."""
    flow.providers["erp"].down = faults.erp_down
    crashes = {"before_delete": int(faults.crash_before_delete), "after_charge": int(faults.crash_after_effect)}
    pollers = {}
    for operation, queue_name in CONSUMER_QUEUES.items():
        handler = fulfilment.FulfilOrders(operation, flow.providers[operation], flow.store)
        pollers[operation] = _poller(flow, queue_name, handler, CONSUMER_POLLER, crashes)
        pollers[operation].run_until_idle(max_seconds=3_600)
    return pollers


def check_alarms(flow: Flow) -> list[dict[str, Any]]:
    """Evaluate every DLQ's alarms now (the model of CloudWatch) and keep what reached the on-call inbox."""
    rows = []
    for name, pair in flow.pairs.items():
        dlq_name = world.ORDERS_DLQ if name == world.ORDERS_QUEUE else DLQS[name]
        rows.append(
            {"at": moment(flow.clock.now(), "%H:%M:%S"), "dlq": dlq_name}
            | alarm_evaluation.check_dlq_alarms(flow.aws, pair.dlq_url, flow.clock.now(), dlq_name)
        )
    flow.alarms_seen.extend(alarms.read_inbox(flow.aws.sqs, flow.inbox_url))
    return rows


def redrive(flow: Flow, queue_name: str) -> int:
    """The runbook's last steps, after the fix: move the queue's DLQ back at 10/s; return how many moved."""
    pair = flow.pairs[queue_name]
    flow.clock.advance(dlq.INSPECT_VISIBILITY_SECONDS + 1)  # the alarm check's inspection hid them for 5 s
    task = move_task.start_message_move_task(flow.aws.sqs, flow.clock, pair.dlq_url, pair.url, 10)
    moved = task.approximate_number_of_messages_moved
    flow.redriven[queue_name] = flow.redriven.get(queue_name, 0) + moved
    said = _("{count} messages back to {queue}").format(count=number(moved), queue=queue_name)
    flow.record("runbook", T_("redriven"), "", said)
    return moved


def recover_erp(flow: Flow) -> Poller:
    """The ERP is back (the fix); redrive its DLQ and let its consumer work."""
    flow.providers["erp"].down = False
    redrive(flow, CONSUMER_QUEUES["erp"])
    handler = fulfilment.FulfilOrders("erp", flow.providers["erp"], flow.store)
    poller = _poller(flow, CONSUMER_QUEUES["erp"], handler, CONSUMER_POLLER, {})
    poller.run_until_idle(max_seconds=3_600)
    return poller


def _poller(flow: Flow, queue_name: str, handler: Any, config: PollerConfig, crashes: dict[str, int]) -> Poller:
    plan = CrashPlan({step: times for step, times in crashes.items() if times})
    url = flow.pairs[queue_name].url
    return Poller(flow.aws.sqs, url, handler, flow.clock, config, plan, origin=flow.origin)


# -- a whole run --------------------------------------------------------------------------------------
@dataclass
class FlowRun:
    """A run's flow, its orders, and each hop's poller (their timelines)."""

    flow: Flow
    pedido_ids: list[str]
    faults: Faults
    pollers: dict[str, Poller]
    alarm_rows: list[dict[str, Any]]


def run_flow(
    aws: world.World,
    clock: VirtualClock,
    count: int,
    faults: Faults = Faults(),
    honours_key: bool = True,
    first: int = 84_417,
    breaker_policy: breaker.BreakerPolicy = BREAKER_POLICY,
) -> FlowRun:
    """Send `count` orders (PED-2026-084417 on) through every hop with `faults`, recover, and return the run."""
    check_range("count", count, 1, 50, why=_("moto slows down as queues grow"))
    flow = build_flow(aws, clock, honours_key=honours_key, breaker_policy=breaker_policy)
    ids = send_orders(flow, count, first)
    pollers = {"cobro": confirm_stage(flow, faults)}
    alarm_rows = check_alarms(flow)  # faults stacked on one order can spend its 4 receives
    if alarm_rows[0]["visible"]:
        redrive(flow, world.ORDERS_QUEUE)  # the gateway is back and the consumers no longer die: the fix
        pollers["cobro_after_redrive"] = confirm_stage(flow, Faults())
    publish_pending(flow, dies_after_publishing=1 if faults.publisher_dies else None)
    publish_pending(flow)  # the next run of the publisher: the unmarked row goes out again
    pollers |= fulfil_stage(flow, faults)
    later = check_alarms(flow)
    if next(row for row in later if row["dlq"] == DLQS[CONSUMER_QUEUES["erp"]])["visible"]:
        pollers["erp_after_redrive"] = recover_erp(flow)
        later += check_alarms(flow)  # back to OK
    return FlowRun(flow, ids, faults, pollers, alarm_rows + later)


LESSON_BREAKER = breaker.BreakerPolicy(failure_threshold=20, open_seconds=30)  # notebook 09's reading of section 9


def compare_breakers(
    aws: world.World,
    clock: VirtualClock,
    policies: dict[str, breaker.BreakerPolicy],
    count: int = 3,
    first: int = 95_001,
) -> dict[str, FlowRun]:
    """The same gateway outage (503s until the breaker opens) under each policy, on new orders for each.

    Pass a new `first` to compare again in the same world: orders already charged are COMPLETADO in its table.
    """
    return {
        name: run_flow(aws, clock, count, Faults(gateway_down=True), first=first + 100 * n, breaker_policy=policy)
        for n, (name, policy) in enumerate(policies.items())
    }
