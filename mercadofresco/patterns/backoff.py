"""Backoff strategies: how long to wait before the next retry (notebook 05).

Each strategy is a frozen value with one method, `wait(attempt, rng, previous)`:
none, exponential, full jitter, equal jitter and decorrelated jitter, all
capped. Seconds here; the contention simulation passes milliseconds the same way.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from mercadofresco.errors import check_range
from mercadofresco.i18n import T_, _

MAX_WAIT_SECONDS = 3_600.0


# -- backoff strategies -----------------------------------------------------------
def _check_base_cap(base: float, cap: float) -> None:
    check_range("base", base, 0, MAX_WAIT_SECONDS, why=_("seconds"), low_excluded=True)
    check_range("cap", cap, base, MAX_WAIT_SECONDS, why=_("seconds; at least base"))


def _exponential(base: float, cap: float, attempt: int) -> float:
    if attempt < 1:
        raise ValueError(_("attempt counts failures so far and starts at 1; got {attempt}").format(attempt=attempt))
    return min(cap, base * 2.0 ** min(attempt, 60))  # 2**60 already dwarfs any cap


@dataclass(frozen=True)
class NoBackoff:
    """Retry at once: what a naive SDK loop does."""

    def wait(self, attempt: int, rng: random.Random, previous: float = 0.0) -> float:
        """Always 0 seconds."""
        return 0.0


@dataclass(frozen=True)
class Exponential:
    """min(cap, base · 2^attempt): every client that failed together retries together."""

    base: float = 0.1
    cap: float = 20.0

    def __post_init__(self) -> None:
        _check_base_cap(self.base, self.cap)

    def wait(self, attempt: int, rng: random.Random, previous: float = 0.0) -> float:
        """Seconds to wait after the `attempt`-th failure (attempt >= 1)."""
        return _exponential(self.base, self.cap, attempt)


@dataclass(frozen=True)
class FullJitter:
    """uniform(0, min(cap, base · 2^attempt)): the whole window is random."""

    base: float = 0.1
    cap: float = 20.0

    def __post_init__(self) -> None:
        _check_base_cap(self.base, self.cap)

    def wait(self, attempt: int, rng: random.Random, previous: float = 0.0) -> float:
        """Seconds to wait after the `attempt`-th failure (attempt >= 1)."""
        return rng.uniform(0.0, _exponential(self.base, self.cap, attempt))


@dataclass(frozen=True)
class EqualJitter:
    """half + uniform(0, half) of min(cap, base · 2^attempt): never shorter than half the window."""

    base: float = 0.1
    cap: float = 20.0

    def __post_init__(self) -> None:
        _check_base_cap(self.base, self.cap)

    def wait(self, attempt: int, rng: random.Random, previous: float = 0.0) -> float:
        """Seconds to wait after the `attempt`-th failure (attempt >= 1)."""
        half = _exponential(self.base, self.cap, attempt) / 2
        return half + rng.uniform(0.0, half)


@dataclass(frozen=True)
class DecorrelatedJitter:
    """min(cap, uniform(base, 3 · previous)): grows from the last wait, not from the attempt number."""

    base: float = 0.1
    cap: float = 20.0

    def __post_init__(self) -> None:
        _check_base_cap(self.base, self.cap)

    def wait(self, attempt: int, rng: random.Random, previous: float = 0.0) -> float:
        """Seconds to wait, given the `previous` wait (0 before the first retry counts as `base`)."""
        if attempt < 1:
            raise ValueError(_("attempt counts failures so far and starts at 1; got {attempt}").format(attempt=attempt))
        return min(self.cap, rng.uniform(self.base, 3 * max(previous, self.base)))


Backoff = NoBackoff | Exponential | FullJitter | EqualJitter | DecorrelatedJitter


STRATEGIES = {  # the names are keys; a table shows them in the learner's words (T_)
    T_("none"): NoBackoff,
    T_("exponential"): Exponential,
    T_("full"): FullJitter,
    T_("equal"): EqualJitter,
    T_("decorrelated"): DecorrelatedJitter,
}


def strategy(name: str, base: float = 0.1, cap: float = 20.0) -> Backoff:
    """A strategy by name: none, exponential, full, equal or decorrelated."""
    if name not in STRATEGIES:
        said = _("{name} must be one of {choices}; got {value}")
        raise ValueError(said.format(name="strategy", choices=", ".join(STRATEGIES), value=repr(name)))
    return NoBackoff() if name == "none" else STRATEGIES[name](base=base, cap=cap)
