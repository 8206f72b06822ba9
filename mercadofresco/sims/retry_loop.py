"""The SDK's retry loop on simpy time, written once for every simulation (notebooks 5, 8 and 14).

Call; on a failure ask the `retry.Retrier` how long to wait, yield that
timeout, and give up when it says None. The waits and counts are the same
`Retrier`'s as on moto; only the waiting is simpy's.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import simpy

from mercadofresco.patterns import breaker, retry

Answer = BaseException | None  # None: the call succeeded; otherwise the error it got
Attempt = Callable[[], Answer | Generator[simpy.Event, Any, Answer]]


def with_retries(
    env: simpy.Environment,
    attempt: Attempt,
    retrier: retry.Retrier,
    guard: breaker.CircuitBreaker | None = None,
    idempotent: bool = True,
):
    """Make `attempt` until it succeeds or the retrier gives up (use with `yield from`); True if it succeeded.

    `attempt()` returns the answer (None or the error) at once, or is a generator
    that yields simpy events and returns it. A breaker `guard`, if any, hears
    every answer and is asked before each retry: open, the loop gives up.
    """
    retrier.first_attempt()
    failures, previous = 0, 0.0
    while True:
        if failures and guard is not None and not guard.allow(env.now):
            return False
        answer = attempt()
        error = (yield from answer) if isinstance(answer, Generator) else answer
        if guard is not None:
            (guard.record_success if error is None else guard.record_failure)(env.now)
        if error is None:
            return True
        failures += 1
        wait = retrier.after_failure(error, failures, previous, idempotent)
        if wait is None:
            return False
        previous = wait
        yield env.timeout(wait)
