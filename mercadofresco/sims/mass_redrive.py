"""Class 210's lesson at full scale: 41,200 messages redriven at once against a database, as a simpy model.

moto slows down as a queue grows, so the scale lives here (notebook 11). The
model: a redrive releases messages into the source queue (all at once, or in
batches of 500 at a paced rate); up to `max_concurrency` consumers take them
(Lambda scales to it over `scale_up_seconds`); each message needs one of the
database's `db_connections` for `work_seconds`. With every connection taken the
database refuses at once ("too many connections"), the invocation fails, the message comes back when its
visibility timeout ends, and after `max_receive_count` receives it goes back to
the DLQ. Consumers take SQS batches of 10, one connection per batch.
`run_mass_redrive(config, seed)` returns the totals and a timeline.

How the consumers scale (`scaling`):

- "as_stated": class 210's account, taken as input: `max_concurrency` reached
  linearly in `scale_up_seconds` (2,800 in 40 s), whatever AWS allows;
- "standard", "provisioned": an SQS event source mapping as AWS documents it
  (`sims.lambda_scaling`, the scaler notebook 14's model runs too): a few concurrent
  batches at first, more each second while messages wait, up to the mode's ceiling or
  `max_concurrency`, whichever is lower. The model never scales down.

`reserved_concurrency` caps the function, not the mapping: the mapping still
scales, and a batch taken beyond the cap is throttled, its receive spent, and
comes back after the visibility timeout (notebook 14's `sims.connections` has
the same rule). `max_concurrency` is the mapping's `MaximumConcurrency`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import simpy

from mercadofresco.errors import check_range
from mercadofresco.i18n import T_, _
from mercadofresco.sims import lambda_scaling

RELEASES = ("all_at_once", T_("paced"))  # T_: a panel shows the words in the edition
SCALINGS = ("as_stated", T_("standard"), T_("provisioned"))
BATCH = 10  # Lambda's SQS batch size: one invocation, one connection, up to 10 messages
THROTTLED_SECONDS = 0.1  # a throttled invocation answers at once; the poller takes the next batch


@dataclass(frozen=True)
class MassRedriveConfig:
    """The redrive, the consumers and the database."""

    messages: int = 41_200
    release: str = "all_at_once"
    batch_size: int = 500
    rate_per_second: float = 120.0  # paced: batches of `batch_size` spaced to this rate
    max_concurrency: int = 2_800
    scale_up_seconds: float = 40.0
    db_connections: int = 200
    work_seconds: float = 0.25  # per message, holding the batch's connection
    refused_seconds: float = 0.5
    visibility_timeout_seconds: float = 60.0
    max_receive_count: int = 5  # class 210: billing retried 5 times
    sample_every_seconds: float = 10.0
    scaling: str = "as_stated"
    reserved_concurrency: int | None = None  # the function's cap; None: no cap below the mapping's

    def __post_init__(self) -> None:
        if self.release not in RELEASES:
            said = _("{name} must be one of {choices}; got {value}")
            raise ValueError(said.format(name="release", choices=", ".join(RELEASES), value=repr(self.release)))
        if self.scaling not in SCALINGS:
            said = _("{name} must be one of {choices}; got {value}")
            raise ValueError(said.format(name="scaling", choices=", ".join(SCALINGS), value=repr(self.scaling)))
        if self.reserved_concurrency is not None:
            check_range("reserved_concurrency", self.reserved_concurrency, 1, 10_000)
        check_range("messages", self.messages, 1, 100_000)
        check_range("max_concurrency", self.max_concurrency, 1, 10_000)
        check_range("db_connections", self.db_connections, 1, 10_000)
        check_range("rate_per_second", self.rate_per_second, 1, 500)
        check_range("batch_size", self.batch_size, 1, 10_000)


@dataclass(frozen=True)
class Batch:
    """Up to 10 messages SQS hands to one invocation, and how many times it has handed them out."""

    messages: int
    receives: int = 0


@dataclass(frozen=True)
class RedriveSample:
    """Where the redrive stands at `second`; the counts are totals so far."""

    second: float
    waiting: int  # messages in the queue, visible
    busy_consumers: int
    db_connections: int  # in use
    processed: int
    failed_attempts: int
    back_in_dlq: int


@dataclass
class MassRedriveResult:
    """Totals and a timeline sampled every `sample_every_seconds`."""

    config: MassRedriveConfig
    processed: int = 0
    failed_attempts: int = 0
    back_in_dlq: int = 0
    finished_seconds: float = 0.0
    peak_busy_consumers: int = 0
    throttled_batches: int = 0
    consumers_started: int = 0
    timeline: list[RedriveSample] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """One line of the outcomes table."""
        return {
            "release": self.config.release,
            "max_concurrency": self.config.max_concurrency,
            "processed": self.processed,
            "failed_attempts": self.failed_attempts,
            "back_in_dlq": self.back_in_dlq,
            "throttled_batches": self.throttled_batches,
            "minutes": round(self.finished_seconds / 60, 1),
        }

    def peak_at(self, seconds: float) -> int:
        """The most consumers busy at once in the first `seconds` (from the timeline's samples)."""
        return max((row.busy_consumers for row in self.timeline if row.second <= seconds), default=0)


@dataclass
class RedriveState:
    """What the processes share: the queue of batches, the database's connections, the totals so far.

    `_release` fills `queue`; consumers take from it, hold one of the database's connections
    (`db_in_use`: nobody waits for one, a consumer that finds none is refused), count into
    `result` and `busy_consumers`; the sampler only reads.
    """

    env: simpy.Environment
    config: MassRedriveConfig
    queue: simpy.Store
    result: MassRedriveResult
    rng: random.Random
    db_in_use: int = 0
    busy_consumers: int = 0
    running: int = 0  # invocations past the function's throttle, holding or asking for a connection


def run_mass_redrive(config: MassRedriveConfig, seed: int = 0) -> MassRedriveResult:
    """Release the messages, let the consumers work until every message is processed or back in the DLQ."""
    env = simpy.Environment()
    rng = random.Random(seed)
    result = MassRedriveResult(config)
    shared = RedriveState(env, config, simpy.Store(env), result, rng)
    env.process(_release(shared))
    if config.scaling == "as_stated":
        for number in range(config.max_concurrency):
            start = config.scale_up_seconds * number / config.max_concurrency
            env.process(_consumer(shared, start))
        result.consumers_started = config.max_concurrency
    else:
        mode = lambda_scaling.MODES[config.scaling]
        env.process(
            lambda_scaling.scale(
                env,
                mode,
                config.max_concurrency,
                lambda: bool(shared.queue.items),
                lambda: result.consumers_started,
                lambda: _start_consumer(shared),
            )
        )
    env.process(_sample(shared))
    done = env.event()
    env.process(_watch_done(shared, done))
    env.run(until=done)
    result.finished_seconds = env.now
    result.timeline.append(_sample_now(shared))
    return result


def _release(shared: RedriveState):
    """All at once, or `batch_size` at a time, spaced so the average stays at `rate_per_second`."""
    config = shared.config
    step = config.messages if config.release == "all_at_once" else config.batch_size
    for first in range(0, config.messages, step):
        last = min(first + step, config.messages)
        for batch_start in range(first, last, BATCH):
            shared.queue.put(Batch(min(BATCH, last - batch_start)))
        if config.release == "paced":
            yield shared.env.timeout(step / config.rate_per_second)
    yield shared.env.timeout(0)


def _start_consumer(shared: RedriveState) -> None:
    """The mapping adds a consumer (`lambda_scaling.scale` decides when); it never ends: the model never scales down."""
    shared.result.consumers_started += 1
    shared.env.process(_consumer(shared, 0.0))


def _consumer(shared: RedriveState, start: float):
    """One of Lambda's concurrent invocations: a batch, a connection if one is free, else a failed attempt."""
    env, result, config = shared.env, shared.result, shared.config
    yield env.timeout(start)  # Lambda adds pollers as it scales up
    while True:
        taken = yield shared.queue.get()  # one invocation: a batch of up to 10 messages
        batch = Batch(taken.messages, taken.receives + 1)  # a receive
        shared.busy_consumers += 1
        result.peak_busy_consumers = max(result.peak_busy_consumers, shared.busy_consumers)
        if config.reserved_concurrency is not None and shared.running >= config.reserved_concurrency:
            result.throttled_batches += 1  # the mapping took it; the function cannot run it
            yield env.timeout(THROTTLED_SECONDS)
            _return_later(shared, batch)
        elif shared.db_in_use < config.db_connections:  # a free connection: it is the consumer's at once
            shared.running += 1
            shared.db_in_use += 1
            yield env.timeout(batch.messages * config.work_seconds * shared.rng.uniform(0.8, 1.2))
            shared.db_in_use -= 1
            shared.running -= 1
            result.processed += batch.messages
        else:  # "too many connections": the database refuses at once, the invocation fails
            shared.running += 1
            yield env.timeout(config.refused_seconds)
            shared.running -= 1
            result.failed_attempts += batch.messages
            _return_later(shared, batch)
        shared.busy_consumers -= 1


def _return_later(shared: RedriveState, batch: Batch) -> None:
    """The batch shows again after its visibility timeout, or goes back to the DLQ.

    A timer with a callback, not a process: thousands of refused batches each
    needed a process start; the batch comes back at the same instant either way.
    """
    if batch.receives >= shared.config.max_receive_count:
        shared.result.back_in_dlq += batch.messages
        return
    shared.env.timeout(shared.config.visibility_timeout_seconds).callbacks.append(lambda _: shared.queue.put(batch))


def _sample(shared: RedriveState):
    """A sample at the start and every `sample_every_seconds` after."""
    while True:
        shared.result.timeline.append(_sample_now(shared))
        yield shared.env.timeout(shared.config.sample_every_seconds)


def _sample_now(shared: RedriveState) -> RedriveSample:
    result = shared.result
    return RedriveSample(
        second=shared.env.now,
        waiting=sum(batch.messages for batch in shared.queue.items),
        busy_consumers=shared.busy_consumers,
        db_connections=shared.db_in_use,
        processed=result.processed,
        failed_attempts=result.failed_attempts,
        back_in_dlq=result.back_in_dlq,
    )


def _watch_done(shared: RedriveState, done: simpy.Event):
    while shared.result.processed + shared.result.back_in_dlq < shared.config.messages:
        yield shared.env.timeout(1)
    done.succeed()
