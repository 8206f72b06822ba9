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
The queue, the pollers and the gateway (`storm_gateway`) are models; nothing here calls AWS.
"""

from __future__ import annotations

import dataclasses
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import simpy

from mercadofresco import i18n
from mercadofresco.i18n import _
from mercadofresco.patterns import backoff, breaker, retry, retry_budget
from mercadofresco.sims.retry_loop import with_retries
from mercadofresco.sims.storm_config import StormConfig
from mercadofresco.sims.storm_gateway import StormGateway

SAMPLE_SECONDS = 10.0
RECOVERY_WINDOW_TENTHS = 50  # look 5 s past each return of the gateway


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
    """The SDK's policy: the config's exponential backoff, or full jitter over the same window if that defence is on."""
    if not defences.jitter:
        return config.sdk_policy
    window = config.sdk_policy.backoff
    return dataclasses.replace(config.sdk_policy, backoff=backoff.FullJitter(window.base, window.cap))


@dataclass(frozen=True)
class Message:
    """An order in the queue and how many times SQS has handed it out."""

    pedido: int
    receive_count: int = 0


@dataclass(frozen=True)
class StormSample:
    """The storm over the last `SAMPLE_SECONDS`, taken at `seconds`."""

    seconds: int
    calls_per_second: float
    success_rate: float  # answers that were not a 503, of all answers; 1.0 when none came back
    queue_depth: int
    in_dlq: int
    pollers: int
    gateway_down: bool


@dataclass
class StormRun:
    """What happened: one sample every 10 s, and the totals."""

    config: StormConfig
    defences: Defences
    rows: list[StormSample]
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

    def steps(self) -> list[dict[str, Any]]:
        """The lesson's eight steps, each with what this run shows for it (notebook 08's table)."""
        rows, config = self.rows, self.config
        before = [r for r in rows if r.seconds <= config.degrade_from]
        during = [r for r in rows if config.degrade_from < r.seconds <= config.degrade_until]
        first_collapse = self.collapses[0] if self.collapses else None
        late = self.collapses[1:]
        ratio = round(max(r.pollers for r in rows) / rows[0].pollers, 1)  # each poller keeps one call in flight
        number = i18n.number
        calls_at_once = _("{before} -> {after} calls at once ({ratio}×) where {fit} fit; ").format(
            before=rows[0].pollers,
            after=max(r.pollers for r in rows),
            ratio=number(ratio, "g"),
            fit=config.degraded_max_in_flight,
        )
        refused = (
            _("first 503 at {seconds} s").format(seconds=number(self.first_refusal, ".1f"))
            if self.first_refusal is not None
            else _("no 503")
        )
        late_seconds = ", ".join(number(seconds) for seconds in late)
        return [
            {
                "step": 1,
                "what": _("latency 240 ms -> 4 s"),
                "model": _("from {start} s to {end} s").format(
                    start=number(config.degrade_from, "g"), end=number(config.degrade_until, "g")
                ),
            },
            {
                "step": 2,
                "what": _("the queue grows"),
                "model": _("depth {before} -> {during}").format(
                    before=max(r.queue_depth for r in before), during=max(r.queue_depth for r in during)
                ),
            },
            {"step": 3, "what": _("pollers 20 -> 60"), "model": f"{rows[0].pollers} -> {max(r.pollers for r in rows)}"},
            {"step": 4, "what": _("3 times the requests; 503s start"), "model": calls_at_once + refused},
            {
                "step": 5,
                "what": _("retries multiply the load"),
                "model": _("{calls} calls for {orders} orders").format(
                    calls=number(self.gateway_calls, ","), orders=number(self.orders, ",")
                ),
            },
            {
                "step": 6,
                "what": _("the gateway falls over"),
                "model": _("first at {seconds} s").format(seconds=number(first_collapse))
                if first_collapse
                else _("no"),
            },
            {"step": 7, "what": _("orders in the DLQ"), "model": str(self.in_dlq)},
            {
                "step": 8,
                "what": _("knocked over again on the way back"),
                "model": _("again at [{seconds}] s").format(seconds=late_seconds) if late else _("no"),
            },
        ]


@dataclass
class StormState:
    """What the processes share: the queue and its DLQ, the gateway, the SDK's retrier, the breaker, three counts.

    The producer appends to `ready`; pollers take from it, count `charged`, move
    messages to `dlq` and put failed ones back after the visibility timeout; the
    scaler reads `ready`'s length and raises `pollers`; the sampler only reads.
    """

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


def _producer(shared: StormState, rng: random.Random):
    """Orders arrive at `orders_per_second`, at random (Poisson)."""
    while True:
        yield shared.env.timeout(rng.expovariate(shared.config.orders_per_second))
        shared.produced += 1
        shared.ready.append(Message(shared.produced))


def _poller(shared: StormState):
    """Receive one message, charge it with SDK retries; on failure it comes back after the visibility timeout."""
    while True:
        if not shared.ready:
            yield shared.env.timeout(1.0)
            continue
        if shared.ready[0].receive_count >= shared.config.max_receive_count and not _refusing(shared):
            # SQS moves it on the receive after maxReceiveCount, before any handler runs; decided before
            # asking the breaker, so no half-open trial is claimed for a call that will never be made.
            shared.dlq.append(shared.ready.popleft())
            continue
        if shared.breaker is not None and not shared.breaker.allow(shared.env.now):
            # Open (or its one trial is out): leave the messages in the queue, where receives are not spent.
            wait = breaker.retry_after(shared.breaker.state, shared.breaker.policy, shared.env.now)
            yield shared.env.timeout(max(1.0, wait))
            continue
        taken = shared.ready.popleft()
        message = Message(taken.pedido, taken.receive_count + 1)
        # The same Retrier as on moto, on simpy time; the breaker hears every answer and is asked before each retry.
        charged = yield from with_retries(
            shared.env, lambda: shared.gateway.call(shared.env), shared.retrier, shared.breaker
        )
        if charged:
            shared.charged += 1
        else:
            shared.env.process(_reappear(shared, message))


def _refusing(shared: StormState) -> bool:
    """True while the breaker is open: pollers then receive nothing (read only: claims no trial)."""
    return shared.breaker is not None and shared.breaker.state_at(shared.env.now) is breaker.State.OPEN


def _reappear(shared: StormState, message: Message):
    """Back in the queue when the visibility timeout ends: SQS does not jitter it."""
    yield shared.env.timeout(shared.config.visibility_timeout_seconds)
    shared.ready.append(message)


def _scaler(shared: StormState, limit: int):
    """Like Lambda's scaling on SQS: while the queue grows, add pollers each period, up to `limit`."""
    last_depth = 0
    while True:
        yield shared.env.timeout(shared.config.scale_every_seconds)
        depth = len(shared.ready)
        if depth > last_depth and shared.pollers < limit:
            added = min(limit, shared.pollers + shared.config.start_pollers) - shared.pollers
            for _ in range(added):
                shared.env.process(_poller(shared))
            shared.pollers += added
        last_depth = depth


def _sampler(shared: StormState, rows: list[StormSample]):
    """Every `SAMPLE_SECONDS`, what the gateway did in that window and where the queue stands."""
    while True:
        yield shared.env.timeout(SAMPLE_SECONDS)
        end = int(shared.env.now)
        seconds = range(end - int(SAMPLE_SECONDS), end)
        calls = sum(shared.gateway.calls[s] for s in seconds)
        ok = sum(shared.gateway.ok[s] for s in seconds)
        failed = sum(shared.gateway.failed[s] for s in seconds)
        success_rate = round(ok / (ok + failed), 3) if ok + failed else 1.0
        down = shared.env.now < shared.gateway.down_until
        rows.append(
            StormSample(
                end, calls / SAMPLE_SECONDS, success_rate, len(shared.ready), len(shared.dlq), shared.pollers, down
            )
        )


def run_storm(config: StormConfig, defences: Defences, seed: int = 0) -> StormRun:
    """Play the Friday once with the chosen defences; returns samples every 10 s and the totals.

    Arrivals draw from `random.Random(seed)` and the SDK's backoff from a second
    generator seeded from it, so every combination of defences sees the same orders
    at the same instants, whatever its retries consume.
    """
    arrivals, backoffs = random.Random(seed), random.Random(f"{seed}:backoff")
    env = simpy.Environment()
    budget = retry_budget.RetryBudget(0.1) if defences.retry_budget else None
    guard = breaker.CircuitBreaker(config.breaker_policy) if defences.circuit_breaker else None
    retrier = retry.Retrier(retry_policy(config, defences), backoffs, budget)
    shared = StormState(env, config, StormGateway(env, config), retrier, guard)
    rows: list[StormSample] = []
    env.process(_producer(shared, arrivals))
    for _first in range(config.start_pollers):
        env.process(_poller(shared))
    shared.pollers = config.start_pollers
    env.process(_scaler(shared, config.start_pollers if defences.concurrency_cap else config.max_pollers))
    env.process(_sampler(shared, rows))
    env.run(until=config.horizon_seconds)
    returns = [start + config.down_seconds for start in shared.gateway.collapses] or [config.degrade_until]
    tenths = [int(back * 10) + k for back in returns for k in range(RECOVERY_WINDOW_TENTHS)]
    return StormRun(
        config=config,
        defences=defences,
        rows=rows,
        orders=shared.produced,
        charged=shared.charged,
        in_dlq=len(shared.dlq),
        gateway_calls=sum(shared.gateway.calls.values()),
        collapses=shared.gateway.collapses,
        first_refusal=shared.gateway.first_refusal,
        recovery_peak=max(shared.gateway.calls_by_tenth[t] for t in tenths),
    )
