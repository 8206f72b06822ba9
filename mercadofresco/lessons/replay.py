"""Section 17's tip, measured: an idempotent consumer survives an archive replay and a double deploy (notebook 17).

The shop's `PedidoCreado` events go on `bus-mercadofresco` (put_events); a rule
routes them to `cola-mercadofresco-pedidos`, where the charge consumer runs; an
EventBridge archive keeps them. Then two things deliver every event again:

- StartReplay of the archive (after a fix, say): each archived event comes back once;
- the rule deployed twice by mistake (a second copy of the stack): each new event
  reaches the queue through both rules, the same event twice.

`replay_and_double_deploy` runs that on moto for one consumer, section 4's keyed by
the domain (`cobro:{pedido_id}`), the same keyed by the event's own id, or
section 1's with no key, and counts the gateway's charges per order. The
gateway's Idempotency-Key is off, so the consumer's key alone decides.

moto 5.2.5 (`moto/events/models.py`, `Replay.replay_events`) replays inside the
StartReplay call, every archived event whatever EventStartTime and EventEndTime
say, in archive order, to every rule of the bus, each with a new `id` and a
`replay-name` field. Real EventBridge replays later, minute by minute of event
time, not necessarily in order; notebook 17 compares the two.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from decimal import Decimal
from typing import Any

from mercadofresco import bus, orders, world
from mercadofresco.clock import VirtualClock
from mercadofresco.errors import MercadoFrescoError, check_range
from mercadofresco.i18n import N_, T_, _
from mercadofresco.lessons import keys_and_table, rehearsal
from mercadofresco.models import gateway, lambda_poller
from mercadofresco.patterns import idempotency, outbox
from mercadofresco.runtime import moto_events
from mercadofresco.shop import handlers

CHARGE_RULE = "regla-mercadofresco-pedido-creado"  # PedidoCreado -> cola-mercadofresco-pedidos
SECOND_DEPLOY_RULE = f"{CHARGE_RULE}-copia"  # the same rule, from a second copy of the stack
ARCHIVE = "archivo-mercadofresco-pedidos"
REPLAY_PREFIX = "repeticion-"  # EventBridge has no DeleteReplay and refuses a name twice: a new name each run
ARCHIVE_DELAY_SECONDS = 600  # AWS: an event may reach the archive late; replay 10 minutes after, not sooner
PATTERN = {"source": [world.ORDER_SOURCE], "detail-type": [outbox.ORDER_CREATED]}
CONSUMERS = ("cobro:{pedido_id}", T_("the event's id"), T_("no key"))  # keys; a table shows them translated


class ReplayNotOverError(MercadoFrescoError):
    """A replay was not COMPLETED when StartReplay returned: counting its charges now would count too early."""


def event_id_key(record: dict[str, Any], order: orders.Order) -> str:
    """WRONG: the EventBridge event's id as the key. A replay (on moto) or a re-publish brings a new one."""
    return record["eventId"]


def charge_consumer(
    kind: str, client: gateway.GatewayClient, store: idempotency.IdempotencyStore
) -> lambda_poller.Handler:
    """The charge consumer of `kind` (one of CONSUMERS), reading what the rule delivers."""
    if kind not in CONSUMERS:
        said = _("consumer must be one of {consumers}; got {consumer}")
        raise ValueError(said.format(consumers=", ".join(CONSUMERS), consumer=repr(kind)))
    if kind == "no key":
        return from_the_bus(handlers.ChargeOrders(client))
    key_of = handlers.key_from_order if kind == "cobro:{pedido_id}" else event_id_key
    return from_the_bus(handlers.IdempotentChargeOrders(client, store, key_of=key_of))


def from_the_bus(consumer: lambda_poller.Handler) -> lambda_poller.Handler:
    """The Lambda behind the rule: each SQS body is an EventBridge event; `consumer` gets the order in its detail.

    The event's `id` goes along in the record as `eventId`, where the consumer keyed by it reads it.
    """

    def handler(event: dict[str, Any], context: lambda_poller.Invocation) -> dict[str, Any] | None:
        records = []
        for record in event["Records"]:
            envelope = json.loads(record["body"])
            records.append(record | {"body": json.dumps(envelope["detail"]), "eventId": envelope["id"]})
        return consumer(event | {"Records": records}, context)

    return handler


@rehearsal.rehearsed(N_("the archive replay and the double deploy"))
def replay_and_double_deploy(
    aws: world.World, clock: VirtualClock, consumer: str, order_count: int = 3
) -> dict[str, Any]:
    """`order_count` orders published, replayed from the archive; `order_count` more with the rule deployed twice.

    Returns the messages the bus put in the queue, the charges, and the charges of each
    replayed order and of each order published after the double deploy (1 is right).
    """
    check_range("order_count", order_count, 1, 20)
    events = aws.client("events")
    pair = aws.reset_orders_queue()
    keys_and_table.empty_table(aws)
    provider = gateway.PaymentGateway(clock)
    client = gateway.GatewayClient(provider, send_idempotency_key=False)  # the consumer's key alone decides
    handler = charge_consumer(consumer, client, idempotency.IdempotencyStore(aws.dynamodb, clock))
    poller = lambda_poller.Poller(
        aws.sqs, pair.url, handler, clock, lambda_poller.PollerConfig(max_idle_poll_seconds=20)
    )
    first = [orders.Order(orders.order_id(940_000 + n), Decimal("48.20")) for n in range(order_count)]
    later = [orders.Order(orders.order_id(940_000 + order_count + n), Decimal("48.20")) for n in range(order_count)]
    bus_arn = events.describe_event_bus(Name=world.BUS)["Arn"]
    archive = events.create_archive(ArchiveName=ARCHIVE, EventSourceArn=bus_arn, EventPattern=json.dumps(PATTERN))
    try:
        with moto_events.cached_jsonpath():  # moto parses the same JSONPaths for every event and every target
            _route(events, pair.arn, CHARGE_RULE)
            published_at = clock.now()
            _publish(events, first)
            poller.run_until_idle(3_600)
            clock.advance(ARCHIVE_DELAY_SECONDS)
            _replay(events, archive["ArchiveArn"], bus_arn, published_at, clock.now())
            poller.run_until_idle(3_600)
            _route(events, pair.arn, SECOND_DEPLOY_RULE)  # the deploy that ran twice
            _publish(events, later)
            poller.run_until_idle(3_600)
    finally:  # the world as it was: no extra rule, no archive (the replays stay, as AWS keeps them)
        rules = {rule["Name"] for rule in events.list_rules(EventBusName=world.BUS, NamePrefix=CHARGE_RULE)["Rules"]}
        for rule in sorted(rules):
            events.remove_targets(Rule=rule, EventBusName=world.BUS, Ids=["cobro"])
            events.delete_rule(Name=rule, EventBusName=world.BUS)
        events.delete_archive(ArchiveName=ARCHIVE)
    charges = provider.charges_per_order()
    return {
        "key": consumer,
        "orders": 2 * order_count,
        "messages_delivered": _first_receives(poller),
        "charges": len(provider.ledger),
        "charges_per_replayed_order": _each(charges, first),
        "charges_per_order_after_double_deploy": _each(charges, later),
    }


def _route(events: Any, queue_arn: str, rule: str) -> None:
    """A rule on bus-mercadofresco sending PedidoCreado to the queue (moto skips the queue policy AWS needs)."""
    events.put_rule(Name=rule, EventBusName=world.BUS, EventPattern=json.dumps(PATTERN))
    target = {"Id": "cobro", "Arn": queue_arn}
    events.put_targets(Rule=rule, EventBusName=world.BUS, Targets=[target])


def _publish(events: Any, order_list: list[orders.Order]) -> None:
    entries = [
        {
            "Source": world.ORDER_SOURCE,
            "DetailType": outbox.ORDER_CREATED,
            "Detail": orders.order_body(order),
            "EventBusName": world.BUS,
        }
        for order in order_list
    ]
    bus.put_events(events, entries)


def _replay(events: Any, archive_arn: str, bus_arn: str, start: dt.datetime, end: dt.datetime) -> None:
    """StartReplay of the archive's window onto its bus, and check it is over (moto's is, when the call returns)."""
    name = f"{REPLAY_PREFIX}{len(events.list_replays(NamePrefix=REPLAY_PREFIX)['Replays']) + 1}"
    events.start_replay(
        ReplayName=name,
        EventSourceArn=archive_arn,
        EventStartTime=start,
        EventEndTime=end,
        Destination={"Arn": bus_arn},
    )
    state = events.describe_replay(ReplayName=name)["State"]
    if state != "COMPLETED":  # real EventBridge takes minutes: this experiment would count too early
        said = _("replay {name} is {state}; this experiment needs moto's synchronous replay")
        raise ReplayNotOverError(said.format(name=name, state=state))


def _first_receives(poller: lambda_poller.Poller) -> int:
    """How many messages the consumer got: each message's first receive (a redelivery is not a new message)."""
    return sum(row["event"] == "received" and row["detail"] == "receive #1" for row in poller.timeline)


def _each(charges: Counter[str], order_list: list[orders.Order]) -> int | str:
    """The charges each order in `order_list` got: one number if all got the same, else the range."""
    counts = sorted({charges[order.pedido_id] for order in order_list})
    return counts[0] if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
