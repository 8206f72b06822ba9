"""What exercise 2's runbook must do in every world: act only on what it understood.

`runbook_acts_only_on_what_it_understood`: on an incident still bleeding, or
one that is not poison, the runbook stops and touches nothing; on a contained
poison incident it attaches the fixed consumer to the source queue before the
first message goes back (no redrive without a fix first), redrives every
message to the queue that consumer reads, charges every order once, moves at
most 10 messages a second back, and its record says what the DLQ holds after
the fixed consumer ran. Played on a `dlq_properties.DlqBench`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from mercadofresco import i18n, orders
from mercadofresco.i18n import _
from mercadofresco.lessons import worlds
from mercadofresco.lessons.dlq import incidents
from mercadofresco.lessons.exercises.dlq_properties import VISIBLE_AGAIN_SECONDS, DlqBench, most_in_one_second, peek

REDRIVE_PER_SECOND = 10  # the lesson's redrive rate


KIND_BODIES = {
    "poison": lambda n: incidents.version2_body(orders.order_id(520_001 + n), Decimal("48.20")),
    "transient": lambda n: orders.order_body(orders.Order(orders.order_id(520_001 + n), Decimal("48.20"))),
    "data": lambda n: f'{{"importe": "-48.20", "pedido_id": "{orders.order_id(520_001 + n)}", "version": 1}}',
}
VERSION_3 = '{"importe": "12.00", "pedido_id": "PED-2026-529999", "version": 3}'


@dataclass(frozen=True)
class Incident:
    """A DLQ of `count` messages of one kind, the source queue's oldest order's age (None: empty), and whether one
    more message is of a version the fixed consumer cannot read either (poison incidents only)."""

    kind: str
    count: int
    oldest: int | None = None
    version_3: bool = False


RUNBOOK_FIRST = (
    Incident("poison", 25),  # more than the redrive may move in one second, beside the 10 an inspection hides
    Incident("poison", 3, oldest=900),  # still bleeding: the source queue is backing up
    Incident("data", 3),  # impossible values: corrected at the source, not redriven
    Incident("poison", 3, version_3=True),  # one the fix cannot read: it comes back
)


def runbook_acts_only_on_what_it_understood(bench: DlqBench, examples: int, seed: int) -> worlds.Counterexample | None:
    """The runbook acts only on a contained poison incident, fix first; otherwise it stops and touches nothing.

    Acting: it attaches the fixed consumer before the first message goes back, charges every order once, moves at
    most 10 messages a second, and records what the DLQ holds after the fixed consumer ran.
    """
    return worlds.smallest_counterexample(_incidents(), _runbook_play(bench), examples, seed, RUNBOOK_FIRST)


@st.composite
def _incidents(draw: Any) -> Incident:
    kind = draw(st.sampled_from(tuple(KIND_BODIES)))
    oldest = draw(st.none() | st.sampled_from((12, 301, 900)))
    return Incident(kind, draw(st.integers(1, 6)), oldest, kind == "poison" and draw(st.booleans()))


def _runbook_play(bench: DlqBench) -> Callable[[Incident], None]:
    def play(world_: Incident) -> None:
        bench.fresh()
        bodies = [KIND_BODIES[world_.kind](n) for n in range(world_.count)] + [VERSION_3] * world_.version_3
        for body in bodies:
            bench.sqs.send_message(QueueUrl=bench.dlq_url, MessageBody=body)
            bench.clock.advance(13)
        if world_.oldest is not None:
            order = orders.Order(orders.order_id(529_001), Decimal("5.00"))
            bench.sqs.send_message(QueueUrl=bench.source_url, MessageBody=orders.order_body(order))
            bench.clock.advance(world_.oldest)
        held = (
            _("the DLQ holds {count} {kind} messages and one of version 3")
            if world_.version_3
            else _("the DLQ holds {count} {kind} messages")
        )
        lines = [
            held.format(count=world_.count, kind=repr(world_.kind)),  # classify_dlq's word for them, as it says it
            _("the source queue is empty")
            if world_.oldest is None
            else _("the source queue's oldest order is {seconds} s old").format(seconds=world_.oldest),
            "runbook(aws, clock, client)",
        ]
        started = bench.clock.now()
        answer, charges = bench.runbook()
        bench.clock.advance(VISIBLE_AGAIN_SECONDS + 1)  # what an inspection hid is back
        in_dlq = len(peek(bench))
        alive, understood = world_.oldest is not None and world_.oldest > 300, world_.kind == "poison"
        if alive or not understood:
            why = (
                _("the incident is still bleeding: the runbook must stop and touch nothing; it went on")
                if alive
                else _(
                    "the incident is {kind}, not poison: this fix is not for it: the runbook must stop and touch "
                    "nothing; it went on"
                ).format(kind=repr(world_.kind))
            )
            if not isinstance(answer, Exception) or sum(charges.values()) or in_dlq != len(bodies):
                raise worlds.Broken(why, lines)
            return
        if isinstance(answer, Exception):
            why = _("the runbook stopped ({error}) on a contained poison incident")
            raise worlds.Broken(why.format(error=type(answer).__name__), lines)
        waiting = {orders.order_id(529_001)} if world_.oldest is not None else set()  # the fixed consumer's too
        expected = {orders.order_id(520_001 + n) for n in range(world_.count)} | waiting
        wrong = {pedido: charges.get(pedido, 0) for pedido in expected | set(charges) if charges.get(pedido) != 1}
        if wrong:
            shown = dict(sorted(wrong.items())[:3])
            why = _("{count} orders not charged exactly once (charges per order: {shown})")
            raise worlds.Broken(why.format(count=len(wrong), shown=shown), lines)
        back = [at for at, url, _ in bench.sends() if at >= started and url == bench.source_url]
        sent_back = sum(n for at, url, n in bench.sends() if at >= started and url == bench.source_url)
        if sent_back < len(bodies):
            why = _(
                "{sent_back} of the DLQ's {count} messages went back to the source queue: the runbook"
                " reprocesses by redriving them to the queue the fixed consumer reads, not around it"
            )
            raise worlds.Broken(why.format(sent_back=sent_back, count=len(bodies)), lines)
        attached = [at for at, url in bench.attachments() if at >= started and url == bench.source_url]
        if back and (not attached or attached[0] > back[0]):
            why = (
                _(
                    "messages went back to the source queue at {back}; the fixed consumer was attached to it "
                    "only at {attached}: the old consumer would fail them again (fix before you redrive)"
                )
                if attached
                else _(
                    "messages went back to the source queue at {back}; the fixed consumer was attached to it "
                    "never: the old consumer would fail them again (fix before you redrive)"
                )
            )
            at = i18n.moment(attached[0], "%H:%M:%S") if attached else ""
            raise worlds.Broken(why.format(back=i18n.moment(back[0], "%H:%M:%S"), attached=at), lines)
        moved = [
            at.timestamp()
            for at, url, n in bench.sends()
            if at >= started and url == bench.source_url
            for _ in range(n)
        ]
        most = most_in_one_second(moved)
        if most > REDRIVE_PER_SECOND:
            why = _("{count} messages went back to the source queue within one second").format(count=most)
            raise worlds.Broken(why, lines)
        record = answer if isinstance(answer, dict) else {}
        if record.get("dlq_after") != in_dlq:
            why = _("the record says dlq_after={dlq_after}; after the fix ran, the DLQ held {in_dlq}")
            raise worlds.Broken(why.format(dlq_after=repr(record.get("dlq_after")), in_dlq=in_dlq), lines)

    return play
