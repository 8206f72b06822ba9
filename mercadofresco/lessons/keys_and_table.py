"""Experiments of sections 2-4: what an idempotency key and the three-state table absorb, and the wrong designs.

Each function builds what it needs in a `World`, runs one experiment on moto
under the virtual clock and returns rows to show. Two wrong designs from the
lesson's common mistakes live here too, so notebooks and tests can watch them
fail: `TwoStateStore` (no EN_CURSO) and `NoLockExpiryStore` (EN_CURSO forever).
"""

from __future__ import annotations

import functools
import uuid
from decimal import Decimal
from random import Random
from typing import Any

from mercadofresco import orders, queues, world
from mercadofresco.clock import Task, VirtualClock, Waiter, together
from mercadofresco.errors import check_range
from mercadofresco.i18n import N_, T_, _
from mercadofresco.lessons import rehearsal
from mercadofresco.lessons.delivery import experiments
from mercadofresco.models import gateway, lambda_poller
from mercadofresco.patterns import idempotency, ordering
from mercadofresco.patterns.idempotency import DEFAULT_LOCK_SECONDS, Estado, IdempotencyStore
from mercadofresco.shop import handlers

ORDER = experiments.INCIDENT_ORDER  # PED-2026-084417, 48.20 €
STOCK_TABLE = "mercadofresco-stock"  # a small table for the set-vs-increment experiment only


# -- wrong designs (section 17), kept to be watched failing --------------------------------
class TwoStateStore(IdempotencyStore):
    """WRONG: look first, write only COMPLETADO at the end. Two consumers can both see "not there"."""

    def acquire(self, clave: str) -> idempotency.Record | None:
        existing = self.get(clave)
        if existing is not None and existing.estado is not Estado.EN_CURSO:
            return existing
        return None  # "not there": go ahead (and so does everybody else who looked at the same time)


class NoLockExpiryStore(IdempotencyStore):
    """WRONG: EN_CURSO lasts as long as the record (24 h). A consumer that dies holding it blocks the order."""

    def __init__(self, dynamodb: Any, clock: VirtualClock, ttl_seconds: int = idempotency.DEFAULT_TTL_SECONDS) -> None:
        super().__init__(dynamodb, clock, ttl_seconds=ttl_seconds, lock_seconds=ttl_seconds - 1)


# -- section 2: set vs increment -------------------------------------------------------------
def stock_drift(aws: world.World, deliveries: int = 3, stock: int = 40) -> dict[str, int]:
    """Apply "one unit of sku 3401 sold" `deliveries` times, as an increment and as an assignment."""
    check_range("deliveries", deliveries, 1, 20)
    dynamodb = aws.dynamodb
    ordering.create_stock_table(dynamodb, STOCK_TABLE)
    for sku in ("3401-incremento", "3401-asignacion"):
        dynamodb.put_item(TableName=STOCK_TABLE, Item={"sku": {"S": sku}, "stock": {"N": str(stock)}})
    for _delivery in range(deliveries):  # the same message, delivered `deliveries` times
        dynamodb.update_item(
            TableName=STOCK_TABLE,
            Key={"sku": {"S": "3401-incremento"}},
            UpdateExpression="ADD stock :sold",
            ExpressionAttributeValues={":sold": {"N": "-1"}},
        )
        dynamodb.update_item(
            TableName=STOCK_TABLE,
            Key={"sku": {"S": "3401-asignacion"}},
            UpdateExpression="SET stock = :left",
            ExpressionAttributeValues={":left": {"N": str(stock - 1)}},
        )

    def read(sku: str) -> int:
        return int(dynamodb.get_item(TableName=STOCK_TABLE, Key={"sku": {"S": sku}})["Item"]["stock"]["N"])

    return {
        "deliveries": deliveries,
        "expected": stock - 1,
        "increment": read("3401-incremento"),
        "assignment": read("3401-asignacion"),
    }


# -- section 2: which key --------------------------------------------------------------------
def key_functions(seed: int = 7) -> dict[str, handlers.KeyOf]:
    """The four candidate keys of section 2, as functions of (record, order)."""
    rng = Random(seed)
    return {
        "MessageId": lambda record, order: record["messageId"],
        T_("consumer UUID"): lambda record, order: str(uuid.UUID(int=rng.getrandbits(128))),
        "cobro:{pedido_id}": handlers.key_from_order,
        T_("content hash"): lambda record, order: idempotency.content_key(
            "cobro", {"pedido_id": order.pedido_id, "importe": order.importe}
        ),
    }


@rehearsal.rehearsed(N_("the re-sent order, for one key"))
def charges_by_key(aws: world.World, clock: VirtualClock, key_name: str) -> dict[str, Any]:
    """The producer sends the order twice and the first receive dies before deleting: how many charges?"""
    key_of = key_functions()[key_name]
    aws.reset_orders_queue()
    empty_table(aws)
    provider = gateway.PaymentGateway(clock)
    client = gateway.GatewayClient(provider, send_idempotency_key=False)  # our table alone
    handler = handlers.IdempotentChargeOrders(client, IdempotencyStore(aws.dynamodb, clock), key_of=key_of)
    config = lambda_poller.PollerConfig(batch_size=1, max_idle_poll_seconds=20)
    poller = lambda_poller.Poller(
        aws.sqs, aws.orders.url, handler, clock, config, lambda_poller.CrashPlan({"before_delete": 1})
    )
    message_ids = {orders.send_order(aws.sqs, aws.orders.url, ORDER) for _ in range(2)}  # a producer re-send
    poller.run_until_idle(3_600)
    return {"key": key_name, "messages_sent": len(message_ids), "charges": len(provider.ledger)}


# -- section 3: the race, the lock, the TTL ----------------------------------------------------
def race(aws: world.World, clock: VirtualClock, design: str, consumers: int = 2) -> dict[str, Any]:
    """`consumers` receive the same message at the same instant; each checks the table, then charges."""
    if design not in (T_("two states"), T_("three states")):
        raise ValueError(_('design must be "two states" or "three states"; got {design}').format(design=repr(design)))
    check_range("consumers", consumers, 2, 50)
    store_class = TwoStateStore if design == "two states" else IdempotencyStore
    result = _same_order_at_once(aws, clock, store_class, consumers)
    charged, backed_off = _("charged {reference}"), _("backed off ({state})").format(state="EN_CURSO")
    outcomes = [charged.format(reference=a["referencia_cobro"]) if a else backed_off for a in result["first_round"]]
    return {"design": design, "consumers": consumers, "charges": result["charges"], "outcomes": sorted(outcomes)}


def parallel_duplicates(aws: world.World, clock: VirtualClock, copies: int = 50) -> dict[str, Any]:
    """The lesson's test: the same message `copies` times in parallel -> one effect, `copies` identical answers.

    Round 1: all copies at once; one charges, the rest find EN_CURSO and back off.
    Round 2: the queue redelivers the ones that backed off; they get the stored result.
    """
    check_range("copies", copies, 2, 200)
    result = _same_order_at_once(aws, clock, IdempotencyStore, copies)
    answers = [answer for answer in result["first_round"] + result["second_round"] if answer is not None]
    return {
        "copies": copies,
        "charges": result["charges"],
        "backed_off_in_round_1": result["first_round"].count(None),
        "answers": len(answers),
        "distinct_answers": len({answer["referencia_cobro"] for answer in answers}),
    }


def _same_order_at_once(
    aws: world.World, clock: VirtualClock, store_class: type[IdempotencyStore], copies: int
) -> dict[str, Any]:
    """`copies` consumers receive the same order at the same virtual instant.

    They run with `clock.together`: each runs alone until it waits, and the
    gateway's 240 ms answer is such a wait, so every other consumer reaches the
    table while the first charge is on its way. The same schedule on every run.
    """
    empty_table(aws)
    provider = gateway.PaymentGateway(clock)
    store = store_class(aws.dynamodb, clock)
    clave = idempotency.charge_key(ORDER.pedido_id)

    def attempt(task: Task, first_round: bool = True) -> dict[str, Any] | None:
        operation = functools.partial(_charge, provider, task) if first_round else _fail
        try:
            return idempotency.run_once(store, clave, operation, gateway.is_permanent_failure)
        except idempotency.AlreadyInProgressError:
            return None

    first = results(together(clock, [attempt] * copies))
    redelivered = functools.partial(attempt, first_round=False)
    second = results(together(clock, [redelivered] * first.count(None)))
    return {"charges": len(provider.ledger), "first_round": first, "second_round": second}


def results(tasks: list[Task]) -> list[Any]:
    """What each task returned; the first error any of them raised is raised here."""
    for task in tasks:
        if task.error is not None:
            raise task.error
    return [task.result for task in tasks]


def _charge(provider: gateway.PaymentGateway, waiter: Waiter) -> dict[str, Any]:
    charge = provider.charge(ORDER.pedido_id, ORDER.importe, waiter=waiter)
    return {"referencia_cobro": charge.referencia_cobro, "importe": str(charge.importe)}


def _fail() -> dict[str, Any]:
    raise AssertionError(_("a redelivered duplicate must get the stored result, not charge"))


@rehearsal.rehearsed(N_("the consumer that dies holding the lock"))
def consumer_dies_holding_the_lock(aws: world.World, clock: VirtualClock, lock_expires: bool) -> dict[str, Any]:
    """The consumer dies between the lock and the completion; the queue keeps redelivering."""
    aws.reset_orders_queue()
    empty_table(aws)
    provider = gateway.PaymentGateway(clock)
    store_class = IdempotencyStore if lock_expires else NoLockExpiryStore
    handler = handlers.IdempotentChargeOrders(gateway.GatewayClient(provider), store_class(aws.dynamodb, clock))
    config = lambda_poller.PollerConfig(max_idle_poll_seconds=20)
    poller = lambda_poller.Poller(
        aws.sqs, aws.orders.url, handler, clock, config, lambda_poller.CrashPlan({"after_lock": 1})
    )
    orders.send_order(aws.sqs, aws.orders.url, ORDER)
    locked_at = clock.timestamp()
    poller.run_until_idle(3_600)
    clave = idempotency.charge_key(ORDER.pedido_id)
    record = handler.store.get(clave)
    return {
        "lock_expires": lock_expires,
        "receives": sum(row["event"] == "received" for row in poller.timeline),
        "charges": len(provider.ledger),
        "estado": record.estado.value if record else "-",
        "in_dlq": sum(queues.queue_counts(aws.sqs, aws.orders.dlq_url).values()),
        "key_blocked_hours": _blocked_hours(handler.store, clock, clave, locked_at) if not lock_expires else "-",
    }


def _blocked_hours(store: IdempotencyStore, clock: VirtualClock, clave: str, locked_at: float) -> float:
    """Hours from the lock until a new acquire of `clave` succeeds: try it each hour until it does."""
    for _hour in range(14 * 24):  # 14 days at most: the longest TTL the workbook allows
        if store.acquire(clave) is None:
            return round((clock.timestamp() - locked_at) / 3_600)
        clock.advance(3_600)  # still held: nobody can charge this order
    raise RuntimeError(_("{clave} is still held after 14 days").format(clave=clave))


def crash_at_step(
    aws: world.World, clock: VirtualClock, step: str, gateway_key: bool, lock_seconds: int = DEFAULT_LOCK_SECONDS
) -> dict[str, Any]:
    """The complete consumer dies once at `step`; the queue redelivers. How many charges, and is it done?"""
    aws.reset_orders_queue()
    empty_table(aws)
    provider = gateway.PaymentGateway(clock)
    client = gateway.GatewayClient(provider, send_idempotency_key=gateway_key)
    store = IdempotencyStore(aws.dynamodb, clock, lock_seconds=lock_seconds)
    handler = handlers.IdempotentChargeOrders(client, store)
    config = lambda_poller.PollerConfig(max_idle_poll_seconds=20)
    poller = lambda_poller.Poller(aws.sqs, aws.orders.url, handler, clock, config, lambda_poller.CrashPlan({step: 1}))
    orders.send_order(aws.sqs, aws.orders.url, ORDER)
    poller.run_until_idle(3_600)
    record = handler.store.get(idempotency.charge_key(ORDER.pedido_id))
    return {
        "crash at": step,
        "gateway key": gateway_key,
        "gateway calls": provider.calls,
        "charges": len(provider.ledger),
        "estado": record.estado.value if record else "-",
        "left_in_queue": sum(queues.queue_counts(aws.sqs, aws.orders.url).values()),
    }


def failure_kinds(aws: world.World, clock: VirtualClock) -> list[dict[str, Any]]:
    """Two orders: one meets a 503 (transient: released and retried), one a declined card (permanent: FALLIDO)."""
    aws.reset_orders_queue()
    empty_table(aws)
    unavailable, declined = orders.Order(orders.order_id(84418), Decimal("12.50")), ORDER
    provider = gateway.PaymentGateway(clock, declined_orders={declined.pedido_id})
    provider.fail_next(gateway.Fault.UNAVAILABLE)
    handler = handlers.IdempotentChargeOrders(gateway.GatewayClient(provider), IdempotencyStore(aws.dynamodb, clock))
    config = lambda_poller.PollerConfig(batch_size=1, max_idle_poll_seconds=20)
    poller = lambda_poller.Poller(aws.sqs, aws.orders.url, handler, clock, config)
    for order in (unavailable, declined):
        orders.send_order(aws.sqs, aws.orders.url, order)
    poller.run_until_idle(3_600)
    rows = []
    for order, what in ((unavailable, T_("503 on the first call")), (declined, T_("card declined (402)"))):
        record = handler.store.get(idempotency.charge_key(order.pedido_id))
        rows.append(
            {
                "pedido_id": order.pedido_id,
                "gateway said": what,
                "receives": sum(
                    r["event"] == "received" and r["pedido_id"] == order.pedido_id for r in poller.timeline
                ),
                "charges": len(provider.charges_for(order.pedido_id)),
                "estado": record.estado.value if record else "-",
            }
        )
    return rows


def same_order_later(aws: world.World, clock: VirtualClock, ttl_hours: float, hours_later: float) -> dict[str, Any]:
    """The order is charged; `hours_later` the same message comes back (a DLQ redrive, a replay). Charged again?"""
    check_range("ttl_hours", ttl_hours, 0, 24 * 14, why=_("14 days"), low_excluded=True)
    check_range("hours_later", hours_later, 0, 24 * 14)
    empty_table(aws)
    provider = gateway.PaymentGateway(clock)
    store = IdempotencyStore(aws.dynamodb, clock, ttl_seconds=int(ttl_hours * 3600), lock_seconds=1)
    clave = idempotency.charge_key(ORDER.pedido_id)
    for wait in (0, hours_later * 3600):
        clock.advance(wait)
        idempotency.run_once(store, clave, lambda: _charge(provider, clock), gateway.is_permanent_failure)
    return {"ttl_hours": ttl_hours, "hours_later": hours_later, "charges": len(provider.ledger)}


def monthly_cost(
    ttl_hours: float,
    orders_per_month: int = 240_000,
    operations_per_order: int = 3,
    writes_per_operation: int = 2,
    usd_per_million_writes: float = 0.625,
    item_bytes: int = 400,
    usd_per_gb_month: float = 0.25,
) -> dict[str, float]:
    """On-demand cost of the table for a month, from stated assumptions (prices are examples, data fictitious).

    Writes: acquire + complete for each operation (a charge, an email, a reservation).
    Storage: the records alive at any moment, i.e. one TTL's worth of records.
    """
    records_per_hour = orders_per_month * operations_per_order / (30 * 24)
    live_records = records_per_hour * ttl_hours
    writes = orders_per_month * operations_per_order * writes_per_operation
    write_usd = writes / 1e6 * usd_per_million_writes
    storage_usd = live_records * item_bytes / 1e9 * usd_per_gb_month
    return {
        "ttl_hours": ttl_hours,
        "live_records": round(live_records),
        "writes_usd": round(write_usd, 2),
        "storage_usd": round(storage_usd, 4),
        "total_usd": round(write_usd + storage_usd, 2),
    }


def empty_table(aws: world.World) -> None:
    """Delete every record, so an experiment starts from a clean table (25 deletes a call)."""
    dynamodb = aws.dynamodb
    for page in dynamodb.get_paginator("scan").paginate(TableName=aws.table_name, ProjectionExpression="clave"):
        deletes = [{"DeleteRequest": {"Key": {"clave": item["clave"]}}} for item in page["Items"]]
        for start in range(0, len(deletes), 25):  # BatchWriteItem's limit
            requests = {aws.table_name: deletes[start : start + 25]}
            while requests:  # what DynamoDB could not do yet comes back in UnprocessedItems
                requests = dynamodb.batch_write_item(RequestItems=requests).get("UnprocessedItems") or {}
