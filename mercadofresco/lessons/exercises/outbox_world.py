"""Exercise 3's worlds: rows as a world seeds them, rows as the table holds them, and where a world is played.

A bench (`OutboxBench`) is the learner's functions next to an empty schema of
their tables and a bus: the notebook's own (`outbox_properties.NotebookOutboxBench`,
for the public checks) or the hidden checks' own, the learner's code in another process.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mercadofresco import i18n, orders
from mercadofresco.clock import LESSON_START
from mercadofresco.i18n import _

DAY = 86_400
RETENTION_SECONDS = 7 * DAY  # the lesson's: rows published more than 7 days ago go
KINDS = ("PedidoCreado", "PedidoPagado", "PedidoPreparado", "PedidoEnviado")


class OutboxBench(Protocol):
    """Where a world is played: an empty schema with the learner's tables, their functions, and what the bus took."""

    def fresh(self) -> None:
        """Empty tables (made by the learner's create_schema) and a bus that has taken nothing yet."""

    def seed(self, rows: list[Row], now: dt.datetime) -> list[int]:
        """Insert `rows` in this order (as the learner's role); their ids."""

    def stored(self) -> list[Stored]:
        """Every outbox row, by id, as the bench reads it (not as the learner's code does)."""

    def cleanup(self, now: dt.datetime) -> Any: ...

    def backlog(self, now: dt.datetime) -> Any: ...

    def publish(self, now: dt.datetime, batch: int, refused: tuple[frozenset[int], ...] = ()) -> Any:
        """The learner's publish_pending; the bus refuses the entries at `refused[n]` of its call n + 1."""

    def publish_with_another(self, now: dt.datetime, batch: int) -> tuple[Any, bool, int]:
        """`publish` as publisher A, while publisher B runs publish_pending once (the same batch, a connection of
        its own that gives up waiting for a lock after 200 ms) as A's first call to the bus starts: what A's
        publish_pending returned, whether B gave up waiting for the rows A held, and how many events the bus
        took from B."""

    def publish_beside_a_rival(
        self, now: dt.datetime, batch: int, refused: tuple[frozenset[int], ...] = ()
    ) -> tuple[Any, list[int]]:
        """`publish`, with another publisher asking for each row the moment the bus takes its event
        (`outbox_rival.Rival`): what publish_pending returned, and the ids the other publisher could take."""

    def place(self, order: orders.Order, now: dt.datetime) -> Any: ...

    def accepted(self) -> list[dict]:
        """The entries the bus took since `fresh` (Source, DetailType, Detail, EventBusName), in order."""

    def consume(self, detail: dict, prepare: Callable[[dict], dict]) -> Any:
        """The learner's handle_event on the bench's idempotency store."""

    def event_ids(self, count: int) -> list[int]:
        """`count` outbox ids for a play's events: the same each play, as `forget` ends each play."""

    def forget(self) -> None:
        """Delete what the learner's consumer wrote to the idempotency table since `event_ids`."""


@dataclass(frozen=True)
class Stored:
    """An outbox row as the table holds it."""

    id: int
    agregado_id: str
    tipo_evento: str
    payload: Any
    creado_en: dt.datetime
    publicado: bool
    publicado_en: dt.datetime | None


@dataclass(frozen=True)
class Row:
    """An outbox row as a world seeds it: its order, its kind, when it was created and published (seconds ago)."""

    agregado: int
    created_ago: float
    published_ago: float | None = None
    tipo: str = "PedidoCreado"


def world_now() -> dt.datetime:
    """The instant the outbox's worlds are played at (the lesson's Friday, 19:14)."""
    return LESSON_START


def ago(seconds: float) -> str:
    if seconds >= DAY:
        days, rest = divmod(seconds, DAY)
        return f"{i18n.number(days, 'g')} d" + (f" {i18n.number(rest, 'g')} s" if rest else "")
    return f"{i18n.number(seconds, 'g')} s"


def both(first: str, second: str) -> str:
    """Two things said together, "1 and 2" (a third joins as "1 and 2 and 3", with functools.reduce)."""
    return _("{first} and {second}").format(first=first, second=second)


def pedido_of(agregado: int) -> str:
    """The order a world's `agregado` stands for (PED-2026-960000…)."""
    return orders.order_id(960_000 + agregado)
