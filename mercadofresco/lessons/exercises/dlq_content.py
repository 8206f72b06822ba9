"""What exercise 2's step 2 must read in every DLQ: the messages' content, not their times or receive counts.

`classify_by_what_the_messages_say`: a DLQ whose messages are all of one kind
is poison when this consumer cannot read them (another version, not an order
at all, fields missing), data when they are well-formed orders with impossible
values (an importe of 0 or less), transient when they are valid orders (a
dependency failed, not the messages) — whether they came in a burst or over
hours, were moved by the RedrivePolicy after maxReceiveCount receives or sent
there directly, and however many there are. Played on a `dlq_properties.DlqBench`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from mercadofresco import orders
from mercadofresco.i18n import N_, _
from mercadofresco.lessons import worlds
from mercadofresco.lessons.dlq import incidents
from mercadofresco.lessons.exercises.dlq_properties import DlqBench, dead_letter, peek


def _written(n: int, importe: str, version: int = 1) -> str:
    """A body as a producer writes it: order n's id, `importe` as text, `version`."""
    return f'{{"importe": "{importe}", "pedido_id": "{orders.order_id(530_001 + n)}", "version": {version}}}'


# What a message of each kind can look like (n numbers the order); each kind's first shape is the lesson's own.
# A shape's name is what the story says (`_(shape)`).
SHAPES: dict[str, dict[str, Callable[[int], str]]] = {
    "poison": {
        N_("version 2"): lambda n: incidents.version2_body(orders.order_id(530_001 + n), Decimal("48.20")),
        N_("version 3"): lambda n: _written(n, "12.00", version=3),
        N_("not JSON"): lambda n: f"<pedido id='{530_001 + n}'/>",
        N_("no importe"): lambda n: f'{{"pedido_id": "{orders.order_id(530_001 + n)}", "version": 1}}',
    },
    "data": {
        N_("a negative importe"): lambda n: _written(n, f"-{n + 1}.50"),
        N_("an importe of 0"): lambda n: _written(n, "0.00"),
    },
    "transient": {
        N_("a valid order"): lambda n: _written(n, "19.90"),
    },
}


@dataclass(frozen=True)
class Sample:
    """A DLQ of one kind: the shape of each message, the seconds between them, and how they got there."""

    kind: str
    shapes: tuple[str, ...]
    gaps: tuple[int, ...]
    moved_by_redrive_policy: bool

    def bodies(self) -> list[str]:
        return [SHAPES[self.kind][shape](n) for n, shape in enumerate(self.shapes)]


CLASSIFY_FIRST = (
    Sample("transient", ("a valid order",) * 3, (60, 60, 60), True),  # a 503 burst: uniform receive counts, valid
    Sample("data", ("a negative importe",) * 2, (600, 600), False),  # well-formed, impossible
    Sample("poison", ("not JSON", "version 2"), (13, 13), False),  # not an order at all
)


@st.composite
def _samples(draw: Any) -> Sample:
    kind = draw(st.sampled_from(tuple(SHAPES)))
    shapes = tuple(draw(st.lists(st.sampled_from(tuple(SHAPES[kind])), min_size=1, max_size=12)))
    gaps = tuple(draw(st.sampled_from((1, 13, 87, 3_600))) for _shape in shapes)
    return Sample(kind, shapes, gaps, draw(st.booleans()))


def classify_by_what_the_messages_say(bench: DlqBench, examples: int, seed: int) -> worlds.Counterexample | None:
    """classify_dlq says poison, data or transient by what the messages say, not by their times or receive counts.

    And it deletes none of them.
    """
    return worlds.smallest_counterexample(_samples(), _classify_play(bench), examples, seed, CLASSIFY_FIRST)


def _classify_play(bench: DlqBench) -> Callable[[Sample], None]:
    def play(world_: Sample) -> None:
        bench.fresh()
        bodies = world_.bodies()
        if world_.moved_by_redrive_policy:
            dead_letter(bench, bodies, list(world_.gaps), list(range(len(bodies))))
            held = _(
                "the DLQ holds {count} messages ({shapes}), {gaps} apart, each moved there by the RedrivePolicy "
                "after 4 receives"
            )
        else:
            for body, gap in zip(bodies, world_.gaps, strict=True):
                bench.clock.advance(gap)
                bench.sqs.send_message(QueueUrl=bench.dlq_url, MessageBody=body)
            held = _("the DLQ holds {count} messages ({shapes}), {gaps} apart, sent there directly")
        shapes = ", ".join(_(shape) for shape in sorted(set(world_.shapes)))
        gaps = ", ".join(_("{seconds} s").format(seconds=g) for g in world_.gaps)
        lines = [held.format(count=len(bodies), shapes=shapes, gaps=gaps), "classify_dlq(sqs, dlq_url)"]
        bench.clock.advance(2)
        answer = bench.classify()
        if answer != world_.kind:
            why = _("classify_dlq said {answer}; what the messages say is {kind}")
            raise worlds.Broken(why.format(answer=f"{answer!r:.40}", kind=repr(world_.kind)), lines)
        bench.clock.advance(300)  # past an inspection's visibility, however long the learner made it within reason
        if len(peek(bench)) != len(bodies):
            raise worlds.Broken(_("classifying deleted messages from the DLQ"), lines)

    return play
