"""A circuit breaker for the payment gateway (lesson section 9, notebook 09).

Three states:

- CLOSED: calls go through; consecutive failures are counted. At
  `failure_threshold` (20 by default) the breaker opens. With a
  `failure_rate`, it also opens when a window of `window_calls` calls ends
  with at least that share of failures (slow, intermittent failure that never
  makes 20 in a row).
- OPEN: calls fail at once, without touching the gateway, for `open_seconds`.
- HALF_OPEN: after that, up to `half_open_max_calls` trial calls go through.
  A success closes the breaker; a failure opens it again for another period.
  A trial that nobody reports (its caller crashed, or claimed it and never
  called) expires after `open_seconds`: then another trial may go through.

The transitions are pure functions of (state, policy, now), so the same
breaker drives a moto experiment, a simpy simulation (the retry storm) and a
shared store: `now` is virtual epoch seconds, never read from a clock here.
`CircuitBreaker` keeps its state in process memory: one per consumer, which is
exactly what the lesson warns is worth nothing with 20 concurrent consumers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from mercadofresco.errors import MercadoFrescoError, check_range
from mercadofresco.i18n import T_, _, number

OPENED_METRIC = "CircuitBreakerOpened"  # the CloudWatch metric an opening publishes (models.alarm_evaluation)


class State(Enum):
    """Where the breaker is (the value stays English; a table shows it in the learner's words)."""

    CLOSED = T_("closed")
    OPEN = T_("open")
    HALF_OPEN = T_("half_open")


class CircuitOpenError(MercadoFrescoError):
    """The breaker is open: the call was not made. `retry_after_seconds` says when to try again."""

    def __init__(self, name: str, retry_after_seconds: float) -> None:
        said = _("circuit {name} is open; try again in {seconds} s")
        super().__init__(said.format(name=repr(name), seconds=number(retry_after_seconds, ".0f")))
        self.name = name
        self.retry_after_seconds = retry_after_seconds


@dataclass(frozen=True)
class BreakerPolicy:
    """When to open, for how long, and how many trial calls to let through."""

    failure_threshold: int = 20
    open_seconds: float = 30.0
    half_open_max_calls: int = 1
    failure_rate: float | None = None  # e.g. 0.5: open when half the calls of a window failed
    window_calls: int = 20  # the window the failure rate is judged on, when it is complete

    def __post_init__(self) -> None:
        check_range("failure_threshold", self.failure_threshold, 1, 10_000)
        check_range("open_seconds", self.open_seconds, 0, 86_400, low_excluded=True)
        check_range("half_open_max_calls", self.half_open_max_calls, 1, 1_000)
        if self.failure_rate is not None:
            check_range("failure_rate", self.failure_rate, 0, 1, why=_("or None: no rate"), low_excluded=True)
        check_range("window_calls", self.window_calls, 1, 10_000)


@dataclass(frozen=True)
class BreakerState:
    """What a store keeps for one breaker."""

    state: State = State.CLOSED
    consecutive_failures: int = 0
    opened_at: float = 0.0
    trial_calls: int = 0
    window_calls: int = 0  # counted only when the policy has a failure_rate
    window_failures: int = 0
    trial_started_at: float = 0.0  # when the last half-open trial was claimed


# -- transitions: pure, `now` in epoch seconds ---------------------------------------
def current(s: BreakerState, policy: BreakerPolicy, now: float) -> BreakerState:
    """The state as of `now`: an OPEN breaker whose time is up has become HALF_OPEN.

    Trials claimed `open_seconds` ago or more without an answer are given up
    for lost, so a crashed trial holder cannot keep the breaker half-open forever.
    """
    if s.state is State.OPEN and now >= s.opened_at + policy.open_seconds:
        return BreakerState(State.HALF_OPEN, s.consecutive_failures, s.opened_at, trial_calls=0)
    if s.state is State.HALF_OPEN and s.trial_calls and now >= s.trial_started_at + policy.open_seconds:
        return replace(s, trial_calls=0, trial_started_at=0.0)
    return s


def before_call(s: BreakerState, policy: BreakerPolicy, now: float) -> tuple[BreakerState, bool]:
    """May a call go through now? Returns the new state and the answer."""
    s = current(s, policy, now)
    if s.state is State.CLOSED:
        return s, True
    if s.state is State.HALF_OPEN and s.trial_calls < policy.half_open_max_calls:
        return replace(s, trial_calls=s.trial_calls + 1, trial_started_at=now), True
    return s, False


def after_success(s: BreakerState, policy: BreakerPolicy, now: float) -> BreakerState:
    """A call succeeded: close (a half-open trial worked) and forget the consecutive failures."""
    s = current(s, policy, now)
    if s.state is State.OPEN:
        return s  # a slow call that started before the breaker opened proves nothing
    if s.state is State.HALF_OPEN or policy.failure_rate is None:
        return BreakerState()
    return _judge_window(replace(s, consecutive_failures=0), policy, failed=False, now=now)


def after_failure(s: BreakerState, policy: BreakerPolicy, now: float) -> BreakerState:
    """A call failed: count it; open at the threshold, or again if a trial failed."""
    s = current(s, policy, now)
    if s.state is State.HALF_OPEN:
        return BreakerState(State.OPEN, s.consecutive_failures + 1, opened_at=now)
    if s.state is State.OPEN:
        return s
    failures = s.consecutive_failures + 1
    if failures >= policy.failure_threshold:
        return BreakerState(State.OPEN, failures, opened_at=now)
    s = replace(s, consecutive_failures=failures)
    return s if policy.failure_rate is None else _judge_window(s, policy, failed=True, now=now)


def _judge_window(s: BreakerState, policy: BreakerPolicy, failed: bool, now: float) -> BreakerState:
    """Count one call in the window; when the window is complete, open if its failure share is too high."""
    calls, failures = s.window_calls + 1, s.window_failures + int(failed)
    if calls < policy.window_calls:
        return replace(s, window_calls=calls, window_failures=failures)
    if failures / calls >= policy.failure_rate:
        return BreakerState(State.OPEN, s.consecutive_failures, opened_at=now)
    return replace(s, window_calls=0, window_failures=0)  # a healthy window: start the next one


def retry_after(s: BreakerState, policy: BreakerPolicy, now: float) -> float:
    """Seconds until an OPEN breaker lets a trial call through (0 if it would now)."""
    s = current(s, policy, now)
    return max(0.0, s.opened_at + policy.open_seconds - now) if s.state is State.OPEN else 0.0


class CircuitBreaker:
    """A breaker whose state lives in this process's memory (one per consumer)."""

    def __init__(self, policy: BreakerPolicy | None = None, name: str = "pasarela-pagos") -> None:
        self.policy = policy or BreakerPolicy()
        self.name = name
        self.state = BreakerState()
        self.transitions: list[tuple[float, State, State]] = []  # (now, from, to)

    def allow(self, now: float) -> bool:
        """True if a call may go to the gateway now."""
        new, allowed = before_call(self.state, self.policy, now)
        self._set(new, now)
        return allowed

    def check(self, now: float) -> None:
        """Like `allow`, but raise CircuitOpenError instead of returning False."""
        if not self.allow(now):
            raise CircuitOpenError(self.name, retry_after(self.state, self.policy, now))

    def record_success(self, now: float) -> None:
        """Tell the breaker a call worked."""
        self._set(after_success(self.state, self.policy, now), now)

    def record_failure(self, now: float) -> None:
        """Tell the breaker a call failed (an error that says the gateway is unwell, not a declined card)."""
        self._set(after_failure(self.state, self.policy, now), now)

    def state_at(self, now: float) -> State:
        """The breaker's state as of `now`."""
        return current(self.state, self.policy, now).state

    def _set(self, new: BreakerState, now: float) -> None:
        if new.state is not self.state.state:
            self.transitions.append((now, self.state.state, new.state))
        self.state = new
