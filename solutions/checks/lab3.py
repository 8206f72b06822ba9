"""Lab 3's hidden checks. They run in the grader's process, against a PostgreSQL and a bus the grader owns.

The learner's functions run in their kernel, on real psycopg connections to
the grader's server (`lab.link()`, as a role that may use the lab's schema
only), and publish to a bus of the grader's (`Bus`). A check reads its verdict
from that server as its owner (the tables the learner's code wrote, after
checking they are tables) and from what the bus recorded. A process death
(`ProcessDied`) is real for the database: the server ends the learner's
connections before the death reaches their code, so an open transaction rolls
back. What the learner's functions return is judged as data. An instructor can
read every check here; learners never see this file.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from decimal import Decimal

from mercadofresco import clock, orders, world
from mercadofresco.course.boundary import RemoteError
from mercadofresco.course.checker import Callback, Check, ProcessDied
from mercadofresco.patterns import idempotency

SERVICES = ("dynamodb",)
NOW = clock.LESSON_START
ORDERS_WITH_DEATHS = 2_000
CHECKS = [
    Check(
        "answers_a",
        "(a) a retry is a loop inside the process: it covers a failed call, not a process that died between the "
        "COMMIT and put_events; 240,000 orders at 1 in 900.",
    ),
    Check(
        "no_event_lost",
        "(b)/(c) a process can die right before or right after any call to the bus: the order and its event must "
        "be written in one transaction, and a row may be marked published only in the same transaction that "
        "published it.",
        points=2,
    ),
    Check(
        "parallel_publishers",
        "(c) three publishers claim at the same instant: each must take different rows without waiting for the "
        "others (FOR UPDATE SKIP LOCKED), and only the batch of a publisher that died may go out twice.",
        points=2,
    ),
    Check(
        "partial_index",
        "(b) the index should cover only the unpublished rows (a partial index, WHERE NOT publicado), and "
        "CLAIM_SQL should filter and order so the planner uses it.",
    ),
    Check(
        "cleanup_published_only",
        "(e) the cleanup deletes only rows published more than 7 days ago; an unpublished row is an event nobody "
        "has sent yet, however old.",
    ),
    Check(
        "backlog",
        "(e) backlog counts the unpublished rows and measures the oldest one's wait at now (published rows do not "
        "count).",
    ),
    Check(
        "consumer_dedups",
        "(d) the consumer's idempotency key is the outbox id the event carries: a repeated event runs once, two "
        "different events run twice even for the same order.",
    ),
    Check(
        "answers_c_d_e",
        "(c)-(e) the publisher runs every second, 100 rows at a time; the outbox delivers at least once, so every "
        "consumer must be idempotent; the new work is watching the publisher (pending > 500, oldest > 60 s) and "
        "cleaning the table.",
    ),
]


def setup(lab):
    """The grader's PostgreSQL, and what the learner's code may hold: the bus, an idempotency store, its clock."""
    lab.expose("bus", Bus)
    lab.expose("clock", clock.VirtualClock)
    fields = ("dynamodb", "clock", "table_name", "ttl_seconds", "lock_seconds")
    lab.rebuild(idempotency.IdempotencyStore, *fields)  # in the kernel, on our DynamoDB and clock
    lab.start_database()


class Bus:
    """The grader's bus: records every detail it accepts; the process may die just before or just after a call."""

    def __init__(self, database, seed=0, die_before=0.0, die_after=0.0, first_call=None):
        self.database = database
        self.rng = random.Random(seed)
        self.die_before, self.die_after = die_before, die_after
        self.first_call = first_call
        self.details = []
        self.deaths = 0

    def put_events(self, Entries):  # boto3 names its arguments so
        if self.first_call is not None:
            hook, self.first_call = self.first_call, None
            hook()  # another publisher runs now, while this one holds its batch
        if self.rng.random() < self.die_before:
            self.die("before the call reached the bus")
        self.details.extend(json.loads(entry["Detail"]) for entry in Entries)
        if self.rng.random() < self.die_after:
            self.die("after the bus accepted the call")
        return {"FailedEntryCount": 0, "Entries": [{"EventId": str(len(self.details))} for _ in Entries]}

    def die(self, when):
        self.deaths += 1
        self.database.die()  # the server ends the process's connections before its code hears of it
        raise ProcessDied(when)


def run_process(lab, bus, function, *args):
    """(died, result) of a learner function that may meet a process death; after one, a new process may connect.

    The death must end the call, as it ends a process: a function that catches it and goes on fails.
    """
    deaths = bus.deaths
    try:
        result = function(*args)
    except ProcessDied:
        lab.database.revive()
        return True, None
    assert bus.deaths == deaths, f"{function.__name__} went on after the process died (it caught ProcessDied)"
    return False, result


def fresh_schema(lab):
    """An empty schema with the learner's tables, made by the learner's create_schema; a link to it."""
    lab.database.reset()
    link = lab.link()
    lab.call("create_schema", link)
    lab.database.tables_are_tables("pedidos", "outbox")
    return link


def order(n):
    return orders.Order(orders.order_id(700_000 + n), Decimal("48.20"))


def seed_rows(lab, rows):
    """rows: (agregado_id, creado_en, publicado_en or None), inserted with the lab's column names, as the learner."""
    with lab.database.as_learner() as conn:
        for agregado_id, creado_en, publicado_en in rows:
            payload = json.dumps({"pedido_id": agregado_id})
            conn.execute(
                "INSERT INTO outbox (tipo_agregado, agregado_id, tipo_evento, payload, creado_en, publicado,"
                " publicado_en) VALUES ('pedido', %s, 'PedidoCreado', %s, %s, %s, %s)",
                (agregado_id, payload, creado_en, publicado_en is not None, publicado_en),
            )


def read(lab, query, *params):
    """Rows of `query`, read by the server's owner (after `tables_are_tables`)."""
    return lab.database.owner.execute(query, params).fetchall()


# -- (a) --------------------------------------------------------------------------------------
def check_answers_a(lab):
    assert lab.value("why_not_retry") == "no_process_left", "not what a retry cannot cover"
    lost = lab.value("lost_per_month")
    assert type(lost) in (int, float, Decimal) and 266 <= float(lost) <= 267, f"lost_per_month {lost!r}"


# -- (b), (c) -----------------------------------------------------------------------------------
def check_no_event_lost(lab):
    link = fresh_schema(lab)
    bus = Bus(lab.database, seed=24, die_before=1 / 40, die_after=1 / 40)
    place, publish = lab.function("place_order"), lab.function("publish_pending")
    for n in range(ORDERS_WITH_DEATHS):
        died, _ = run_process(lab, bus, place, link, bus, order(n), NOW)
        if died:
            link = lab.link()  # the process died: its connection is gone, its open transaction rolled back
    for _ in range(1_000):  # publishers poll until nothing is left, and die now and then too
        died, published = run_process(lab, bus, publish, link, bus, NOW)
        if died:
            link = lab.link()
        elif published == 0:
            break
    stored = {pedido for (pedido,) in read(lab, "SELECT pedido_id FROM pedidos")}
    published = {detail.get("pedido_id") for detail in bus.details if isinstance(detail, dict)}
    assert len(stored) > 0.95 * ORDERS_WITH_DEATHS, f"only {len(stored)} of {ORDERS_WITH_DEATHS:,} orders were saved"
    assert not stored - published, f"{len(stored - published)} saved orders never reached the bus"
    assert not published - stored, f"{len(published - stored)} events announce orders that were never saved"


def check_parallel_publishers(lab):
    setup_link = fresh_schema(lab)
    place, publish = lab.function("place_order"), lab.function("publish_pending")
    for n in range(300):
        place(setup_link, Bus(lab.database), order(n), NOW)
    # A publisher that waits for another's rows is stuck: B's and C's connections give up after 200 ms.
    links = [lab.link(), lab.link(lock_timeout="200ms"), lab.link(lock_timeout="200ms")]
    blocked = []

    def run(index, bus):
        try:
            publish(links[index], bus, NOW, 100)
        except RemoteError as error:
            if error.type_name != "LockNotAvailable":
                raise
            blocked.append(index)

    bus_c = Bus(lab.database)
    bus_b = Bus(lab.database, first_call=lambda: run(2, bus_c))
    bus_a = Bus(lab.database, die_after=1.0, first_call=lambda: run(1, bus_b))  # A dies after its first call
    died, _ = run_process(lab, bus_a, run, 0, bus_a)
    if died:
        links[0] = lab.link()
    drain = Bus(lab.database)
    while publish(links[0], drain, NOW, 100):
        pass
    ids = {name: [d.get("outbox_id") for d in bus.details] for name, bus in (("A", bus_a), ("B", bus_b), ("C", bus_c))}
    every = ids["A"] + ids["B"] + ids["C"] + [d.get("outbox_id") for d in drain.details]
    twice = {i for i in every if every.count(i) > 1}
    created = {row_id for (row_id,) in read(lab, "SELECT id FROM outbox")}
    assert bus_a.deaths == 1, "publisher A did not reach the bus"
    assert not blocked, "a publisher waited for the rows another one held instead of taking others"
    assert ids["B"] and ids["C"], "publishers B and C published nothing while A held its batch"
    assert not set(ids["A"]) & set(ids["B"]) and not set(ids["B"]) & set(ids["C"]), "two publishers took the same rows"
    assert len(created) == 300 and set(every) == created, "some outbox rows were never published"
    assert twice <= set(ids["A"]), f"{len(twice - set(ids['A']))} rows published twice without any publisher dying"


def check_partial_index(lab):
    fresh_schema(lab)
    partial = read(
        lab,
        "SELECT indexname FROM pg_catalog.pg_indexes WHERE schemaname = %s AND tablename = 'outbox'"
        " AND indexdef LIKE '%% WHERE %%'",
        lab.database.schema,
    )
    claim = lab.value("CLAIM_SQL")
    assert isinstance(claim, str), "CLAIM_SQL is not a string"
    with lab.database.as_learner() as conn:  # the learner's SQL runs with the learner's rights only
        conn.execute(
            "INSERT INTO outbox (tipo_agregado, agregado_id, tipo_evento, payload, creado_en, publicado, publicado_en)"
            " SELECT 'pedido', 'PED-2026-' || lpad(n::text, 6, '0'), 'PedidoCreado', '{}'::jsonb,"
            " %(t)s - make_interval(secs => 30000 - n), n <= 20000, CASE WHEN n <= 20000 THEN %(t)s END"
            " FROM generate_series(1, 20050) AS n",
            {"t": NOW},
        )
        conn.execute("ANALYZE outbox")
        plan = "\n".join(row[0] for row in conn.execute("EXPLAIN (COSTS OFF) " + claim, (100,)).fetchall())
    assert partial, "outbox has no partial index (an index with a WHERE clause)"
    assert any(name in plan for (name,) in partial), f"the claim query does not use the partial index:\n{plan}"


# -- (e) -----------------------------------------------------------------------------------------
def check_cleanup_published_only(lab):
    link = fresh_schema(lab)
    day = dt.timedelta(days=1)
    seed_rows(
        lab,
        [
            ("PED-2026-900010", NOW - 11 * day, NOW - 10 * day),
            ("PED-2026-900008", NOW - 8 * day, NOW - 8 * day),
            ("PED-2026-900006", NOW - 6 * day, NOW - 6 * day),
            ("PED-2026-900009", NOW - 9 * day, None),
            ("PED-2026-900002", NOW - 2 * day, None),
        ],
    )
    deleted = lab.call("cleanup", link, NOW)
    left = {agregado for (agregado,) in read(lab, "SELECT agregado_id FROM outbox")}
    assert "PED-2026-900009" in left, "an unpublished row was deleted"
    assert left == {"PED-2026-900006", "PED-2026-900009", "PED-2026-900002"}, f"rows left: {sorted(left)}"
    assert deleted == 2, f"cleanup returned {deleted!r}, it deleted 2 rows"


def check_backlog(lab):
    link = fresh_schema(lab)
    second = dt.timedelta(seconds=1)
    seed_rows(
        lab,
        [
            ("PED-2026-910001", NOW - 300 * second, NOW - 200 * second),
            ("PED-2026-910002", NOW - 90 * second, None),
            ("PED-2026-910003", NOW - 30 * second, None),
            ("PED-2026-910004", NOW - 5 * second, None),
        ],
    )
    seen = lab.call("backlog", link, NOW)
    assert isinstance(seen, (list, tuple)) and len(seen) == 2, f"backlog returned {seen!r}, not a pair"
    pending, oldest = seen
    assert pending == 3 and type(oldest) in (int, float) and abs(oldest - 90) < 0.01, (
        f"backlog returned {tuple(seen)}, expected (3, 90.0)"
    )


# -- (d) -----------------------------------------------------------------------------------------
def check_consumer_dedups(lab):
    reloj = clock.VirtualClock().start()
    try:
        lab.reset_world()
        world.create_idempotency_table(lab.client("dynamodb"))
        store = idempotency.IdempotencyStore(lab.client("dynamodb"), reloj)
        runs = []

        def prepare(detail):
            runs.append(detail["outbox_id"])
            return {"preparado": detail["pedido_id"], "vez": len(runs)}

        deliveries = [
            {"outbox_id": 7, "pedido_id": "PED-2026-920007", "importe": "48.20"},
            {"outbox_id": 7, "pedido_id": "PED-2026-920007", "importe": "48.20"},
            {"outbox_id": 8, "pedido_id": "PED-2026-920008", "importe": "19.90"},
            {"outbox_id": 9, "pedido_id": "PED-2026-920007", "importe": "48.20"},  # another event of the same order
            {"outbox_id": 7, "pedido_id": "PED-2026-920007", "importe": "48.20"},
        ]
        handle = lab.function("handle_event")
        answers = [handle(store, dict(d), Callback(prepare)) for d in deliveries]
    finally:
        reloj.stop()
    assert sorted(runs) == [7, 8, 9], f"prepare ran for outbox ids {runs}; each event should run once"
    assert answers[0] == answers[1] == answers[4] == {"preparado": "PED-2026-920007", "vez": runs.index(7) + 1}, (
        "a repeated event must get the first run's result back"
    )


def check_answers_c_d_e(lab):
    assert lab.value("POLL_SECONDS") == 1 and lab.value("BATCH_SIZE") == 100, "not the lesson's poll interval and batch"
    assert lab.value("guarantee") == "at_least_once", "not the guarantee of the outbox"
    assert lab.value("consumer_needs") == "idempotent", "not what the guarantee demands of consumers"
    operate = lab.value("operate")
    assert isinstance(operate, (set, list, tuple)) and set(operate) == {"publisher_monitoring", "table_cleanup"}, (
        "not the two new things to operate"
    )
    assert lab.value("PENDING_ALARM_ROWS") == 500 and lab.value("OLDEST_ALARM_SECONDS") == 60, "not the lesson's alarms"
