"""What exercise 2's runbook must do in every world: look without touching, and act only on what it understood.

- `inspection_keeps_the_dlq`: whatever the DLQ holds, in whatever order its
  messages were dead-lettered, and however many are asked for, inspect_dlq
  returns that many (or all), oldest sent first, each with its SentTimestamp in
  Madrid time, its receive count and its body; it never waits (no long poll),
  and five seconds later every message is back as it was;
- `contain_tells_a_live_incident`: the DLQ's count, the source queue's oldest
  message age, and alive when that age is more than 5 minutes or the DLQ gains
  a message within the next 5 minutes, measured without a receive on the live
  queue;
- the runbook's own rule, to act only on what it understood, is `dlq_runbook`.

A bench (`DlqBench`) is a queue pair with the lesson's names on a moto and a
clock of its own, and the learner's functions; the hidden checks play it on
their own moto.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from hypothesis import strategies as st

from mercadofresco import orders
from mercadofresco.clock import MADRID, VirtualClock
from mercadofresco.i18n import _
from mercadofresco.lessons import worlds
from mercadofresco.lessons.dlq import incidents

MAX_RECEIVES = 4  # the lesson's RedrivePolicy
VISIBLE_AGAIN_SECONDS = 5  # an inspection's visibility: the lab's


class ScriptDied(BaseException):
    """The process running the learner's script died here (a world's event): no `except Exception` of theirs runs."""


class DlqBench(Protocol):
    """Where a world is played: an empty source queue and DLQ (the lesson's names), a clock, the learner's code."""

    clock: VirtualClock
    sqs: Any
    source_url: str
    dlq_url: str

    def fresh(self) -> None:
        """Empty queues, a clock at Sunday 22:04, no call of the learner's recorded yet."""

    def inspect(self, max_messages: int) -> Any: ...

    def contain(self) -> Any: ...

    def classify(self) -> Any: ...

    def redrive(self, max_per_second: int, dies_at_send: int | None) -> tuple[Any, bool]:
        """The learner's redrive_dlq: what it returned (or raised), and whether its process died at the
        `dies_at_send`-th send to the source queue (that send never reaches SQS; None: it never dies)."""

    def runbook(self) -> tuple[Any, dict[str, int]]:
        """The learner's runbook with a gateway of the bench's: what it returned (or the exception it raised),
        and the charges per order."""

    def receives(self) -> list[tuple[str, dict]]:
        """(queue URL, request) of each ReceiveMessage the learner's code made since `fresh`."""

    def sends(self) -> list[tuple[dt.datetime, str, int]]:
        """(instant, queue URL, messages) of each SendMessage(Batch) the learner's code made since `fresh`."""

    def attachments(self) -> list[tuple[dt.datetime, str]]:
        """(instant, queue URL) of each consumer the learner's code attached to a queue since `fresh` (a
        `Poller` created: an event-source mapping reads its queue's QueueArn)."""


def dead_letter(bench: DlqBench, bodies: list[str], gaps: list[int], order: list[int]) -> None:
    """Send `bodies` to the source queue `gaps` seconds apart, then let the RedrivePolicy move them to the DLQ in
    `order` (positions in `bodies`): a DLQ whose order is not the order the messages were sent in."""
    sqs, source = bench.sqs, bench.source_url
    for body, gap in zip(bodies, gaps, strict=True):
        bench.clock.advance(gap)
        sqs.send_message(QueueUrl=source, MessageBody=body)
    bench.clock.advance(30)
    held = {}  # every message hidden at once: each one is then failed on its own
    while len(held) < len(bodies):
        for message in sqs.receive_message(QueueUrl=source, MaxNumberOfMessages=10, VisibilityTimeout=43_200)[
            "Messages"
        ]:
            held[message["Body"]] = message["ReceiptHandle"]
    for position in order:  # moto shows a message again only once the clock has passed its visibility
        sqs.change_message_visibility(QueueUrl=source, ReceiptHandle=held[bodies[position]], VisibilityTimeout=0)
        for _receive in range(MAX_RECEIVES):  # the fifth receive finds it gone: the RedrivePolicy moved it
            bench.clock.advance(0.01)
            if not sqs.receive_message(QueueUrl=source, MaxNumberOfMessages=1, VisibilityTimeout=0).get("Messages"):
                break
        bench.clock.advance(7)


def peek(bench: DlqBench) -> dict[str, tuple[int, int]]:
    """The DLQ's messages: body -> (SentTimestamp, receive count); they are visible again a second later."""
    seen: dict[str, tuple[int, int]] = {}
    while True:
        batch = bench.sqs.receive_message(
            QueueUrl=bench.dlq_url, MaxNumberOfMessages=10, VisibilityTimeout=1, MessageSystemAttributeNames=["All"]
        ).get("Messages", [])
        if not batch:
            return seen
        for m in batch:
            seen[m["Body"]] = (int(m["Attributes"]["SentTimestamp"]), int(m["Attributes"]["ApproximateReceiveCount"]))


def most_in_one_second(seconds: list[float]) -> int:
    """The most instants (seconds; one a message) that fall within any one second: a redrive's busiest second."""
    times, most, left = sorted(seconds), 0, 0
    for right, instant in enumerate(times):
        while instant - times[left] >= 1:
            left += 1
        most = max(most, right - left + 1)
    return most


def _madrid(milliseconds: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(milliseconds / 1000, MADRID)


# -- the inspection ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Dlq:
    """Messages sent `gaps` seconds apart, dead-lettered in `order`, and how many the inspection asks for."""

    gaps: tuple[int, ...]
    order: tuple[int, ...]
    asked: int


@st.composite
def _dlqs(draw: Any) -> Dlq:
    gaps = tuple(draw(st.lists(st.sampled_from((1, 13, 60, 600)), min_size=1, max_size=14)))
    order = tuple(draw(st.permutations(range(len(gaps)))))
    return Dlq(gaps, order, draw(st.sampled_from((1, 3, 10, 12, 25))))


INSPECTION_FIRST = (
    Dlq((60, 60), (1, 0), 10),  # the later one dead-lettered first
    Dlq((13,) * 12, tuple(range(12)), 12),  # more than one receive gives
    Dlq((13,) * 3, (0, 1, 2), 10),  # fewer than asked: the queue runs out
)


def inspection_keeps_the_dlq(bench: DlqBench, examples: int, seed: int) -> worlds.Counterexample | None:
    """inspect_dlq returns the messages asked for, oldest sent first, as they are, and leaves every one in place.

    Each row's sent is the SentTimestamp in Madrid time, its receive_count the count of that receive; no receive
    waits; five seconds later every message is back with its SentTimestamp.
    """
    return worlds.smallest_counterexample(_dlqs(), _inspection_play(bench), examples, seed, INSPECTION_FIRST)


def _inspection_play(bench: DlqBench) -> Callable[[Dlq], None]:
    def play(world_: Dlq) -> None:
        bench.fresh()
        bodies = [
            incidents.version2_body(orders.order_id(500_001 + n), Decimal("48.20")) for n in range(len(world_.gaps))
        ]
        dead_letter(bench, bodies, list(world_.gaps), list(world_.order))
        sent = _("{count} orders sent {gaps} apart, dead-lettered in the order {order}").format(
            count=len(bodies),
            gaps=", ".join(_("{seconds} s").format(seconds=g) for g in world_.gaps),
            order=", ".join(str(n + 1) for n in world_.order),
        )
        lines = [sent, f"inspect_dlq(max_messages={world_.asked})"]
        before = peek(bench)
        bench.clock.advance(2)
        rows = bench.inspect(world_.asked)
        bench.clock.advance(VISIBLE_AGAIN_SECONDS + 1)
        after = peek(bench)
        waited = [request.get("WaitTimeSeconds") for _u, request in bench.receives() if request.get("WaitTimeSeconds")]
        if waited:
            why = _("a receive asked to wait up to {seconds} s (a long poll): on a virtual clock it never ends")
            raise worlds.Broken(why.format(seconds=waited[0]), lines)
        expected = min(len(bodies), world_.asked)
        if not isinstance(rows, list) or len(rows) != expected:
            got = len(rows) if isinstance(rows, list) else type(rows).__name__
            why = _("inspect_dlq returned {got} rows; the DLQ held {held}, {asked} asked")
            raise worlds.Broken(why.format(got=got, held=len(bodies), asked=world_.asked), lines)
        for row in rows:
            wrong = _row_wrong(row, before, after)
            if wrong:
                raise worlds.Broken(wrong, lines)
        sent = [row["sent"] for row in rows]
        if sent != sorted(sent) or len({row["body"] for row in rows}) != len(rows):
            raise worlds.Broken(_("the rows are not the messages oldest sent first, each once"), lines)
        moved = sorted(body for body in before if after.get(body, (None,))[0] != before[body][0])
        if moved:
            why = _(
                "{moved} of the {count} messages are not back in the DLQ as they were 5 s later"
                " (deleted, sent again, or hidden longer)"
            )
            raise worlds.Broken(why.format(moved=len(moved), count=len(before)), lines)

    return play


def _row_wrong(row: Any, before: dict, after: dict) -> str:
    if not isinstance(row, dict) or not {"sent", "receive_count", "body"} <= set(row):
        return _("a row is {row}, not a dict with sent, receive_count and body").format(row=f"{row!r:.80}")
    if row["body"] not in before:
        return _("a row's body {body} is not a message of the DLQ").format(body=f"{row['body']!r:.60}")
    sent_ms, _count = before[row["body"]]
    truth = _madrid(sent_ms)
    if not isinstance(row["sent"], dt.datetime) or row["sent"] != truth or row["sent"].utcoffset() != truth.utcoffset():
        return f"a row's sent is {row['sent']!r:.60}; its SentTimestamp in Madrid time is {truth:%a %H:%M:%S%z}"
    if row["body"] in after and row["receive_count"] != after[row["body"]][1] - 1:
        count = after[row["body"]][1] - 1
        said = _("a row's receive_count is {receive_count}; that receive was the message's number {count}")
        return said.format(receive_count=repr(row["receive_count"]), count=count)
    return ""


# -- contain -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Backlog:
    """Messages in the DLQ, the age of the source queue's oldest message when contain runs (None: empty), and
    when one more message reaches the DLQ, in seconds after contain began (None: none does)."""

    dead: int
    oldest: int | None
    grows_at: int | None = None


CONTAIN_FIRST = (Backlog(3, 300), Backlog(3, 301), Backlog(1, None), Backlog(2, 12), Backlog(2, None, 150))


def contain_tells_a_live_incident(bench: DlqBench, examples: int, seed: int) -> worlds.Counterexample | None:
    """contain counts the DLQ and calls the incident alive if the source queue backs up or the DLQ grows.

    Alive: the source queue's oldest message is more than 5 minutes old, or the DLQ gains a message within the
    next 5 minutes. Measured without a receive on the live source queue; a message exactly 300 s old is not more
    than 5 minutes old.
    """
    backlogs = st.builds(
        Backlog,
        st.integers(1, 4),
        st.none() | st.sampled_from((0, 12, 299, 300, 301, 7_200)),
        st.none() | st.sampled_from((1, 150, 299)),
    )
    return worlds.smallest_counterexample(backlogs, _contain_play(bench), examples, seed, CONTAIN_FIRST)


def _one_more_message(bench: DlqBench, after: int | None) -> contextlib.AbstractContextManager:
    """While inside, one more message reaches the DLQ `after` seconds from now, if the clock gets there."""
    if after is None:
        return contextlib.nullcontext()
    body = incidents.version2_body(orders.order_id(510_999), Decimal("9.90"))
    arrival = bench.clock.now() + dt.timedelta(seconds=after)
    return bench.clock.meanwhile(arrival, lambda: bench.sqs.send_message(QueueUrl=bench.dlq_url, MessageBody=body))


def _contain_play(bench: DlqBench) -> Callable[[Backlog], None]:
    def play(world_: Backlog) -> None:
        bench.fresh()
        for n in range(world_.dead):
            bench.sqs.send_message(
                QueueUrl=bench.dlq_url,
                MessageBody=incidents.version2_body(orders.order_id(510_001 + n), Decimal("9.90")),
            )
        if world_.oldest is not None:
            bench.sqs.send_message(
                QueueUrl=bench.source_url,
                MessageBody=orders.order_body(orders.Order(orders.order_id(519_001), Decimal("5.00"))),
            )
            bench.clock.advance(world_.oldest)
        held = (
            _("{count} messages in the DLQ, no order in the source queue")
            if world_.oldest is None
            else _("{count} messages in the DLQ, an order {seconds} s old in the source queue")
        )
        lines = [held.format(count=world_.dead, seconds=world_.oldest)]
        if world_.grows_at is not None:
            grows = _("one more message reaches the DLQ {seconds} s after contain begins")
            lines.append(grows.format(seconds=world_.grows_at))
        lines.append("contain(aws, clock)")
        with _one_more_message(bench, world_.grows_at):
            answer = bench.contain()
        if any(url == bench.source_url for url, _request in bench.receives()):
            why = _("contain received from the live source queue: measure its age with the metric")
            raise worlds.Broken(why, lines)
        if not isinstance(answer, dict):
            raise worlds.Broken(_("contain returned {answer}, not a dict").format(answer=f"{answer!r:.60}"), lines)
        alive = (world_.oldest is not None and world_.oldest > 300) or world_.grows_at is not None
        if answer.get("dlq_messages") != world_.dead or answer.get("still_bleeding") is not alive:
            said = _(
                "contain said dlq_messages={dlq_messages}, still_bleeding={still_bleeding}; it is {dead} and {alive}"
            )
            bleeding, dlq_messages = repr(answer.get("still_bleeding")), repr(answer.get("dlq_messages"))
            why = said.format(dlq_messages=dlq_messages, still_bleeding=bleeding, dead=world_.dead, alive=alive)
            if world_.grows_at is not None and answer.get("still_bleeding") is False:
                why = _("{said}: the DLQ grew while contain looked (wait 5 minutes and look again)").format(said=why)
            raise worlds.Broken(why, lines)

    return play
