"""What exercise 3's two operating jobs must do in every world: the daily cleanup and the backlog's measure.

- `cleanup_deletes_only_the_expired`: of any rows, the daily cleanup deletes
  exactly those published more than 7 days before `now` (not by creation date,
  not at exactly 7 days, never an unpublished row), and says how many;
- `backlog_measures_the_pending`: the unpublished rows' count and the oldest
  one's wait at `now`, in seconds (days included), 0 when none waits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from mercadofresco.i18n import _
from mercadofresco.lessons import worlds
from mercadofresco.lessons.exercises.outbox_world import DAY, RETENTION_SECONDS, OutboxBench, Row, ago, world_now

AGES = (0, 1, 59, 61, 3600, DAY - 1, DAY + 5, RETENTION_SECONDS - 1, RETENTION_SECONDS, RETENTION_SECONDS + 1)
AGES += (8 * DAY, 30 * DAY)


@st.composite
def _rows(draw: Any) -> tuple[Row, ...]:
    rows = []
    for number in range(draw(st.integers(1, 5))):
        published = draw(st.none() | st.sampled_from(AGES))
        created = max(published or 0, draw(st.sampled_from(AGES)))  # created before it was published
        rows.append(Row(number, created, published))
    return tuple(rows)


CLEANUP_FIRST = (
    (Row(0, 30 * DAY, DAY),),  # created long ago, published yesterday: it stays
    (Row(0, RETENTION_SECONDS, RETENTION_SECONDS),),  # published exactly 7 days ago: not more than 7, it stays
    (Row(0, 100 * DAY, None),),  # never published, however old: an event nobody sent yet
    (Row(0, 8 * DAY, 8 * DAY), Row(1, 6 * DAY, 6 * DAY)),
)
BACKLOG_FIRST = (
    (Row(0, 2 * DAY + 5), Row(1, 30)),  # the oldest has waited more than a day
    (Row(0, 300, 200), Row(1, 90)),  # a published row older than the pending one does not count
    (Row(0, 300, 200),),  # nothing waits: 0 rows, 0 s
    (Row(0, 30), Row(1, 90)),  # the oldest is not the first written
)


def cleanup_deletes_only_the_expired(bench: OutboxBench, examples: int, seed: int) -> worlds.Counterexample | None:
    """The cleanup deletes exactly the rows published more than 7 days ago, and says how many."""
    return worlds.smallest_counterexample(_rows(), _cleanup_play(bench), examples, seed, CLEANUP_FIRST)


def backlog_measures_the_pending(bench: OutboxBench, examples: int, seed: int) -> worlds.Counterexample | None:
    """The backlog counts the unpublished rows and measures the oldest one's wait at the instant given."""
    return worlds.smallest_counterexample(_rows(), _backlog_play(bench), examples, seed, BACKLOG_FIRST)


def _told(rows: tuple[Row, ...], fate: Callable[[int, Row], str] = lambda n, row: "") -> list[str]:
    """A line for each row; `fate(n, row)`, when not "", is a template that adds to the line (its `{line}`)."""
    lines = []
    for number, row in enumerate(rows):
        line = (
            _("row {row}: created {created} ago, never published").format(row=number + 1, created=ago(row.created_ago))
            if row.published_ago is None
            else _("row {row}: created {created} ago, published {published} ago").format(
                row=number + 1, created=ago(row.created_ago), published=ago(row.published_ago)
            )
        )
        said = fate(number, row)
        lines.append(said.format(line=line) if said else line)
    return lines


def _cleanup_play(bench: OutboxBench) -> Callable[[tuple[Row, ...]], None]:
    def play(rows: tuple[Row, ...]) -> None:
        bench.fresh()
        now = world_now()
        ids = bench.seed(list(rows), now)
        answer = bench.cleanup(now)
        left = {row.id for row in bench.stored()}
        deleted = {n for n, row_id in enumerate(ids) if row_id not in left}
        expired = {
            n for n, row in enumerate(rows) if row.published_ago is not None and row.published_ago > RETENTION_SECONDS
        }
        if deleted != expired or answer != len(deleted):

            def fate(n: int, row: Row) -> str:
                if n in deleted:
                    return _("{line}: deleted (it should stay)") if n in deleted - expired else _("{line}: deleted")
                return _("{line}: kept (it should go)") if n in expired - deleted else _("{line}: kept")

            why = _(
                "the cleanup deleted {deleted} of these rows and returned {answer}; it should delete "
                "{expired}: those published more than 7 days ago"
            )
            why = why.format(deleted=len(deleted), answer=repr(answer), expired=len(expired))
            raise worlds.Broken(why, _told(rows, fate))

    return play


def _backlog_play(bench: OutboxBench) -> Callable[[tuple[Row, ...]], None]:
    def play(rows: tuple[Row, ...]) -> None:
        bench.fresh()
        now = world_now()
        bench.seed(list(rows), now)
        answer = bench.backlog(now)
        pending = [row for row in rows if row.published_ago is None]
        expected = (len(pending), max((row.created_ago for row in pending), default=0))
        ok = isinstance(answer, (tuple, list)) and len(answer) == 2 and answer[0] == expected[0]
        if not (ok and isinstance(answer[1], (int, float)) and abs(answer[1] - expected[1]) < 0.01):
            why = _("backlog returned {answer}; with these rows it is {expected}")
            why = why.format(answer=repr(answer), expected=f"({expected[0]}, {expected[1]:g})")
            raise worlds.Broken(why, _told(rows))

    return play


def claim_indexes(conn: Any, claim: str) -> tuple[set[str], set[str]]:
    """(outbox's partial indexes, the indexes the claim's plan scans on outbox), on `conn`'s schema.

    The plan is asked with sequential scans off, so a tiny table is planned as a large one would be: an index
    the claim can use is used. The claim's batch is 100; nothing is written (the transaction rolls back).
    """
    with conn.transaction(force_rollback=True):
        conn.execute("SET LOCAL enable_seqscan = off")
        (plan,) = conn.execute("EXPLAIN (FORMAT JSON, VERBOSE, COSTS OFF) " + claim, (100,)).fetchone()
        partial = conn.execute(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
            " WHERE i.indrelid = 'outbox'::regclass AND i.indpred IS NOT NULL"
        ).fetchall()
        (schema,) = conn.execute("SELECT current_schema()").fetchone()
    return {name for (name,) in partial}, indexes_used(plan, schema)


def indexes_used(plan: Any, schema: str, table: str = "outbox") -> set[str]:
    """The indexes a plan (EXPLAIN's JSON, VERBOSE) scans on `schema`.`table`: the plan read as data, not text.

    A Bitmap Index Scan names no table: it feeds the Bitmap Heap Scan above it, which does.
    """
    used = set()
    nodes = [(plan[0]["Plan"], None, None)] if isinstance(plan, list) and plan else []
    while nodes:
        node, parent_relation, parent_schema = nodes.pop()
        relation, where = node.get("Relation Name", parent_relation), node.get("Schema", parent_schema)
        if isinstance(node.get("Index Name"), str) and (relation, where) == (table, schema):
            used.add(node["Index Name"])
        nodes += [(child, relation, where) for child in node.get("Plans", []) if isinstance(child, dict)]
    return used
