"""The retry storm, as a simpy model, with the four defences switchable (notebook 08).

The lesson's eight steps, each something this model does rather than assumes:

1. the gateway's latency rises from 240 ms to 4 s (`degrade_from`..`degrade_until`);
2. pollers wait longer, fewer orders per second leave, the queue grows;
3. Lambda scales the pollers with the queue, from 20 up to 60;
4. the gateway holds at most `max_in_flight` calls: beyond that it answers 503;
5. every 503 is retried by the SDK: more calls, more 503s;
6. past `collapse_rejections` 503s in one second the gateway falls over for
   `down_seconds`: every call fails, every receive spends maxReceiveCount;
7. messages received more than maxReceiveCount times go to the DLQ;
8. when it comes back, the retries waiting in step with each other hit it together.

Defences: jitter (FullJitter instead of Exponential in the SDK's retries; SQS's
redelivery after the visibility timeout stays exact), a concurrency cap (pollers
stay at 20), a 10 % retry budget shared by all pollers, and a circuit breaker
(`breaker.CircuitBreaker`, shared here: pollers stop receiving while it is open).
The queue, the pollers and the gateway are models; nothing here calls AWS.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

import simpy

from mercadofresco.models import gateway as gw
from mercadofresco.patterns import backoff, breaker, retry

FAST_FAIL_SECONDS = 0.05  # how long a 503 takes to come back
SAMPLE_SECONDS = 10.0
RECOVERY_WINDOW_TENTHS = 50  # look 5 s past each return of the gateway


@dataclass(frozen=True)
class StormConfig:
    """The Friday of the storm, in seconds from the start."""

    orders_per_second: float = 12.0
    horizon_seconds: float = 600.0
    baseline_latency_seconds: float = gw.BASELINE_LATENCY_SECONDS
    degraded_latency_seconds: float = 4.0
    degrade_from: float = 60.0
    degrade_until: float = 360.0
    max_in_flight: int = 100
    degraded_max_in_flight: int = 40
    collapse_rejections: int = 30
    down_seconds: float = 45.0
    start_pollers: int = 20
    max_pollers: int = 60
    scale_every_seconds: float = 60.0
    visibility_timeout_seconds: float = 30.0
    max_receive_count: int = 4
    sdk_attempts: int = 3
    backoff_base_seconds: float = 0.1
    backoff_cap_seconds: float = 5.0

    def __post_init__(self) -> None:
        if not 0 < self.orders_per_second <= 50:
            raise ValueError(
                f"orders_per_second must be between 0 and 50 (exclusive of 0); got {self.orders_per_second}"
            )
        if not 60 <= self.horizon_seconds <= 3600:
            raise ValueError(f"horizon_seconds must be between 60 and 3600; got {self.horizon_seconds}")
        if not 1 <= self.start_pollers <= self.max_pollers <= 1000:
            raise ValueError(
                f"need 1 <= start_pollers <= max_pollers <= 1000; got {self.start_pollers}, {self.max_pollers}"
            )
        if not 1 <= self.degraded_max_in_flight <= self.max_in_flight <= 10_000:
            raise ValueError(
                "need 1 <= degraded_max_in_flight <= max_in_flight <= 10000; "
                f"got {self.degraded_max_in_flight}, {self.max_in_flight}"
            )
        if not 0 <= self.degrade_from < self.degrade_until <= self.horizon_seconds:
            raise ValueError(
                "need 0 <= degrade_from < degrade_until <= horizon_seconds; "
                f"got {self.degrade_from}, {self.degrade_until}"
            )
        if not 1 <= self.sdk_attempts <= 20:
            raise ValueError(f"sdk_attempts must be between 1 and 20; got {self.sdk_attempts}")
        if not 1 <= self.max_receive_count <= 1000:
            raise ValueError(f"max_receive_count must be between 1 and 1000; got {self.max_receive_count}")


@dataclass(frozen=True)
class Defences:
    """Which of the four defences are on."""

    jitter: bool = False
    concurrency_cap: bool = False
    retry_budget: bool = False
    circuit_breaker: bool = False

    def label(self) -> str:
        """A short name, e.g. 'jitter+cap' or 'none'."""
        names = ["jitter", "cap", "budget", "breaker"]
        on = [n for n, flag in zip(names, vars(self).values(), strict=True) if flag]
        return "+".join(on) or "none"


ALL_DEFENCES = Defences(True, True, True, True)


def retry_policy(config: StormConfig, defences: Defences) -> retry.RetryPolicy:
    """The SDK's policy: exponential backoff, jittered if that defence is on."""
    name = "full" if defences.jitter else "exponential"
    strategy = backoff.strategy(name, config.backoff_base_seconds, config.backoff_cap_seconds)
    return retry.RetryPolicy(strategy, max_attempts=config.sdk_attempts)


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


@dataclass
class Message:
    pedido: int
    receive_count: int = 0


@dataclass
class StormRun:
    """What happened: one row every 10 s, and the totals."""

    config: StormConfig
    defences: Defences
    rows: list[dict[str, Any]]
    orders: int
    charged: int
    in_dlq: int
    gateway_calls: int
    collapses: list[float]
    first_refusal: float | None
    recovery_peak: int  # most calls in 100 ms within 5 s of the gateway coming back

    def summary(self) -> dict[str, Any]:
        """One line of the outcomes table."""
        return {
            "defences": self.defences.label(),
            "orders": self.orders,
            "charged": self.charged,
            "in_dlq": self.in_dlq,
            "gateway_calls": self.gateway_calls,
            "collapses": len(self.collapses),
            "recovery_peak": self.recovery_peak,
        }


@dataclass
class _World:
    env: simpy.Environment
    config: StormConfig
    gateway: StormGateway
    retrier: retry.Retrier
    breaker: breaker.CircuitBreaker | None
    ready: deque[Message] = field(default_factory=deque)
    dlq: list[Message] = field(default_factory=list)
    produced: int = 0
    charged: int = 0
    pollers: int = 0


def _producer(w: _World, rng: random.Random):
    """Orders arrive at `orders_per_second`, at random (Poisson)."""
    while True:
        yield w.env.timeout(rng.expovariate(w.config.orders_per_second))
        w.produced += 1
        w.ready.append(Message(w.produced))


def _poller(w: _World):
    """Receive one message, charge it with SDK retries; on failure it comes back after the visibility timeout."""
    while True:
        if not w.ready:
            yield w.env.timeout(1.0)
            continue
        if w.ready[0].receive_count >= w.config.max_receive_count and not _refusing(w):
            # SQS moves it on the receive after maxReceiveCount, before any handler runs; decided before
            # asking the breaker, so no half-open trial is claimed for a call that will never be made.
            w.dlq.append(w.ready.popleft())
            continue
        if w.breaker is not None and not w.breaker.allow(w.env.now):
            # Open (or its one trial is out): leave the messages in the queue, where receives are not spent.
            yield w.env.timeout(max(1.0, breaker.retry_after(w.breaker.state, w.breaker.policy, w.env.now)))
            continue
        message = w.ready.popleft()
        message.receive_count += 1
        charged = yield from _charge(w)
        if charged:
            w.charged += 1
        else:
            w.env.process(_reappear(w, message))


def _refusing(w: _World) -> bool:
    """True while the breaker is open: pollers then receive nothing (read only: claims no trial)."""
    return w.breaker is not None and w.breaker.state_at(w.env.now) is breaker.State.OPEN


def _charge(w: _World):
    """The SDK loop on simpy time: the same Retrier as on moto; the breaker is asked before each retry."""
    w.retrier.first_attempt()
    failures, previous = 0, 0.0
    while True:
        if failures and w.breaker is not None and not w.breaker.allow(w.env.now):
            return False
        error = yield from w.gateway.call(w.env)
        if error is None:
            if w.breaker is not None:
                w.breaker.record_success(w.env.now)
            return True
        if w.breaker is not None:
            w.breaker.record_failure(w.env.now)
        failures += 1
        wait = w.retrier.next_wait(error, failures, previous, idempotent=True)
        if wait is None:
            return False
        previous = wait
        yield w.env.timeout(wait)


def _reappear(w: _World, message: Message):
    """Back in the queue when the visibility timeout ends: SQS does not jitter it."""
    yield w.env.timeout(w.config.visibility_timeout_seconds)
    w.ready.append(message)


def _scaler(w: _World, limit: int):
    """Like Lambda's scaling on SQS: while the queue grows, add pollers each period, up to `limit`."""
    last_depth = 0
    while True:
        yield w.env.timeout(w.config.scale_every_seconds)
        depth = len(w.ready)
        if depth > last_depth and w.pollers < limit:
            added = min(limit, w.pollers + w.config.start_pollers) - w.pollers
            for _ in range(added):
                w.env.process(_poller(w))
            w.pollers += added
        last_depth = depth


def _sampler(w: _World, rows: list[dict[str, Any]]):
    while True:
        yield w.env.timeout(SAMPLE_SECONDS)
        end = int(w.env.now)
        seconds = range(end - int(SAMPLE_SECONDS), end)
        calls = sum(w.gateway.calls[s] for s in seconds)
        ok = sum(w.gateway.ok[s] for s in seconds)
        failed = sum(w.gateway.failed[s] for s in seconds)
        rows.append(
            {
                "seconds": end,
                "calls_per_second": calls / SAMPLE_SECONDS,
                "success_rate": round(ok / (ok + failed), 3) if ok + failed else 1.0,
                "queue_depth": len(w.ready),
                "in_dlq": len(w.dlq),
                "pollers": w.pollers,
                "gateway_down": w.env.now < w.gateway.down_until,
            }
        )


def run_storm(config: StormConfig, defences: Defences, seed: int = 0) -> StormRun:
    """Play the Friday once with the chosen defences; returns rows every 10 s and the totals.

    Arrivals draw from `random.Random(seed)` and the SDK's backoff from a second
    generator seeded from it, so every combination of defences sees the same orders
    at the same instants, whatever its retries consume.
    """
    arrivals, backoffs = random.Random(seed), random.Random(f"{seed}:backoff")
    env = simpy.Environment()
    budget = retry.RetryBudget(0.1) if defences.retry_budget else None
    guard = (
        breaker.CircuitBreaker(breaker.BreakerPolicy(failure_threshold=20, open_seconds=30))
        if (defences.circuit_breaker)
        else None
    )
    w = _World(
        env,
        config,
        StormGateway(env, config),
        retry.Retrier(retry_policy(config, defences), backoffs, budget),
        guard,
    )
    rows: list[dict[str, Any]] = []
    env.process(_producer(w, arrivals))
    for _ in range(config.start_pollers):
        env.process(_poller(w))
    w.pollers = config.start_pollers
    env.process(_scaler(w, config.start_pollers if defences.concurrency_cap else config.max_pollers))
    env.process(_sampler(w, rows))
    env.run(until=config.horizon_seconds)
    returns = [start + config.down_seconds for start in w.gateway.collapses] or [config.degrade_until]
    tenths = [int(back * 10) + k for back in returns for k in range(RECOVERY_WINDOW_TENTHS)]
    return StormRun(
        config=config,
        defences=defences,
        rows=rows,
        orders=w.produced,
        charged=w.charged,
        in_dlq=len(w.dlq),
        gateway_calls=sum(w.gateway.calls.values()),
        collapses=w.gateway.collapses,
        first_refusal=w.gateway.first_refusal,
        recovery_peak=max(w.gateway.calls_by_tenth[t] for t in tenths),
    )


def compare(config: StormConfig, combinations: list[Defences], seed: int = 0) -> list[dict[str, Any]]:
    """The outcomes table: one summary per combination of defences."""
    return [run_storm(config, defences, seed).summary() for defences in combinations]
