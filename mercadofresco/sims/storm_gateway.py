"""The payment gateway of the retry storm (notebook 08), and the SDK's retrying calls to it, in simpy.

Steps 1, 4 and 6 of the lesson's storm: its latency rises while `degrade_from` <=
t < `degrade_until`; it holds at most `max_in_flight` calls (fewer while slow) and
answers 503 beyond that; `collapse_rejections` refusals in one second make it
fall over for `down_seconds`, resetting every call inside. It counts calls,
answers and refusals per second for the storm's samples. Step 5, the SDK
retrying every 503, is `retry_loop.with_retries` around `call`. A model:
nothing here calls AWS.
"""

from __future__ import annotations

from collections import Counter

import simpy

from mercadofresco.models import gateway as gw
from mercadofresco.sims.storm_config import StormConfig

FAST_FAIL_SECONDS = 0.05  # how long a 503 takes to come back


class StormGateway:
    """Holds at most `max_in_flight` calls; too many refusals in one second and it falls over."""

    def __init__(self, env: simpy.Environment, config: StormConfig) -> None:
        self.env = env
        self.config = config
        self.fell_over = env.event()  # wakes every call inside when the gateway falls over
        self.in_flight = 0
        self.down_until = 0.0
        self.collapses: list[float] = []
        self.first_refusal: float | None = None
        self.calls: Counter[int] = Counter()
        self.calls_by_tenth: Counter[int] = Counter()  # arrivals per 100 ms: synchronised retries show up here
        self.ok: Counter[int] = Counter()  # by the second the answer came back
        self.failed: Counter[int] = Counter()
        self.refused: Counter[int] = Counter()  # 503s for lack of room, by second: too many and it falls over

    def degraded(self, now: float) -> bool:
        return self.config.degrade_from <= now < self.config.degrade_until

    def latency(self, now: float) -> float:
        return self.config.degraded_latency_seconds if self.degraded(now) else self.config.baseline_latency_seconds

    def capacity(self, now: float) -> int:
        return self.config.degraded_max_in_flight if self.degraded(now) else self.config.max_in_flight

    def call(self, env: simpy.Environment):
        """One charge call (use with `yield from`); returns None on success, else the error."""
        now = env.now
        self.calls[int(now)] += 1
        self.calls_by_tenth[int(now * 10)] += 1
        full = self.in_flight >= self.capacity(now)
        if now >= self.down_until and full:
            self.first_refusal = now if self.first_refusal is None else self.first_refusal
            self.refused[int(now)] += 1
            if self.refused[int(now)] >= self.config.collapse_rejections:
                self.down_until = now + self.config.down_seconds
                self.collapses.append(round(now, 1))
                self.fell_over.succeed()
                self.fell_over = env.event()
        if now < self.down_until or full:
            yield env.timeout(FAST_FAIL_SECONDS)
            self.failed[int(env.now)] += 1
            return gw.GatewayUnavailableError("503 Service Unavailable")
        self.in_flight += 1
        yield env.timeout(self.latency(now)) | self.fell_over
        self.in_flight -= 1
        if env.now < self.down_until:  # it fell over while this call was inside: the connection is reset
            self.failed[int(env.now)] += 1
            return gw.GatewayUnavailableError("503 Service Unavailable")
        self.ok[int(env.now)] += 1
        return None
