"""Experiments of section 13 on the publisher side (notebook 13): locks, the plan, latency, duplicates.

- `contend`: two publishers claim at the same instant with SKIP LOCKED, with a plain
  FOR UPDATE (`claim_without_skip_locked`: the second one waits) and with no lock at all
  (both take the same rows);
- `claim_plans`: EXPLAIN of the claim query (`claim_plan`) on a small table and on a long
  history, and whether it reads the partial index (`uses_pending_index`);
- `publish_latency`: orders arrive at seeded instants, a publisher polls every second;
- `deliver_and_consume`: the SQS variant end to end, a publisher that dies between
  publishing and marking, and the idempotent consumer keyed by the outbox id;
- `cleanup_demo`: which rows the daily cleanup deletes;
- `partial_failures`: the same orders through an EventBridge that refuses some entries of a call (a model of
  what moto lacks, `models.event_faults`), published three ways.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import random
from collections import Counter
from decimal import Decimal
from typing import Any

import psycopg

from mercadofresco import i18n, orders, queues, world
from mercadofresco.clock import LESSON_START, VirtualClock
from mercadofresco.i18n import T_, _
from mercadofresco.lessons.outbox.experiments import fresh_tables
from mercadofresco.models import event_faults
from mercadofresco.patterns import idempotency, outbox
from mercadofresco.runtime.database import Database

LOCK_WAIT_MS = 50  # how long the second publisher waits before we call it blocked
CONTEND_MODES = ("skip_locked", "for_update", "no_lock")
PARTIAL_DESIGNS = (
    T_("answer read as all-or-nothing"),
    T_("batch rolled back on any failure"),
    T_("only the accepted marked"),
)
MAX_POLLS = 60


def add_rows(conn: Any, pending: int, published: int = 0, now: dt.datetime = LESSON_START) -> None:
    """Bulk-insert outbox rows (orders PED-2026-2xxxxx): `published` old published ones, then `pending` new ones."""
    insert = (
        "INSERT INTO outbox (tipo_agregado, agregado_id, tipo_evento, payload, creado_en, publicado, publicado_en)"
        " SELECT 'pedido', 'PED-2026-' || lpad((200000 + n)::text, 6, '0'), 'PedidoCreado',"
        " jsonb_build_object('pedido_id', 'PED-2026-' || lpad((200000 + n)::text, 6, '0')),"
        " %(t)s - make_interval(secs => %(total)s::int - n), %(done)s, CASE WHEN %(done)s::boolean THEN %(t)s END"
        " FROM generate_series(%(first)s::int, %(last)s::int) AS n"
    )
    with conn.transaction():
        total = published + pending
        if published:
            conn.execute(insert, {"t": now, "total": total, "done": True, "first": 1, "last": published})
        if pending:
            conn.execute(insert, {"t": now, "total": total, "done": False, "first": published + 1, "last": total})


def claim_without_skip_locked(conn: Any, batch_size: int = outbox.BATCH_SIZE) -> list[outbox.OutboxRow]:
    """The wrong claim: FOR UPDATE without SKIP LOCKED, so a second publisher waits for the rows the first holds."""
    rows = conn.execute(outbox.CLAIM + outbox.ORDER_BY + " FOR UPDATE", (batch_size,)).fetchall()
    return [outbox.OutboxRow(*row) for row in rows]


def _claim(conn: Any, mode: str, batch_size: int) -> list[int] | None:
    """One publisher's claim in `mode`; None if it had to wait longer than LOCK_WAIT_MS."""
    if mode == "no_lock":
        rows = conn.execute(outbox.CLAIM + outbox.ORDER_BY, (batch_size,)).fetchall()
        return [row[0] for row in rows]
    conn.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT_MS}ms'")
    claim = outbox.claim if mode == "skip_locked" else claim_without_skip_locked
    try:
        return [row.id for row in claim(conn, batch_size)]
    except psycopg.errors.LockNotAvailable:
        conn.rollback()
        return None


def contend(db: Database, mode: str, rows: int = 200, batch_size: int = 100) -> dict[str, Any]:
    """Publishers A and B claim at the same instant (A still holds its locks); what each got, what went out twice."""
    if mode not in CONTEND_MODES:
        said = _("mode must be one of {modes}; got {mode}")
        raise ValueError(said.format(modes=", ".join(CONTEND_MODES), mode=repr(mode)))
    with db.connect() as setup:
        fresh_tables(setup)
        add_rows(setup, pending=rows)
    sent: list[int] = []
    with db.connect() as a, db.connect() as b:
        took_a = _claim(a, mode, batch_size) or []
        took_b = _claim(b, mode, batch_size)  # A has not committed yet
        order_seen = list(took_b or []) + took_a  # B finishes first: the bus sees its batch first
        for conn, took in ((b, took_b or []), (a, took_a)):
            sent.extend(took)
            outbox.mark_published(conn, took, LESSON_START)
            conn.commit()
    twice = sum(1 for count in Counter(sent).values() if count > 1)
    return {
        "mode": mode,
        "A took": _span(took_a),
        "B took": T_("waited for A (blocked)") if took_b is None else _span(took_b),
        "published twice": twice,
        "first id on the bus": order_seen[0] if order_seen else "-",
    }


def _span(ids: list[int]) -> str:
    return f"ids {min(ids)}-{max(ids)}" if ids else T_("nothing")


def claim_plan(conn: Any, batch_size: int = outbox.BATCH_SIZE, without_seqscan: bool = False) -> list[str]:
    """PostgreSQL's plan for the publisher's claim query (EXPLAIN, nothing locked).

    On a small table the planner rightly prefers reading the whole table;
    `without_seqscan` sets enable_seqscan = off for this one query to show the index it would use.
    """
    with conn.transaction():
        if without_seqscan:
            conn.execute("SET LOCAL enable_seqscan = off")
        rows = conn.execute("EXPLAIN (COSTS OFF) " + outbox.CLAIM_NEXT, (batch_size,)).fetchall()
    return [row[0] for row in rows]


def uses_pending_index(plan: list[str]) -> bool:
    """True if a plan reads `outbox` through the partial index."""
    return any("outbox_pendientes" in line for line in plan)


def claim_plans(db: Database, history: int = 20_000, pending: int = 50) -> dict[str, list[str]]:
    """The claim query's plan on `pending` rows alone, the same forcing the index, and behind a long history."""
    plans = {}
    with db.connect() as conn:
        fresh_tables(conn)
        add_rows(conn, pending=pending)
        conn.execute("ANALYZE outbox")
        conn.commit()
        plans[_("{pending} rows").format(pending=pending)] = claim_plan(conn)
        forced = _("{pending} rows, enable_seqscan = off").format(pending=pending)
        plans[forced] = claim_plan(conn, without_seqscan=True)
        fresh_tables(conn)
        add_rows(conn, pending=pending, published=history)
        conn.execute("ANALYZE outbox")
        conn.commit()
        behind = _("{history} published + {pending} pending")
        plans[behind.format(history=i18n.number(history, ","), pending=pending)] = claim_plan(conn)
    return plans


def index_pages(db: Database) -> dict[str, int]:
    """Pages (8 kB) of the partial index and of a full index on the same columns, for the table as it is."""
    with db.connect() as conn, conn.transaction():
        conn.execute("CREATE INDEX IF NOT EXISTS outbox_todas ON outbox (creado_en, id)")
        pages = {
            name: conn.execute("SELECT pg_relation_size(%s) / 8192", (name,)).fetchone()[0]
            for name in ("outbox_pendientes", "outbox_todas")
        }
        conn.execute("DROP INDEX outbox_todas")
    return pages


def publish_latency(
    db: Database,
    events: Any,
    orders_count: int = 120,
    seconds: int = 60,
    seed: int = 4,
    poll_seconds: float = outbox.POLL_SECONDS,
) -> list[float]:
    """Seconds from each order's COMMIT to its publication, with one publisher polling every `poll_seconds`."""
    rng = random.Random(seed)
    start = LESSON_START
    arrivals = sorted(rng.uniform(0, seconds) for _ in range(orders_count))
    with db.connect() as conn, db.connect() as link:
        fresh_tables(conn)
        publisher = outbox.Publisher(
            link, outbox.EventBusSink(events), outbox.PublisherPolicy(poll_seconds=poll_seconds)
        )
        pending = iter(enumerate(arrivals))
        upcoming = next(pending, None)
        for tick in range(1, math.ceil(seconds / poll_seconds) + 2):
            at_tick = tick * poll_seconds
            while upcoming is not None and upcoming[1] <= at_tick:
                number, at = upcoming
                order = orders.Order(orders.order_id(300_000 + number), Decimal("48.20"))
                outbox.place_order(conn, order, start + dt.timedelta(seconds=at))
                upcoming = next(pending, None)
            publisher.run_once(start + dt.timedelta(seconds=at_tick))
        with conn.transaction():
            rows = conn.execute("SELECT extract(epoch FROM publicado_en - creado_en) FROM outbox").fetchall()
    return [float(row[0]) for row in rows]


def deliver_and_consume(db: Database, aws: world.World, clock: VirtualClock, count: int = 25) -> dict[str, Any]:
    """The SQS variant end to end: a publisher (batches of 10) dies after publishing its first batch, then recovers.

    The consumer reads `cola-mercadofresco-pedidos` and prepares each order once,
    its idempotency key `evento-outbox:{id}` in `mercadofresco-idempotencia`.
    """
    with db.connect() as conn, db.connect() as link:
        fresh_tables(conn)
        for n in range(count):
            outbox.place_order(conn, orders.Order(orders.order_id(400_001 + n), Decimal("48.20")), clock.now())
        sink = outbox.QueueSink(aws.sqs, aws.orders.url)
        publisher = outbox.Publisher(link, sink, outbox.PublisherPolicy(batch_size=10))

        def die_once(step: str) -> None:
            raise outbox.Crash(step)

        died = 0
        try:
            publisher.run_once(clock.now(), die_once)
        except outbox.Crash:
            died += 1
        while publisher.run_once(clock.now()):
            clock.advance(outbox.POLL_SECONDS)
    messages = queues.queue_counts(aws.sqs, aws.orders.url)["visible"]
    store = idempotency.IdempotencyStore(aws.dynamodb, clock)
    prepared: Counter[str] = Counter()
    while batch := aws.sqs.receive_message(
        QueueUrl=aws.orders.url, MaxNumberOfMessages=10, WaitTimeSeconds=0, MessageAttributeNames=["All"]
    ).get("Messages", []):
        for message in batch:
            pedido_id = json.loads(message["Body"])["pedido_id"]

            def prepare(pedido_id: str = pedido_id) -> dict[str, Any]:
                prepared[pedido_id] += 1
                return {"preparado": pedido_id}

            outbox.consume_once(store, outbox.outbox_id_of(message), prepare)
            aws.sqs.delete_message(QueueUrl=aws.orders.url, ReceiptHandle=message["ReceiptHandle"])
    return {
        "orders": count,
        "publisher deaths": died,
        "messages delivered": messages,
        "orders prepared": len(prepared),
        "prepared twice": sum(1 for n in prepared.values() if n > 1),
    }


def cleanup_demo(db: Database, now: dt.datetime) -> list[dict[str, Any]]:
    """Rows published 10, 8 and 6 days ago and one never published (9 days old): what the cleanup keeps."""
    ages = [(T_("published 10 days ago"), 10, True), (T_("published 8 days ago"), 8, True)]
    ages += [(T_("published 6 days ago"), 6, True), (T_("NOT published, 9 days old"), 9, False)]
    with db.connect() as conn:
        fresh_tables(conn)
        for number, (_label, days, done) in enumerate(ages):
            at = now - dt.timedelta(days=days)
            order = orders.Order(orders.order_id(500_001 + number), Decimal("48.20"))
            row_id = outbox.place_order(conn, order, at)
            if done:
                with conn.transaction():
                    outbox.mark_published(conn, [row_id], at)
        outbox.cleanup(conn, now)
        with conn.transaction():
            kept = {row[0] for row in conn.execute("SELECT agregado_id FROM outbox").fetchall()}
    ids = [orders.order_id(500_001 + n) for n in range(len(ages))]
    said = {True: i18n.pgettext("outbox row", "kept"), False: i18n.pgettext("outbox row", "deleted")}
    return [
        {"row": label, "pedido_id": pedido_id, "after cleanup": said[pedido_id in kept]}
        for (label, _, _), pedido_id in zip(ages, ids, strict=True)
    ]


def partial_failures(
    db: Database, aws: world.World, now: dt.datetime, probability: float = 0.05, count: int = 100, seed: int = 13
) -> list[dict[str, Any]]:
    """The same orders published through an EventBridge that refuses each entry with `probability`, three ways.

    Reading the answer as all-or-nothing marks refused entries published: their orders are lost. Rolling the
    whole batch back on any failure (the package's `Publisher`) loses nothing, but sends the accepted entries
    again and needs more polls. Marking only the entries the bus accepted loses nothing and repeats nothing.
    """
    found = []
    for design in PARTIAL_DESIGNS:
        events = event_faults.FaultyEvents(aws.client("events"), event_faults.PartialFailures(probability, seed))
        with db.connect() as conn:
            fresh_tables(conn)
            placed = [(orders.Order(orders.order_id(500_001 + n), Decimal("48.20")), now) for n in range(count)]
            outbox.place_orders(conn, placed)
            polls = 0
            while polls < MAX_POLLS and conn.execute("SELECT count(*) FROM outbox WHERE NOT publicado").fetchone()[0]:
                conn.commit()
                polls += 1
                _publish(design, conn, events, now)
            conn.commit()
        announced = Counter(detail["pedido_id"] for detail in events.accepted)
        found.append(
            {
                "design": design,
                "polls": polls,
                "events on the bus": len(events.accepted),
                "orders lost": count - len(announced),
                "events repeated": len(events.accepted) - len(announced),
            }
        )
    return found


def _publish(design: str, conn: Any, events: event_faults.FaultyEvents, now: dt.datetime) -> None:
    sink = outbox.EventBusSink(events)
    if design == PARTIAL_DESIGNS[1]:
        with contextlib.suppress(outbox.PublishError):  # rolled back: the whole batch goes again at the next poll
            outbox.Publisher(conn, sink).run_once(now)
        return
    rows, accepted = outbox.claim(conn), []
    for start in range(0, len(rows), outbox.ENTRIES_PER_CALL):
        batch = rows[start : start + outbox.ENTRIES_PER_CALL]
        answer = events.put_events(Entries=[sink.entry(row) for row in batch])
        accepted += [row.id for row, result in zip(batch, answer["Entries"], strict=True) if "EventId" in result]
    marked = [row.id for row in rows] if design == PARTIAL_DESIGNS[0] else accepted
    outbox.mark_published(conn, marked, now)
    conn.commit()
