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
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import simpy

RELEASES = ("all_at_once", "paced")
BATCH = 10  # Lambda's SQS batch size: one invocation, one connection, up to 10 messages


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

    def __post_init__(self) -> None:
        if self.release not in RELEASES:
            raise ValueError(f"release must be one of {', '.join(RELEASES)}; got {self.release!r}")
        for name, low, high in [
            ("messages", 1, 100_000),
            ("max_concurrency", 1, 10_000),
            ("db_connections", 1, 10_000),
            ("rate_per_second", 1, 500),
            ("batch_size", 1, 10_000),
        ]:
            if not low <= getattr(self, name) <= high:
                raise ValueError(f"{name} must be between {low} and {high}; got {getattr(self, name)}")


@dataclass
class MassRedriveResult:
    """Totals and a timeline sampled every `sample_every_seconds`."""

    config: MassRedriveConfig
    processed: int = 0
    failed_attempts: int = 0
    back_in_dlq: int = 0
    finished_seconds: float = 0.0
    peak_busy_consumers: int = 0
    timeline: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "release": self.config.release,
            "max_concurrency": self.config.max_concurrency,
            "processed": self.processed,
            "failed_attempts": self.failed_attempts,
            "back_in_dlq": self.back_in_dlq,
            "minutes": round(self.finished_seconds / 60, 1),
        }


def run_mass_redrive(config: MassRedriveConfig, seed: int = 0) -> MassRedriveResult:
    """Release the messages, let the consumers work until every message is processed or back in the DLQ."""
    env = simpy.Environment()
    rng = random.Random(seed)
    queue = simpy.Store(env)
    database = simpy.Resource(env, capacity=config.db_connections)
    result = MassRedriveResult(config)
    busy = [0]
    env.process(_release(env, queue, config))
    for number in range(config.max_concurrency):
        start = config.scale_up_seconds * number / config.max_concurrency
        env.process(_consumer(env, start, queue, database, config, result, busy, rng))
    env.process(_sample(env, queue, database, result, busy))
    done = env.event()
    env.process(_watch_done(env, result, config, done))
    env.run(until=done)
    result.finished_seconds = env.now
    result.timeline.append(_row(env, queue, database, result, busy))
    return result


def _release(env: simpy.Environment, queue: simpy.Store, config: MassRedriveConfig):
    """All at once, or `batch_size` at a time, spaced so the average stays at `rate_per_second`."""
    step = config.messages if config.release == "all_at_once" else config.batch_size
    for first in range(0, config.messages, step):
        last = min(first + step, config.messages)
        for batch_start in range(first, last, BATCH):
            queue.put([min(BATCH, last - batch_start), 0])  # [messages in this SQS batch, receives]
        if config.release == "paced":
            yield env.timeout(step / config.rate_per_second)
    yield env.timeout(0)


def _consumer(env, start, queue, database, config, result, busy, rng):
    yield env.timeout(start)  # Lambda adds pollers as it scales up
    while True:
        message = yield queue.get()  # one invocation: a batch of up to 10 messages
        message[1] += 1  # a receive
        busy[0] += 1
        result.peak_busy_consumers = max(result.peak_busy_consumers, busy[0])
        if database.count < database.capacity:  # a free connection
            with database.request() as connection:
                yield connection
                yield env.timeout(message[0] * config.work_seconds * rng.uniform(0.8, 1.2))
            result.processed += message[0]
        else:  # "too many connections": the database refuses at once, the invocation fails
            yield env.timeout(config.refused_seconds)
            result.failed_attempts += message[0]
            env.process(_return_later(env, queue, message, config, result))
        busy[0] -= 1


def _return_later(env, queue, message, config, result):
    """The message shows again after its visibility timeout, or goes back to the DLQ."""
    if message[1] >= config.max_receive_count:
        result.back_in_dlq += message[0]
        return
    yield env.timeout(config.visibility_timeout_seconds)
    queue.put(message)


def _sample(env, queue, database, result, busy):
    while True:
        result.timeline.append(_row(env, queue, database, result, busy))
        yield env.timeout(result.config.sample_every_seconds)


def _row(env, queue, database, result, busy) -> dict[str, Any]:
    return {
        "second": env.now,
        "waiting": sum(batch[0] for batch in queue.items),
        "busy_consumers": busy[0],
        "db_connections": database.count,
        "processed": result.processed,
        "failed_attempts": result.failed_attempts,
        "back_in_dlq": result.back_in_dlq,
    }


def _watch_done(env, result, config, done):
    while result.processed + result.back_in_dlq < config.messages:
        yield env.timeout(1)
    done.succeed()
