"""Lab 3's hidden checks. They run in the grader's process, against a PostgreSQL and an EventBridge the grader owns.

The learner's functions run in their kernel, on real psycopg connections to
the grader's server (`lab.link()`, as a role that may use the lab's schema
only, through a relay that can end the session at any statement boundary),
and publish with a real boto3 events client whose requests reach the grader's
moto through `Bus`: EventBridge's limits and partial failures, which moto does
not have, come from the package's model (`models.event_faults`), and the
process may die just before or just after a call. A check reads its verdict
from that server as a reader that cannot be raised (the tables the learner's code wrote, after
checking they are plain tables of built-in types) and from what the bus accepted. A process death is
real for the database: the server ends the learner's sessions before their
code hears of it, so an open transaction rolls back, and a function that goes
on after it fails. What the learner's functions return is judged as data. An
instructor can read every check here; learners never see this file.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import random
import threading
from decimal import Decimal

from psycopg import sql

from mercadofresco import orders, world
from mercadofresco.clock import LESSON_START, VirtualClock
from mercadofresco.course.checker import Callback, Check, Failed, ProcessDied
from mercadofresco.course.checker.boundary import RemoteError
from mercadofresco.lessons.exercises import outbox_properties, outbox_table
from mercadofresco.lessons.exercises.outbox_world import Stored
from mercadofresco.models import event_faults
from mercadofresco.patterns import idempotency

SERVICES = ("dynamodb", "events")
NOW = LESSON_START  # the virtual clock's instant; the server's own clock says something else
ORDERS_WITH_DEATHS = 300
OWN_SECONDS = 5  # the longest the checker's own writes as the learner's role may take (the solution's: 0.1 s)
HIDDEN_EXAMPLES, HIDDEN_SEED = 20, 20_261_206  # worlds each property plays beyond the lesson's own, and their seed
CHECKS = [
    Check(
        "answers_a",
        "(a) a retry runs somewhere: where, and what becomes of it in the failure Marta found? Then 240,000 orders "
        "a month at her rate.",
    ),
    Check(
        "order_and_event_together",
        "(b) the process may die between any two statements of place_order: an order must never exist without "
        "its event, nor an event without its order. Where is the boundary of your transaction?",
        points=2,
    ),
    Check(
        "publisher_deaths",
        "(c) a publisher may die between any two of its statements, or just before or just after a call to the "
        "bus: every saved order must still reach the bus. When may a row be marked published?",
        points=2,
    ),
    Check(
        "parallel_publishers",
        "(c) a row the bus has taken stays claimed until it is marked, so no other publisher can send it again; "
        "three publishers claim at the same instant: each must take different rows without waiting for the "
        "others, and only the batch of a publisher that died may go out twice.",
        points=2,
    ),
    Check(
        "event_contract",
        "(b), (c) place_order returns the outbox row's id and keeps the amount as text and `now` as the creation "
        "time; each event carries its row's payload plus outbox_id, its tipo_evento as DetailType, the shop's Source "
        "and bus; exactly the rows the bus took are marked published at `now`, and publish_pending says how many.",
    ),
    Check(
        "order_per_aggregate",
        "(c) the events of one order must reach the bus in the order they were created, whatever order the rows were "
        "written in and whatever the batch size, oldest rows first, with one publisher and with several at once.",
    ),
    Check(
        "partial_put_events",
        "(c) EventBridge may refuse some entries of a call (FailedEntryCount, an ErrorCode per entry) and accepts "
        "at most 10 entries and 1 MB a call: no event may be lost to either.",
    ),
    Check(
        "partial_index",
        "(b) the index should cover only the unpublished rows (a partial index, WHERE NOT publicado), and "
        "CLAIM_SQL should filter and order so the planner uses it.",
    ),
    Check(
        "cleanup_published_only",
        "(e) the cleanup deletes exactly the rows published more than 7 days ago (by publication, not creation; not "
        "at exactly 7 days) and says how many, also while a publisher is at work; an unpublished row is an event "
        "nobody has sent yet, however old.",
    ),
    Check(
        "backlog",
        "(e) backlog counts the unpublished rows and measures the oldest one's wait in seconds at the instant it is "
        "given (days included; published rows do not count; 0 when none waits).",
    ),
    Check(
        "consumer_dedups",
        "(d) the consumer prepares each outbox event once, however often it is delivered, also while another "
        "delivery of it is preparing and after a failed preparation; two events of one order are two preparations; "
        "every delivery gets the run's result.",
    ),
    Check(
        "answers_c_d_e",
        "(c)-(e) the lesson gives the publisher's interval and batch and the two alarms' thresholds. What can a "
        "death between publishing and marking cause downstream, and what must every consumer do about it? What did "
        "the outbox add that someone must now watch, and what grows without end?",
    ),
]


def setup(lab):
    """The grader's PostgreSQL; what the learner's code may hold: an idempotency store and its clock."""
    lab.expose("clock", VirtualClock)
    fields = ("dynamodb", "clock", "table_name", "ttl_seconds", "lock_seconds")
    lab.rebuild(idempotency.IdempotencyStore, *fields)  # in the kernel, on our DynamoDB and clock
    lab.start_database()


class Bus:
    """The grader's EventBridge, as `lab.aws_hooks["PutEvents"]`: moto's bus behind the model of what it lacks.

    It refuses what EventBridge refuses, fails each entry with `partial`, lets the process die just before or
    just after a call, and records the detail of every entry the bus accepted, with the publisher that sent it.
    """

    def __init__(self, lab, seed=0, die_before=0.0, die_after=0.0, partial=0.0):
        self.lab = lab
        self.rng = random.Random(seed)
        self.die_before, self.die_after = die_before, die_after
        self.failures = event_faults.PartialFailures(partial, seed)
        self.accepted = []  # (publisher, detail)
        self.taken = []  # every entry the bus accepted, whole
        self.refused = []  # why whole calls were refused
        self.deaths = 0
        self.publisher = "A"
        self.first_call = None  # run once, inside the first call: another publisher at work meanwhile
        self.on_taken = None  # told of each call's taken entries (a rival publisher, outbox_rival)
        lab.aws_hooks["PutEvents"] = self

    def __call__(self, request, serve):
        entries = request.get("Entries") or []
        if self.lab.database.dead:
            raise ProcessDied("the process had already died")  # nothing a dead process does reaches the bus
        if self.first_call is not None:
            hook, self.first_call = self.first_call, None
            hook()
        why = event_faults.refusal(entries)
        if why:
            self.refused.append(why)
            return 400, {"__type": "ValidationException", "message": why}
        if self.rng.random() < self.die_before:
            self.die("before the call reached the bus")
        failed = self.failures.failed(len(entries))
        going = event_faults.split(entries, failed)
        status, answer = serve(dict(request, Entries=going)) if going else (200, {"Entries": []})
        if status != 200:
            return status, answer
        whole = event_faults.merged(answer, failed, len(entries))
        taken = [entry for entry, result in zip(entries, whole["Entries"], strict=True) if "EventId" in result]
        self.accepted += [(self.publisher, json.loads(entry.get("Detail", "{}"))) for entry in taken]
        self.taken += taken
        if self.on_taken is not None:
            self.on_taken(taken)
        if self.rng.random() < self.die_after:
            self.die("after the bus accepted the call")
        return 200, whole

    def die(self, when):
        self.deaths += 1
        self.lab.database.die()  # the server ends the process's sessions before its code hears of it
        raise ProcessDied(when)

    def details(self, publisher=None):
        return [detail for who, detail in self.accepted if publisher in (None, who) and isinstance(detail, dict)]


def run_process(lab, function, *args):
    """(died, result) of a learner function that may meet a process death; after one, a new process may connect.

    The death must end the call, as it ends a process: a function that catches it and goes on fails.
    """
    deaths = lab.database.deaths
    try:
        result = function(*args)
    except (ProcessDied, RemoteError):
        if lab.database.deaths == deaths:
            raise  # an error of the learner's code, not a death
        lab.database.die_at(None)
        lab.database.revive()
        return True, None
    assert lab.database.deaths == deaths, f"{function.__name__} went on after the process died"
    return False, result


def lock_wait(function, *args):
    """(True, None) if the learner's function gave up waiting for another's row lock, else (False, its result)."""
    try:
        return False, function(*args)
    except RemoteError as error:
        if error.type_name != "LockNotAvailable":
            raise
        return True, None


def fresh_schema(lab):
    """An empty schema with the learner's tables (made by the learner's create_schema), an empty bus; a link."""
    lab.database.reset()
    lab.reset_world()
    lab.client("events").create_event_bus(Name=world.BUS)
    lab.aws_hooks.clear()
    link = lab.link()
    lab.call("create_schema", link)
    lab.database.admit("pedidos", "outbox")
    return link


def order(n):
    return orders.Order(orders.order_id(700_000 + n), Decimal("48.20"))


@contextlib.contextmanager
def bounded(conn, seconds=OWN_SECONDS):
    """The checker's own statements on a session of the learner's role end within `seconds` (cancelled then).

    The role's statement_timeout is no bound here: a trigger of the learner's, run by the checker's INSERT or
    TRUNCATE, may set it to 0 for the session and sleep on the next one.
    """
    timer = threading.Timer(seconds, conn.cancel_safe)
    timer.start()
    try:
        yield conn
    finally:
        timer.cancel()


def seed_rows(lab, rows):
    """rows: (agregado_id, tipo_evento, creado_en, publicado_en or None), inserted as the learner's role."""
    with lab.database.as_learner() as conn, bounded(conn):
        for agregado_id, tipo_evento, creado_en, publicado_en in rows:
            payload = json.dumps({"pedido_id": agregado_id, "tipo": tipo_evento})
            conn.execute(
                "INSERT INTO outbox (tipo_agregado, agregado_id, tipo_evento, payload, creado_en, publicado,"
                " publicado_en) VALUES ('pedido', %s, %s, %s, %s, %s, %s)",
                (agregado_id, tipo_evento, payload, creado_en, publicado_en is not None, publicado_en),
            )


def read(lab, query, *params):
    """Rows of `query` ({pedidos} and {outbox} name the learner's tables), read as the checker's reader."""
    return lab.database.read(query, params)


def pending(lab):
    return read(lab, "SELECT count(*) FROM {outbox} WHERE NOT publicado")[0][0]


def drain(lab, publish, link, polls=300):
    """Run the publisher until the outbox holds no unpublished row (its deaths included); the last link."""
    for _ in range(polls):
        if not pending(lab):
            return link
        died, _ = run_process(lab, publish, link, lab.client("events"), NOW)
        if died:
            link = lab.link()
    assert not pending(lab), f"{pending(lab)} rows still unpublished after {polls} runs of publish_pending"
    return link


def statements_of(lab, function, *args):
    """How many statements one call of `function` sends (the boundaries a death can fall on)."""
    lab.database.die_at(10_000)
    function(*args)
    count = lab.database.relay.statements
    lab.database.die_at(None)
    return count


def saved_and_published(lab, bus):
    stored = {pedido for (pedido,) in read(lab, "SELECT pedido_id FROM {pedidos}")}
    published = {detail.get("pedido_id") for detail in bus.details()}
    return stored, published


# -- (a) --------------------------------------------------------------------------------------
def check_answers_a(lab):
    assert lab.value("why_not_retry") == "no_process_left", "not what a retry cannot cover"
    lost = lab.value("lost_per_month")
    assert type(lost) in (int, float, Decimal) and 266 <= float(lost) <= 267, f"lost_per_month {lost!r}"


# -- (b), (c) -----------------------------------------------------------------------------------
def check_order_and_event_together(lab):
    link = fresh_schema(lab)
    bus = Bus(lab)
    place, publish, events = lab.function("place_order"), lab.function("publish_pending"), lab.client("events")
    boundaries = statements_of(lab, place, link, events, order(99_999), NOW)
    bus.die_before = bus.die_after = 1 / 10  # and a place_order that calls the bus may die around the call
    deaths = 0
    for n in range(ORDERS_WITH_DEATHS):
        lab.database.die_at(n % (boundaries + 1))  # every boundary in turn; the last one lets the call finish
        died, _ = run_process(lab, place, link, events, order(n), NOW)
        lab.database.die_at(None)
        if died:
            deaths += 1
            link = lab.link()  # the process died: its session is gone, its open transaction rolled back
    bus.die_before = bus.die_after = 0.0
    drain(lab, publish, link)
    stored, published = saved_and_published(lab, bus)
    assert deaths, "the grader never managed to stop place_order between two statements"
    assert not published - stored, (
        f"{len(published - stored)} events announce orders that were never saved (deaths at each of the "
        f"{boundaries} statement boundaries of place_order)"
    )
    assert not stored - published, f"{len(stored - published)} saved orders never reached the bus"
    assert len(stored) >= ORDERS_WITH_DEATHS // (boundaries + 1), f"only {len(stored)} orders were saved"


def check_publisher_deaths(lab):
    link = fresh_schema(lab)
    place, publish, events = lab.function("place_order"), lab.function("publish_pending"), lab.client("events")
    for n in range(300):
        place(link, events, order(n), NOW)
    bus = Bus(lab, seed=24, die_before=1 / 12, die_after=1 / 12)
    boundaries = statements_of(lab, publish, link, events, NOW, 0)
    for boundary in range(boundaries + 3):  # a death at each of its boundaries in turn, or none: then the bus may
        if not pending(lab):
            break
        lab.database.die_at(boundary)
        died, _ = run_process(lab, publish, link, events, NOW, 10)
        lab.database.die_at(None)
        if died:
            link = lab.link()
    drain(lab, publish, link)  # the rest, with the bus still killing it now and then
    stored, published = saved_and_published(lab, bus)
    placed = {order(n).pedido_id for n in range(300)}  # what the check placed, not what the tables say now
    assert bus.deaths + lab.database.deaths, "no publisher ever died"
    assert not placed - published, f"{len(placed - published)} saved orders never reached the bus"
    assert placed <= stored, f"{len(placed - stored)} placed orders are gone from pedidos: nothing deletes an order"


def check_parallel_publishers(lab):
    prove(lab, outbox_properties.sent_rows_stay_claimed)
    setup_link = fresh_schema(lab)
    place, publish, events = lab.function("place_order"), lab.function("publish_pending"), lab.client("events")
    for n in range(300):
        place(setup_link, events, order(n), NOW)
    # A publisher that waits for another's rows is stuck: B's and C's sessions give up after 200 ms.
    links = [lab.link(), lab.link(lock_timeout="200ms"), lab.link(lock_timeout="200ms")]
    blocked = []
    bus = Bus(lab)

    def run(index):
        publisher, bus.publisher = bus.publisher, "ABC"[index]
        try:
            if lock_wait(publish, links[index], events, NOW, 100)[0]:
                blocked.append(index)
        finally:
            bus.publisher = publisher

    def b_then_c():
        bus.first_call = lambda: run(2)  # inside B's first call, C
        run(1)
        bus.die_after = 1.0  # back in A's first call: A dies just after the bus accepts it

    bus.first_call = b_then_c  # inside A's first call, B
    died, _ = run_process(lab, run, 0)
    bus.die_after = 0.0
    if died:
        links[0] = lab.link()
    bus.publisher = "drain"
    drain(lab, publish, links[0])
    ids = {name: [d.get("outbox_id") for d in bus.details(name)] for name in "ABC"}
    every = [d.get("outbox_id") for d in bus.details()]
    twice = {i for i in every if every.count(i) > 1}
    created = {row_id for (row_id,) in read(lab, "SELECT id FROM {outbox}")}
    assert died, "publisher A never reached the bus"
    assert not blocked, "a publisher waited for the rows another one held instead of taking others"
    assert ids["B"] and ids["C"], "publishers B and C published nothing while A held its batch"
    assert all(isinstance(i, int) for i in every), "some events carry no outbox_id (the row's id) in their Detail"
    assert not set(ids["A"]) & set(ids["B"]) and not set(ids["B"]) & set(ids["C"]), "two publishers took the same rows"
    assert len(created) == 300 and set(every) == created, "some outbox rows were never published"
    assert twice <= set(ids["A"]), f"{len(twice - set(ids['A']))} rows published twice without any publisher dying"


KINDS = ("PedidoCreado", "PedidoPagado", "PedidoPreparado", "PedidoEnviado")


def check_order_per_aggregate(lab):
    prove(lab, outbox_properties.events_in_creation_order)
    wrong, left = order_seen(lab, publishers=3)
    assert not left, f"with 3 publishers at once, {left} rows were never published"
    assert not wrong, (
        f"with 3 publishers at once, the events of {len(wrong)} orders reached the bus out of creation order, e.g. "
        f"{next(iter(wrong.items()))}: while one publisher holds an order's event, may another take the next one?"
    )


def check_event_contract(lab):
    prove(lab, outbox_properties.events_as_the_contract_says)


def order_seen(lab, publishers):
    """({order: the kinds in the order the bus first saw them} where wrong, rows left) for 30 orders of 4 events."""
    fresh_schema(lab)
    rows = []
    for step, kind in enumerate(KINDS):  # each order's events in creation order, the orders interleaved
        for n in range(30):
            rows.append((order(n).pedido_id, kind, NOW - dt.timedelta(seconds=600 - 10 * step - n * 0.1), None))
    seed_rows(lab, rows)
    publish, events = lab.function("publish_pending"), lab.client("events")
    links = [lab.link()] + [lab.link(lock_timeout="200ms") for _ in range(publishers - 1)]
    bus = Bus(lab)

    def others():
        for link in links[1:]:  # one that waits for A's rows: the parallel check's business, not this one
            lock_wait(publish, link, events, NOW, 40)

    if publishers > 1:  # B and C claim while A is inside its first call
        bus.first_call = others
    for _ in range(200):
        if not pending(lab):
            break
        publish(links[0], events, NOW, 40)
    seen = {}
    for detail in bus.details():
        seen.setdefault(detail.get("pedido_id"), []).append(detail.get("tipo"))
    first_seen = {pedido: list(dict.fromkeys(kinds)) for pedido, kinds in seen.items()}
    wrong = {pedido: kinds for pedido, kinds in first_seen.items() if kinds != sorted(kinds, key=KINDS.index)}
    return wrong, pending(lab)


def check_partial_put_events(lab):
    link = fresh_schema(lab)
    place, publish, events = lab.function("place_order"), lab.function("publish_pending"), lab.client("events")
    for n in range(60):
        place(link, events, order(n), NOW)
    bus = Bus(lab, seed=7, partial=0.1)
    for _ in range(100):
        if not pending(lab):
            break
        publish(link, events, NOW, 30)
    stored, published = saved_and_published(lab, bus)
    placed = {order(n).pedido_id for n in range(60)}  # what the check placed, not what the tables say now
    calls = [c for c in lab.aws_calls if c["action"] == "PutEvents" and isinstance(c["request"], dict)]
    largest = max((len(c["request"].get("Entries") or []) for c in calls), default=0)
    assert not bus.refused, f"EventBridge refused {len(bus.refused)} call(s): {bus.refused[0]}"
    assert largest <= event_faults.MAX_ENTRIES, f"a call carried {largest} entries"
    assert bus.failures.calls, "nothing was published"
    assert not placed - published, (
        f"{len(placed - published)} orders never reached the bus when some entries of a call failed"
    )
    assert placed <= stored, f"{len(placed - stored)} placed orders are gone from pedidos: nothing deletes an order"


def check_partial_index(lab):
    fresh_schema(lab)
    partial = lab.database.partial_indexes("outbox")
    claim = lab.value("CLAIM_SQL")
    assert isinstance(claim, str), "CLAIM_SQL is not a string"
    with lab.database.as_learner() as conn, bounded(conn):  # the learner's SQL, with the learner's rights only
        conn.execute(
            "INSERT INTO outbox (tipo_agregado, agregado_id, tipo_evento, payload, creado_en, publicado, publicado_en)"
            " SELECT 'pedido', 'PED-2026-' || lpad(n::text, 6, '0'), 'PedidoCreado', '{}'::jsonb,"
            " %(t)s - make_interval(secs => 30000 - n), n <= 20000, CASE WHEN n <= 20000 THEN %(t)s END"
            " FROM generate_series(1, 20050) AS n",
            {"t": NOW},
        )
        conn.execute("ANALYZE outbox")
        (plan,) = conn.execute("EXPLAIN (FORMAT JSON, VERBOSE, COSTS OFF) " + claim, (100,)).fetchone()
    used = outbox_table.indexes_used(plan, lab.database.schema)
    assert partial, "outbox has no partial index (an index with a WHERE clause)"
    assert used & partial, (
        f"the claim query does not use a partial index of outbox ({', '.join(sorted(partial))}); "
        f"the plan uses {', '.join(sorted(used)) or 'no index'}"
    )


# -- (e) -----------------------------------------------------------------------------------------
def check_cleanup_published_only(lab):
    prove(lab, outbox_properties.cleanup_deletes_only_the_expired)
    link = fresh_schema(lab)
    day = dt.timedelta(days=1)
    seed_rows(
        lab,
        [
            ("PED-2026-900010", "PedidoCreado", NOW - 11 * day, NOW - 10 * day),
            ("PED-2026-900008", "PedidoCreado", NOW - 8 * day, NOW - 8 * day),
            ("PED-2026-900006", "PedidoCreado", NOW - 6 * day, NOW - 6 * day),
            ("PED-2026-900009", "PedidoCreado", NOW - 9 * day, None),
            ("PED-2026-900002", "PedidoCreado", NOW - 2 * day, None),
        ],
    )
    publish, cleanup, events = lab.function("publish_pending"), lab.function("cleanup"), lab.client("events")
    bus = Bus(lab)
    deleted, waited = [], []

    rows = {}  # the orders whose rows are in the outbox: before and after the cleanup

    def clean():  # while the publisher holds its batch
        rows["before"] = {agregado for (agregado,) in read(lab, "SELECT agregado_id FROM {outbox}")}
        blocked, result = lock_wait(cleanup, lab.link(lock_timeout="500ms"), NOW)
        (waited if blocked else deleted).append(result)
        rows["cleanup"] = {agregado for (agregado,) in read(lab, "SELECT agregado_id FROM {outbox}")}

    bus.first_call = clean
    publish(link, events, NOW)
    assert not waited, "the cleanup waited for rows a publisher holds: unpublished rows, which it must not touch"
    left = {agregado for (agregado,) in read(lab, "SELECT agregado_id FROM {outbox}")}
    unpublished = {"PED-2026-900009", "PED-2026-900002"}
    assert not (rows.get("before", set()) - rows.get("cleanup", set())) & unpublished, (
        "the cleanup deleted an unpublished row"
    )
    assert left >= rows.get("cleanup", set()), (
        f"publish_pending deleted {len(rows['cleanup'] - left)} outbox rows: a publisher marks what it sent; "
        "only the daily cleanup deletes, 7 days later"
    )
    assert left == {"PED-2026-900006", "PED-2026-900009", "PED-2026-900002"}, f"rows left: {sorted(left)}"
    assert deleted == [2], f"cleanup returned {deleted}, it deleted 2 rows"


def check_backlog(lab):
    prove(lab, outbox_properties.backlog_measures_the_pending)


# -- (d) -----------------------------------------------------------------------------------------
def check_consumer_dedups(lab):
    prove(lab, outbox_properties.consumer_prepares_once)


# -- the properties' bench --------------------------------------------------------------------------
def prove(lab, holds):
    """Look for a world that breaks `holds` (more worlds than the public checks play, on another seed)."""
    clock = VirtualClock().start()
    bench = GraderOutboxBench(lab, clock)
    try:
        found = holds(bench, examples=HIDDEN_EXAMPLES, seed=HIDDEN_SEED)
    finally:
        bench.close()
        clock.stop()
    if found is not None:
        raise Failed(found.why, found.story)


class GraderOutboxBench:
    """The grader's bench for the properties: its PostgreSQL, bus and DynamoDB; the learner's functions across
    the wire. Between worlds the tables are emptied as the learner's role (never as the server's owner: a trigger
    of the learner's would run with the owner's rights); the checker reads them as its reader."""

    def __init__(self, lab, clock):
        self.lab = lab
        self.link = fresh_schema(lab)
        self.dynamodb, self.events = lab.client("dynamodb"), lab.client("events")
        world.create_idempotency_table(self.dynamodb)
        self.store = idempotency.IdempotencyStore(self.dynamodb, clock)
        self.bus = Bus(lab)
        self.own = lab.database.as_learner()
        self.own.execute("SET lock_timeout = '2s'")
        self.emptied = True
        self.rival = None
        self.other = None  # publisher B's link
        self.keys_before = set()
        self.functions = {
            name: lab.function(name)
            for name in ("place_order", "publish_pending", "cleanup", "backlog", "handle_event")
        }

    def close(self):
        if self.rival is not None:
            self.rival.conn.close()
            self.rival.watch.close()
        self.own.close()

    def fresh(self):
        if not self.emptied:
            with bounded(self.own):
                self.own.execute("TRUNCATE outbox, pedidos RESTART IDENTITY CASCADE")
        self.emptied = False
        self.bus.accepted.clear()
        self.bus.taken.clear()

    def seed(self, rows, now):
        with bounded(self.own), self.own.transaction():
            statement = outbox_properties.seed_statement()
            return [self.own.execute(statement, outbox_properties.seed_values(row, now)).fetchone()[0] for row in rows]

    def stored(self):
        columns = outbox_properties.STORED_COLUMNS
        return [Stored(*row) for row in read(self.lab, f"SELECT {columns} FROM {{outbox}} ORDER BY id")]

    def place(self, order_, now):
        return self.functions["place_order"](self.link, self.events, order_, now)

    def publish(self, now, batch, refused=()):
        self.bus.failures = event_faults.ScriptedFailures(refused)
        try:
            return self.functions["publish_pending"](self.link, self.events, now, batch)
        finally:
            self.bus.failures = event_faults.PartialFailures()

    def publish_with_another(self, now, batch):
        if self.other is None:  # publisher B: a process of its own, which gives up waiting for a lock
            self.other = self.lab.link(lock_timeout=outbox_properties.LOCK_GIVE_UP)
        waited, from_b = [], []

        def publisher_b():
            before = len(self.bus.taken)
            if lock_wait(self.functions["publish_pending"], self.other, self.events, now, batch)[0]:
                waited.append(True)
            from_b.append(len(self.bus.taken) - before)

        self.bus.first_call = publisher_b
        try:
            return self.publish(now, batch), bool(waited), sum(from_b)
        finally:
            self.bus.first_call = None

    def publish_beside_a_rival(self, now, batch, refused=()):
        if self.rival is None:  # the other publisher: the checker's rival role, which no policy blinds
            database = self.lab.database
            table = sql.Identifier(database.schema, "outbox")
            self.rival = outbox_properties.Rival(database.as_rival(), database.as_rival(), table)
        self.bus.on_taken = self.rival.start
        try:
            answer = self.publish(now, batch, refused)
        finally:
            self.bus.on_taken = None
            took = self.rival.finish()
        self.lab.database.admit("outbox")  # still a plain table of built-in types
        return answer, took

    def accepted(self):
        return list(self.bus.taken)

    def cleanup(self, now):
        return self.functions["cleanup"](self.link, now)

    def backlog(self, now):
        return self.functions["backlog"](self.link, now)

    def consume(self, detail, prepare):
        return self.functions["handle_event"](self.store, detail, Callback(prepare))

    def event_ids(self, count):
        self.keys_before = self.keys()
        first = outbox_properties.FIRST_EVENT
        return list(range(first, first + count))

    def forget(self):
        for key in self.keys() - self.keys_before:
            self.dynamodb.delete_item(TableName=world.IDEMPOTENCY_TABLE, Key={"clave": {"S": key}})

    def keys(self):
        items = self.dynamodb.scan(TableName=world.IDEMPOTENCY_TABLE, ProjectionExpression="clave")["Items"]
        return {item["clave"]["S"] for item in items}


def check_answers_c_d_e(lab):
    assert lab.value("POLL_SECONDS") == 1 and lab.value("BATCH_SIZE") == 100, "not the lesson's poll interval and batch"
    assert lab.value("guarantee") == "at_least_once", "not the guarantee of the outbox"
    assert lab.value("consumer_needs") == "idempotent", "not what the guarantee demands of consumers"
    operate = lab.value("operate")
    assert isinstance(operate, (set, list, tuple)) and set(operate) == {"publisher_monitoring", "table_cleanup"}, (
        "not the two new things to operate"
    )
    assert lab.value("PENDING_ALARM_ROWS") == 500 and lab.value("OLDEST_ALARM_SECONDS") == 60, "not the lesson's alarms"
