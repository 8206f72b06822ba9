"""Retries: what to retry, how much, with which policy, and how the layers multiply (notebooks 05-07).

Small pieces, each usable alone (the wait strategies live in `backoff`):

- `classify(error, idempotent)`: retry 5xx and connection errors, retry a 429
  no sooner than its Retry-After, never a business 4xx; a
  ConditionalCheckFailedException is an answer; a timeout only with a key;
- `RetryBudget`: a token bucket that lets retries be at most a share (10 %) of calls;
- `RetryPolicy` + `Retrier`: a backoff, a classifier and a budget together,
  spending their waits on whoever waits (the virtual clock, a Lambda
  invocation's stopwatch, or a simpy process).

`worst_case` multiplies the attempts of stacked layers (SDK × queue × workflow).
The same `RetryPolicy` drives the gateway client on moto and the simulations.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol, TypeVar

from botocore.exceptions import ClientError, ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError

from mercadofresco.clock import Waiter
from mercadofresco.errors import check_range
from mercadofresco.patterns.backoff import Backoff, NoBackoff

T = TypeVar("T")
WORST_CASE_LIMIT = 15  # the lesson: more attempts than this on one dependency means something is wrong

# Codes an AWS service answers when it asks you to slow down (botocore's standard mode knows these and more).
THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "RequestThrottled",
        "EC2ThrottledException",
        "BandwidthLimitExceeded",
        "SlowDown",
    }
)
TRANSIENT_CODES = frozenset(
    {
        "RequestTimeout",
        "RequestTimeoutException",
        "PriorRequestNotComplete",
        "TransactionInProgressException",
        "InternalServerError",
        "ServiceUnavailable",
    }
)
ANSWER_CODES = frozenset({"ConditionalCheckFailedException"})


# -- what to retry ------------------------------------------------------------------
class Verdict(Enum):
    """What a failed call deserves."""

    RETRY = "retry with backoff"
    RETRY_LATER = "retry, no sooner than Retry-After"
    ANSWER = "not a failure: it is the answer"
    DO_NOT_RETRY = "do not retry: the same call gives the same result"
    UNSAFE = "do not retry: it may have run and is not idempotent"


@dataclass(frozen=True)
class Decision:
    """A verdict, the reason for it, and the least time to wait before retrying."""

    verdict: Verdict
    reason: str
    not_before_seconds: float = 0.0

    @property
    def retry(self) -> bool:
        """True if the call may be made again."""
        return self.verdict in (Verdict.RETRY, Verdict.RETRY_LATER)


def _status(status: int, retry_after: float | None) -> Decision:
    """The rule for an HTTP status: 429 later, 5xx yes, any other 4xx no."""
    if status == 429:
        return Decision(Verdict.RETRY_LATER, "429: come back later", retry_after or 0.0)
    if status >= 500:
        return Decision(Verdict.RETRY, f"{status}: the server failed, not the request")
    return Decision(Verdict.DO_NOT_RETRY, f"{status}: the request itself was refused")


def _unknown_outcome(idempotent: bool) -> Decision:
    if idempotent:
        return Decision(Verdict.RETRY, "timeout, but an idempotency key makes a repeat harmless")
    return Decision(Verdict.UNSAFE, "timeout: it may have run; without a key a retry may run it twice")


def retry_after_seconds(header: str | None) -> float:
    """A Retry-After header in seconds: either a number of seconds or an HTTP date (RFC 9110)."""
    if not header:
        return 0.0
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return 0.0  # unreadable: no extra wait beyond the backoff
    return max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds())  # the virtual clock's now


def classify(error: BaseException, idempotent: bool) -> Decision:
    """Decide whether `error` deserves a retry; `idempotent` is True when the call carries an idempotency key.

    Errors from the gateway model carry an HTTP `status` (429 also `retry_after_seconds`),
    and the ones that may have left a charge behind say so with `outcome_unknown`.
    """
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400)
        if code in ANSWER_CODES:
            return Decision(Verdict.ANSWER, f"{code}: the condition said no; retrying says no again")
        if code in THROTTLING_CODES:
            retry_after = error.response.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("retry-after")
            return Decision(Verdict.RETRY_LATER, f"{code}: throttled", retry_after_seconds(retry_after))
        if code in TRANSIENT_CODES:
            return Decision(Verdict.RETRY, f"{code}: transient")
        return _status(status, None)
    if isinstance(error, ConnectTimeoutError | EndpointConnectionError | ConnectionRefusedError):
        return Decision(Verdict.RETRY, "could not connect: the request never left")
    if isinstance(error, ReadTimeoutError | TimeoutError) or getattr(error, "outcome_unknown", False):
        return _unknown_outcome(idempotent)
    status = getattr(error, "status", None)
    if isinstance(status, int):
        return _status(status, getattr(error, "retry_after_seconds", None))
    return Decision(Verdict.DO_NOT_RETRY, f"{type(error).__name__}: unknown, so not retried blindly")


def naive_sdk(error: BaseException, idempotent: bool) -> Decision:
    """An SDK's default: any timeout, lost response, 503 or 429 is retried, key or not (exercise 1)."""
    if getattr(error, "outcome_unknown", False) or getattr(error, "status", None) in (429, 503):
        return Decision(Verdict.RETRY, "the SDK retries it, whatever the call does")
    return Decision(Verdict.DO_NOT_RETRY, "the SDK does not retry it")


# -- how much to retry --------------------------------------------------------------
class RetryBudget:
    """A token bucket: each first call adds `ratio` tokens, each retry spends one.

    Retries can then be at most about `ratio` of the calls (plus a burst of
    `max_tokens`). botocore's standard mode does the same with other numbers:
    a quota of 500, a retry costs 14 (5 if throttled), a success returns 1.
    """

    def __init__(self, ratio: float = 0.1, max_tokens: float = 10.0) -> None:
        check_range("ratio", ratio, 0, 1, low_excluded=True)
        check_range("max_tokens", max_tokens, 1, 100_000)
        self.ratio = ratio
        self.max_tokens = max_tokens
        self.tokens = max_tokens
        self.calls = 0
        self.retries = 0
        self.refused = 0

    def record_call(self) -> None:
        """A first attempt was made: it earns `ratio` of a retry."""
        self.calls += 1
        self.tokens = min(self.max_tokens, self.tokens + self.ratio)

    def try_retry(self) -> bool:
        """Spend a token on a retry; False (and nothing spent) when the budget is exhausted."""
        if self.tokens < 1:
            self.refused += 1
            return False
        self.tokens -= 1
        self.retries += 1
        return True


# -- the retrier --------------------------------------------------------------------
class Classifier(Protocol):
    def __call__(self, error: BaseException, idempotent: bool) -> Decision: ...


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts in all, how long between them, and which errors deserve one more."""

    backoff: Backoff = field(default_factory=NoBackoff)
    max_attempts: int = 3
    should_retry: Classifier = classify

    def __post_init__(self) -> None:
        check_range("max_attempts", self.max_attempts, 1, 20)


class Retrier:
    """Runs a call under a policy, with seeded randomness and an optional shared budget."""

    def __init__(
        self, policy: RetryPolicy, rng: random.Random | None = None, budget: RetryBudget | None = None
    ) -> None:
        self.policy = policy
        self.rng = rng or random.Random(0)
        self.budget = budget
        self.attempts = 0
        self.retries = 0
        self.waits: list[float] = []
        self.decisions: list[Decision] = []

    def first_attempt(self) -> None:
        """Count a first attempt (and let it earn budget)."""
        self.attempts += 1
        if self.budget is not None:
            self.budget.record_call()

    def next_wait(self, error: BaseException, failures: int, previous: float, idempotent: bool) -> float | None:
        """Seconds to wait before trying again after `failures` failed attempts, or None to give up.

        A simpy process calls this and yields the wait; `call` below spends it on a waiter.
        """
        decision = self.policy.should_retry(error, idempotent)
        self.decisions.append(decision)
        if not decision.retry or failures >= self.policy.max_attempts:
            return None
        if self.budget is not None and not self.budget.try_retry():
            return None
        seconds = max(self.policy.backoff.wait(failures, self.rng, previous), decision.not_before_seconds)
        self.retries += 1
        self.attempts += 1
        self.waits.append(seconds)
        return seconds

    def call(self, operation: Callable[[], T], waiter: Waiter, idempotent: bool) -> T:
        """Call `operation` until it succeeds or the policy gives up; waits are spent on `waiter`."""
        self.first_attempt()
        previous = 0.0
        for failures in range(1, self.policy.max_attempts + 1):
            try:
                return operation()
            except Exception as error:
                seconds = self.next_wait(error, failures, previous, idempotent)
                if seconds is None:
                    raise
                waiter.wait(seconds)
                previous = seconds
        raise AssertionError("unreachable")  # the last failure always gives up


# -- where to retry: the layers multiply ---------------------------------------------
@dataclass(frozen=True)
class Layer:
    """One place that retries, and how many attempts it makes in all."""

    name: str
    attempts: int

    def __post_init__(self) -> None:
        check_range(f"attempts of layer {self.name!r}", self.attempts, 1, 100)


LESSON_LAYERS = (Layer("SDK max_attempts", 5), Layer("SQS maxReceiveCount", 4), Layer("Step Functions Retry", 4))


def worst_case(layers: Sequence[Layer], orders: int = 1) -> dict[str, object]:
    """Calls one dependency can receive when every attempt of every layer fails, for `orders` orders."""
    check_range("orders", orders, 1, 10_000_000)
    per_order = math.prod(layer.attempts for layer in layers)
    formula = " × ".join(str(layer.attempts) for layer in layers)
    warning = f"{per_order} > {WORST_CASE_LIMIT}: one layer should be in charge" if per_order > WORST_CASE_LIMIT else ""
    return {
        "formula": formula,
        "per_order": per_order,
        "orders": orders,
        "calls": per_order * orders,
        "warning": warning,
    }
