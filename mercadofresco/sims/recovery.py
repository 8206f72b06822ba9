"""450 executions recovering after a 30 s gateway outage, in simpy (notebook 05).

Each execution calls the gateway while it is down and retries with the same
`retry.RetryPolicy` the gateway client uses on moto. Reports when each call
reaches the gateway. A model: no AWS service is involved.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

import simpy

from mercadofresco.errors import check_range
from mercadofresco.i18n import _
from mercadofresco.models import gateway as gw
from mercadofresco.patterns import retry, retry_budget
from mercadofresco.sims.retry_loop import with_retries


# -- recovery after an outage (seconds) -------------------------------------------------------
@dataclass(frozen=True)
class OutageConfig:
    """`executions` calls in flight when the gateway goes down for `outage_seconds`.

    After the outage the gateway serves up to `capacity_per_second` calls in each
    second; calls beyond that get a 503 (a recovering service is fragile).
    """

    executions: int = 450
    outage_seconds: float = 30.0
    capacity_per_second: int = 150
    start_spread_seconds: float = 1.0
    horizon_seconds: float = 180.0

    def __post_init__(self) -> None:
        check_range("executions", self.executions, 1, 10_000)
        check_range("outage_seconds", self.outage_seconds, 0, 600)
        check_range("capacity_per_second", self.capacity_per_second, 1, 100_000)
        check_range("start_spread_seconds", self.start_spread_seconds, 0, 60)
        if not self.outage_seconds < self.horizon_seconds <= 3600:
            said = _("{name} must be after the outage and at most {most}; got {value}")
            raise ValueError(said.format(name="horizon_seconds", most=3600, value=self.horizon_seconds))


class RecoveringGateway:
    """Down until `outage_seconds`, then at most `capacity_per_second` calls served per second."""

    def __init__(self, config: OutageConfig) -> None:
        self.config = config
        self.arrivals: list[float] = []
        self.served: Counter[int] = Counter()

    def call(self, now: float) -> gw.GatewayError | None:
        """A call arriving at `now`: None if it is served, else the error it gets."""
        self.arrivals.append(now)
        second = int(now)
        if now < self.config.outage_seconds or self.served[second] >= self.config.capacity_per_second:
            return gw.GatewayUnavailableError("503 Service Unavailable")
        self.served[second] += 1
        return None


def _execution(env: simpy.Environment, gateway: RecoveringGateway, retrier: retry.Retrier, start: float, done: list):
    """One execution: call, and on failure wait what the policy says; give up when it says so."""
    yield env.timeout(start)
    if (yield from with_retries(env, lambda: gateway.call(env.now), retrier)):
        done.append(env.now)


def outage(policy: retry.RetryPolicy, config: OutageConfig, seed: int = 0, budget_ratio: float | None = None):
    """Run the outage once; returns per-second arrivals and the totals."""
    rng = random.Random(seed)
    env = simpy.Environment()
    gateway = RecoveringGateway(config)
    budget = retry_budget.RetryBudget(budget_ratio) if budget_ratio else None
    retrier = retry.Retrier(policy, rng, budget)
    done: list[float] = []
    for _each in range(config.executions):
        env.process(_execution(env, gateway, retrier, rng.uniform(0, config.start_spread_seconds), done))
    env.run(until=config.horizon_seconds)
    per_second = Counter(int(t) for t in gateway.arrivals)
    seconds = int(config.horizon_seconds)
    return OutageRun(
        arrivals=[per_second.get(s, 0) for s in range(seconds)],
        calls=len(gateway.arrivals),
        succeeded=len(done),
        gave_up=config.executions - len(done),
        last_success_seconds=max(done, default=float("nan")),
        peak_after_outage=max((per_second.get(s, 0) for s in range(int(config.outage_seconds), seconds)), default=0),
    )


@dataclass
class OutageRun:
    """What the gateway saw: arrivals per second, and how the executions ended."""

    arrivals: list[int]
    calls: int
    succeeded: int
    gave_up: int
    last_success_seconds: float
    peak_after_outage: int

    def summary(self) -> dict[str, Any]:
        """The numbers without the per-second series."""
        return {
            "calls": self.calls,
            "succeeded": self.succeeded,
            "gave_up": self.gave_up,
            "peak_after_outage": self.peak_after_outage,
            "last_success_s": round(self.last_success_seconds, 1),
        }
