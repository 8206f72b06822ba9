"""Simulations of retries at scale, in simpy (notebook 05); the retry storm lives in `storm`.

- `contention`: optimistic concurrency, after Marc Brooker's backoff simulator
  for the AWS Architecture Blog. `clients` each want to write one row once: read
  its version, then write conditioned on that version. Whoever loses the race
  backs off and tries again. Times in milliseconds: base 5, cap 2,000, network
  delay |N(10, 2)|. Reports total write calls and the time until the last
  client is done.
- `outage`: 450 executions in flight call the gateway while it is down for 30 s;
  each retries with the same `retry.RetryPolicy` the gateway client uses on
  moto. Reports when each call reaches the gateway.

Both are models: no AWS service is involved. Each run takes a seed and returns rows.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

import simpy

from mercadofresco import gateway as gw
from mercadofresco import retry


# -- optimistic-concurrency contention (milliseconds) --------------------------------------
@dataclass(frozen=True)
class ContentionConfig:
    """Brooker's setting: one row, `clients` writers, network delay |N(mean, sd)| ms."""

    clients: int = 100
    delay_mean_ms: float = 10.0
    delay_sd_ms: float = 2.0

    def __post_init__(self) -> None:
        if not 1 <= self.clients <= 1000:
            raise ValueError(f"clients must be between 1 and 1000; got {self.clients}")
        if not 0 < self.delay_mean_ms <= 1000 or not 0 <= self.delay_sd_ms <= self.delay_mean_ms:
            raise ValueError(
                "need 0 < delay_mean_ms <= 1000 and 0 <= delay_sd_ms <= delay_mean_ms; "
                f"got {self.delay_mean_ms} and {self.delay_sd_ms}"
            )


class Row:
    """The contended row: a version number and a count of write calls."""

    def __init__(self) -> None:
        self.version = 0
        self.writes = 0


def _occ_client(env: simpy.Environment, row: Row, backoff: retry.Backoff, config: ContentionConfig, rng):
    """Read the version, write if it is unchanged; on a conflict back off and start over."""

    def delay() -> float:
        return abs(rng.normalvariate(config.delay_mean_ms, config.delay_sd_ms))

    failures, previous = 0, 0.0
    yield env.timeout(delay())  # the read reaches the row
    while True:
        seen = row.version
        yield env.timeout(delay() + delay())  # the answer comes back, the write goes out
        row.writes += 1
        won = row.version == seen
        if won:
            row.version += 1
            yield env.timeout(delay())  # the success reaches the client
            return
        failures += 1
        previous = backoff.wait(failures, rng, previous)
        yield env.timeout(delay() + previous + delay())  # the refusal comes back; wait; read again


def contention(backoff: retry.Backoff, config: ContentionConfig, seed: int = 0) -> dict[str, float]:
    """One run of the contention model: write calls, writes that won, and milliseconds until all are done."""
    rng = random.Random(seed)
    env = simpy.Environment()
    row = Row()
    for _ in range(config.clients):
        env.process(_occ_client(env, row, backoff, config, rng))
    env.run()
    return {"calls": row.writes, "won": row.version, "time_ms": env.now}


def contention_table(
    backoffs: dict[str, retry.Backoff], clients: list[int], runs: int = 20, seed: int = 0
) -> list[dict[str, Any]]:
    """Mean calls and time per strategy and number of clients, over `runs` seeded runs."""
    if not 1 <= runs <= 1000:
        raise ValueError(f"runs must be between 1 and 1000; got {runs}")
    rows = []
    for n in clients:
        config = ContentionConfig(clients=n)
        for name, backoff in backoffs.items():
            results = [contention(backoff, config, seed + run) for run in range(runs)]
            calls = sum(r["calls"] for r in results) / runs
            time_ms = sum(r["time_ms"] for r in results) / runs
            rows.append({"clients": n, "strategy": name, "calls": round(calls, 1), "time_ms": round(time_ms, 1)})
    return rows


def brooker_backoffs(base_ms: float = 5.0, cap_ms: float = 2000.0) -> dict[str, retry.Backoff]:
    """The five strategies with the blog's base and cap (milliseconds)."""
    return {name: retry.strategy(name, base_ms, cap_ms) for name in retry.STRATEGIES}


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
        if not 1 <= self.executions <= 10_000:
            raise ValueError(f"executions must be between 1 and 10000; got {self.executions}")
        if not 0 <= self.outage_seconds <= 600:
            raise ValueError(f"outage_seconds must be between 0 and 600; got {self.outage_seconds}")
        if not 1 <= self.capacity_per_second <= 100_000:
            raise ValueError(f"capacity_per_second must be between 1 and 100000; got {self.capacity_per_second}")
        if not 0 <= self.start_spread_seconds <= 60:
            raise ValueError(f"start_spread_seconds must be between 0 and 60; got {self.start_spread_seconds}")
        if not self.outage_seconds < self.horizon_seconds <= 3600:
            raise ValueError(f"horizon_seconds must be after the outage and at most 3600; got {self.horizon_seconds}")


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
    retrier.first_attempt()
    failures, previous = 0, 0.0
    while True:
        error = gateway.call(env.now)
        if error is None:
            done.append(env.now)
            return
        failures += 1
        wait = retrier.next_wait(error, failures, previous, idempotent=True)
        if wait is None:
            return
        previous = wait
        yield env.timeout(wait)


def outage(policy: retry.RetryPolicy, config: OutageConfig, seed: int = 0, budget_ratio: float | None = None):
    """Run the outage once; returns per-second arrivals and the totals."""
    rng = random.Random(seed)
    env = simpy.Environment()
    gateway = RecoveringGateway(config)
    budget = retry.RetryBudget(budget_ratio) if budget_ratio else None
    retrier = retry.Retrier(policy, rng, budget)
    done: list[float] = []
    for _ in range(config.executions):
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
