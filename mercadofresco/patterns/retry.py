"""The retrier: a policy, the pure decision of how long to wait, and the counting beside it (notebooks 5-7).

- `RetryPolicy`: a backoff (`backoff`), a classifier (`retry_rules`) and the attempts in all;
- `next_wait(policy, decision, failures, previous, rng)`: the seconds to wait or None to give up;
  it counts nothing and changes nothing but the draws from `rng`;
- `Retrier`: the same decision, counted (attempts, retries, waits, decisions) and held
  to an optional shared `retry_budget.RetryBudget`; `call` spends its waits on
  whoever waits (the virtual clock, a Lambda invocation's stopwatch), and a simpy
  process spends them through `sims.retry_loop`.

The same `RetryPolicy` drives the gateway client on moto and the simulations.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from mercadofresco.errors import check_range
from mercadofresco.patterns.backoff import Backoff, NoBackoff
from mercadofresco.patterns.retry_budget import RetryBudget
from mercadofresco.patterns.retry_rules import Classifier, Decision, classify

if TYPE_CHECKING:  # only for the hint: the simulations that import the retrier do not import the clock
    from mercadofresco.clock import Waiter

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts in all, how long between them, and which errors deserve one more."""

    backoff: Backoff = field(default_factory=NoBackoff)
    max_attempts: int = 3
    should_retry: Classifier = classify

    def __post_init__(self) -> None:
        check_range("max_attempts", self.max_attempts, 1, 20)

    def allows(self, decision: Decision, failures: int) -> bool:
        """True if the decision permits a retry and `failures` failed attempts leave one to make."""
        return decision.retry and failures < self.max_attempts


def next_wait(
    policy: RetryPolicy, decision: Decision, failures: int, previous: float, rng: random.Random
) -> float | None:
    """Seconds to wait after `failures` failed attempts (the last one decided by `decision`), or None to give up.

    The backoff's wait for this attempt (from `rng` and the `previous` wait), never
    shorter than the decision's Retry-After.
    """
    if not policy.allows(decision, failures):
        return None
    return max(policy.backoff.wait(failures, rng, previous), decision.not_before_seconds)


class Retrier:
    """Runs a call under a policy, with seeded randomness and an optional shared budget, counting what it does."""

    def __init__(
        self, policy: RetryPolicy, rng: random.Random | None = None, budget: RetryBudget | None = None
    ) -> None:
        self.policy = policy
        self.rng = rng or random.Random(0)
        self.budget = budget
        self.attempts = 0
        self.retries = 0
        self.waits: list[float] = []
        self.decisions: list[Decision] = []

    def first_attempt(self) -> None:
        """Count a first attempt (and let it earn budget)."""
        self.attempts += 1
        if self.budget is not None:
            self.budget.record_call()

    def after_failure(
        self, error: BaseException, failures: int, previous: float, idempotent: bool, now: dt.datetime | None = None
    ) -> float | None:
        """Seconds to wait before trying again after `failures` failed attempts, or None to give up; counted.

        The budget is asked only for a retry the policy allows, and before the
        backoff draws, so a refused retry draws nothing from the rng.
        """
        decision = self.policy.should_retry(error, idempotent, now)
        self.decisions.append(decision)
        if self.budget is not None and self.policy.allows(decision, failures) and not self.budget.try_retry():
            return None
        seconds = next_wait(self.policy, decision, failures, previous, self.rng)
        if seconds is not None:
            self.retries += 1
            self.attempts += 1
            self.waits.append(seconds)
        return seconds

    def call(self, operation: Callable[[], T], waiter: Waiter, idempotent: bool) -> T:
        """Call `operation` until it succeeds or the policy gives up; waits are spent on `waiter`."""
        self.first_attempt()
        previous = 0.0
        for failures in range(1, self.policy.max_attempts + 1):
            try:
                return operation()
            except Exception as error:
                seconds = self.after_failure(error, failures, previous, idempotent, waiter.now())
                if seconds is None:
                    raise
                waiter.wait(seconds)
                previous = seconds
        raise AssertionError("unreachable")  # the last failure always gives up
