"""The one simpy retry loop the simulations share: the retrier's waits on simpy time, the breaker asked between."""

import random

import simpy

from mercadofresco.models import gateway
from mercadofresco.patterns import backoff, breaker, retry
from mercadofresco.sims.retry_loop import with_retries

POLICY = retry.RetryPolicy(backoff.FullJitter(base=1.0, cap=10.0), max_attempts=4)


def _failing(times: int, error: BaseException | None = None):
    """An attempt that answers at once: `error` (a 503 by default) the first `times` calls, then success."""
    calls = []

    def attempt():
        calls.append(len(calls))
        return (error or gateway.GatewayUnavailableError("503")) if len(calls) <= times else None

    return attempt, calls


def _run(env: simpy.Environment, process) -> dict:
    outcome = {}

    def wrapper():
        outcome["ok"] = yield from process
        outcome["at"] = env.now

    env.process(wrapper())
    env.run()
    return outcome


def test_it_waits_the_retriers_waits_in_simpy_time_and_succeeds():
    env, retrier = simpy.Environment(), retry.Retrier(POLICY, random.Random(3))
    attempt, calls = _failing(2)
    outcome = _run(env, with_retries(env, attempt, retrier))
    assert outcome["ok"] is True and len(calls) == 3
    assert outcome["at"] == sum(retrier.waits) and len(retrier.waits) == 2
    rng = random.Random(3)
    assert retrier.waits == [max(POLICY.backoff.wait(n, rng), 0.0) for n in (1, 2)]
    assert (retrier.attempts, retrier.retries) == (3, 2)


def test_an_attempt_that_takes_time_is_a_generator():
    env, retrier = simpy.Environment(), retry.Retrier(retry.RetryPolicy(backoff.Exponential(1, 10), 3))
    answers = iter([gateway.GatewayUnavailableError("503"), None])

    def slow_attempt():
        yield env.timeout(0.5)
        return next(answers)

    outcome = _run(env, with_retries(env, slow_attempt, retrier))
    assert outcome == {"ok": True, "at": 0.5 + 2.0 + 0.5}


def test_it_gives_up_after_max_attempts_and_at_once_on_an_error_not_worth_retrying():
    env, retrier = simpy.Environment(), retry.Retrier(POLICY)
    attempt, calls = _failing(100)
    assert _run(env, with_retries(env, attempt, retrier))["ok"] is False
    assert len(calls) == POLICY.max_attempts
    declined, declined_calls = _failing(100, gateway.CardDeclinedError("402"))
    env = simpy.Environment()
    outcome = _run(env, with_retries(env, declined, retry.Retrier(POLICY)))
    assert outcome == {"ok": False, "at": 0} and len(declined_calls) == 1


def test_the_breaker_hears_every_answer_and_stops_the_retries_once_open():
    env, retrier = simpy.Environment(), retry.Retrier(POLICY)
    guard = breaker.CircuitBreaker(breaker.BreakerPolicy(failure_threshold=2, open_seconds=300))
    attempt, calls = _failing(100)
    assert _run(env, with_retries(env, attempt, retrier, guard))["ok"] is False
    assert len(calls) == 2  # the second failure opened it: no third attempt
    assert guard.state_at(env.now) is breaker.State.OPEN
