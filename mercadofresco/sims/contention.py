"""Optimistic-concurrency contention, after Marc Brooker's backoff simulator, in simpy (notebook 05).

`clients` each want to write one row once: read its version, then write
conditioned on that version. Whoever loses the race backs off and tries again.
Times in milliseconds: base 5, cap 2,000, network delay |N(10, 2)|. Reports
total write calls and the time until the last client is done. A model: no AWS
service is involved. Each run takes a seed and returns rows.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import simpy

from mercadofresco.errors import check_range
from mercadofresco.i18n import _
from mercadofresco.patterns import backoff


# -- optimistic-concurrency contention (milliseconds) --------------------------------------
@dataclass(frozen=True)
class ContentionConfig:
    """Brooker's setting: one row, `clients` writers, network delay |N(mean, sd)| ms."""

    clients: int = 100
    delay_mean_ms: float = 10.0
    delay_sd_ms: float = 2.0

    def __post_init__(self) -> None:
        check_range("clients", self.clients, 1, 1000)
        if not 0 < self.delay_mean_ms <= 1000 or not 0 <= self.delay_sd_ms <= self.delay_mean_ms:
            said = _("need {rule}; got {first} and {second}")
            raise ValueError(
                said.format(
                    rule="0 < delay_mean_ms <= 1000 and 0 <= delay_sd_ms <= delay_mean_ms",
                    first=self.delay_mean_ms,
                    second=self.delay_sd_ms,
                )
            )


class Row:
    """The contended row: a version number and a count of write calls."""

    def __init__(self) -> None:
        self.version = 0
        self.writes = 0


def _occ_client(env: simpy.Environment, row: Row, strategy: backoff.Backoff, config: ContentionConfig, rng):
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
        previous = strategy.wait(failures, rng, previous)
        yield env.timeout(delay() + previous + delay())  # the refusal comes back; wait; read again


def contention(strategy: backoff.Backoff, config: ContentionConfig, seed: int = 0) -> dict[str, float]:
    """One run of the contention model: write calls, writes that won, and milliseconds until all are done."""
    rng = random.Random(seed)
    env = simpy.Environment()
    row = Row()
    for _each in range(config.clients):
        env.process(_occ_client(env, row, strategy, config, rng))
    env.run()
    return {"calls": row.writes, "won": row.version, "time_ms": env.now}


def contention_table(
    backoffs: dict[str, backoff.Backoff], clients: list[int], runs: int = 20, seed: int = 0
) -> list[dict[str, Any]]:
    """Mean calls and time per strategy and number of clients, over `runs` seeded runs."""
    check_range("runs", runs, 1, 1000)
    rows = []
    for n in clients:
        config = ContentionConfig(clients=n)
        for name, strategy in backoffs.items():
            results = [contention(strategy, config, seed + run) for run in range(runs)]
            calls = sum(r["calls"] for r in results) / runs
            time_ms = sum(r["time_ms"] for r in results) / runs
            rows.append({"clients": n, "strategy": name, "calls": round(calls, 1), "time_ms": round(time_ms, 1)})
    return rows


def brooker_backoffs(base_ms: float = 5.0, cap_ms: float = 2000.0) -> dict[str, backoff.Backoff]:
    """The five strategies with the blog's base and cap (milliseconds)."""
    return {name: backoff.strategy(name, base_ms, cap_ms) for name in backoff.STRATEGIES}
