"""The outbox on a real PostgreSQL: the dual write loses events, the outbox loses none, publishers never collide.

The embedded server is started once for this module and stopped at its end (or the server of
MERCADOFRESCO_DATABASE_URL is used, in a schema of its own).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
import threading
from collections import Counter
from decimal import Decimal
from pathlib import Path

import psutil
import psycopg
import pytest

from mercadofresco import orders
from mercadofresco.clock import LESSON_START
from mercadofresco.lessons.outbox import experiments, operations, streams
from mercadofresco.lessons.outbox import publishers as outbox_publishers
from mercadofresco.patterns import outbox
from mercadofresco.runtime import database

NOW = LESSON_START


@pytest.fixture(scope="module")
def db():
    with database.start(schema="mercadofresco_tests") as started:
        yield started


def test_the_dual_write_loses_one_event_per_crash_and_the_outbox_loses_none(db, aws):
    config = experiments.CrashConfig(orders=400, crash_probability=0.05)
    dual = experiments.run_dual_write(db, aws.client("events"), config, seed=3)
    kept, _ = experiments.run_outbox(db, aws.client("events"), config, seed=3)
    assert dual.crashes > 5
    assert dual.lost == dual.crashes and dual.in_database == 400 and dual.phantom == 0
    assert kept.lost == 0 and kept.published == kept.in_database == 400


def test_at_one_in_900_every_crash_is_a_lost_order_and_a_month_loses_about_266(db, aws):
    config = experiments.CrashConfig(orders=900)
    dual = experiments.run_dual_write(db, aws.client("events"), config, seed=1)
    assert dual.crashes >= 1 and dual.lost == dual.crashes
    months = experiments.monthly_losses(months=24)
    expected = experiments.ORDERS_PER_MONTH * experiments.MARTA_RATE
    assert int(expected) == 266
    assert abs(sum(months) / len(months) - expected) < 15


def test_the_bus_received_what_the_tap_counted(db, aws):
    events = aws.client("events")
    archive = events.create_archive(
        ArchiveName="archivo-outbox",
        EventSourceArn=events.describe_event_bus(Name="bus-mercadofresco")["Arn"],
        EventPattern='{"source": ["mercadofresco.tienda"]}',
    )
    assert archive["State"] == "ENABLED"
    _, tap = experiments.run_outbox(db, events, experiments.CrashConfig(orders=120, crash_probability=0), seed=1)
    assert events.describe_archive(ArchiveName="archivo-outbox")["EventCount"] == len(tap.accepted) == 120


def test_publishing_first_announces_orders_that_do_not_exist(db, aws):
    result = experiments.run_dual_write(
        db, aws.client("events"), experiments.CrashConfig(orders=200, crash_probability=0.1), 2, True
    )
    assert result.phantom == result.crashes > 0
    assert result.lost == 0 and result.in_database == 200 - result.crashes


def test_retrying_put_events_covers_failed_calls_but_not_dead_processes(db, aws):
    flaky = experiments.CrashConfig(orders=300, crash_probability=0.05, throttle_probability=0.05)
    once = experiments.run_dual_write(db, aws.client("events"), flaky, seed=4)
    retried = experiments.run_dual_write(
        db, aws.client("events"), experiments.CrashConfig(**{**vars(flaky), "put_events_attempts": 3}), 4
    )
    assert once.lost > once.crashes  # throttled calls lost on top of the crashes
    assert retried.lost == retried.crashes > 0  # retries recovered every throttled call, and no crash


def test_a_publisher_that_dies_between_publishing_and_marking_duplicates_its_batch(db, aws):
    result, tap = experiments.run_outbox(
        db, aws.client("events"), experiments.CrashConfig(orders=300, crash_probability=0), 1, 1
    )
    assert result.lost == 0 and result.crashes == 1
    assert result.duplicated == outbox.BATCH_SIZE
    assert max(Counter(detail["outbox_id"] for detail in tap.accepted).values()) == 2


def test_two_publishers_without_skip_locked_double_publish_or_block_and_with_it_they_do_not(db):
    unlocked = outbox_publishers.contend(db, "no_lock")
    waiting = outbox_publishers.contend(db, "for_update")
    skipping = outbox_publishers.contend(db, "skip_locked")
    assert unlocked["published twice"] == 100 and unlocked["A took"] == unlocked["B took"]
    assert waiting["B took"].startswith("waited")
    assert skipping["published twice"] == 0 and skipping["B took"] == "ids 101-200"
    assert skipping["first id on the bus"] == 101  # order holds per batch, not across publishers


class RecordingSink:
    def __init__(self):
        self.ids = []
        self.lock = threading.Lock()

    def publish(self, rows):
        with self.lock:
            self.ids.extend(row.id for row in rows)


def test_four_publishers_in_parallel_threads_publish_every_row_exactly_once(db):
    with db.connect() as conn:
        experiments.fresh_tables(conn)
        outbox_publishers.add_rows(conn, pending=2_000)
    sink = RecordingSink()

    def work():
        with db.connect() as link:
            publisher = outbox.Publisher(link, sink, outbox.PublisherPolicy(batch_size=50))
            while publisher.run_once(dt.datetime(2026, 10, 16, tzinfo=dt.UTC)):
                pass

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(sink.ids) == list(range(1, 2_001))


def test_the_partial_index_exists_and_the_claim_uses_it(db):
    plans = outbox_publishers.claim_plans(db)
    small, forced, history = plans.values()
    assert not outbox_publishers.uses_pending_index(small)  # 50 rows: reading the table is cheaper, the planner knows
    assert outbox_publishers.uses_pending_index(forced)
    assert outbox_publishers.uses_pending_index(history)  # behind 20,000 published rows, without any setting
    with db.connect() as conn, conn.transaction():
        definition = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'outbox_pendientes'").fetchone()
    assert "WHERE (NOT publicado)" in definition[0]
    pages = outbox_publishers.index_pages(db)
    assert pages["outbox_pendientes"] * 10 < pages["outbox_todas"]


def test_cleanup_removes_only_rows_published_more_than_7_days_ago(db, clock):
    rows = outbox_publishers.cleanup_demo(db, clock.now())
    assert [row["after cleanup"] for row in rows] == ["deleted", "deleted", "kept", "kept"]


def test_the_consumer_deduplicates_by_outbox_id(db, aws, clock):
    result = outbox_publishers.deliver_and_consume(db, aws, clock, count=25)
    assert result["messages delivered"] == 35  # the first batch of 10 went out twice
    assert result["orders prepared"] == 25 and result["prepared twice"] == 0


def test_a_partly_refused_put_events_loses_orders_only_when_the_answer_is_read_as_all_or_nothing(db, aws, clock):
    found = {row["design"]: row for row in outbox_publishers.partial_failures(db, aws, clock.now(), 0.05, 100)}
    ignoring, rolled_back, accepted = (found[design] for design in outbox_publishers.PARTIAL_DESIGNS)
    assert ignoring["orders lost"] > 0 and ignoring["polls"] == 1
    assert rolled_back["orders lost"] == 0 and rolled_back["events repeated"] > 100
    assert accepted["orders lost"] == accepted["events repeated"] == 0 and accepted["events on the bus"] == 100


def test_polling_every_second_adds_under_a_second_of_latency(db, aws):
    latencies = outbox_publishers.publish_latency(db, aws.client("events"))
    assert len(latencies) == 120 and max(latencies) <= 1.0 and 0.3 < sum(latencies) / 120 < 0.7


def test_a_publisher_on_eventbridge_schedulers_one_minute_rate_is_half_a_minute_late(db, aws):
    latencies = outbox_publishers.publish_latency(db, aws.client("events"), 30, 300, poll_seconds=60)
    assert len(latencies) == 30 and 20 < sum(latencies) / 30 < 45 and 50 < max(latencies) <= 60


def test_retrying_put_events_misses_the_entries_a_successful_call_refused(db, aws):
    base = dict(orders=60, crash_probability=0.1, throttle_probability=0.1, put_events_attempts=3)
    retried = experiments.run_dual_write(db, aws.client("events"), experiments.CrashConfig(**base), seed=2)
    refusing = experiments.CrashConfig(**base, refuse_probability=0.05)
    ignored = experiments.run_dual_write(db, aws.client("events"), refusing, seed=2)
    resent = experiments.run_dual_write(
        db, aws.client("events"), experiments.CrashConfig(**vars(refusing) | {"resend_refused": True}), seed=2
    )
    assert retried.lost == retried.crashes == 5
    assert ignored.lost == 9 and ignored.crashes == 5  # four refused entries lost on top of the deaths
    assert resent.lost == resent.crashes == 5


def test_a_stopped_publisher_trips_the_age_alarm_first_and_the_count_alarm_later(db, aws, clock):
    rows = operations.stopped_publisher(db, aws, clock)
    assert operations.first_alarm_minutes(rows) == {"pending_alarm": 34.0, "age_alarm": 2.0}
    assert rows[-1]["pending"] == 0 and rows[-1]["age_alarm"] == rows[-1]["pending_alarm"] == "OK"


def test_place_orders_writes_what_place_order_writes_and_all_or_nothing(db):
    placed = [
        (orders.Order(orders.order_id(700_001 + n), Decimal("48.20")), NOW + dt.timedelta(seconds=n)) for n in range(3)
    ]
    query = "SELECT o.pedido_id, o.creado_en, x.tipo_evento, x.payload, x.creado_en FROM pedidos o JOIN outbox x"
    query += " ON x.agregado_id = o.pedido_id ORDER BY x.id"
    tables = []
    with db.connect() as conn:
        for write in (
            lambda: [outbox.place_order(conn, *pair) for pair in placed],
            lambda: outbox.place_orders(conn, placed),
        ):
            experiments.fresh_tables(conn)
            write()
            with conn.transaction():
                tables.append(conn.execute(query).fetchall())
        bad = orders.Order(orders.order_id(700_009), Decimal("1.00"))
        with pytest.raises(psycopg.errors.UniqueViolation):  # the first order again: the whole batch rolls back
            outbox.place_orders(conn, [(bad, NOW), placed[0]])
        with conn.transaction():
            counts = conn.execute("SELECT (SELECT count(*) FROM pedidos), (SELECT count(*) FROM outbox)").fetchone()
    assert tables[0] == tables[1] and len(tables[0]) == 3
    assert counts == (3, 3)


def test_streams_cdc_loses_nothing_when_the_writer_dies(aws):
    result = streams.run_streams(aws, carts=30, crash_probability=0.2)
    assert result["writer deaths"] > 0 and result["lost"] == 0 and result["events published"] == 30


def test_a_bad_database_url_names_the_variable(monkeypatch):
    for url in ("mysql://user@localhost/pedidos", "not a url", "postgresql://nadie@127.0.0.1:1/pedidos"):
        monkeypatch.setenv(database.DATABASE_URL_ENV, url)
        with pytest.raises(database.DatabaseConfigError, match="MERCADOFRESCO_DATABASE_URL"):
            database.start()


def test_the_url_password_never_appears_in_the_message(monkeypatch):
    monkeypatch.setenv(database.DATABASE_URL_ENV, "postgresql://marta:secreto@127.0.0.1:1/pedidos")
    with pytest.raises(database.DatabaseConfigError) as caught:
        database.start()
    assert "secreto" not in str(caught.value)


def test_the_embedded_server_stops_and_removes_its_directory(monkeypatch):
    monkeypatch.delenv(database.DATABASE_URL_ENV, raising=False)
    db = database.start()
    directory = db._directory
    pid = db._server.get_pid()
    with db.connect() as conn:
        assert conn.execute("SHOW fsync").fetchone()[0] == "off"
    db.close()
    assert not Path(directory).exists()
    stopped = psutil.Process(pid) if psutil.pid_exists(pid) else None
    assert stopped is None or stopped.status() == psutil.STATUS_ZOMBIE  # exited (a container's init may not reap it)


def test_a_small_dev_shm_is_passed_over_and_a_full_disk_is_refused_with_what_it_needs(monkeypatch, tmp_path):
    """Binder and Docker give /dev/shm 64 MB: the server's files go to the temporary directory instead."""
    sizes = {"/dev/shm": 64, str(tmp_path): 10_000}
    monkeypatch.setattr(
        database.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(0, 0, sizes[str(path)] << 20)
    )
    monkeypatch.setattr(database.tempfile, "tempdir", str(tmp_path))
    if os.access("/dev/shm", os.W_OK):
        assert database._scratch_dir() is None  # 64 MB free: too small for a notebook's and a lab's servers
        sizes["/dev/shm"] = 4096
        assert database._scratch_dir() == "/dev/shm"
    database._check_room(str(tmp_path))
    sizes[str(tmp_path)] = 20
    with pytest.raises(database.DatabaseError, match=rf"needs about 64 MB free .* {tmp_path} has 20 MB.*TMPDIR"):
        database._check_room(str(tmp_path))


def test_the_settings_reject_values_out_of_range():
    with pytest.raises(ValueError, match=r"crash_probability must be between 0 and 0\.5"):
        experiments.CrashConfig(crash_probability=0.9)
    with pytest.raises(ValueError, match="batch_size must be between 1 and 1000"):
        outbox.PublisherPolicy(batch_size=0)


def test_a_publisher_refuses_an_autocommit_connection(db):
    with db.connect(autocommit=True) as conn, pytest.raises(outbox.OutboxError, match="autocommit"):
        outbox.Publisher(conn, RecordingSink())


def test_starting_in_the_background_gives_the_database_or_the_error(monkeypatch):
    monkeypatch.setenv(database.DATABASE_URL_ENV, "mysql://user@localhost/pedidos")
    with pytest.raises(database.DatabaseConfigError, match="MERCADOFRESCO_DATABASE_URL"):
        database.start_in_background().result(timeout=60)


def test_a_killed_process_leaves_no_server_behind(tmp_path):
    """A kernel killed with SIGKILL runs no atexit: the watcher stops its server and deletes the directory."""
    code = (
        "import sys\n"
        "from mercadofresco.runtime import database\n"
        "db = database.start()\n"
        "print(db._directory, db._server.get_pid(), flush=True)\n"
        "sys.stdin.read()\n"
    )
    env = {**os.environ, database.DATABASE_URL_ENV: ""}
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    directory, pid = child.stdout.readline().split()
    watchers = [proc for proc in psutil.Process(child.pid).children() if "postmaster.pid" in " ".join(proc.cmdline())]
    child.kill()
    child.wait(timeout=30)
    assert len(watchers) == 1
    watchers[0].wait(timeout=30)
    assert not Path(directory).exists()
    assert not psutil.pid_exists(int(pid)) or psutil.Process(int(pid)).status() == psutil.STATUS_ZOMBIE


def test_each_outbox_figure_says_its_numbers_and_reads_without_colour():
    from mercadofresco.lessons.outbox import figures
    from mercadofresco.lessons.show.pictures import series
    from tests.notebooks.colour_vision import problems

    results = [
        experiments.LossResult("INSERT, then put_events", 20, 2, 20, 18, lost=2, phantom=0, duplicated=0),
        experiments.LossResult("publish, then INSERT", 20, 2, 18, 20, lost=0, phantom=2, duplicated=0),
        experiments.LossResult("outbox", 20, 2, 20, 20, lost=0, phantom=0, duplicated=1),
    ]
    losses = figures.losses(results, "20 orders")
    assert losses.alt.startswith("20 orders. Bar chart: events lost, phantom")
    assert "Each design takes 20 orders and 2 process deaths." in losses.alt
    assert "INSERT, then put_events: 2 lost, 0 phantom, 0 duplicated; publish, then INSERT: 0 lost, 2 phantom" in (
        losses.alt
    )
    assert "outbox: 0 lost, 0 phantom, 1 duplicated." in losses.alt

    pending = (100, 300, 600, 0)  # every 10 minutes; the publisher is down for the first 30
    rows = [
        {"minute": 10 * (i + 1), "pending": p, "oldest_seconds": 60 * 10 * (i + 1) * (p > 0),
         "pending_alarm": "ALARM" if p > outbox.PENDING_ALARM_ROWS else "OK", "age_alarm": "ALARM" if p else "OK"}
        for i, p in enumerate(pending)
    ]  # fmt: skip
    backlog = figures.backlog(rows, 30)
    assert "the publisher is down for the first 30 minutes" in backlog.alt
    assert "Pending rows peak at 600 at minute 30, back to 0 at minute 40" in backlog.alt
    assert "pending_alarm went to ALARM at minute 30 and age_alarm went to ALARM at minute 10" in backlog.alt

    ages = (2, 14, 24, 24, 0)  # the oldest record's age every 6 hours; the stream trims at 24 h
    lag = figures.pipe_lag([{"hour": 6.0 * (i + 1), "age_hours": a} for i, a in enumerate(ages)], 2, 26)
    assert "the pipe is stopped from hour 2 to hour 28" in lag.alt
    assert "It peaks at 24 h (the stream's trim) from hour 18 to hour 24, above the lag alarm from hour 6" in lag.alt
    assert "and is 0 h at hour 30" in lag.alt
    for picture in (losses, backlog, lag):
        assert problems(series(picture.figure)) == [], picture.alt
