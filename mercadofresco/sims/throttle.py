"""Throttling on purpose: MercadoFresco's notices to a third party that takes only so many a second (notebook 14).

The ERP takes `capacity_per_second` calls. Past that it answers 429 to the
excess, and if it is overloaded for `collapse_after_seconds` seconds in a row it
falls over for `down_seconds` (every call fails). Our consumers (`senders`) work
through a backlog of notices; each failed call is retried with the same
`retry.RetryPolicy` as everywhere else, then the notice goes back to the queue
for `visibility_timeout_seconds`, and after `max_receive_count` receives to the DLQ.

`rate_limit_per_second` is our side's limit, a token bucket the senders share:
what EventBridge API destinations' InvocationRateLimitPerSecond and the
throttlePolicy.maxReceivesPerSecond of an SNS HTTP/S subscription do for you.
A Step Functions Map's MaxConcurrency is not a rate: it caps the calls in
flight, which is what `senders` is here; the rate it allows is
`rate_for_concurrency(senders, call_seconds)`. `run_throttle(config, seed)`
returns the totals.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

import simpy

from mercadofresco.errors import check_range
from mercadofresco.models import gateway as gw
from mercadofresco.patterns import backoff, retry
from mercadofresco.sims.retry_loop import with_retries

SENDER_POLICY = retry.RetryPolicy(backoff.FullJitter(base=0.5, cap=8.0), max_attempts=3)
FAIL_SECONDS = 0.2  # a refusal takes as long as an answer (the ERP is busy)


def rate_for_concurrency(in_flight: int, call_seconds: float) -> float:
    """Calls a second that `in_flight` concurrent callers make when each call takes `call_seconds`."""
    return in_flight / call_seconds  # Little's law: rate = concurrency / time per call


def concurrency_for_rate(rate_per_second: float, call_seconds: float) -> int:
    """The most callers in flight whose calls stay within `rate_per_second` (at least 1)."""
    return max(1, int(rate_per_second * call_seconds + 1e-9))


@dataclass(frozen=True)
class ThrottleConfig:
    """The backlog of notices, our senders and limit, and what the ERP can take."""

    notices: int = 1_500
    senders: int = 30
    rate_limit_per_second: float | None = None
    capacity_per_second: int = 20
    call_seconds: float = 0.2
    collapse_after_seconds: int = 5
    down_seconds: float = 60.0
    visibility_timeout_seconds: float = 30.0
    max_receive_count: int = 4
    horizon_seconds: float = 900.0
    policy: retry.RetryPolicy = SENDER_POLICY

    def __post_init__(self) -> None:
        check_range("notices", self.notices, 1, 50_000)
        check_range("senders", self.senders, 1, 1_000)
        check_range("capacity_per_second", self.capacity_per_second, 1, 10_000)
        check_range("horizon_seconds", self.horizon_seconds, 60, 7_200)
        if self.rate_limit_per_second is not None:
            check_range("rate_limit_per_second", self.rate_limit_per_second, 1, 10_000)


@dataclass
class ThrottleResult:
    """What the ERP saw and where every notice ended."""

    config: ThrottleConfig
    delivered: int = 0
    in_dlq: int = 0
    erp_calls: int = 0
    erp_errors: int = 0
    collapses: int = 0
    finished_seconds: float | None = None

    def summary(self) -> dict[str, Any]:
        limit = self.config.rate_limit_per_second
        return {
            "our_limit": f"{limit:g}/s" if limit else "none",
            "delivered": self.delivered,
            "in_dlq": self.in_dlq,
            "erp_calls": self.erp_calls,
            "erp_errors": self.erp_errors,
            "erp_collapses": self.collapses,
            "minutes": round(self.finished_seconds / 60, 1) if self.finished_seconds is not None else "unfinished",
        }


class Erp:
    """The third party: `capacity_per_second` calls a second; overloaded too long, it falls over."""

    def __init__(self, env: simpy.Environment, config: ThrottleConfig, result: ThrottleResult) -> None:
        self.env, self.config, self.result = env, config, result
        self.calls: Counter[int] = Counter()
        self.overloaded: set[int] = set()  # seconds in which it got more than it takes
        self.down_until = 0.0

    def call(self):
        """One call (use with `yield from`); None if the notice was taken, else the error the caller sees."""
        second = int(self.env.now)
        self.calls[second] += 1
        self.result.erp_calls += 1
        if self.env.now >= self.down_until and self.calls[second] > self.config.capacity_per_second:
            self.overloaded.add(second)
            if all(second - k in self.overloaded for k in range(self.config.collapse_after_seconds)):
                self.down_until = self.env.now + self.config.down_seconds  # overloaded too long: it falls over
                self.result.collapses += 1
                self.overloaded.clear()
            yield self.env.timeout(FAIL_SECONDS)
            self.result.erp_errors += 1
            return gw.ThrottledError(1.0)  # 429 to the excess, Retry-After: 1
        if self.env.now < self.down_until:
            yield self.env.timeout(FAIL_SECONDS)
            self.result.erp_errors += 1
            return gw.GatewayUnavailableError("503: the ERP is down")
        yield self.env.timeout(self.config.call_seconds)
        return None


def run_throttle(config: ThrottleConfig, seed: int = 0) -> ThrottleResult:
    """Send every notice, with or without our own rate limit."""
    env = simpy.Environment()
    result = ThrottleResult(config)
    erp = Erp(env, config, result)
    queue: deque[list[int]] = deque([n, 0] for n in range(config.notices))
    tokens = simpy.Container(env, capacity=1_000_000, init=0) if config.rate_limit_per_second else None
    done = env.event()
    if tokens is not None:
        env.process(_refill(env, tokens, config.rate_limit_per_second))
    retrier = retry.Retrier(config.policy, random.Random(seed))
    for _ in range(config.senders):
        env.process(_sender(env, config, queue, erp, tokens, retrier, result, done))
    env.run(until=env.any_of([env.timeout(config.horizon_seconds), done]))
    return result


def _refill(env: simpy.Environment, tokens: simpy.Container, rate: float):
    """One token every 1/rate seconds, never more than one second's worth saved up."""
    while True:
        yield env.timeout(1 / rate)
        if tokens.level < rate:
            yield tokens.put(1)


def _sender(env, config, queue, erp, tokens, retrier, result, done):
    """Take a notice, call the ERP (waiting for a token first, if we limit ourselves), retry, give it back."""
    while not done.triggered:
        if not queue:
            yield env.timeout(1.0)
            continue
        notice = queue.popleft()
        notice[1] += 1
        delivered = yield from with_retries(env, lambda: _call(erp, tokens), retrier)
        if delivered:
            result.delivered += 1
            _check_done(env, config, result, done)
        else:
            env.process(_back_later(env, config, queue, notice, result, done))


def _check_done(env, config, result, done) -> None:
    if result.delivered + result.in_dlq >= config.notices and not done.triggered:
        result.finished_seconds = env.now
        done.succeed()


def _call(erp: Erp, tokens: simpy.Container | None):
    """One call to the ERP, after a token of our own limit if we have one (use with `yield from`)."""
    if tokens is not None:
        yield tokens.get(1)
    return (yield from erp.call())


def _back_later(env, config, queue, notice, result, done):
    yield env.timeout(config.visibility_timeout_seconds)
    if notice[1] >= config.max_receive_count:
        result.in_dlq += 1
        _check_done(env, config, result, done)
    else:
        queue.append(notice)
