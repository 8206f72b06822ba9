"""Exercise 1's worlds: what happens to a few orders' messages, and the ones the checks generate.

A world (`World`) is a few orders, their copies (each a message of its own),
when each copy arrives (on its own, with others in one batch, or inside another
copy's delivery: at one of its steps, or just before one of its DynamoDB
requests), where consumers die and what each gateway call meets. The worlds
stay within the lesson's assumptions: a re-send comes within the 24 h a record
lives, and a copy arrives inside another's work within one delivery (2 x 30 s).
`*_FIRST` are the worlds the lesson's numbers point at, played before any
generated one; the strategies generate the rest, and Hypothesis shrinks the
world that breaks a property.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from mercadofresco import i18n
from mercadofresco.i18n import N_, _

VISIBILITY_SECONDS = 120  # the incident's queue
MAX_RECEIVES = 4  # its maxReceiveCount
READ_TIMEOUT_SECONDS, ATTEMPTS = 30, 2  # the fixed configuration: one delivery's attempts last 60 s at most
STEPS = ("after_lock", "after_charge", "after_complete")  # where the lab's consumer calls context.crashes.reached
SLOW_SECONDS, LATE_SECONDS = 25.0, 45.0  # a slow answer, and one after the read timeout
TTL_SECONDS = 24 * 3600
POISON = {  # bodies a consumer of version 1 cannot process (the kind, as the story says it: `_(kind)`)
    N_("not JSON"): "pedido PED-2026-990001, 48.20",
    N_("version 2"): '{"pedido_id": "PED-2026-990002", "importe_centimos": 4820, "version": 2}',
    N_("without an amount"): '{"pedido_id": "PED-2026-990003", "version": 1}',
}
MEETS = {  # what a gateway call may meet, as the story says it (`met`)
    "ok": "",
    "slow": N_("takes {seconds} s"),
    "503": N_("answers 503"),
    "429": N_("answers 429"),
    "lost": N_("loses its answer"),
    "late": N_("answers after the read timeout"),
}


def met(how: str) -> str:
    """What a gateway call that met `how` did, in the learner's language ("" for none of MEETS' words)."""
    said = MEETS.get(how, "")
    return _(said).format(seconds=i18n.number(SLOW_SECONDS, "g")) if said else ""


# -- a world ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Arrival:
    """When a copy arrives: `seconds` after the copy before it, or inside copy `inside`'s first delivery at `point`
    (one of STEPS, or "call N": just before its N-th DynamoDB request), `seconds` later on that delivery's clock."""

    seconds: float
    inside: int | None = None
    point: str = ""


@dataclass(frozen=True)
class World:
    """Orders (their kind: "valid", "declined" or a key of POISON), their copies, and what goes wrong."""

    kinds: tuple[str, ...]
    copies: tuple[tuple[int, Arrival], ...]  # (order, when)
    dies: tuple[tuple[int, str], ...] = ()  # (copy, step): that copy's first consumer dies there
    gateway_calls: tuple[str, ...] = ()  # what each gateway call meets (a key of MEETS), then "ok"
    old_records: tuple[str, ...] = ()  # in the table before, for order 1: "expired", "other_operation", "bare_key"
    key_sent: bool = False


SECONDS_THAT_MATTER = (0.0, 1.0, 20.0, 21.0, 29.0, 30.0, 31.0, 59.0, 60.0)  # around an attempt and one delivery
GAPS = (0.0, 1.0, 60.0, 119.0, 121.0, 6 * 3600.0, 23 * 3600.0)  # between copies: at once, around the visibility, hours
RESEND_WITHIN_SECONDS = 23 * 3600.0  # a re-send comes within a record's 24 h; after that it is a new order


@st.composite
def _worlds(draw: Any, kinds: st.SearchStrategy, faults: tuple[str, ...], deaths: tuple[str, ...], key: bool) -> World:
    """Orders of `kinds`, 1-4 copies in all, arriving on their own or inside one another; deaths at `deaths`."""
    kinds_ = draw(st.lists(kinds, min_size=1, max_size=2))
    count = draw(st.integers(1, 4))
    copies, left = [], RESEND_WITHIN_SECONDS
    for number in range(count):
        order = draw(st.integers(0, len(kinds_) - 1)) if number else 0
        if number and draw(st.booleans()):  # inside an earlier copy's first delivery
            inside = draw(st.integers(0, number - 1))
            point = draw(st.sampled_from([*STEPS, "call 1", "call 2", "call 3"]))
            seconds = 0.0 if point.startswith("call") else draw(st.sampled_from(SECONDS_THAT_MATTER))
            copies.append((order, Arrival(seconds, inside, point)))
        else:
            seconds = draw(st.sampled_from([gap for gap in GAPS if gap <= left])) if number else 0.0
            left -= seconds
            copies.append((order, Arrival(seconds)))
    dies = (
        draw(
            st.lists(
                st.tuples(st.integers(0, count - 1), st.sampled_from(deaths)),
                max_size=2,
                unique_by=lambda death: death[0],
            )
        )
        if deaths
        else []
    )
    calls = draw(st.lists(st.sampled_from(faults), max_size=4))
    old = draw(st.lists(st.sampled_from(("expired", "other_operation", "bare_key")), max_size=2, unique=True))
    return World(
        tuple(kinds_), tuple(copies), tuple(sorted(dies)), tuple(calls), tuple(old) * (kinds_[0] == "valid"), key
    )


def _at(seconds: float = 0.0, inside: int | None = None, point: str = "") -> Arrival:
    return Arrival(seconds, inside, point)


ONE = (0, _at())  # order 1's first copy, at the start
# The worlds the lesson's numbers point at, played first: small already, each one a rule.
TABLE_ALONE_FIRST = (
    World(("valid",), (ONE, (0, _at(21, 0, "after_lock")))),  # a lock longer than one attempt (30 s)
    World(("valid",), (ONE, (0, _at(60, 0, "after_lock")))),  # and than one delivery's attempts (2 x 30 s)
    World(("valid",), (ONE, (0, _at(0, 0, "call 2")))),  # between the claim's read and its write: one write
    World(("valid",), (ONE,), dies=((0, "after_lock"),)),  # the abandoned claim expires before the redelivery
    # and it must: a lock that outlives the visibility (120 s) spends receive 2, and four 503s (two deliveries'
    # attempts) then spend the rest, so the order reaches the DLQ uncharged
    World(("valid",), (ONE,), dies=((0, "after_lock"),), gateway_calls=("503",) * 4),
    World(("valid",), (ONE,), gateway_calls=("503", "503")),  # a transient failure releases the claim
    World(("valid",), (ONE,), gateway_calls=("429", "429")),  # so does a throttle
    World(("valid", "valid"), (ONE, (1, _at()))),  # two orders in one batch: each record gets its outcome
    World(("valid",), (ONE, (0, _at(6 * 3600)))),  # the producer's re-send, hours later
    World(("valid",), (ONE,), old_records=("expired", "other_operation", "bare_key")),  # the key's scope, its life
)
WITH_CRASHES_FIRST = (
    World(("valid",), (ONE,), dies=((0, "after_charge"),), key_sent=True),
    World(("valid",), (ONE,), dies=((0, "after_complete"),), key_sent=True),
    World(("valid",), (ONE,), gateway_calls=("late", "late"), key_sent=True),  # charged, the answer never came
    World(("valid",), (ONE,), gateway_calls=("lost", "lost"), key_sent=True),
    # two orders in one batch, the first's answers late twice (60 s): the second's lock runs from its own claim
    World(("valid", "valid"), (ONE, (1, _at())), gateway_calls=("late", "late"), key_sent=True),
)
DECLINED_FIRST = (World(("declined",), (ONE,)), World(("declined",), (ONE, (0, _at(60)))))
POISON_FIRST = (
    *(World((kind, "valid"), (ONE, (1, _at(1)))) for kind in POISON),
    World(("not JSON", "valid"), (ONE, (1, _at()))),  # in one batch: only the poison comes back (partial response)
)

TABLE_ALONE = _worlds(st.just("valid"), ("ok", "slow", "503", "429"), ("after_lock", "after_complete"), False)
WITH_CRASHES = _worlds(st.just("valid"), ("ok", "slow", "503", "lost", "late"), STEPS, True)
DECLINED = _worlds(st.sampled_from(("declined", "valid")), ("ok", "503"), (), False).filter(
    lambda w: "declined" in w.kinds
)
POISONED = _worlds(st.sampled_from((*POISON, "valid")), ("ok",), (), False).filter(
    lambda w: any(kind in POISON for kind in w.kinds)
)
