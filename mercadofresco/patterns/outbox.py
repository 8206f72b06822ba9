"""The transactional outbox on PostgreSQL (notebook 13, lab 3).

There is no transaction that spans Aurora and EventBridge or SQS. So the order and
the event it announces are written in ONE database transaction: a row in `pedidos`
and a row in `outbox`. Either both exist or neither does. A separate publisher then
claims up to 100 unpublished rows in creation order with `FOR UPDATE SKIP LOCKED`
(several publishers never take the same row), publishes them, marks them published
and commits. If it dies between publishing and marking, the rows are published again:
at least once, never lost. The outbox `id` travels with the event so the idempotent
consumer (patterns/idempotency) can drop the duplicate.

The columns follow Debezium's outbox (aggregatetype, aggregateid, type, payload) with
the lesson's Spanish names; a partial index covers only the unpublished rows, so the
publisher's query stays small however long the history grows. Operating it adds two
jobs: watch the backlog (pending rows, age of the oldest) and delete rows published
more than 7 days ago. Times are passed in (`now`), never read from the server, so the
virtual clock drives them.

The experiments (the claim without SKIP LOCKED, the query plans) live in `lessons/outbox/`.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mercadofresco import alarms, names
from mercadofresco.errors import MercadoFrescoError, check_range
from mercadofresco.i18n import _
from mercadofresco.orders import Order
from mercadofresco.patterns import idempotency

BATCH_SIZE = 100  # rows a publisher claims at a time (the lesson's figure)
POLL_SECONDS = 1.0  # how often a publisher looks
KEEP_DAYS = 7  # published rows older than this are deleted
PENDING_ALARM_ROWS = 500
OLDEST_ALARM_SECONDS = 60
ENTRIES_PER_CALL = 10  # put_events and send_message_batch take at most 10 entries
ORDER_AGGREGATE, ORDER_CREATED = "pedido", "PedidoCreado"

# -- the schema (a reconstruction: the lesson's SQL was lost) ---------------------------
ORDERS_TABLE = """
CREATE TABLE IF NOT EXISTS pedidos (
    pedido_id  text PRIMARY KEY,
    importe    numeric(10, 2) NOT NULL CHECK (importe > 0),
    estado     text NOT NULL DEFAULT 'CONFIRMADO',
    creado_en  timestamptz NOT NULL
)"""
OUTBOX_TABLE = """
CREATE TABLE IF NOT EXISTS outbox (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- travels as the event's id
    tipo_agregado  text NOT NULL,         -- Debezium: aggregatetype ("pedido")
    agregado_id    text NOT NULL,         -- Debezium: aggregateid (the pedido_id)
    tipo_evento    text NOT NULL,         -- Debezium: type ("PedidoCreado")
    payload        jsonb NOT NULL,
    creado_en      timestamptz NOT NULL,
    publicado      boolean NOT NULL DEFAULT false,
    publicado_en   timestamptz
)"""
# Only the unpublished rows: the index stays as small as the backlog, not the history.
PENDING_INDEX = "CREATE INDEX IF NOT EXISTS outbox_pendientes ON outbox (creado_en, id) WHERE NOT publicado"
CLAIM = "SELECT id, tipo_agregado, agregado_id, tipo_evento, payload, creado_en FROM outbox WHERE NOT publicado"
ORDER_BY = " ORDER BY creado_en, id LIMIT %s"
CLAIM_NEXT = CLAIM + ORDER_BY + " FOR UPDATE SKIP LOCKED"  # the publisher's claim: rows another one holds are skipped


class OutboxError(MercadoFrescoError):
    """Base of the outbox errors."""


class PublishError(OutboxError):
    """The bus or the queue refused some entries; the batch stays unpublished."""


class Crash(OutboxError):
    """Injected: the process dies here (a deployment, a scale-in, an OutOfMemory)."""


@dataclass(frozen=True)
class OutboxRow:
    """One row of `outbox` as the publisher reads it, with the table's own names."""

    id: int
    tipo_agregado: str
    agregado_id: str
    tipo_evento: str
    payload: dict[str, Any]
    creado_en: dt.datetime


@dataclass(frozen=True)
class PublisherPolicy:
    """How a publisher works: rows per claim and seconds between polls."""

    batch_size: int = BATCH_SIZE
    poll_seconds: float = POLL_SECONDS

    def __post_init__(self) -> None:
        check_range("batch_size", self.batch_size, 1, 1_000)
        check_range("poll_seconds", self.poll_seconds, 0.1, 60.0)


@dataclass(frozen=True)
class Backlog:
    """What the outbox holds unpublished at one instant."""

    pending: int
    oldest_seconds: float


# -- writing: the order and its event in one transaction --------------------------------
def create_tables(conn: Any) -> None:
    """Create `pedidos`, `outbox` and the partial index (no-op if they exist), and commit."""
    with conn.transaction():
        for statement in (ORDERS_TABLE, OUTBOX_TABLE, PENDING_INDEX):
            conn.execute(statement)


def order_payload(order: Order) -> dict[str, Any]:
    """The event's content: what the consumers need to know about the new order."""
    return {"pedido_id": order.pedido_id, "importe": str(order.importe), "version": order.version}


def place_order(conn: Any, order: Order, now: dt.datetime) -> int:
    """INSERT the order and its outbox row in ONE transaction; return the outbox id."""
    with conn.transaction():
        conn.execute(
            "INSERT INTO pedidos (pedido_id, importe, creado_en) VALUES (%s, %s, %s)",
            (order.pedido_id, order.importe, now),
        )
        row = conn.execute(
            "INSERT INTO outbox (tipo_agregado, agregado_id, tipo_evento, payload, creado_en)"
            " VALUES (%s, %s, %s, %s, %s) RETURNING id",
            (ORDER_AGGREGATE, order.pedido_id, ORDER_CREATED, json.dumps(order_payload(order)), now),
        ).fetchone()
    return row[0]


def place_orders(conn: Any, placed: list[tuple[Order, dt.datetime]]) -> None:
    """`place_order`'s two INSERTs for many orders (each at its own instant) in ONE transaction, two round trips.

    For orders that arrive together (an import, a simulated minute of traffic): all or none are saved.
    """
    with conn.transaction(), conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO pedidos (pedido_id, importe, creado_en) VALUES (%s, %s, %s)",
            [(order.pedido_id, order.importe, now) for order, now in placed],
        )
        cursor.executemany(
            "INSERT INTO outbox (tipo_agregado, agregado_id, tipo_evento, payload, creado_en)"
            " VALUES (%s, %s, %s, %s, %s)",
            [
                (ORDER_AGGREGATE, order.pedido_id, ORDER_CREATED, json.dumps(order_payload(order)), now)
                for order, now in placed
            ],
        )


# -- the publisher ------------------------------------------------------------------------
def claim(conn: Any, batch_size: int = BATCH_SIZE) -> list[OutboxRow]:
    """Lock and return up to `batch_size` unpublished rows, oldest first, inside the caller's transaction.

    FOR UPDATE SKIP LOCKED: rows another publisher holds are passed over, so
    publishers never wait for each other nor take the same row.
    """
    rows = conn.execute(CLAIM_NEXT, (batch_size,)).fetchall()
    return [OutboxRow(*row) for row in rows]


def mark_published(conn: Any, ids: list[int], now: dt.datetime) -> None:
    """Set publicado and publicado_en on the given rows (inside the caller's transaction)."""
    conn.execute("UPDATE outbox SET publicado = true, publicado_en = %s WHERE id = ANY(%s)", (now, ids))


class Sink(Protocol):
    """Where a publisher sends events: the bus or a queue."""

    def publish(self, rows: list[OutboxRow]) -> None: ...


class EventBusSink:
    """put_events on `bus-mercadofresco`; the outbox id goes in the detail as `outbox_id`."""

    def __init__(self, events: Any, bus_name: str = names.BUS, source: str = names.ORDER_SOURCE) -> None:
        self.events = events
        self.bus_name = bus_name
        self.source = source

    def publish(self, rows: list[OutboxRow]) -> None:
        for start in range(0, len(rows), ENTRIES_PER_CALL):
            entries = [self.entry(row) for row in rows[start : start + ENTRIES_PER_CALL]]
            failed = self.events.put_events(Entries=entries).get("FailedEntryCount", 0)
            if failed:
                said = _("{failed} of {count} events refused by {bus}")
                raise PublishError(said.format(failed=failed, count=len(entries), bus=self.bus_name))

    def entry(self, row: OutboxRow) -> dict[str, Any]:
        detail = {**row.payload, "outbox_id": row.id}
        return {
            "Source": self.source,
            "DetailType": row.tipo_evento,
            "Detail": json.dumps(detail),
            "EventBusName": self.bus_name,
        }


class QueueSink:
    """send_message_batch to an SQS queue; the outbox id is an attribute (and the dedup id on FIFO)."""

    def __init__(self, sqs: Any, queue_url: str) -> None:
        self.sqs = sqs
        self.queue_url = queue_url
        self.fifo = queue_url.endswith(".fifo")

    def publish(self, rows: list[OutboxRow]) -> None:
        for start in range(0, len(rows), ENTRIES_PER_CALL):
            entries = [self.entry(row) for row in rows[start : start + ENTRIES_PER_CALL]]
            failed = self.sqs.send_message_batch(QueueUrl=self.queue_url, Entries=entries).get("Failed", [])
            if failed:
                said = _("{failed} of {count} messages refused: {code}")
                raise PublishError(said.format(failed=len(failed), count=len(entries), code=failed[0].get("Code")))

    def entry(self, row: OutboxRow) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "Id": str(row.id),
            "MessageBody": json.dumps(row.payload, sort_keys=True),
            "MessageAttributes": {
                "outbox_id": {"DataType": "Number", "StringValue": str(row.id)},
                "tipo_evento": {"DataType": "String", "StringValue": row.tipo_evento},
            },
        }
        if self.fifo:  # SQS drops a second send with the same id within 5 minutes
            entry.update(MessageDeduplicationId=str(row.id), MessageGroupId=row.agregado_id)
        return entry


class Publisher:
    """One publisher process: claim a batch, publish it, mark it, commit."""

    def __init__(self, conn: Any, sink: Sink, policy: PublisherPolicy = PublisherPolicy()) -> None:
        if getattr(conn, "autocommit", False):  # the claim's locks must last until finish() commits
            raise OutboxError(_("the publisher needs a connection that is not in autocommit mode"))
        self.conn = conn
        self.sink = sink
        self.policy = policy

    def claim_batch(self) -> list[OutboxRow]:
        """Open a transaction and lock the next batch (the lock lasts until `finish` commits)."""
        return claim(self.conn, self.policy.batch_size)

    def finish(
        self, rows: list[OutboxRow], now: dt.datetime, checkpoint: Callable[[str], None] = lambda step: None
    ) -> int:
        """Publish the claimed rows, mark them and commit; return how many were published.

        `checkpoint("after_publish")` runs between publishing and marking: raise
        `Crash` there and the transaction rolls back, as PostgreSQL does when a
        process's connection drops, so the rows will be published again.
        """
        try:
            if rows:
                self.sink.publish(rows)
            checkpoint("after_publish")
            mark_published(self.conn, [row.id for row in rows], now)
            self.conn.commit()
        except BaseException:
            self.conn.rollback()
            raise
        return len(rows)

    def run_once(self, now: dt.datetime, checkpoint: Callable[[str], None] = lambda step: None) -> int:
        """One poll: claim, publish, mark, commit."""
        try:
            rows = self.claim_batch()
        except BaseException:
            self.conn.rollback()
            raise
        return self.finish(rows, now, checkpoint)


# -- the consumer side: duplicates are expected ---------------------------------------------
def event_key(outbox_id: int) -> str:
    """The idempotency key of one outbox event: the same row published twice has the same key."""
    return f"evento-outbox:{outbox_id}"


def outbox_id_of(message: dict[str, Any]) -> int:
    """The outbox id of an SQS message sent by QueueSink or routed from the bus by a rule."""
    attributes = message.get("MessageAttributes", {})
    if "outbox_id" in attributes:
        return int(attributes["outbox_id"]["StringValue"])
    body = json.loads(message["Body"])
    return int(body.get("detail", body)["outbox_id"])


def consume_once(
    store: idempotency.IdempotencyStore, outbox_id: int, handle: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """Run `handle` once per outbox event, however many times it is delivered."""
    return idempotency.run_once(store, event_key(outbox_id), handle, is_permanent=lambda exc: False)


# -- operating it: backlog, alarms, cleanup -------------------------------------------------
def backlog(conn: Any, now: dt.datetime) -> Backlog:
    """Pending rows and the age of the oldest one at `now` (0 when there are none)."""
    with conn.transaction():
        pending, oldest = conn.execute("SELECT count(*), min(creado_en) FROM outbox WHERE NOT publicado").fetchone()
    return Backlog(pending, max(0.0, (now - oldest).total_seconds()) if oldest else 0.0)


def alarm_rules(period_seconds: int = 60) -> tuple[alarms.AlarmRule, alarms.AlarmRule]:
    """The two outbox alarms: more than 500 rows pending, the oldest pending more than 60 s."""
    pending = alarms.AlarmRule(
        "mercadofresco-outbox-pendientes",
        names.METRICS_NAMESPACE,
        "OutboxPendientes",
        PENDING_ALARM_ROWS,
        period_seconds,
    )
    oldest = alarms.AlarmRule(
        "mercadofresco-outbox-antiguedad",
        names.METRICS_NAMESPACE,
        "OutboxAntiguedadSegundos",
        OLDEST_ALARM_SECONDS,
        period_seconds,
    )
    return pending, oldest


def cleanup(conn: Any, now: dt.datetime, keep_days: int = KEEP_DAYS) -> int:
    """Delete the rows published more than `keep_days` ago (never an unpublished one); return how many."""
    check_range("keep_days", keep_days, 1, 365)
    with conn.transaction():
        cursor = conn.execute(
            "DELETE FROM outbox WHERE publicado AND publicado_en < %s", (now - dt.timedelta(days=keep_days),)
        )
    return cursor.rowcount
