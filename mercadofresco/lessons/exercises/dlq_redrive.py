"""What exercise 2's redrive must do in every world: move every message once, at its rate, and lose none.

Whatever the DLQ holds (orders, unreadable bodies), however many an inspection
has just hidden for 5 s, and at any rate up to 10 a second:

- `redrive_moves_every_message`: redrive_dlq moves every message to the source
  queue exactly once and says how many it moved; if its process dies at a
  send, nothing it had taken from the DLQ is lost (each message is back in the
  DLQ or already in the source queue);
- `redrive_keeps_its_rate`: it sends at most `max_per_second` a call and,
  after a send of n messages, lets n / max_per_second seconds pass before the
  next (the lab's pacing: no second ever moves more than `max_per_second`).

Played on a `dlq_properties.DlqBench`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from mercadofresco import i18n, orders
from mercadofresco.i18n import _
from mercadofresco.lessons import worlds
from mercadofresco.lessons.dlq import incidents
from mercadofresco.lessons.exercises.dlq_properties import VISIBLE_AGAIN_SECONDS, DlqBench

UNREADABLE = "not an order at all"
SLACK = 1e-6  # seconds: instants are read in milliseconds


@dataclass(frozen=True)
class Redrive:
    """`count` orders in the DLQ (and one unreadable body), `hidden` of them just inspected, a redrive at `rate`
    whose process dies at its `dies_at_send`-th send to the source queue (None: it never dies)."""

    count: int
    hidden: int
    unreadable: bool
    rate: int
    dies_at_send: int | None = None


REDRIVE_FIRST = (
    Redrive(11, 10, True, 5),  # the public check's world: 10 of 12 hidden, the redrive starts with 2
    Redrive(3, 0, False, 10, dies_at_send=1),  # the process dies at its first send
    Redrive(12, 0, False, 5),  # full batches at the rate
)


@st.composite
def _redrives(draw: Any) -> Redrive:
    count = draw(st.integers(1, 24))
    return Redrive(
        count,
        draw(st.integers(0, min(count, 10))),
        draw(st.booleans()),
        draw(st.sampled_from((1, 3, 5, 10))),
        draw(st.none() | st.integers(1, 3)),
    )


def redrive_moves_every_message(bench: DlqBench, examples: int, seed: int) -> worlds.Counterexample | None:
    """redrive_dlq moves every message exactly once, and a death at a send loses none of them."""
    return worlds.smallest_counterexample(_redrives(), _redrive_play(bench, False), examples, seed, REDRIVE_FIRST)


def redrive_keeps_its_rate(bench: DlqBench, examples: int, seed: int) -> worlds.Counterexample | None:
    """redrive_dlq never moves more than max_per_second messages in a second."""
    calm = _redrives().map(lambda world_: dataclasses.replace(world_, dies_at_send=None))
    first = tuple(world_ for world_ in REDRIVE_FIRST if world_.dies_at_send is None)
    return worlds.smallest_counterexample(calm, _redrive_play(bench, True), examples, seed, first)


def _redrive_play(bench: DlqBench, judge_rate: bool) -> Callable[[Redrive], None]:
    def play(world_: Redrive) -> None:
        bench.fresh()
        bodies = [incidents.version2_body(orders.order_id(540_001 + n), Decimal("48.20")) for n in range(world_.count)]
        bodies += [UNREADABLE] * world_.unreadable
        for body in bodies:
            bench.sqs.send_message(QueueUrl=bench.dlq_url, MessageBody=body)
        bench.clock.advance(1)
        hidden = 0
        while hidden < world_.hidden:  # an inspection just before: these come back 5 s later
            batch = bench.sqs.receive_message(
                QueueUrl=bench.dlq_url,
                MaxNumberOfMessages=min(10, world_.hidden - hidden),
                VisibilityTimeout=VISIBLE_AGAIN_SECONDS,
            )
            hidden += len(batch.get("Messages", []))
        bench.clock.advance(0.5)
        held = (
            _("the DLQ holds {count} messages (one unreadable)")
            if world_.unreadable
            else _("the DLQ holds {count} messages")
        )
        inspected = _("{hidden} of them were inspected {seconds} s ago (hidden for 5 s)")
        call = f"redrive_dlq(aws, clock, max_per_second={world_.rate})"
        lines = [
            held.format(count=len(bodies)),
            inspected.format(hidden=world_.hidden, seconds=i18n.number(0.5)) if world_.hidden else "",
            _("{call}; its process dies at its send number {send}").format(call=call, send=world_.dies_at_send)
            if world_.dies_at_send
            else call,
        ]
        lines = [line for line in lines if line]
        started = bench.clock.now()
        answer, died = bench.redrive(world_.rate, world_.dies_at_send)
        if isinstance(answer, BaseException) and not died:
            why = _("redrive_dlq raised {error}: {message}").format(error=type(answer).__name__, message=answer)
            raise worlds.Broken(why[:200], lines)
        if judge_rate:
            sends = [(at, n) for at, url, n in bench.sends() if at >= started and url == bench.source_url]
            too_fast = _too_fast(sends, world_.rate)
            if too_fast:
                raise worlds.Broken(too_fast, lines)
            return
        bench.clock.advance(12 * 3_600 + 1)  # whatever the redrive hid comes back (SQS's longest visibility)
        in_source = _bodies(bench, bench.source_url)
        in_dlq = _bodies(bench, bench.dlq_url)
        lost = [body for body in bodies if body not in in_source and body not in in_dlq]
        if lost:
            why = _(
                "{lost} of the {count} messages are neither in the source queue nor in the DLQ: "
                "deleted from the DLQ before they had reached the source queue"
            )
            raise worlds.Broken(why.format(lost=len(lost), count=len(bodies)), lines)
        if not died:
            twice = sorted({body for body in in_source if in_source.count(body) > 1})
            if in_dlq or twice:
                why = _("{in_dlq} messages still in the DLQ, {twice} sent to the source queue more than once")
                raise worlds.Broken(why.format(in_dlq=len(in_dlq), twice=len(twice)), lines)
            if answer != len(bodies):
                why = _("redrive_dlq returned {answer}; it moved {count}")
                raise worlds.Broken(why.format(answer=f"{answer!r:.40}", count=len(bodies)), lines)

    return play


def _bodies(bench: DlqBench, url: str) -> list[str]:
    """Every body in the queue `url`, once a message (a body sent twice is there twice; visible again 1 s later)."""
    found: dict[str, str] = {}
    while batch := bench.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=1).get(
        "Messages", []
    ):
        found.update({message["MessageId"]: message["Body"] for message in batch})
    return list(found.values())


def _too_fast(sends: list[tuple[Any, int]], rate: int) -> str:
    """What broke the rate: a send of more than `rate` messages, or one too soon after the send before it."""
    for (at, n), (later, _count) in zip(sends, [*sends[1:], (None, 0)], strict=True):
        if n > rate:
            said = _("{count} messages went back to the source queue in one call at {at}; the rate is {rate}/s")
            return said.format(count=n, at=i18n.moment(at, "%H:%M:%S"), rate=rate)
        if later is not None and (later - at).total_seconds() + SLACK < n / rate:
            gap = (later - at).total_seconds()
            return (
                f"{n} messages went back at {at:%H:%M:%S.%f}"[:-3]
                + f" and more {gap:.1f} s later: at {rate} a second, {n} take {n / rate:g} s"
            )
    return ""
