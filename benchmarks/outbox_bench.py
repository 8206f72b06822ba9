"""Publisher throughput on the embedded PostgreSQL: rows per second with 1 and 4 publishers.

    python benchmarks/outbox_bench.py [rows]

A measurement, not a test. Each publisher is a thread with its own connection, claiming
100 rows at a time with FOR UPDATE SKIP LOCKED, publishing and marking them. Two sinks:
"database only" (publishing does nothing, so this is PostgreSQL's claim-and-mark rate) and
"moto bus" (put_events on moto's bus-mercadofresco, 10 entries a call, which mostly measures
moto). The check at the end: every row published exactly once.
"""

from __future__ import annotations

import datetime as dt
import sys
import threading
import time

from mercadofresco import clock, world
from mercadofresco.lessons.outbox import experiments
from mercadofresco.lessons.outbox import publishers as outbox_publishers
from mercadofresco.patterns import outbox
from mercadofresco.runtime import database


class CountingSink:
    """Publishes nowhere, or to `inner`, and counts every row id (thread-safe)."""

    def __init__(self, inner: outbox.Sink | None = None) -> None:
        self.inner = inner
        self.ids: list[int] = []
        self.lock = threading.Lock()

    def publish(self, rows: list[outbox.OutboxRow]) -> None:
        if self.inner is not None:
            with self.lock:  # one boto3 client, shared: keep its calls one at a time
                self.inner.publish(rows)
        with self.lock:
            self.ids.extend(row.id for row in rows)


def run(db: database.Database, rows: int, publishers: int, sink: CountingSink) -> float:
    """Rows per second for `publishers` threads draining `rows` pending rows."""
    with db.connect() as conn:
        experiments.fresh_tables(conn)
        outbox_publishers.add_rows(conn, pending=rows)
    now = dt.datetime(2026, 10, 16, 19, 14, tzinfo=clock.MADRID)

    def work() -> None:
        with db.connect() as link:
            publisher = outbox.Publisher(link, sink)
            while publisher.run_once(now):
                pass

    threads = [threading.Thread(target=work) for _ in range(publishers)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    if sorted(sink.ids) != list(range(1, rows + 1)):
        raise SystemExit(f"{publishers} publishers: some rows were published twice or never")
    return rows / seconds


def main(argv: list[str]) -> int:
    rows = int(argv[0]) if argv else 20_000
    started = time.perf_counter()
    db = database.start(schema="mercadofresco_bench")
    print(f"database: {db} started in {time.perf_counter() - started:.2f} s")
    with clock.VirtualClock(), world.build() as aws:  # moto needs the clock; the throughput is wall-clock time
        for label, inner in (("database only", None), ("moto bus", outbox.EventBusSink(aws.client("events")))):
            for publishers in (1, 4):
                rate = run(db, rows if inner is None else rows // 10, publishers, CountingSink(inner))
                print(f"{label:14} {publishers} publisher(s): {rate:9,.0f} rows/s")
    db.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
