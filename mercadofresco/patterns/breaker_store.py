"""One circuit breaker shared by every consumer, its state in a Redis/Valkey store (notebook 09).

`breaker.CircuitBreaker` keeps its counter in one process: with 20 consumers
there are 20 counters, and the gateway takes 20 failures from each before they
all stop. `SharedBreaker` keeps one record per breaker in a store that speaks
the Redis protocol (MercadoFresco's Valkey, `mercadofresco-catalogo`): an
embedded fakeredis server by default, a real Valkey or Redis by URL.

Each change is a read-decide-write under WATCH/MULTI: the decision is the pure
function from `breaker` (before_call, after_success, after_failure), and the
write only commits if nobody changed the record in between; otherwise it reads
again. Keys are namespaced (`mercadofresco:breaker:pasarela-pagos`) and expire
when a breaker has been idle for `forget_after_seconds` (fakeredis follows the
virtual clock). Store errors are never swallowed: `if_store_fails` says, on
purpose, whether to raise (default), let calls through, or refuse them.

Pass `alarm=` (e.g. `models.alarm_evaluation.OpenAlarm`) to make each opening
visible: a metric in MercadoFresco/Tienda and an alarm on alertas-mercadofresco.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from mercadofresco.clock import MADRID
from mercadofresco.errors import MercadoFrescoError, check_range
from mercadofresco.i18n import _
from mercadofresco.patterns.breaker import (
    BreakerPolicy,
    BreakerState,
    CircuitOpenError,
    State,
    after_failure,
    after_success,
    before_call,
    current,
    retry_after,
)

if TYPE_CHECKING:  # fakeredis is imported where a store is made: importing this module stays light
    import fakeredis

NAMESPACE = "mercadofresco:breaker"
# A failed attempt means another consumer's write committed, so the system as a whole made progress; the bound
# only stops a livelock, and is far above what any scheduler's unfairness can make one writer lose in a row.
MAX_WRITE_ATTEMPTS = 1_000
IF_STORE_FAILS = ("raise", "allow", "deny")


class BreakerStoreError(MercadoFrescoError):
    """The store holding the breaker's state failed; nobody can say whether to call."""


class BreakerContentionError(BreakerStoreError):
    """Other consumers kept changing the breaker's record; this write never committed."""


# -- the store --------------------------------------------------------------------------
def embedded_store(server: fakeredis.FakeServer | None = None) -> redis.Redis:
    """A client of an in-process fakeredis server; clients of the same `server` share its data."""
    import fakeredis  # 0.2 s of imports, paid only by a notebook that makes a store

    return fakeredis.FakeRedis(server=server or fakeredis.FakeServer(), decode_responses=True)


def connect(url: str) -> redis.Redis:
    """A client of a real Valkey or Redis, e.g. redis://localhost:6379/0, that fails fast when the store is down.

    The breaker decides on every gateway call, so a store that is down must answer in one attempt plus one
    immediate retry (redis-py's default backoff would hold every consumer seconds); then `if_store_fails` decides.
    """
    return redis.Redis.from_url(url, decode_responses=True, retry=Retry(NoBackoff(), 1))


def encode(s: BreakerState) -> dict[str, str]:
    """The breaker's record as a Redis hash (strings only)."""
    return {
        "state": s.state.value,
        "consecutive_failures": str(s.consecutive_failures),
        "opened_at": repr(s.opened_at),
        "trial_calls": str(s.trial_calls),
        "window_calls": str(s.window_calls),
        "window_failures": str(s.window_failures),
        "trial_started_at": repr(s.trial_started_at),
    }


def decode(fields: dict[str, str]) -> BreakerState:
    """A Redis hash back into a BreakerState; a missing record is a closed breaker."""
    if not fields:
        return BreakerState()
    return BreakerState(
        state=State(fields["state"]),
        consecutive_failures=int(fields["consecutive_failures"]),
        opened_at=float(fields["opened_at"]),
        trial_calls=int(fields["trial_calls"]),
        window_calls=int(fields.get("window_calls", 0)),
        window_failures=int(fields.get("window_failures", 0)),
        trial_started_at=float(fields.get("trial_started_at", 0.0)),
    )


# -- the shared breaker -----------------------------------------------------------------
class SharedBreaker:
    """A breaker whose state lives in the store, so every consumer sees the same counter.

    Same methods as `breaker.CircuitBreaker` (allow, check, record_success,
    record_failure, state_at), so either drops into a consumer or a simulation.
    """

    def __init__(
        self,
        store: redis.Redis,
        policy: BreakerPolicy | None = None,
        name: str = "pasarela-pagos",
        namespace: str = NAMESPACE,
        alarm: Any = None,  # an alarm_evaluation.OpenAlarm: anything with .opened(now)
        if_store_fails: str = "raise",
        forget_after_seconds: int = 3_600,
    ) -> None:
        if if_store_fails not in IF_STORE_FAILS:
            said = _("{name} must be one of {choices}; got {value}")
            raise ValueError(
                said.format(name="if_store_fails", choices=", ".join(IF_STORE_FAILS), value=repr(if_store_fails))
            )
        check_range("forget_after_seconds", forget_after_seconds, 60, 7 * 86_400)
        self.store = store
        self.policy = policy or BreakerPolicy()
        self.name = name
        self.key = f"{namespace}:{name}"
        self.alarm = alarm
        self.if_store_fails = if_store_fails
        # An OPEN record must outlive its open period, whatever forget_after_seconds says.
        self.ttl_seconds = max(forget_after_seconds, math.ceil(self.policy.open_seconds) + 60)
        self.transitions: list[tuple[float, State, State]] = []  # the ones this client's writes made
        self.store_errors = 0

    def allow(self, now: float) -> bool:
        """True if a call may go to the gateway now (a half-open trial is claimed atomically)."""
        try:
            return self._change(lambda s: before_call(s, self.policy, now), now)
        except BreakerStoreError:
            if self.if_store_fails == "raise":
                raise
            self.store_errors += 1
            return self.if_store_fails == "allow"

    def check(self, now: float) -> None:
        """Like `allow`, but raise CircuitOpenError instead of returning False."""
        if not self.allow(now):
            raise CircuitOpenError(self.name, retry_after(self.load(), self.policy, now))

    def record_success(self, now: float) -> None:
        """Tell every consumer's breaker that a call worked."""
        self._record(lambda s: (after_success(s, self.policy, now), True), now)

    def record_failure(self, now: float) -> None:
        """Tell every consumer's breaker that a call failed."""
        self._record(lambda s: (after_failure(s, self.policy, now), True), now)

    def state_at(self, now: float) -> State:
        """The shared state as of `now` (read only)."""
        return current(self.load(), self.policy, now).state

    def load(self) -> BreakerState:
        """The record as the store holds it."""
        try:
            return decode(self.store.hgetall(self.key))
        except redis.RedisError as exc:
            raise BreakerStoreError(_("could not read {key}: {error}").format(key=self.key, error=exc)) from exc

    def reset(self) -> None:
        """Forget the record: the breaker is closed for everyone."""
        try:
            self.store.delete(self.key)
        except redis.RedisError as exc:
            raise BreakerStoreError(_("could not delete {key}: {error}").format(key=self.key, error=exc)) from exc

    def _record(self, step: Callable[[BreakerState], tuple[BreakerState, bool]], now: float) -> None:
        try:
            self._change(step, now)
        except BreakerStoreError:
            if self.if_store_fails == "raise":
                raise
            self.store_errors += 1

    def _change(self, step: Callable[[BreakerState], tuple[BreakerState, bool]], now: float) -> bool:
        """Read the record, decide with `step`, write it back only if nobody wrote in between."""
        seen = self.load()
        new, answer = step(seen)
        if new == seen:  # a decision that changes nothing (an open breaker refusing): no transaction needed
            return answer
        for _attempt in range(MAX_WRITE_ATTEMPTS):
            try:
                with self.store.pipeline() as pipe:
                    pipe.watch(self.key)
                    old = decode(pipe.hgetall(self.key))
                    new, answer = step(old)
                    if new == old:  # nothing to write (an open breaker refusing a call): no transaction
                        pipe.unwatch()
                        return answer
                    pipe.multi()
                    pipe.hset(self.key, mapping=encode(new))
                    pipe.expire(self.key, self.ttl_seconds)
                    pipe.execute()
            except redis.WatchError:
                continue  # another consumer committed first: decide again on what it wrote
            except redis.RedisError as exc:
                raise BreakerStoreError(_("could not update {key}: {error}").format(key=self.key, error=exc)) from exc
            self._observe(old, new, now)
            return answer
        said = _("{key} changed under us {count} times in a row")
        raise BreakerContentionError(said.format(key=self.key, count=MAX_WRITE_ATTEMPTS))

    def _observe(self, old: BreakerState, new: BreakerState, now: float) -> None:
        seen = current(old, self.policy, now)  # a stored OPEN whose time is up was already HALF_OPEN
        if seen.state is not old.state:
            self.transitions.append((now, old.state, seen.state))
        if new.state is seen.state:
            return
        self.transitions.append((now, seen.state, new.state))
        if new.state is State.OPEN and self.alarm is not None:
            self.alarm.opened(dt.datetime.fromtimestamp(now, MADRID))
