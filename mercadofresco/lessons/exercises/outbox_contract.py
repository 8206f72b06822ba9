"""What exercise 3's publisher must write in every world: the lesson's contract.

`events_as_the_contract_says`: `place_order` returns the row's id, keeps the
amount as text and `now` as the creation time; an event carries its row's
payload and outbox id, its type as DetailType, the shop's Source and bus; a
sent row is marked published at `now`, no row is deleted; `publish_pending`
returns how many events the bus took.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from mercadofresco import i18n, orders, world
from mercadofresco.i18n import _
from mercadofresco.lessons import worlds
from mercadofresco.lessons.exercises.outbox_publisher import detail_of, one_run
from mercadofresco.lessons.exercises.outbox_world import OutboxBench, Stored, both, world_now

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
        at = i18n.moment(now, "%H:%M:%S")
        lines = [
            _("order {order}: {pedido_id}, {amount} € placed at {at}").format(
                order=n + 1, pedido_id=order.pedido_id, amount=i18n.number(order.importe), at=at
            )
            for n, order in enumerate(placed)
        ]
        returned = [bench.place(order, now) for order in placed]
        rows = {row.id: row for row in bench.stored()}
        if sorted(returned, key=str) != sorted(rows, key=str):
            why = _("place_order returned {returned}; the outbox rows' ids are {ids}")
            raise worlds.Broken(why.format(returned=returned, ids=sorted(rows)), lines)
        for row_id, order in zip(returned, placed, strict=True):
            wrong = _row_wrong(rows[row_id], order, now)
            if wrong:
                why = _("the outbox row of {pedido_id} (id {row_id}): {wrong}")
                raise worlds.Broken(why.format(pedido_id=order.pedido_id, row_id=row_id, wrong=wrong), lines)
        refused = [str(n + 1) for n in sorted(world_.refused)]
        lines.append(
            _(
                "publish_pending runs at {at}; the bus refuses entry {entries} of its first call "
                "(an ErrorCode, no EventId)"
            ).format(at=at, entries=functools.reduce(both, refused))
            if refused
            else _("publish_pending runs at {at}").format(at=at)
        )
        sent = _published_as_taken(bench, one_run(bench, now, 100, lines, (world_.refused,)), 0, rows, now, lines)
        later = now + dt.timedelta(seconds=1)
        lines.append(_("publish_pending runs again at {at}").format(at=i18n.moment(later, "%H:%M:%S")))
        _published_as_taken(bench, one_run(bench, later, 100, lines), sent, rows, later, lines)
        unpublished = [row.id for row in bench.stored() if not row.publicado]
        if unpublished:
            why = _("after the second run, rows {rows} are still unpublished").format(rows=unpublished)
            raise worlds.Broken(why, lines)

    return play


def _published_as_taken(
    bench: OutboxBench, answer: Any, before: int, rows: dict[int, Stored], now: dt.datetime, lines: list[str]
) -> int:
    """Hold one run to the contract: it returned how many events the bus took, each as its row says, and marked
    those rows (and only those) published at `now`. How many events the bus has taken in all."""
    entries = bench.accepted()
    if answer != len(entries) - before:
        why = _("publish_pending returned {answer}; the bus took {count} events")
        raise worlds.Broken(why.format(answer=repr(answer), count=len(entries) - before), lines)
    for entry in entries[before:]:
        detail = detail_of(entry)
        row = rows.get(detail.get("outbox_id"))
        wrong = _("its outbox_id names no row") if row is None else _entry_wrong(entry, detail, row)
        if wrong:
            why = _("the event with outbox_id {outbox_id}: {wrong}")
            raise worlds.Broken(why.format(outbox_id=repr(detail.get("outbox_id")), wrong=wrong), lines)
    taken = {detail_of(entry).get("outbox_id") for entry in entries[before:]}
    stored = bench.stored()
    gone = sorted(set(rows) - {row.id for row in stored})
    if gone:
        why = _("rows {rows} are gone from the outbox: a publisher marks rows, and only the daily cleanup deletes")
        raise worlds.Broken(why.format(rows=gone), lines)
    for row in stored:
        if row.id in taken and (not row.publicado or row.publicado_en != now):
            why = _(
                "the bus took row {row}'s event, and the row is marked publicado={publicado}, "
                "publicado_en={publicado_en}: it should say true, {now}"
            )
            why = why.format(row=row.id, publicado=row.publicado, publicado_en=row.publicado_en, now=now)
            raise worlds.Broken(why, lines)
        if not row.publicado and row.publicado_en is not None:
            why = _("row {row} is unpublished with publicado_en {publicado_en}")
            raise worlds.Broken(why.format(row=row.id, publicado_en=row.publicado_en), lines)
        if row.publicado and row.id not in taken and row.publicado_en == now:
            why = _("row {row} is marked published, but the bus did not take its event: it is lost")
            raise worlds.Broken(why.format(row=row.id), lines)
    return len(entries)


def _row_wrong(row: Stored, order: orders.Order, now: dt.datetime) -> str:
    payload = row.payload if isinstance(row.payload, dict) else {}
    if payload.get("pedido_id") != order.pedido_id or row.agregado_id != order.pedido_id:
        said = _("its agregado_id and payload's pedido_id should be {pedido_id}: {agregado_id}, {payload}")
        return said.format(pedido_id=order.pedido_id, agregado_id=repr(row.agregado_id), payload=f"{payload!r:.80}")
    if payload.get("importe") != str(order.importe):
        said = _(
            "its payload's importe is {importe}, not the text {text} "
            "(an amount as a float loses cents, and a rounded one loses the amount)"
        )
        return said.format(importe=repr(payload.get("importe")), text=repr(str(order.importe)))
    if row.tipo_evento != "PedidoCreado":
        return _("its tipo_evento is {tipo_evento}, not PedidoCreado").format(tipo_evento=repr(row.tipo_evento))
    if row.creado_en != now:
        said = _("creado_en is {creado_en}, not {now}, the instant place_order was given (not the server's now())")
        return said.format(creado_en=row.creado_en, now=now)
    if row.publicado:
        return _("it is already marked published: only the publisher, after the bus took it, may say so")
    return ""


def _entry_wrong(entry: dict, detail: dict, row: Stored) -> str:
    if {key: value for key, value in detail.items() if key != "outbox_id"} != row.payload:
        return _("its Detail {detail} is not the row's payload plus outbox_id").format(detail=f"{detail!r:.80}")
    if entry.get("EventBusName") != world.BUS:
        return _("it went to the bus {bus}, not {expected}").format(
            bus=repr(entry.get("EventBusName")), expected=world.BUS
        )
    if entry.get("Source") != world.ORDER_SOURCE:
        said = _("its Source is {source}, not {expected}")
        return said.format(source=repr(entry.get("Source")), expected=world.ORDER_SOURCE)
    if entry.get("DetailType") != row.tipo_evento:
        said = _("its DetailType is {detail_type}, not the row's tipo_evento {tipo_evento}")
        return said.format(detail_type=repr(entry.get("DetailType")), tipo_evento=repr(row.tipo_evento))
    return ""
