"""Another publisher at the worst moment: a sent row must stay claimed until it is marked.

The lesson's publisher claims rows with `FOR UPDATE SKIP LOCKED`, publishes
them and marks them in one transaction, so the row locks last until the mark
commits. A publisher that lets the locks go first (the claim in a transaction
of its own, or the mark after the COMMIT) leaves a moment when a row the bus
already has is unpublished and free: a second publisher takes it and sends it
again, with nobody dead.

`Rival` is that second publisher. The moment the bus has taken some rows'
events it asks for those rows: first without waiting (a row it gets at once was
never locked), then waiting for the first publisher's locks, which it gets when
that publisher's transaction ends. If the mark was in that transaction, the
rows are published by then and the rival takes nothing; if not, it takes them.
It never keeps what it takes (its transaction rolls back), so the first
publisher goes on as if alone.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from psycopg import sql

from mercadofresco.i18n import _
from mercadofresco.lessons import worlds
from mercadofresco.lessons.exercises.outbox_publisher import raised
from mercadofresco.lessons.exercises.outbox_world import KINDS, OutboxBench, Row, ago, both, world_now

LOCK_WAIT = "5s"  # the rival's longest wait for the first publisher's locks: its transaction should end sooner
STATEMENT_LIMIT = "6s"  # and for anything else a statement of its meets
# The longest the first publisher is held for the rival to queue behind its locks (it takes milliseconds). Under a
# loaded CI, 2 s was once not enough: the rival came after the mark and a wrong publisher escaped one world.
SETTLE_SECONDS = 6.0
OUTBOX = sql.Identifier("outbox")  # in the notebook's schema, on its search_path
TAKE = "SELECT id FROM {} WHERE NOT publicado AND id = ANY(%s) ORDER BY id FOR UPDATE"


class RivalStopped(Exception):
    """The rival could not ask for the rows (a lock held too long, a table locked whole): no other publisher could."""


class Rival:
    """A second publisher on `conn` (autocommit), watched from `watch` (another connection of the same role), that
    asks for the rows of `table` (the hidden checks name it with its schema, for a role that sees past any policy).

    `start(entries)` is called with the entries the bus has just taken from the first publisher; `finish()`,
    after that publisher returns, gives the ids the rival could take (empty when every sent row stayed claimed
    until it was marked).
    """

    def __init__(self, conn: Any, watch: Any, table: sql.Composable = OUTBOX) -> None:
        self.conn, self.watch, self.table = conn, watch, table
        self.conn.execute(f"SET lock_timeout = '{LOCK_WAIT}'")
        self.conn.execute(f"SET statement_timeout = '{STATEMENT_LIMIT}'")
        self.took: list[int] = []
        self.thread: threading.Thread | None = None
        self.error = ""  # why the rival could not ask for the rows

    def start(self, entries: list[dict]) -> None:
        ids = [i for i in (_outbox_id(entry) for entry in entries) if isinstance(i, int)]
        if self.thread is not None or not ids:
            return  # one rival a run: the first call that took something
        try:
            free = self._take(ids, wait=False)
        except Exception as error:  # a lock on the whole table, a statement that never ends
            self.error = f"{type(error).__name__}: {str(error).strip()[:120]}"
            return
        if free:
            self.took = free  # rows the bus has, and nobody holds
            return
        pid, deadline = self.conn.info.backend_pid, time.monotonic() + SETTLE_SECONDS
        self.thread = threading.Thread(target=self._wait_and_take, args=(ids,), daemon=True)
        self.thread.start()
        while self.thread.is_alive() and time.monotonic() < deadline:  # until it queues behind the locks
            state = self.watch.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,))
            if (state.fetchone() or [None])[0] == "Lock":
                return
            time.sleep(0.001)

    def finish(self) -> list[int]:
        """The ids the rival took (after the first publisher's call returned); it is ready for the next run.

        Raises RivalStopped when it could not ask for them.
        """
        if self.thread is not None:
            self.thread.join(timeout=SETTLE_SECONDS + 7)
        took, error, self.took, self.error, self.thread = self.took, self.error, [], "", None
        if error:
            raise RivalStopped(error)
        return took

    def _wait_and_take(self, ids: list[int]) -> None:
        try:
            self.took = self._take(ids, wait=True)
        except Exception as error:  # a lock held past LOCK_WAIT: the first publisher kept the rows too long
            self.error = f"{type(error).__name__}: {str(error).strip()[:120]}"

    def _take(self, ids: list[int], wait: bool) -> list[int]:
        with self.conn.transaction(force_rollback=True):
            statement = sql.SQL(TAKE if wait else TAKE + " SKIP LOCKED").format(self.table)
            return [row[0] for row in self.conn.execute(statement, (ids,)).fetchall()]


def _outbox_id(entry: dict) -> Any:
    try:
        detail = json.loads(entry.get("Detail", "{}"))
    except (TypeError, ValueError):
        return None
    return detail.get("outbox_id") if isinstance(detail, dict) else None


@dataclass(frozen=True)
class Pending:
    """Unpublished rows (orders' events), the batch a run takes, and the entries the bus refuses in its first call."""

    rows: tuple[Row, ...]
    batch: int
    refused: frozenset[int] = frozenset()


@st.composite
def _pending(draw: Any) -> Pending:
    count = draw(st.integers(1, 5))
    rows = tuple(Row(n % 2, 600.0 - 60 * n, None, KINDS[n // 2 % len(KINDS)]) for n in range(count))
    return Pending(rows, draw(st.sampled_from((1, 2, 3, 100))), frozenset(draw(st.sets(st.integers(0, count - 1)))))


RIVAL_FIRST = (Pending((Row(0, 600.0),), 100), Pending((Row(0, 600.0), Row(1, 540.0)), 100, frozenset({0})))


def sent_rows_stay_claimed(bench: OutboxBench, examples: int, seed: int) -> worlds.Counterexample | None:
    """A row the bus has taken stays claimed until it is marked: another publisher can never take it in between.

    Whatever the batch and whichever entries the bus refuses; otherwise the other publisher sends it again.
    """
    return worlds.smallest_counterexample(_pending(), _rival_play(bench), examples, seed, RIVAL_FIRST)


def _rival_play(bench: OutboxBench) -> Callable[[Pending], None]:
    def play(world_: Pending) -> None:
        bench.fresh()
        now: dt.datetime = world_now()
        ids = bench.seed(list(world_.rows), now)
        lines = [
            _("row {row}: {tipo}, created {created} ago, unpublished").format(
                row=row_id, tipo=row.tipo, created=ago(row.created_ago)
            )
            for row_id, row in zip(ids, world_.rows, strict=True)
        ]
        refused = [str(n + 1) for n in sorted(world_.refused)]
        lines.append(
            _(
                "publisher A runs publish_pending with batch_size={batch}; the bus refuses entry {entries} of its "
                "first call"
            ).format(batch=world_.batch, entries=functools.reduce(both, refused))
            if refused
            else _("publisher A runs publish_pending with batch_size={batch}").format(batch=world_.batch)
        )
        lines.append(_("publisher B asks for the rows whose events the bus took, the moment it took them"))
        try:
            _answer, took = bench.publish_beside_a_rival(now, world_.batch, (world_.refused,))
        except RivalStopped as stopped:
            why = _("publisher B could not ask for the rows the bus had taken from A ({error}): it could not work")
            raise worlds.Broken(why.format(error=stopped), lines) from None
        except Exception as error:
            raise worlds.Broken(raised(error), lines) from None
        if took:
            why = _(
                "the bus took row {row}'s event from A, and B could take row {row} before A marked it: "
                "B publishes it again, with nobody dead. Claim, publish and mark in one transaction"
            )
            raise worlds.Broken(why.format(row=took[0]), lines)

    return play
