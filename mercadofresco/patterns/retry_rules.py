"""What to retry: the verdict a failed call deserves, and the least time to wait (notebook 6).

`classify(error, idempotent)` retries 5xx and connection errors, retries a 429
no sooner than its Retry-After, never a business 4xx; a
ConditionalCheckFailedException is an answer; a timeout only with a key.
"""

from __future__ import annotations

import datetime as dt
import email.utils
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from botocore.exceptions import ClientError, ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError

from mercadofresco.i18n import T_, pgettext

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

    @property
    def said(self) -> str:
        """The reason in the learner's words, each side of its first ": " a table cell's words (the reason stays
        English: a storm run decides 26,000 times and says none of it)."""
        return ": ".join(pgettext("table cell", part) for part in self.reason.split(": ", 1))


class Classifier(Protocol):
    """Decides on one failure; `now` is when it came back, for a Retry-After given as a date."""

    def __call__(self, error: BaseException, idempotent: bool, now: dt.datetime | None = None) -> Decision: ...


def _status(status: int, retry_after: float | None) -> Decision:
    """The rule for an HTTP status: 429 later, 5xx yes, any other 4xx no."""
    if status == 429:
        return Decision(Verdict.RETRY_LATER, "429: " + T_("come back later"), retry_after or 0.0)
    if status >= 500:
        return Decision(Verdict.RETRY, f"{status}: " + T_("the server failed, not the request"))
    return Decision(Verdict.DO_NOT_RETRY, f"{status}: " + T_("the request itself was refused"))


def _unknown_outcome(idempotent: bool) -> Decision:
    if idempotent:
        return Decision(Verdict.RETRY, T_("timeout, but an idempotency key makes a repeat harmless"))
    return Decision(
        Verdict.UNSAFE, T_("timeout") + ": " + T_("it may have run; without a key a retry may run it twice")
    )


def retry_after_seconds(header: str | None, now: dt.datetime | None) -> float:
    """A Retry-After header in seconds: a number of seconds, or an HTTP date counted from `now` (RFC 9110).

    A date without a `now` to count from, like an unreadable header, adds no wait beyond the backoff.
    """
    if not header:
        return 0.0
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if now is None else max(0.0, (when - now).total_seconds())


def classify(error: BaseException, idempotent: bool, now: dt.datetime | None = None) -> Decision:
    """Decide whether `error` deserves a retry; `idempotent` is True when the call carries an idempotency key.

    Errors from the gateway model carry an HTTP `status` (429 also `retry_after_seconds`),
    and the ones that may have left a charge behind say so with `outcome_unknown`.
    `now` (the caller's clock when the error came back) counts down a Retry-After date.
    """
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400)
        if code in ANSWER_CODES:
            return Decision(Verdict.ANSWER, f"{code}: " + T_("the condition said no; retrying says no again"))
        if code in THROTTLING_CODES:
            retry_after = error.response.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("retry-after")
            return Decision(Verdict.RETRY_LATER, f"{code}: " + T_("throttled"), retry_after_seconds(retry_after, now))
        if code in TRANSIENT_CODES:
            return Decision(Verdict.RETRY, f"{code}: " + T_("transient"))
        return _status(status, None)
    if isinstance(error, ConnectTimeoutError | EndpointConnectionError | ConnectionRefusedError):
        return Decision(Verdict.RETRY, T_("could not connect") + ": " + T_("the request never left"))
    if isinstance(error, ReadTimeoutError | TimeoutError) or getattr(error, "outcome_unknown", False):
        return _unknown_outcome(idempotent)
    status = getattr(error, "status", None)
    if isinstance(status, int):
        return _status(status, getattr(error, "retry_after_seconds", None))
    return Decision(Verdict.DO_NOT_RETRY, f"{type(error).__name__}: " + T_("unknown, so not retried blindly"))
