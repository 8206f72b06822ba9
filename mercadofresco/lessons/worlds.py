"""Looking for a world that breaks a property of the lesson, and the smallest one: how the labs' checks work.

A lab's check states what must hold in every world the lesson describes ("each
order is charged exactly once, whatever the arrival times of its copies and the
crashes") and lets Hypothesis generate worlds: schedules, delays at the values
that matter, crashes, failures. `smallest_counterexample` plays each world with
the learner's code until one breaks the property, then shrinks it to the
smallest world that still does, so the learner reads a short story instead of a
large random one.

Searches are reproducible: the same seed gives the same worlds, in the same
order, and the same smallest world (`derandomize` is off only so that a seed can
be chosen: the public checks use one seed and a few worlds, the instructor's
checks another seed and more). A search has a budget of plays: once spent, every
further world counts as holding, so shrinking stops where it is and the
smallest world found so far is the answer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, Phase, example, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky

PLAYS_PER_EXAMPLE = 3  # the budget of plays: generating, then shrinking, at most this many per world generated


@dataclass(frozen=True)
class Counterexample:
    """A world that breaks a property: the world, why it breaks (one line), and what happened (a short story)."""

    world: Any
    why: str
    story: tuple[str, ...]

    def __str__(self) -> str:
        return "\n".join((self.why, *(f"  {line}" for line in self.story)))


class Broken(Exception):
    """Raised by a play when the world broke the property: what to tell the learner."""

    def __init__(self, why: str, story: list[str] | tuple[str, ...] = ()) -> None:
        super().__init__(why)
        self.why, self.story = why, tuple(story)


class _Found(Exception):
    """Tells Hypothesis the world failed (never leaves this module)."""


def smallest_counterexample(
    worlds: st.SearchStrategy[Any],
    play: Callable[[Any], None],
    examples: int,
    seed_number: int,
    first: tuple[Any, ...] = (),
) -> Counterexample | None:
    """The smallest world `worlds` generates on which `play` raises Broken; None if `examples` worlds all hold.

    `play(world)` sets the world up, runs the learner's code in it, and raises Broken when the property fails.
    The worlds in `first` are played first, as they are (small already: the values the lesson points at).
    Any other exception from the learner's code is the learner's: it is reported as it is (not shrunk).
    """
    found: list[Counterexample] = []
    errors: list[Exception] = []  # what the learner's code raised that is not the property failing
    plays = [0]
    budget = (len(first) + examples) * PLAYS_PER_EXAMPLE

    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        derandomize=False,
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
    )
    @seed(seed_number)
    @given(worlds)
    def search(world: Any) -> None:
        if plays[0] >= budget:
            return  # the budget is spent: this world counts as holding, and shrinking stops
        plays[0] += 1
        try:
            play(world)
        except Broken as broken:
            found[:] = [Counterexample(world, broken.why, broken.story)]  # smaller each time: Hypothesis shrinks
            raise _Found from None
        except Exception as error:  # the learner's code failed otherwise: say so as it is, and search no more
            errors.append(error)
            plays[0] = budget

    for world in reversed(first):
        search = example(world)(search)
    with contextlib.suppress(_Found, Flaky):  # Flaky: the final replay came after the budget, and held
        search()
    if not found and errors:
        raise errors[0]
    return found[0] if found else None
