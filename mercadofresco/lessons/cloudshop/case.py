"""Class 210's CloudShop, problems 1 and 2, replayed on moto (notebook 18).

- `duplicate_emails`: confirmation emails under campaign load. The bus invoking
  the function directly retries it (Lambda's asynchronous invocation: 2 retries)
  when it times out waiting for the email provider, which had already sent the
  email. Then a queue in between with a key, and the key marked before waiting.
- `stock_discounts`: visibility 30 s against batches that take up to 90 s; the
  non-idempotent `ADD stock -1` shows every message processed twice.
- `partial_batch`: one bad message in a batch of 10: the handler raises, or
  returns it in `batchItemFailures`, with and without ReportBatchItemFailures.

Models, named as such: `EmailProvider` (AWS has none), the direct invocation
(moto runs no Lambda), and the Lambda poller of `models.lambda_poller`.
EventBridge, SQS and DynamoDB are moto's.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from mercadofresco import bus, orders, queues, world
from mercadofresco.clock import VirtualClock
from mercadofresco.errors import check_range
from mercadofresco.i18n import T_, _
from mercadofresco.lessons import keys_and_table
from mercadofresco.models import lambda_poller
from mercadofresco.patterns import idempotency, ordering
from mercadofresco.runtime import moto_events

BUS = "bus-cloudshop"
EMAIL_QUEUE, EMAIL_DLQ = "cola-cloudshop-correo", "cloudshop-correo-fallidos"
STOCK_QUEUE, STOCK_DLQ = "cola-cloudshop-inventario", "cloudshop-inventario-fallidos"
STOCK_TABLE = "cloudshop-stock"
STOCK_START = 100
ASYNC_RETRIES = 2  # Lambda's asynchronous invocation retries a failed event twice
BAD_MESSAGE = "(bad message)"  # the poller's timeline has no pedido_id for a body that is not an order
# The designs are compared and looked up by their English (T_ returns it); a table shows them translated.
EMAIL_DESIGNS = (T_("bus -> function"), T_("queue + key"), T_("queue + key marked before waiting"))


# -- the email provider (a model) -----------------------------------------------------------
@dataclass
class EmailProvider:
    """Sends an email the moment it is handed one; its final confirmation comes back later.

    Under campaign load the confirmation takes an exponential time with mean
    `mean_confirm_seconds` (2.17 s puts the p99 at 10 s, so class 210's fix of
    3 × p99 is 30 s, the timeout of its email consumer).
    """

    rng: random.Random
    mean_confirm_seconds: float = 2.17
    sent: list[str] = field(default_factory=list)

    def hand_off(self, pedido_id: str) -> str:
        """The email leaves now, whatever happens to the caller afterwards."""
        self.sent.append(pedido_id)
        return f"correo-{len(self.sent):05d}"

    def confirmation_seconds(self) -> float:
        return self.rng.expovariate(1 / self.mean_confirm_seconds)

    def summary(self, events: int) -> dict[str, Any]:
        per_customer = Counter(self.sent)
        return {
            "events": events,
            "emails_sent": len(self.sent),
            "duplicates": len(self.sent) - len(per_customer),
            "customers_with_2+": sum(1 for n in per_customer.values() if n > 1),
        }


def _campaign(events: int, most: int) -> list[str]:
    check_range("events", events, 1, most)
    return [orders.order_id(500_000 + i) for i in range(events)]


def direct_invocation(events: int, timeout_seconds: float, seed: int = 0) -> dict[str, Any]:
    """The bus invokes the function directly: a timeout is an error, and the event is retried twice (a model)."""
    check_range("timeout_seconds", timeout_seconds, 1, 900)
    provider = EmailProvider(random.Random(seed))
    for pedido_id in _campaign(events, 100_000):
        for _attempt in range(1 + ASYNC_RETRIES):
            provider.hand_off(pedido_id)
            if provider.confirmation_seconds() <= timeout_seconds:
                break  # the function answered in time; otherwise the invocation failed and is retried
    return {
        "design": EMAIL_DESIGNS[0],
        "timeout_s": timeout_seconds,
        "batch": 1,
        **provider.summary(events),
        "timeouts": len(provider.sent) - events,
    }


@dataclass
class SendConfirmationEmails:
    """The email consumer behind the queue: one key per order, `correo-confirmacion:{pedido_id}`.

    With `mark_before_waiting` the key is COMPLETADO as soon as the provider
    has the email, and the wait for its confirmation comes after (class 210's
    third fix); without it, the key is completed only after the confirmation.
    """

    provider: EmailProvider
    store: idempotency.IdempotencyStore
    mark_before_waiting: bool

    def __call__(self, event: dict[str, Any], context: lambda_poller.Invocation) -> dict[str, Any]:
        for record in event["Records"]:
            pedido_id = json.loads(record["body"])["detail"]["pedido_id"]
            handed: list[str] = []

            def send(pedido_id: str = pedido_id, handed: list[str] = handed) -> dict[str, Any]:
                handed.append(self.provider.hand_off(pedido_id))
                if not self.mark_before_waiting:
                    context.wait(self.provider.confirmation_seconds())  # a timeout here leaves EN_CURSO
                return {"mensaje": handed[0]}

            idempotency.run_once(self.store, idempotency.email_key(pedido_id), send, lambda exc: False)
            if handed and self.mark_before_waiting:
                context.wait(self.provider.confirmation_seconds())  # the key is already COMPLETADO
        return {"batchItemFailures": []}


def _bus_to_queue(aws: world.World, queue_url: str) -> None:
    """bus-cloudshop, rule pedido.confirmado -> the email queue (EventBridge and SQS in moto)."""
    events = aws.client("events")
    if BUS not in [bus["Name"] for bus in events.list_event_buses()["EventBuses"]]:
        events.create_event_bus(Name=BUS)
    pattern = json.dumps({"source": ["cloudshop.pedidos"], "detail-type": ["pedido.confirmado"]})
    events.put_rule(Name="pedido-confirmado-correo", EventBusName=BUS, EventPattern=pattern)
    target = {"Id": "correo", "Arn": queues.queue_arn(aws.sqs, queue_url)}
    events.put_targets(Rule="pedido-confirmado-correo", EventBusName=BUS, Targets=[target])


def _publish(aws: world.World, pedido_ids: list[str]) -> None:
    entries = [
        {
            "Source": "cloudshop.pedidos",
            "DetailType": "pedido.confirmado",
            "EventBusName": BUS,
            "Detail": json.dumps({"pedido_id": pedido_id}),
        }
        for pedido_id in pedido_ids
    ]
    with moto_events.cached_jsonpath():  # moto re-parses the same 8 JSONPaths per event: 0.2 s for 40 events
        bus.put_events(aws.client("events"), entries)


def duplicate_emails(
    aws: world.World,
    clock: VirtualClock,
    design: str,
    events: int = 40,
    timeout_seconds: float = 5.0,
    batch_size: int = 1,
    seed: int = 0,
) -> dict[str, Any]:
    """One campaign of `events` confirmations through `design`; how many customers got more than one email?

    The direct invocation takes one event per invocation; behind the queue the
    poller takes `batch_size` messages and the timeout covers the whole batch.
    """
    if design not in EMAIL_DESIGNS:
        said = _("design must be one of {designs}; got {design}")
        raise ValueError(said.format(designs=", ".join(EMAIL_DESIGNS), design=repr(design)))
    if design == EMAIL_DESIGNS[0]:
        return direct_invocation(events, timeout_seconds, seed)
    check_range("timeout_seconds", timeout_seconds, 1, 900)
    pair = queues.create_queue_pair(
        aws.sqs, EMAIL_QUEUE, EMAIL_DLQ, visibility_timeout_seconds=180, max_receive_count=3
    )
    _bus_to_queue(aws, pair.url)
    keys_and_table.empty_table(aws)
    provider = EmailProvider(random.Random(seed))
    handler = SendConfirmationEmails(
        provider, idempotency.IdempotencyStore(aws.dynamodb, clock), mark_before_waiting=design == EMAIL_DESIGNS[2]
    )
    config = lambda_poller.PollerConfig(
        batch_size=batch_size, max_concurrency=3, function_timeout_seconds=timeout_seconds, max_idle_poll_seconds=20
    )
    poller = lambda_poller.Poller(aws.sqs, pair.url, handler, clock, config)
    _publish(aws, _campaign(events, 200))
    poller.run_until_idle(6 * 3_600)
    timeouts = sum(1 for row in poller.timeline if row["event"] == "timed_out")
    _delete(aws, pair)
    return {
        "design": design,
        "timeout_s": timeout_seconds,
        "batch": batch_size,
        **provider.summary(events),
        "timeouts": timeouts,
    }


def _delete(aws: world.World, pair: queues.QueuePair) -> None:
    aws.sqs.delete_queue(QueueUrl=pair.url)
    aws.sqs.delete_queue(QueueUrl=pair.dlq_url)


# -- problem 2: the stock consumer ----------------------------------------------------------
@dataclass
class DiscountStock:
    """CloudShop's inventory consumer: `ADD stock -1` per order (not idempotent), each message taking a while.

    A malformed order is reported in `batchItemFailures`, or with `raises` the invocation fails once the batch is
    done (the usual "process them all, then throw if one failed").
    """

    dynamodb: Any
    rng: random.Random
    seconds_per_message: tuple[float, float] = (1.0, 9.0)
    raises: bool = False

    def __call__(self, event: dict[str, Any], context: lambda_poller.Invocation) -> dict[str, Any]:
        failures = []
        for record in event["Records"]:
            seconds = self.rng.uniform(*self.seconds_per_message)
            if seconds > 0:
                context.wait(seconds)
            try:
                order = orders.parse_order(record["body"])
            except orders.MalformedOrderError:
                failures.append({"itemIdentifier": record["messageId"]})
                continue
            self.dynamodb.update_item(
                TableName=STOCK_TABLE,
                Key={"sku": {"S": order.pedido_id}},
                UpdateExpression="ADD stock :sold",
                ExpressionAttributeValues={":sold": {"N": "-1"}},
            )
        if failures and self.raises:  # the whole batch fails: Lambda makes all of it visible again
            raise orders.MalformedOrderError(_("{count} malformed order(s) in the batch").format(count=len(failures)))
        return {"batchItemFailures": failures}


def _stock_table(aws: world.World, pedido_ids: list[str]) -> None:
    """Every sku at STOCK_START (the orders are at most 60: 25 puts a call, BatchWriteItem's limit)."""
    ordering.create_stock_table(aws.dynamodb, STOCK_TABLE)
    puts = [{"PutRequest": {"Item": {"sku": {"S": p}, "stock": {"N": str(STOCK_START)}}}} for p in pedido_ids]
    for start in range(0, len(puts), 25):
        requests = {STOCK_TABLE: puts[start : start + 25]}
        while requests:
            requests = aws.dynamodb.batch_write_item(RequestItems=requests).get("UnprocessedItems") or {}


def _discounts(aws: world.World, pedido_ids: list[str]) -> dict[str, int]:
    """Units taken off each sku, read back in one BatchGetItem (up to 100 keys)."""
    stock: dict[str, int] = {}
    requests = {STOCK_TABLE: {"Keys": [{"sku": {"S": p}} for p in pedido_ids], "ConsistentRead": True}}
    while requests:
        answer = aws.dynamodb.batch_get_item(RequestItems=requests)
        stock |= {item["sku"]["S"]: int(item["stock"]["N"]) for item in answer["Responses"][STOCK_TABLE]}
        requests = answer.get("UnprocessedKeys") or {}
    return {p: STOCK_START - stock[p] for p in pedido_ids}


@dataclass
class StockRun:
    """What one run of the inventory consumer did, per message."""

    discounts: dict[str, int]  # pedido_id -> units taken off (1 is right)
    receives: dict[str, int]  # pedido_id (or BAD_MESSAGE) -> times the handler got it
    in_dlq: int
    timeline: list[dict[str, Any]]

    def summary(self) -> dict[str, Any]:
        return {
            "orders": len(self.discounts),
            "discounts": sum(self.discounts.values()),
            "duplicated": sum(n - 1 for n in self.discounts.values() if n > 1),
            "receives_of_each_good": sorted({n for p, n in self.receives.items() if p != BAD_MESSAGE}),
            "receives_of_the_bad": self.receives.get(BAD_MESSAGE, 0),
            "in_dlq": self.in_dlq,
        }


def _run_stock(
    aws: world.World,
    clock: VirtualClock,
    bodies: list[str],
    visibility: int,
    config: lambda_poller.PollerConfig,
    seconds_per_message: tuple[float, float],
    seed: int,
    raises: bool = False,
) -> StockRun:
    pair = queues.create_queue_pair(
        aws.sqs, STOCK_QUEUE, STOCK_DLQ, visibility_timeout_seconds=visibility, max_receive_count=5
    )
    pedido_ids = [orders.parse_order(b).pedido_id for b in bodies if _valid(b)]
    _stock_table(aws, pedido_ids)
    handler = DiscountStock(aws.dynamodb, random.Random(seed), seconds_per_message, raises)
    poller = lambda_poller.Poller(aws.sqs, pair.url, handler, clock, config)
    orders.send_entries(aws.sqs, pair.url, [{"MessageBody": body} for body in bodies])
    poller.run_until_idle(6 * 3_600)
    received = Counter(row["pedido_id"] or BAD_MESSAGE for row in poller.timeline if row["event"] == "received")
    run = StockRun(
        _discounts(aws, pedido_ids),
        dict(received),
        queues.queue_counts(aws.sqs, pair.dlq_url)["visible"],
        poller.timeline,
    )
    _delete(aws, pair)
    return run


def _valid(body: str) -> bool:
    try:
        orders.parse_order(body)
    except orders.MalformedOrderError:
        return False
    return True


def stock_discounts(
    aws: world.World,
    clock: VirtualClock,
    visibility_timeout_seconds: int = 30,
    order_count: int = 10,
    timeout_seconds: float = 25.0,
    batch_size: int = 10,
    seed: int = 0,
) -> StockRun:
    """Class 210's problem 2: batches of 10 that take up to 90 s on a queue whose visibility is 30 s.

    The poller's function timeout is `timeout_seconds × batch_size`: the batch's
    budget when each message may use its own timeout (class 210's reading).
    """
    check_range("visibility_timeout_seconds", visibility_timeout_seconds, 1, world.MAX_VISIBILITY_SECONDS)
    check_range("order_count", order_count, 1, 60)
    check_range("timeout_seconds", timeout_seconds, 1, 90)
    check_range("batch_size", batch_size, 1, 10)
    bodies = [
        orders.order_body(orders.Order(orders.order_id(600_000 + i), Decimal("19.90"))) for i in range(order_count)
    ]
    config = lambda_poller.PollerConfig(
        batch_size=batch_size,
        max_concurrency=5,
        function_timeout_seconds=timeout_seconds * batch_size,
        max_idle_poll_seconds=20,
    )
    return _run_stock(aws, clock, bodies, visibility_timeout_seconds, config, (1.0, 9.0), seed)


def partial_batch(
    aws: world.World, clock: VirtualClock, report_batch_item_failures: bool, raises: bool = False
) -> StockRun:
    """Nine good orders and one with a negative amount in one batch of 10; the handler reports the bad one in
    `batchItemFailures`, or with `raises` fails the invocation on it."""
    bodies = [orders.order_body(orders.Order(orders.order_id(700_000 + i), Decimal("19.90"))) for i in range(9)]
    bodies.insert(4, '{"importe": "-19.90", "pedido_id": "PED-2026-700099", "version": 1}')
    config = lambda_poller.PollerConfig(
        batch_size=10,
        max_concurrency=2,
        report_batch_item_failures=report_batch_item_failures,
        max_idle_poll_seconds=20,
    )
    return _run_stock(aws, clock, bodies, 30, config, (0.0, 0.0), seed=0, raises=raises)  # time is not the point
