"""The queue as a buffer: Friday's orders against consumers that are slower than the peak (notebook 14).

On Friday orders arrive in bursts averaging 900 an hour; the consumers process
600. Without a queue the difference would be refused at once (a 503 in the
customer's face); with one, the difference waits. The model, in simpy:

- arrivals follow an hourly profile (`Segment`s), made bursty: within each
  `burst_minutes` the first half runs at (1 + burstiness) times the hour's rate
  and the second half at (1 - burstiness), so the hour's mean is kept; inside
  each piece arrivals are Poisson;
- `consumers` workers take one order at a time; each takes
  consumers / consumer_rate_per_hour hours (±10 %), so together they process
  `consumer_rate_per_hour` while there is work;
- `buffered=False` drops the queue: an order that finds every worker busy is refused.

`sizing` is the lesson's rule in two pure functions: the queue holds the area
under the peak (hours × excess per hour) and drains at capacity minus whatever
keeps arriving. `run_friday(config, seed)` returns one row a minute and the totals.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import simpy

from mercadofresco.errors import check_range
from mercadofresco.i18n import T_, _

HOUR = 3_600.0


@dataclass(frozen=True)
class Segment:
    """From `start_hour` to `end_hour` (24 = midnight, 26 = 02:00) orders arrive at `orders_per_hour`."""

    start_hour: float
    end_hour: float
    orders_per_hour: float


# The lesson's Friday: 900/h for the 4 hours before 20:00, and nothing after (what "zero by 22:00" needs).
LESSON_PROFILE = (Segment(16, 20, 900), Segment(20, 26, 0))
# The same peak followed by an ordinary evening: these evening rates are this workbook's assumption.
EVENING_PROFILE = (Segment(16, 20, 900), Segment(20, 22, 450), Segment(22, 24, 250), Segment(24, 26, 80))
PROFILES = {T_("lesson"): LESSON_PROFILE, T_("evening"): EVENING_PROFILE}  # T_: a panel shows them translated


def with_peak(profile: tuple[Segment, ...], orders_per_hour: float) -> tuple[Segment, ...]:
    """The same profile with its first segment (the peak) at `orders_per_hour`."""
    first, *rest = profile
    return (Segment(first.start_hour, first.end_hour, orders_per_hour), *rest)


@dataclass(frozen=True)
class FridayConfig:
    """The evening: arrival profile, the consumers' capacity, and whether a queue stands in between."""

    profile: tuple[Segment, ...] = LESSON_PROFILE
    consumer_rate_per_hour: float = 600.0
    consumers: int = 10
    burst_minutes: float = 20.0
    burstiness: float = 0.5
    buffered: bool = True
    sample_minutes: float = 1.0

    def __post_init__(self) -> None:
        check_range("consumer_rate_per_hour", self.consumer_rate_per_hour, 10, 10_000)
        check_range("consumers", self.consumers, 1, 1_000)
        check_range("burst_minutes", self.burst_minutes, 1, 120)
        check_range("burstiness", self.burstiness, 0, 0.95)
        check_range("sample_minutes", self.sample_minutes, 0.5, 60)
        if not self.profile:
            raise ValueError(_("profile needs at least one Segment"))
        for segment in self.profile:
            check_range("orders_per_hour", segment.orders_per_hour, 0, 10_000)
            if not 0 <= segment.start_hour < segment.end_hour <= 48:
                said = _("a Segment needs {rule}; got {segment}")
                raise ValueError(said.format(rule="0 <= start_hour < end_hour <= 48", segment=segment))

    @property
    def start_hour(self) -> float:
        return min(segment.start_hour for segment in self.profile)

    @property
    def end_hour(self) -> float:
        return max(segment.end_hour for segment in self.profile)


@dataclass
class FridayResult:
    """One row per sample and the evening's totals (hours are clock hours: 20.5 is 20:30)."""

    config: FridayConfig
    rows: list[dict[str, Any]] = field(default_factory=list)
    arrived: int = 0
    processed: int = 0
    refused: int = 0

    @property
    def peak(self) -> dict[str, Any]:
        """The sample with the deepest queue."""
        return max(self.rows, key=lambda row: row["depth"])

    def drained_at(self) -> float | None:
        """The clock hour the queue first stood empty after its peak; None if it never did."""
        peak_hour = self.peak["hour"]
        return next((row["hour"] for row in self.rows if row["hour"] > peak_hour and row["depth"] == 0), None)

    def summary(self) -> dict[str, Any]:
        drained = self.drained_at() if self.config.buffered else None
        if not self.config.buffered:
            empty = "no queue"
        elif drained is None:
            empty = "not by " + clock_time(self.config.end_hour)
        else:
            empty = clock_time(drained)
        queued = self.config.buffered
        return {
            "arrived": self.arrived,
            "processed": self.processed,
            "refused": self.refused,
            "peak_depth": self.peak["depth"] if queued else "-",
            "peak_at": clock_time(self.peak["hour"]) if queued else "-",
            "oldest_wait_min": max(row["oldest_minutes"] for row in self.rows) if queued else "-",
            "empty_again": empty,
        }


def clock_time(hour: float) -> str:
    """20.5 -> '20:30'; 24.25 -> '00:15'."""
    minutes = round(hour * 60)
    return f"{minutes // 60 % 24:02d}:{minutes % 60:02d}"


# -- the sizing rule, as arithmetic ---------------------------------------------------------------
def queue_needed(peak_hours: float, excess_per_hour: float) -> float:
    """The area under the peak: how many messages the queue must hold."""
    return peak_hours * excess_per_hour


def drain_hours(depth: float, consumer_rate_per_hour: float, arrivals_per_hour: float) -> float:
    """Hours to empty `depth` messages while `arrivals_per_hour` keep coming; inf if it never empties."""
    spare = consumer_rate_per_hour - arrivals_per_hour
    return depth / spare if spare > 0 else float("inf")


# -- the model ------------------------------------------------------------------------------------
def rate_at(config: FridayConfig, hour: float) -> float:
    """Orders per hour at clock hour `hour`, bursts included."""
    base = next((s.orders_per_hour for s in config.profile if s.start_hour <= hour < s.end_hour), 0.0)
    into_burst = ((hour - config.start_hour) * 60) % config.burst_minutes
    factor = 1 + config.burstiness if into_burst < config.burst_minutes / 2 else 1 - config.burstiness
    return base * factor


def arrival_hours(config: FridayConfig, rng: random.Random) -> list[float]:
    """Every arrival instant (clock hours): Poisson inside each half-burst of constant rate."""
    step = config.burst_minutes / 2 / 60
    edges = sorted({s.start_hour for s in config.profile} | {s.end_hour for s in config.profile})
    times, start = [], config.start_hour
    while start < config.end_hour - 1e-9:
        end = min(start + step, *(edge for edge in edges if edge > start + 1e-9))
        rate, at = rate_at(config, start), start
        while rate > 0:
            at += rng.expovariate(rate)
            if at >= end:
                break
            times.append(at)
        start = end
    return times


def run_friday(config: FridayConfig, seed: int = 0) -> FridayResult:
    """Play the evening once: queue depth, the oldest message's age and refusals, one row per sample."""
    rng = random.Random(seed)
    env = simpy.Environment()
    result = FridayResult(config)
    queue: deque[float] = deque()  # arrival instants (s), oldest first
    ready = simpy.Store(env)  # one token per waiting order, so idle workers sleep
    busy = [0]
    env.process(_arrivals(env, config, arrival_hours(config, rng), queue, ready, busy, rng, result))
    if config.buffered:
        for _each in range(config.consumers):
            env.process(_consumer(env, config, queue, ready, busy, rng, result))
    env.process(_sample(env, config, queue, result))
    env.run(until=(config.end_hour - config.start_hour) * HOUR + 1)
    return result


def _arrivals(env, config, hours, queue, ready, busy, rng, result):
    """Each order either waits in the queue, goes straight to a free worker, or (no queue) is refused."""
    for hour in hours:
        yield env.timeout((hour - config.start_hour) * HOUR - env.now)
        result.arrived += 1
        if config.buffered:
            queue.append(env.now)
            ready.put(1)
        elif busy[0] < config.consumers:
            env.process(_serve_one(env, config, busy, rng, result))
        else:
            result.refused += 1  # a 503 in the customer's face


def _service_seconds(config: FridayConfig, rng: random.Random) -> float:
    return config.consumers / config.consumer_rate_per_hour * HOUR * rng.uniform(0.9, 1.1)


def _consumer(env, config, queue, ready, busy, rng, result):
    """Take the oldest order, process it, repeat."""
    while True:
        yield ready.get()
        queue.popleft()
        busy[0] += 1
        yield env.timeout(_service_seconds(config, rng))
        busy[0] -= 1
        result.processed += 1


def _serve_one(env, config, busy, rng, result):
    busy[0] += 1
    yield env.timeout(_service_seconds(config, rng))
    busy[0] -= 1
    result.processed += 1


def _sample(env, config, queue, result):
    while True:
        oldest = (env.now - queue[0]) / 60 if queue else 0.0
        result.rows.append(
            {
                "hour": round(config.start_hour + env.now / HOUR, 4),
                "depth": len(queue),
                "oldest_minutes": round(oldest, 1),
                "arriving_per_hour": rate_at(config, config.start_hour + env.now / HOUR),
                "processed": result.processed,
                "refused": result.refused,
            }
        )
        yield env.timeout(config.sample_minutes * 60)
