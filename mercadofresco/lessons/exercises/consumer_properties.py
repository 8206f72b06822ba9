"""What exercise 1's consumer must do in every world, and where the worlds are played.

An idempotent consumer (lab 1 (d): `build_handler(dynamodb, client)`) holds
four properties of the lesson, whatever the world:

- each order is charged exactly once and ends COMPLETADO with the table alone
  (no Idempotency-Key reaches the gateway), however its copies arrive: later,
  at once, or in the middle of another copy's work (`exactly_once`);
- the same with the key, when consumers also die after charging and answers are
  lost or late (`exactly_once_despite_crashes`);
- a declined card is asked once: FALLIDO kept, its messages acknowledged
  (`declined_stays_failed`);
- a body the consumer cannot read is never acknowledged, so the queue takes it
  to the DLQ, and never charged (`poison_reaches_the_dlq`).

Each is a function `(bench, examples, seed) -> Counterexample | None`: the
public checks call it with the notebook's own world (`NotebookBench`) and a few
worlds, the instructor's hidden checks with their own and more worlds on
another seed. Each first plays the worlds the lesson's numbers point at, then
generated ones (`consumer_world`); a failure is shrunk to the smallest world,
told as a story (`consumer_play`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mercadofresco import world
from mercadofresco.clock import VirtualClock
from mercadofresco.i18n import _
from mercadofresco.lessons import worlds
from mercadofresco.lessons.exercises.consumer_play import Bench, Log, Play
from mercadofresco.lessons.exercises.consumer_world import (
    DECLINED,
    DECLINED_FIRST,
    POISON,
    POISON_FIRST,
    POISONED,
    TABLE_ALONE,
    TABLE_ALONE_FIRST,
    WITH_CRASHES,
    WITH_CRASHES_FIRST,
    World,
)
from mercadofresco.models import gateway


# -- the properties ------------------------------------------------------------------------------------
def exactly_once(bench: Bench, examples: int, seed: int) -> worlds.Counterexample | None:
    """Each order charged exactly once and COMPLETADO, the table alone keeping the duplicates out."""
    return worlds.smallest_counterexample(TABLE_ALONE, _player(bench, _charged_once), examples, seed, TABLE_ALONE_FIRST)


def exactly_once_despite_crashes(bench: Bench, examples: int, seed: int) -> worlds.Counterexample | None:
    """The same when consumers die at any step and answers are lost or late (the gateway gets the key)."""
    play = _player(bench, _charged_once)
    return worlds.smallest_counterexample(WITH_CRASHES, play, examples, seed, WITH_CRASHES_FIRST)


def declined_stays_failed(bench: Bench, examples: int, seed: int) -> worlds.Counterexample | None:
    """A declined card is asked once: FALLIDO kept, its messages acknowledged, however many copies arrive."""
    return worlds.smallest_counterexample(DECLINED, _player(bench, _declined_kept), examples, seed, DECLINED_FIRST)


def poison_reaches_the_dlq(bench: Bench, examples: int, seed: int) -> worlds.Counterexample | None:
    """A body the consumer cannot read is never acknowledged (the queue takes it to the DLQ), never charged."""
    return worlds.smallest_counterexample(POISONED, _player(bench, _poison_kept), examples, seed, POISON_FIRST)


PROPERTIES = (exactly_once, exactly_once_despite_crashes, declined_stays_failed, poison_reaches_the_dlq)
FIRST_ORDER = 900_010  # the plays' orders: PED-2026-900010, -900011 (each play leaves the table as it found it)


def _player(bench: Bench, holds: Callable[[Play, Log], None]) -> Callable[[World], None]:
    def play(world_: World) -> None:
        game = Play(world_, bench, first_order=FIRST_ORDER)
        try:
            log = game.run()
            holds(game, log)  # what the lesson promises first; then the lab's own rules, which explain it
            if log.broken:
                raise worlds.Broken(log.broken[0], log.lines)
        finally:
            game.forget()

    return play


def _sent(play: Play) -> list[tuple[int, Any]]:
    """The world's orders some copy delivered carries (a world may name an order no copy carries, and a copy that
    would arrive at a step its host never reached never arrives)."""
    carried = {order for copy, (order, _) in enumerate(play.world.copies) if copy in play.log.arrived}
    return [(number, order) for number, order in enumerate(play.orders) if number in carried]


def _charged_once(play: Play, log: Log) -> None:
    for number, order in _sent(play):
        if play.world.kinds[number] != "valid":
            continue
        name, charges = play.name_of(order.pedido_id), len(play.gateway.charges_for(order.pedido_id))
        if charges != 1:
            raise worlds.Broken(_("{order} was charged {charges} times").format(order=name, charges=charges), log.lines)
        lost = [c for c, (o, _) in enumerate(play.world.copies) if o == number and c in log.dead_lettered]
        if lost:
            why = _("{copy} ended in the DLQ, though its order could be charged").format(copy=play.who(lost[0]))
            raise worlds.Broken(why, log.lines)
        estado = play.estado(order)
        if estado != "COMPLETADO":
            why = _("{order} was charged, and its record cobro:{pedido_id} is {estado}")
            raise worlds.Broken(why.format(order=name, pedido_id=order.pedido_id, estado=estado), log.lines)


def _declined_kept(play: Play, log: Log) -> None:
    _charged_once(play, log)
    for number, order in _sent(play):
        if play.world.kinds[number] != "declined":
            continue
        name = _("{order}, whose card is declined").format(order=play.name_of(order.pedido_id))
        declines = play.gateway.asked.get(order.pedido_id, []).count("declined")
        if declines != 1:
            why = _("the gateway declined {order} {declines} times: it was asked again")
            raise worlds.Broken(why.format(order=name, declines=declines), log.lines)
        if any(c in log.dead_lettered for c, (o, _) in enumerate(play.world.copies) if o == number):
            why = _("a copy of {order} ended in the DLQ: a declined card is an answer").format(order=name)
            raise worlds.Broken(why, log.lines)
        if play.estado(order) != "FALLIDO":
            why = _("the record of {order} is {estado}, not FALLIDO").format(order=name, estado=play.estado(order))
            raise worlds.Broken(why, log.lines)


def _poison_kept(play: Play, log: Log) -> None:
    _charged_once(play, log)
    for copy, (order, _arrival) in enumerate(play.world.copies):
        kind = play.world.kinds[order]
        if kind in POISON and copy in log.acknowledged:
            why = _("{copy}, a body {kind}, was acknowledged: deleted, never read")
            raise worlds.Broken(why.format(copy=play.who(copy), kind=_(kind)), log.lines)
    strangers = sorted(set(play.gateway.asked) - {order.pedido_id for order in play.orders})
    if strangers:
        why = _("the gateway was asked to charge {pedido_id}, from a body that is no order")
        raise worlds.Broken(why.format(pedido_id=strangers[0]), log.lines)


# -- the notebook's bench (the hidden checks bring their own) -------------------------------------------------
class NotebookBench:
    """The notebook's own world for the public checks: its moto, its clock, the learner's `build_handler`."""

    def __init__(self, aws: world.World, clock: VirtualClock, build_handler: Callable[..., Any]) -> None:
        self.clock, self.dynamodb, self._build = clock, aws.dynamodb, build_handler
        self._hook: Callable[[str, dict], None] | None = None

    def build_handler(self, client: gateway.GatewayClient) -> Callable[..., Any]:
        return self._build(self.dynamodb, client)

    def record(self, clave: str) -> dict:
        key = {"clave": {"S": clave}}
        return self.dynamodb.get_item(TableName=world.IDEMPOTENCY_TABLE, Key=key).get("Item") or {}

    def before_dynamodb(self, hook: Callable[[str, dict], None] | None) -> None:
        event = "before-parameter-build.dynamodb"
        if hook is not None and self._hook is None:
            self.dynamodb.meta.events.register(event, self._before_call)
        elif hook is None and self._hook is not None:
            self.dynamodb.meta.events.unregister(event, self._before_call)
        self._hook = hook

    def _before_call(self, model: Any, params: dict, **_: Any) -> None:
        if self._hook is not None:
            self._hook(model.name, params)
