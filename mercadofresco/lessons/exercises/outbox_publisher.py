"""What exercise 3's publisher must do in every world: each order's events in creation order.

`events_in_creation_order`: whatever order the rows were written in, however
many a run takes, and with a second publisher at work while the first holds its
batch, each order's events reach the bus in the order they were created, the
oldest free rows go first, every row is published, and two publishers share the
work. What each row and event must hold is `outbox_contract`.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from mercadofresco.i18n import _
from mercadofresco.lessons import worlds
from mercadofresco.lessons.exercises.outbox_world import KINDS, OutboxBench, Row, Stored, ago, world_now


@dataclass(frozen=True)
class History:
    """Orders' events (each order's created in KINDS' order), the order the rows were written in, the batch size,
    and the run in which publisher B runs too, as publisher A's first call to the bus starts (None: A alone)."""

    rows: tuple[Row, ...]
    written: tuple[int, ...]
    batch: int
    another: int | None = None


@st.composite
def _histories(draw: Any) -> History:
    rows = []
    for agregado in range(draw(st.integers(1, 3))):
        start = draw(st.sampled_from((600, 599, 540)))  # two orders' events may be created in the same second
        for step, kind in enumerate(KINDS[: draw(st.integers(1, 4))]):
            rows.append(Row(agregado, start - 60.0 * step, None, kind))
    written = draw(st.permutations(range(len(rows))))
    another = draw(st.none() | st.integers(0, 1))
    return History(tuple(rows), tuple(written), draw(st.sampled_from((1, 2, 3, 100))), another)


ORDER_FIRST = (
    History((Row(0, 600, None, KINDS[0]), Row(0, 540, None, KINDS[1])), (1, 0), 1),  # the later one written first
    History((Row(0, 600, None, KINDS[0]), Row(0, 540, None, KINDS[1]), Row(1, 600, None, KINDS[0])), (0, 1, 2), 1),
    # The lesson's claim with two publishers: B takes the order's next event while A holds its first one.
    History((Row(0, 600, None, KINDS[0]), Row(0, 540, None, KINDS[1])), (0, 1), 1, another=0),
)


def events_in_creation_order(bench: OutboxBench, examples: int, seed: int) -> worlds.Counterexample | None:
    """Each order's events reach the bus in the order they were created, oldest rows first, every row published.

    Whatever order the rows were written in, however many rows a run takes, and with a second publisher at work
    while the first holds its batch (neither waits for the other's rows).
    """
    return worlds.smallest_counterexample(_histories(), _order_play(bench), examples, seed, ORDER_FIRST)


def _order_play(bench: OutboxBench) -> Callable[[History], None]:
    def play(history: History) -> None:
        rows, written = history.rows, history.written
        bench.fresh()
        now = world_now()
        ids = bench.seed([rows[n] for n in written], now)
        row_of = {row_id: rows[n] for row_id, n in zip(ids, written, strict=True)}
        lines = [
            _("written {written}: {tipo} of order {order}, created {created} ago").format(
                written=k + 1, tipo=rows[n].tipo, order=rows[n].agregado + 1, created=ago(rows[n].created_ago)
            )
            for k, n in enumerate(written)
        ]
        lines.append(
            _("publish_pending runs with batch_size={batch} until nothing is pending").format(batch=history.batch)
        )
        if history.another is not None:
            another = _(
                "in run {run}, as publisher A's first call to the bus starts, publisher B runs publish_pending too"
            )
            lines.append(another.format(run=history.another + 1))
        for runs in range(2 * len(rows) + 3):
            before = bench.stored()
            if all(row.publicado for row in before):
                break
            if runs == history.another:
                _run_with_another(bench, now, history.batch, lines, _free(before))
            else:
                one_run(bench, now, history.batch, lines)
            skipped = _passed_over(before, bench.stored())
            if skipped:
                older, younger = (row_of[row.id] for row in skipped)
                why = _(
                    "run {run} published {younger} of order {younger_order} (created "
                    "{younger_created} ago) and left {older} of order {older_order}, older "
                    "({older_created} ago) with nothing before it: the publisher takes the oldest rows first"
                ).format(
                    run=runs + 1,
                    younger=younger.tipo,
                    younger_order=younger.agregado + 1,
                    younger_created=ago(younger.created_ago),
                    older=older.tipo,
                    older_order=older.agregado + 1,
                    older_created=ago(older.created_ago),
                )
                raise worlds.Broken(why, lines)
        else:
            left = sum(not row.publicado for row in bench.stored())
            why = _("{left} rows were still unpublished after {runs} runs of publish_pending")
            raise worlds.Broken(why.format(left=left, runs=runs + 1), lines)
        seen: dict[int, list[str]] = {}
        for entry in bench.accepted():
            row = row_of.get(detail_of(entry).get("outbox_id"))
            if row is not None and row.tipo not in seen.setdefault(row.agregado, []):
                seen[row.agregado].append(row.tipo)
        for agregado in sorted({row.agregado for row in rows}):
            created = [row.tipo for row in sorted(rows, key=lambda r: -r.created_ago) if row.agregado == agregado]
            if seen.get(agregado, []) != created:
                why = _("order {order}'s events reached the bus as {reached}, created as {created}")
                raise worlds.Broken(
                    why.format(order=agregado + 1, reached=seen.get(agregado, []), created=created), lines
                )

    return play


def one_run(bench: OutboxBench, now: dt.datetime, batch: int, lines: list[str], refused: tuple = ()) -> Any:
    """One run of the learner's publish_pending; what it raises is part of the world's story (e.g. a call the bus
    refused as too large)."""
    try:
        return bench.publish(now, batch, refused)
    except Exception as error:
        raise worlds.Broken(raised(error), lines) from None


def raised(error: Exception) -> str:
    """What a world's story says when the learner's publish_pending raised `error`."""
    said = _("publish_pending raised {error}: {message}")
    return said.format(error=type(error).__name__, message=str(error)[:240])


def _run_with_another(bench: OutboxBench, now: dt.datetime, batch: int, lines: list[str], free: int) -> None:
    """One run of publisher A with publisher B inside it: B may not wait for the rows A holds, and when more rows
    are free to take than A's batch (`free`: the oldest pending event of each order), B takes some."""
    try:
        _answer, waited, from_b = bench.publish_with_another(now, batch)
    except Exception as error:
        raise worlds.Broken(raised(error), lines) from None
    if waited:
        why = _("publisher B waited for the rows A held (and gave up after 200 ms) instead of taking others")
        raise worlds.Broken(why, lines)
    if free > batch and not from_b:
        why = _(
            "publisher B published nothing while A held {batch} row(s), though {free} orders had an event "
            "free to take: several publishers must share the work"
        )
        raise worlds.Broken(why.format(batch=batch, free=free), lines)


def _free(rows: list[Stored]) -> int:
    """How many pending rows have no older pending row of their order (what any publisher may take next)."""
    pending = [row for row in rows if not row.publicado]
    return sum(
        not any(o.agregado_id == row.agregado_id and (o.creado_en, o.id) < (row.creado_en, row.id) for o in pending)
        for row in pending
    )


def _passed_over(before: list[Stored], after: list[Stored]) -> tuple[Stored, Stored] | None:
    """(an older row the run left, a younger one it published) when a run passed over the oldest rows it could take.

    A row it could take is unpublished with no older unpublished row of its order (the claim's guard may wait for
    those; the lesson's claim, without it, does not, and passes nothing over either).
    """
    published_now = {row.id for row in after if row.publicado} - {row.id for row in before if row.publicado}
    pending = [row for row in before if not row.publicado]
    free = [
        row
        for row in pending
        if not any(o.agregado_id == row.agregado_id and (o.creado_en, o.id) < (row.creado_en, row.id) for o in pending)
    ]
    left = [row for row in free if row.id not in published_now]
    taken = [row for row in pending if row.id in published_now]
    for older in sorted(left, key=lambda row: row.creado_en):
        younger = [row for row in taken if row.creado_en > older.creado_en]
        if younger:
            return older, younger[0]
    return None


def detail_of(entry: dict) -> dict:
    try:
        detail = json.loads(entry.get("Detail", "{}"))
    except (TypeError, ValueError):
        return {}
    return detail if isinstance(detail, dict) else {}
