"""Concurrency limits: Lambda consumers against `aurora-mf-escritor` and its ~200 connections (notebook 14).

A backlog waits in a queue; Lambda's event-source mapping adds invocations
while it does (`sims.lambda_scaling`: 5 at first, up to 300 more a minute, up to
the function's `function_limit`, 400 in the lesson); each invocation opens one database connection for its batch.
The shop uses the same database for its own short queries. The database takes
at most `db_connections`: a connection asked beyond that is refused at once, so
the invocation fails (its batch comes back after the visibility timeout, and
after `max_receive_count` receives goes to the DLQ) and so does the shop's query.

The three defences of the lesson, one at a time (`cap`):

- "maximum_concurrency": the event-source mapping's MaximumConcurrency; it never
  invokes more than `cap_value` at once, the rest waits in the queue;
- "reserved_concurrency": the function's reserved concurrency; the mapping still
  scales, and invocations beyond `cap_value` are throttled, their batches back in
  the queue after the visibility timeout, one receive spent (the reason
  MaximumConcurrency exists);
- "pool": a connection pool or proxy (RDS Proxy) with `cap_value` connections;
  invocations wait for one instead of being refused.

`demand` counts the connections asked of the database at one instant (held or
refused): the number the test holds against the limit. Class 210's mass redrive
(`sims.mass_redrive`) is the same collision seen from a DLQ redrive.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import simpy

from mercadofresco.errors import check_range
from mercadofresco.i18n import T_, _
from mercadofresco.patterns import backoff, retry
from mercadofresco.sims import lambda_scaling, retry_loop

CAPS = (T_("none"), "maximum_concurrency", "reserved_concurrency", T_("pool"))  # T_: shown in the edition
REFUSED_SECONDS = 0.1  # a refused connection answers fast ("too many connections")
# The function's database client retries a refused connection twice, with full jitter.
CONNECT_POLICY = retry.RetryPolicy(backoff.FullJitter(base=0.5, cap=4.0), max_attempts=3)


@dataclass(frozen=True)
class ConnectionConfig:
    """The backlog, Lambda's scaling, the cap, the database and the shop."""

    cap: str = "none"
    cap_value: int = 150
    function_limit: int = 400
    db_connections: int = 200
    backlog: int = 40_000
    batch_size: int = 10
    work_seconds: float = 0.4  # per message, holding the invocation's connection
    scaling: lambda_scaling.Scaling = lambda_scaling.MODES["standard"]  # 5 at first, up to 300 more a minute
    shop_queries_per_second: float = 10.0
    shop_query_seconds: float = 0.2
    visibility_timeout_seconds: float = 30.0
    max_receive_count: int = 5
    horizon_seconds: float = 900.0
    sample_seconds: float = 5.0
    connect_policy: retry.RetryPolicy = CONNECT_POLICY

    def __post_init__(self) -> None:
        if self.cap not in CAPS:
            said = _("{name} must be one of {choices}; got {value}")
            raise ValueError(said.format(name="cap", choices=", ".join(CAPS), value=repr(self.cap)))
        check_range("cap_value", self.cap_value, 2, 1_000)
        check_range("function_limit", self.function_limit, 2, 3_000)
        check_range("db_connections", self.db_connections, 10, 5_000)
        check_range("backlog", self.backlog, 0, 100_000)
        check_range("batch_size", self.batch_size, 1, 10)
        check_range("shop_queries_per_second", self.shop_queries_per_second, 0, 1_000)
        check_range("horizon_seconds", self.horizon_seconds, 60, 7_200)

    def invocation_limit(self) -> int:
        """How far the event-source mapping scales."""
        return self.cap_value if self.cap == "maximum_concurrency" else self.function_limit


@dataclass
class ConnectionResult:
    """One row every `sample_seconds` and the totals."""

    config: ConnectionConfig
    rows: list[dict[str, Any]] = field(default_factory=list)
    processed: int = 0
    in_dlq: int = 0
    refused_invocations: int = 0
    throttled_invocations: int = 0
    shop_queries: int = 0
    shop_refused: int = 0
    peak_demand: int = 0
    peak_invocations: int = 0
    finished_seconds: float | None = None

    def summary(self) -> dict[str, Any]:
        done = self.finished_seconds
        return {
            "cap": self.config.cap if self.config.cap == "none" else f"{self.config.cap} {self.config.cap_value}",
            "peak_invocations": self.peak_invocations,
            "peak_connections_asked": self.peak_demand,
            "refused_invocations": self.refused_invocations,
            "throttled": self.throttled_invocations,
            "shop_refused_pct": round(100 * self.shop_refused / max(1, self.shop_queries), 1),
            "processed": self.processed,
            "in_dlq": self.in_dlq,
            "minutes": round(done / 60, 1) if done is not None else f"> {self.config.horizon_seconds / 60:g}",
        }


@dataclass
class _State:
    env: simpy.Environment
    config: ConnectionConfig
    result: ConnectionResult
    pool: simpy.Resource | None
    done: simpy.Event
    rng: random.Random
    queue: deque[list[int]] = field(default_factory=deque)  # [messages, receives] per SQS batch
    invocations: int = 0  # concurrent invocations (Lambda's concurrency)
    running: int = 0  # invocations past the throttle, running the function
    db_open: int = 0
    asking: int = 0  # connections asked for and not held (being refused, or retrying)

    def ask(self) -> bool:
        """Ask the database for a connection (the asker counts in `asking`); True if it opened one."""
        self.result.peak_demand = max(self.result.peak_demand, self.db_open + self.asking)
        if self.db_open >= self.config.db_connections:
            return False
        self.db_open += 1
        self.asking -= 1  # it holds one now: counted in db_open
        return True


def run_connections(config: ConnectionConfig, seed: int = 0) -> ConnectionResult:
    """Drain the backlog with Lambda-style consumers while the shop keeps querying the same database."""
    env = simpy.Environment()
    pool = simpy.Resource(env, capacity=min(config.cap_value, config.db_connections)) if config.cap == "pool" else None
    s = _State(env, config, ConnectionResult(config), pool, env.event(), random.Random(f"{seed}:connect"))
    for first in range(0, config.backlog, config.batch_size):
        s.queue.append([min(config.batch_size, config.backlog - first), 0])
    env.process(
        lambda_scaling.scale(
            env,
            config.scaling,
            config.invocation_limit(),
            lambda: bool(s.queue),
            lambda: s.invocations,
            lambda: _start(s),
        )
    )
    env.process(_shop(s, random.Random(seed)))
    env.process(_sample(s))
    env.run(until=env.any_of([env.timeout(config.horizon_seconds), s.done]))
    s.result.rows.append(_row(s))
    return s.result


def _start(s: _State) -> None:
    """The mapping adds one concurrent invocation (`lambda_scaling.scale` decides when)."""
    s.invocations += 1
    s.env.process(_invocation_loop(s))


def _invocation_loop(s: _State):
    """One concurrent invocation slot: take a batch, run it (or fail), repeat while there is work."""
    while s.queue:
        batch = s.queue.popleft()
        batch[1] += 1
        throttled = s.config.cap == "reserved_concurrency" and s.running >= s.config.cap_value
        if throttled:
            s.result.throttled_invocations += 1
            yield s.env.timeout(REFUSED_SECONDS)
            s.env.process(_back_later(s, batch))
            continue
        s.running += 1
        ok = yield from _run_batch(s, batch)
        s.running -= 1
        if ok:
            s.result.processed += batch[0]
            _check_done(s)
        else:
            s.env.process(_back_later(s, batch))
    s.invocations -= 1


def _run_batch(s: _State, batch: list[int]):
    """Hold one database connection (through the pool, if any) for the batch's work; False if refused."""
    s.result.peak_invocations = max(s.result.peak_invocations, s.running)
    request = s.pool.request() if s.pool is not None else None
    if request is not None:
        yield request  # the pool makes the invocation wait, the database never sees the excess
    connected = yield from _connect(s)
    if connected:
        yield s.env.timeout(batch[0] * s.config.work_seconds)
        s.db_open -= 1
    else:
        s.result.refused_invocations += 1
    if request is not None:
        s.pool.release(request)
    return connected


def _connect(s: _State):
    """Open a connection, retrying refusals under the client's policy (the shared loop); False if it gives up."""
    s.asking += 1
    connected = yield from retry_loop.with_retries(
        s.env, lambda: _ask_once(s), retry.Retrier(s.config.connect_policy, s.rng)
    )
    if not connected:
        s.asking -= 1
    return connected


def _ask_once(s: _State):
    """One attempt: a connection, or a refusal that answers after REFUSED_SECONDS."""
    if s.ask():
        return None
    yield s.env.timeout(REFUSED_SECONDS)
    return ConnectionRefusedError("too many connections")


def _check_done(s: _State) -> None:
    if s.result.processed + s.result.in_dlq >= s.config.backlog and not s.done.triggered:
        s.result.finished_seconds = s.env.now
        s.done.succeed()


def _back_later(s: _State, batch: list[int]):
    """The batch shows again after the visibility timeout, or goes to the DLQ after maxReceiveCount."""
    yield s.env.timeout(s.config.visibility_timeout_seconds)
    if batch[1] >= s.config.max_receive_count:
        s.result.in_dlq += batch[0]
        _check_done(s)
    else:
        s.queue.append(batch)


def _shop(s: _State, rng: random.Random):
    """The shop's own queries on the same database: short, and refused like anyone else's."""
    if not s.config.shop_queries_per_second:
        return
    while True:
        yield s.env.timeout(rng.expovariate(s.config.shop_queries_per_second))
        s.env.process(_shop_query(s))


def _shop_query(s: _State):
    s.result.shop_queries += 1
    s.asking += 1
    if not s.ask():
        s.asking -= 1
        s.result.shop_refused += 1
        return
    yield s.env.timeout(s.config.shop_query_seconds)
    s.db_open -= 1


def _sample(s: _State):
    while True:
        s.result.rows.append(_row(s))
        yield s.env.timeout(s.config.sample_seconds)


def _row(s: _State) -> dict[str, Any]:
    return {
        "second": s.env.now,
        "waiting": sum(batch[0] for batch in s.queue),
        "invocations": s.running,
        "db_connections": s.db_open,
        "connections_asked": s.db_open + s.asking,
        "processed": s.result.processed,
        "refused_invocations": s.result.refused_invocations,
        "shop_refused": s.result.shop_refused,
    }
