"""What exercise 3's publisher must do in every world: each order's events in creation order, and the contract.

- `events_in_creation_order`: whatever order the rows were written in and
  however many a run takes, each order's events reach the bus in the order they
  were created, and every row is published;
- `events_as_the_contract_says`: `place_order` returns the row's id, keeps the
  amount as text and `now` as the creation time; an event carries its row's
  payload and outbox id, its type as DetailType, the shop's Source and bus; a
  sent row is marked published at `now`; `publish_pending` returns how many
  events the bus took.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from mercadofresco import orders, world
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
            f"written {k + 1}: {rows[n].tipo} of order {rows[n].agregado + 1}, created {ago(rows[n].created_ago)} ago"
            for k, n in enumerate(written)
        ]
        lines.append(f"publish_pending runs with batch_size={history.batch} until nothing is pending")
        if history.another is not None:
            lines.append(
                f"in run {history.another + 1}, as publisher A's first call to the bus starts, publisher B runs "
                "publish_pending too"
            )
        for runs in range(2 * len(rows) + 3):
            before = bench.stored()
            if all(row.publicado for row in before):
                break
            if runs == history.another:
                _run_with_another(bench, now, history.batch, lines)
            else:
                _run(bench, now, history.batch, lines)
            skipped = _passed_over(before, bench.stored())
            if skipped:
                older, younger = (row_of[row.id] for row in skipped)
                why = (
                    f"run {runs + 1} published {younger.tipo} of order {younger.agregado + 1} (created "
                    f"{ago(younger.created_ago)} ago) and left {older.tipo} of order {older.agregado + 1}, older "
                    f"({ago(older.created_ago)} ago) with nothing before it: the publisher takes the oldest rows first"
                )
                raise worlds.Broken(why, lines)
        else:
            left = sum(not row.publicado for row in bench.stored())
            raise worlds.Broken(f"{left} rows were still unpublished after {runs + 1} runs of publish_pending", lines)
        seen: dict[int, list[str]] = {}
        for entry in bench.accepted():
            row = row_of.get(_detail(entry).get("outbox_id"))
            if row is not None and row.tipo not in seen.setdefault(row.agregado, []):
                seen[row.agregado].append(row.tipo)
        for agregado in sorted({row.agregado for row in rows}):
            created = [row.tipo for row in sorted(rows, key=lambda r: -r.created_ago) if row.agregado == agregado]
            if seen.get(agregado, []) != created:
                why = f"order {agregado + 1}'s events reached the bus as {seen.get(agregado, [])}, created as {created}"
                raise worlds.Broken(why, lines)

    return play


def _run(bench: OutboxBench, now: dt.datetime, batch: int, lines: list[str], refused: tuple = ()) -> Any:
    """One run of the learner's publish_pending; what it raises is part of the world's story (e.g. a call the bus
    refused as too large)."""
    try:
        return bench.publish(now, batch, refused)
    except Exception as error:
        raise worlds.Broken(f"publish_pending raised {type(error).__name__}: {str(error)[:240]}", lines) from None


def _run_with_another(bench: OutboxBench, now: dt.datetime, batch: int, lines: list[str]) -> None:
    """One run of publisher A with publisher B inside it; B may not wait for the rows A holds."""
    try:
        _, waited = bench.publish_with_another(now, batch)
    except Exception as error:
        raise worlds.Broken(f"publish_pending raised {type(error).__name__}: {str(error)[:240]}", lines) from None
    if waited:
        why = "publisher B waited for the rows A held (and gave up after 200 ms) instead of taking others"
        raise worlds.Broken(why, lines)


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


def _detail(entry: dict) -> dict:
    try:
        detail = json.loads(entry.get("Detail", "{}"))
    except (TypeError, ValueError):
        return {}
    return detail if isinstance(detail, dict) else {}


AMOUNTS = (Decimal("48.20"), Decimal("0.05"), Decimal("1234.50"), Decimal("19.90"), Decimal("10"))


@dataclass(frozen=True)
class Placed:
    """Orders placed at one instant (their amounts), and the entries the bus refuses in the publisher's first call."""

    amounts: tuple[Decimal, ...]
    refused: frozenset[int] = frozenset()


@st.composite
def _placed(draw: Any) -> Placed:
    amounts = tuple(draw(st.lists(st.sampled_from(AMOUNTS), min_size=1, max_size=4)))
    return Placed(amounts, frozenset(draw(st.sets(st.integers(0, len(amounts) - 1)))))


CONTRACT_FIRST = (
    Placed((Decimal("48.20"),)),
    Placed((Decimal("0.05"), Decimal("1234.50"))),
    Placed((Decimal("48.20"), Decimal("19.90")), refused=frozenset({0})),  # the bus refuses the first entry
    Placed((Decimal("19.90"),) * 11),  # a busy second: more events than one call of EventBridge takes
)


def events_as_the_contract_says(bench: OutboxBench, examples: int, seed: int) -> worlds.Counterexample | None:
    """The rows and events are what the lesson's contract says, and published rows are those the bus took.

    place_order keeps the amount as text and `now` as the creation time, and returns the row's id; each event
    carries its row's payload plus outbox_id, its tipo_evento as DetailType, the shop's Source and bus; exactly
    the rows the bus took are marked published at `now`, and publish_pending returns how many.
    """
    return worlds.smallest_counterexample(_placed(), _contract_play(bench), examples, seed, CONTRACT_FIRST)


def _contract_play(bench: OutboxBench) -> Callable[[Placed], None]:
    def play(world_: Placed) -> None:
        bench.fresh()
        now = world_now()
        placed = [orders.Order(orders.order_id(970_000 + n), amount) for n, amount in enumerate(world_.amounts)]
        lines = [
            f"order {n + 1}: {order.pedido_id}, {order.importe} € placed at {now:%H:%M:%S}"
            for n, order in enumerate(placed)
        ]
        returned = [bench.place(order, now) for order in placed]
        rows = {row.id: row for row in bench.stored()}
        if sorted(returned, key=str) != sorted(rows, key=str):
            raise worlds.Broken(f"place_order returned {returned}; the outbox rows' ids are {sorted(rows)}", lines)
        for row_id, order in zip(returned, placed, strict=True):
            wrong = _row_wrong(rows[row_id], order, now)
            if wrong:
                raise worlds.Broken(f"the outbox row of {order.pedido_id} (id {row_id}): {wrong}", lines)
        refused = " and ".join(str(n + 1) for n in sorted(world_.refused))
        lines.append(
            f"publish_pending runs at {now:%H:%M:%S}"
            + (f"; the bus refuses entry {refused} of its first call (an ErrorCode, no EventId)" if refused else "")
        )
        sent = _published_as_taken(bench, _run(bench, now, 100, lines, (world_.refused,)), 0, rows, now, lines)
        later = now + dt.timedelta(seconds=1)
        lines.append(f"publish_pending runs again at {later:%H:%M:%S}")
        _published_as_taken(bench, _run(bench, later, 100, lines), sent, rows, later, lines)
        unpublished = [row.id for row in bench.stored() if not row.publicado]
        if unpublished:
            raise worlds.Broken(f"after the second run, rows {unpublished} are still unpublished", lines)

    return play


def _published_as_taken(
    bench: OutboxBench, answer: Any, before: int, rows: dict[int, Stored], now: dt.datetime, lines: list[str]
) -> int:
    """Hold one run to the contract: it returned how many events the bus took, each as its row says, and marked
    those rows (and only those) published at `now`. How many events the bus has taken in all."""
    entries = bench.accepted()
    if answer != len(entries) - before:
        raise worlds.Broken(f"publish_pending returned {answer!r}; the bus took {len(entries) - before} events", lines)
    for entry in entries[before:]:
        detail = _detail(entry)
        row = rows.get(detail.get("outbox_id"))
        wrong = "its outbox_id names no row" if row is None else _entry_wrong(entry, detail, row)
        if wrong:
            raise worlds.Broken(f"the event with outbox_id {detail.get('outbox_id')!r}: {wrong}", lines)
    taken = {_detail(entry).get("outbox_id") for entry in entries[before:]}
    for row in bench.stored():
        if row.id in taken and (not row.publicado or row.publicado_en != now):
            raise worlds.Broken(
                f"the bus took row {row.id}'s event, and the row is marked publicado={row.publicado}, "
                f"publicado_en={row.publicado_en}: it should say true, {now}",
                lines,
            )
        if not row.publicado and row.publicado_en is not None:
            raise worlds.Broken(f"row {row.id} is unpublished with publicado_en {row.publicado_en}", lines)
        if row.publicado and row.id not in taken and row.publicado_en == now:
            raise worlds.Broken(
                f"row {row.id} is marked published, but the bus did not take its event: it is lost", lines
            )
    return len(entries)


def _row_wrong(row: Stored, order: orders.Order, now: dt.datetime) -> str:
    payload = row.payload if isinstance(row.payload, dict) else {}
    if payload.get("pedido_id") != order.pedido_id or row.agregado_id != order.pedido_id:
        return (
            f"its agregado_id and payload's pedido_id should be {order.pedido_id}: {row.agregado_id!r}, {payload!r:.80}"
        )
    if payload.get("importe") != str(order.importe):
        return (
            f"its payload's importe is {payload.get('importe')!r}, not the text {str(order.importe)!r} "
            "(an amount as a float loses cents, and a rounded one loses the amount)"
        )
    if row.tipo_evento != "PedidoCreado":
        return f"its tipo_evento is {row.tipo_evento!r}, not PedidoCreado"
    if row.creado_en != now:
        return f"creado_en is {row.creado_en}, not {now}, the instant place_order was given (not the server's now())"
    if row.publicado:
        return "it is already marked published: only the publisher, after the bus took it, may say so"
    return ""


def _entry_wrong(entry: dict, detail: dict, row: Stored) -> str:
    if {key: value for key, value in detail.items() if key != "outbox_id"} != row.payload:
        return f"its Detail {detail!r:.80} is not the row's payload plus outbox_id"
    if entry.get("EventBusName") != world.BUS:
        return f"it went to the bus {entry.get('EventBusName')!r}, not {world.BUS}"
    if entry.get("Source") != world.ORDER_SOURCE:
        return f"its Source is {entry.get('Source')!r}, not {world.ORDER_SOURCE}"
    if entry.get("DetailType") != row.tipo_evento:
        return f"its DetailType is {entry.get('DetailType')!r}, not the row's tipo_evento {row.tipo_evento!r}"
    return ""
