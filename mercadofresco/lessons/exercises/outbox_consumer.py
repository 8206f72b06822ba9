"""What exercise 3's consumer must do in every world: prepare an event once, however it is delivered.

`consumer_prepares_once`: however often an event is delivered, also while
another delivery of it is preparing, and after `prepare` failed once, it is
prepared exactly once, and every delivery gets that run's result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from mercadofresco.i18n import _
from mercadofresco.lessons import worlds
from mercadofresco.lessons.exercises.outbox_world import OutboxBench, pedido_of


@dataclass(frozen=True)
class Delivery:
    """One delivery of an event (`event`: its index) on its own, or inside another delivery's `prepare`."""

    event: int
    inside: int | None = None


@dataclass(frozen=True)
class Deliveries:
    """Events (each the order it belongs to), their deliveries, and the events whose first prepare fails."""

    events: tuple[int, ...]
    deliveries: tuple[Delivery, ...]
    failing: tuple[int, ...] = ()


@st.composite
def _deliveries(draw: Any) -> Deliveries:
    events = tuple(draw(st.lists(st.integers(0, 1), min_size=1, max_size=3)))  # two events may share an order
    deliveries = []
    for number in range(draw(st.integers(1, 4))):
        event = draw(st.integers(0, len(events) - 1))
        inside = draw(st.none() | st.integers(0, number - 1)) if number else None
        deliveries.append(Delivery(event, inside))
    failing = tuple(draw(st.lists(st.integers(0, len(events) - 1), max_size=1, unique=True)))
    return Deliveries(events, tuple(deliveries), failing)


CONSUMER_FIRST = (
    Deliveries((0,), (Delivery(0), Delivery(0, inside=0))),  # a copy arrives while the first is preparing
    Deliveries((0,), (Delivery(0), Delivery(0)), failing=(0,)),  # prepare fails once: the next delivery prepares
    Deliveries((0, 0), (Delivery(0), Delivery(1))),  # two events of one order: two preparations
)


def consumer_prepares_once(bench: OutboxBench, examples: int, seed: int) -> worlds.Counterexample | None:
    """Each event is prepared once, however often it is delivered, and every delivery gets that run's result.

    Also when a copy arrives while the first is preparing, and after a preparation failed (the next one runs).
    """
    return worlds.smallest_counterexample(_deliveries(), _consumer_play(bench), examples, seed, CONSUMER_FIRST)


class Transient(RuntimeError):
    """prepare's failure the first time (the warehouse did not answer): the next delivery should prepare again."""


def _consumer_play(bench: OutboxBench) -> Callable[[Deliveries], None]:
    def play(world_: Deliveries) -> None:
        ids = bench.event_ids(len(world_.events))
        try:
            _deliver_all(bench, world_, ids)
        finally:
            bench.forget()

    return play


def _deliver_all(bench: OutboxBench, world_: Deliveries, ids: list[int]) -> None:
    details = [
        {"outbox_id": ids[n], "pedido_id": pedido_of(order), "importe": "48.20"}
        for n, order in enumerate(world_.events)
    ]
    runs: list[int] = []  # the events prepare ran for, in order
    results: dict[int, dict] = {}
    failed_once: set[int] = set()
    lines: list[str] = []
    inside = {}
    for number, delivery in enumerate(world_.deliveries):
        if delivery.inside is not None:
            inside.setdefault(delivery.inside, []).append(number)
    later: list[int] = []

    def deliver(number: int) -> None:
        event = world_.deliveries[number].event
        said = _("delivery {delivery} of event {event} (outbox id {outbox_id})")
        lines.append(said.format(delivery=number + 1, event=event + 1, outbox_id=ids[event]))

        def prepare(detail: dict) -> dict:
            for nested in inside.pop(number, []):
                lines.append("  " + _("while it prepares, delivery {delivery} arrives").format(delivery=nested + 1))
                deliver(nested)
            if event in world_.failing and event not in failed_once:
                failed_once.add(event)
                fails = _("prepare fails for event {event} (the warehouse did not answer)")
                lines.append("  " + fails.format(event=event + 1))
                raise Transient(_("the warehouse did not answer"))
            runs.append(event)
            lines.append("  " + _("event {event} is prepared (run {run})").format(event=event + 1, run=len(runs)))
            return {"preparado": detail.get("pedido_id"), "vez": len(runs)}

        try:
            answer = bench.consume(dict(details[event]), prepare)
        except Exception as error:  # the delivery failed: it comes back later
            failed = _("delivery {delivery} failed ({error}): it comes back")
            lines.append("  " + failed.format(delivery=number + 1, error=type(error).__name__))
            later.append(number)
            return
        results.setdefault(number, answer)

    for number, delivery in enumerate(world_.deliveries):
        if delivery.inside is None:
            deliver(number)
    while inside:  # meant to arrive while a delivery prepared, which it never did (a duplicate): it arrives after
        host = min(inside)
        for nested in inside.pop(host):
            lines.append(
                _("delivery {delivery} arrives after delivery {host}").format(delivery=nested + 1, host=host + 1)
            )
            deliver(nested)
    for _round in range(3):  # the failed deliveries come back
        again, later[:] = list(later), []
        for number in again:
            deliver(number)
    for event in sorted(set(d.event for d in world_.deliveries)):
        count = runs.count(event)
        if count != 1:
            raise worlds.Broken(
                _("event {event} was prepared {count} times").format(event=event + 1, count=count), lines
            )
    for number, answer in results.items():
        event = world_.deliveries[number].event
        first = {"preparado": details[event]["pedido_id"], "vez": runs.index(event) + 1}
        if answer != first:
            why = _("delivery {delivery} got {answer}, not the result of the run: {first}")
            raise worlds.Broken(why.format(delivery=number + 1, answer=repr(answer), first=first), lines)
