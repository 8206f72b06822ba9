"""Section 1's experiments: at-least-once delivery double-charges a non-idempotent consumer.

Each function resets `cola-mercadofresco-pedidos`, sends orders, lets the
`Poller` run the naive `ChargeOrders` consumer in virtual time, and returns a
`DeliveryRun` with the timeline and the gateway's ledger. Notebook 01 plots
them; the widget there calls `charges_per_order`.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from mercadofresco import orders, queues, world
from mercadofresco.clock import VirtualClock
from mercadofresco.errors import check_range
from mercadofresco.i18n import N_, T_, _, number
from mercadofresco.lessons import rehearsal
from mercadofresco.models import gateway, lambda_poller
from mercadofresco.shop import handlers

INCIDENT_ORDER = orders.Order("PED-2026-084417", Decimal("48.20"))
SETTLE_SECONDS = 3_600  # long enough for every redelivery to play out


@dataclass
class DeliveryRun:
    """What one experiment did: its timeline, the ledger, and where the messages ended."""

    timeline: list[dict[str, Any]]
    ledger: list[gateway.Charge]
    orders_sent: int
    left_in_queue: int
    in_dlq: int
    started_at: dt.datetime

    def charge_seconds(self) -> list[float]:
        """When each charge was made, in seconds from the start of the run (the timeline's axis)."""
        return [(charge.cobrado_en - self.started_at).total_seconds() for charge in self.ledger]

    def charges_per_order(self) -> Counter[str]:
        """How many times each order was charged."""
        return Counter(charge.pedido_id for charge in self.ledger)

    @property
    def extra_charges(self) -> int:
        """Charges beyond one per order: money taken twice."""
        return sum(count - 1 for count in self.charges_per_order().values() if count > 1)

    def summary(self) -> dict[str, Any]:
        """The numbers a reader checks first."""
        return {
            "orders_sent": self.orders_sent,
            "charges": len(self.ledger),
            "extra_charges": self.extra_charges,
            "left_in_queue": self.left_in_queue,
            "in_dlq": self.in_dlq,
        }


def run_orders(
    aws: world.World,
    clock: VirtualClock,
    client: gateway.GatewayClient,
    order_list: list[orders.Order],
    poller_config: lambda_poller.PollerConfig | None = None,
    crashes: lambda_poller.CrashPlan | None = None,
    max_seconds: float = SETTLE_SECONDS,
    handler: lambda_poller.Handler | None = None,
) -> DeliveryRun:
    """Send `order_list` to the orders queue and poll until it settles (by default with the naive ChargeOrders)."""
    poller = lambda_poller.Poller(
        aws.sqs,
        aws.orders.url,
        handler or handlers.ChargeOrders(client),
        clock,
        config=poller_config or lambda_poller.PollerConfig(),
        crashes=crashes or lambda_poller.CrashPlan(),
    )
    for order in order_list:
        orders.send_order(aws.sqs, aws.orders.url, order)
    timeline = poller.run_until_idle(max_seconds)
    return DeliveryRun(
        timeline=timeline,
        ledger=list(client.gateway.ledger),
        orders_sent=len(order_list),
        left_in_queue=sum(queues.queue_counts(aws.sqs, aws.orders.url).values()),
        in_dlq=sum(queues.queue_counts(aws.sqs, aws.orders.dlq_url).values()),
        started_at=poller.origin,
    )


@rehearsal.rehearsed(N_("the six-step double charge"))
def six_steps(
    aws: world.World, clock: VirtualClock, visibility_timeout_seconds: int = 120, send_idempotency_key: bool = False
) -> DeliveryRun:
    """The lesson's six steps: the gateway charges, the response is lost, the message comes back, a second charge."""
    aws.reset_orders_queue(visibility_timeout_seconds)
    provider = gateway.PaymentGateway(clock)
    provider.fail_next(gateway.Fault.RESPONSE_LOST)
    client = gateway.GatewayClient(provider, read_timeout_seconds=180, send_idempotency_key=send_idempotency_key)
    # Lambda's pollers long-poll (up to 20 s) while the queue is empty: the first poll after the visibility
    # timeout runs out takes the message back, and here that is the other consumer, as in the lesson's step 5.
    config = lambda_poller.PollerConfig(idle_poll_seconds=1, max_idle_poll_seconds=20)
    return run_orders(aws, clock, client, [INCIDENT_ORDER], config)


@rehearsal.rehearsed(N_("the slow gateway"))
def slow_gateway(
    aws: world.World,
    clock: VirtualClock,
    visibility_timeout_seconds: int = 120,
    gateway_latency_seconds: float = 150.0,
    read_timeout_seconds: float = 180.0,
) -> DeliveryRun:
    """Exercise 1's first mechanism: a call slower than the visibility timeout, nothing lost, two charges."""
    aws.reset_orders_queue(visibility_timeout_seconds)
    provider = gateway.PaymentGateway(clock, latency=gateway.spike_at(clock.now(), 10, gateway_latency_seconds))
    client = gateway.GatewayClient(provider, read_timeout_seconds=read_timeout_seconds, send_idempotency_key=False)
    return run_orders(aws, clock, client, [INCIDENT_ORDER])


def charges_per_order(
    aws: world.World,
    clock: VirtualClock,
    visibility_timeout_seconds: int = 120,
    gateway_latency_seconds: float = 150.0,
    read_timeout_seconds: float = 180.0,
    order_count: int = 5,
    consumers: int = 2,
) -> DeliveryRun:
    """The widget's experiment: `order_count` orders through a gateway that answers in `gateway_latency_seconds`."""
    check_range("visibility_timeout_seconds", visibility_timeout_seconds, 0, world.MAX_VISIBILITY_SECONDS)
    check_range("gateway_latency_seconds", gateway_latency_seconds, 0.001, 900)
    check_range("read_timeout_seconds", read_timeout_seconds, 1, 900)
    check_range("order_count", order_count, 1, 50)
    check_range("consumers", consumers, 2, 20)
    aws.reset_orders_queue(visibility_timeout_seconds)
    latency = gateway.LatencyProfile(baseline_seconds=gateway_latency_seconds)
    client = gateway.GatewayClient(
        gateway.PaymentGateway(clock, latency=latency),
        read_timeout_seconds=read_timeout_seconds,
        send_idempotency_key=False,
    )
    batch = [orders.Order(orders.order_id(84417 + i), Decimal("48.20")) for i in range(order_count)]
    config = lambda_poller.PollerConfig(batch_size=1, max_concurrency=consumers, max_idle_poll_seconds=20)
    return run_orders(aws, clock, client, batch, poller_config=config)


@rehearsal.rehearsed(N_("the latency sweep"))
def latency_sweep(
    aws: world.World,
    clock: VirtualClock,
    latencies: list[float],
    visibility_timeout_seconds: int,
    read_timeout_seconds: float,
) -> list[dict[str, Any]]:
    """Charges per order for each gateway latency, one configuration."""
    rows = []
    for latency in latencies:
        run = charges_per_order(aws, clock, visibility_timeout_seconds, latency, read_timeout_seconds, order_count=1)
        rows.append(
            {"latency_seconds": latency, "charges_per_order": len(run.ledger) / run.orders_sent, **run.summary()}
        )
    return rows


@rehearsal.rehearsed(N_("the FIFO deduplication experiment"))
def fifo_dedup(aws: world.World, clock: VirtualClock) -> list[dict[str, Any]]:
    """FIFO deduplicates a producer's re-send within 5 minutes, but not a redelivery to the consumer."""
    sqs = aws.sqs
    pair = queues.create_queue_pair(
        sqs,
        f"{world.ORDERS_QUEUE}.fifo",
        f"{world.ORDERS_DLQ}.fifo",
        visibility_timeout_seconds=120,
        max_receive_count=4,
        fifo=True,
    )
    order, group = INCIDENT_ORDER, INCIDENT_ORDER.pedido_id
    dedup = f"pedido:{order.pedido_id}"
    rows = []
    started = clock.now()

    def note(what: str) -> None:
        counts = queues.queue_counts(sqs, pair.url)
        minute = round((clock.now() - started).total_seconds() / 60, 1)
        rows.append({"minute": minute, "what": what, **counts})

    orders.send_order(sqs, pair.url, order, group_id=group, deduplication_id=dedup)
    note(T_("producer sends the order"))
    clock.advance(60)
    orders.send_order(sqs, pair.url, order, group_id=group, deduplication_id=dedup)
    note(T_("producer re-sends it 1 minute later: FIFO drops the copy"))

    provider = gateway.PaymentGateway(clock)
    provider.fail_next(gateway.Fault.RESPONSE_LOST)
    client = gateway.GatewayClient(provider, read_timeout_seconds=180, send_idempotency_key=False)
    poller = lambda_poller.Poller(sqs, pair.url, handlers.ChargeOrders(client), clock)
    poller.run_until_idle(SETTLE_SECONDS)
    said = _("response lost, message redelivered: {count} charges")
    note(said.format(count=number(len(provider.ledger))))
    sqs.delete_queue(QueueUrl=pair.url)
    sqs.delete_queue(QueueUrl=pair.dlq_url)
    return rows


@rehearsal.rehearsed(N_("the FIFO window experiment"))
def fifo_window(aws: world.World, clock: VirtualClock, gap_seconds: float = 360) -> dict[str, Any]:
    """A re-send after the 5-minute window is a new message: FIFO's dedup has a clock."""
    sqs = aws.sqs
    url = sqs.create_queue(QueueName="cola-mercadofresco-ventana.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    order = INCIDENT_ORDER
    orders.send_order(sqs, url, order, group_id=order.pedido_id, deduplication_id=order.pedido_id)
    clock.advance(gap_seconds)
    orders.send_order(sqs, url, order, group_id=order.pedido_id, deduplication_id=order.pedido_id)
    waiting = queues.queue_counts(sqs, url)["visible"]
    sqs.delete_queue(QueueUrl=url)
    return {"gap_seconds": gap_seconds, "messages_waiting": waiting}


def visibility_probe(aws: world.World, clock: VirtualClock, wait_seconds: float) -> dict[str, Any]:
    """Receive an order, do not delete it, wait `wait_seconds`: is it back? (Notebook 00.)"""
    check_range("wait_seconds", wait_seconds, 0, 3_600)
    attributes = aws.sqs.get_queue_attributes(QueueUrl=aws.orders.url, AttributeNames=["VisibilityTimeout"])
    visibility = int(attributes["Attributes"]["VisibilityTimeout"])  # whatever the queue has now
    pair = aws.reset_orders_queue(visibility)
    orders.send_order(aws.sqs, pair.url, INCIDENT_ORDER)
    first = aws.sqs.receive_message(QueueUrl=pair.url, WaitTimeSeconds=0, MessageSystemAttributeNames=["All"])
    clock.advance(wait_seconds)
    again = aws.sqs.receive_message(QueueUrl=pair.url, WaitTimeSeconds=0, MessageSystemAttributeNames=["All"]).get(
        "Messages", []
    )
    return {
        "visibility_timeout_seconds": visibility,
        "waited_seconds": wait_seconds,
        "received_first": len(first.get("Messages", [])) == 1,
        "visible_again": bool(again),
        "receive_count": int(again[0]["Attributes"]["ApproximateReceiveCount"]) if again else 1,
    }
