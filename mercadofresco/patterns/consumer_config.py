"""Check a queue consumer's settings before deploying it (class 210; notebooks 17-18).

Class 210's duplicates were not random: the queue's visibility timeout (30 s)
was shorter than the time one batch could take (25 s × 10 messages), so
messages came back while they were still being processed. That is arithmetic,
and arithmetic can be checked before a deployment. `check` returns one
`Finding` per rule; `require_safe` raises with every broken rule named.

The rules:

- visibility ≥ per-message timeout × batch size (class 210: the batch is
  processed inside one visibility timeout). With Lambda the function timeout
  covers the whole invocation, so there the rule reads visibility ≥ timeout;
  class 210's form is the safe one when the timeout bounds each message;
- visibility ≥ 6 × the function timeout (AWS's advice for Lambda on SQS);
- a batch larger than 1 reports partial batch failures (`batchItemFailures`);
- maxReceiveCount between 3 and 5 (decided, not left at a default);
- the idempotency key outlives every way a message can come back (class 210:
  the DLQ's retention, 14 days, so 21 days); the lesson's 24 h is right only
  when nothing is redriven after a day (notebook 18 compares them);
- long polling: a consumer that polls the queue itself waits at least 1 s per
  receive (SQS's default is 0, short polling). Lambda's event source mapping
  long-polls by itself, so for a function the rule always holds.
  `idle_receives` is the arithmetic of what it saves.
"""

from __future__ import annotations

from dataclasses import dataclass

from mercadofresco.errors import MercadoFrescoError, check_range
from mercadofresco.i18n import _, number

DAY = 86_400
LAMBDA_VISIBILITY_FACTOR = 6  # AWS: visibility timeout at least six times the function timeout
MAX_VISIBILITY_SECONDS = 43_200  # SQS: 12 hours
MAX_RETENTION_SECONDS = 14 * DAY  # SQS: 14 days
MAX_WAIT_SECONDS = 20  # SQS: the longest a ReceiveMessage may wait (long polling)
SQS_USD_PER_MILLION = 0.40  # standard queue requests, list price (runtime/billing.py)
MONTH_SECONDS = 30 * DAY


class UnsafeConsumerSettingsError(MercadoFrescoError):
    """The settings break at least one rule; `findings` lists the broken ones."""

    def __init__(self, name: str, findings: list[Finding]) -> None:
        super().__init__(f"{name}: " + "; ".join(f.detail for f in findings))
        self.findings = findings


@dataclass(frozen=True)
class ConsumerSettings:
    """One consumer and its queue, as they would be deployed."""

    name: str
    visibility_timeout_seconds: float
    timeout_seconds: float  # the function's (or each message's) time limit
    batch_size: int
    max_receive_count: int = 5
    partial_batch_response: bool = True
    dlq_retention_seconds: int = MAX_RETENTION_SECONDS
    idempotency_ttl_seconds: int | None = None  # None: the consumer keeps no idempotency record
    receive_wait_seconds: float | None = None  # a self-polling worker's wait; None: Lambda's mapping polls

    def __post_init__(self) -> None:
        check_range("visibility_timeout_seconds", self.visibility_timeout_seconds, 0, MAX_VISIBILITY_SECONDS)
        check_range("timeout_seconds", self.timeout_seconds, 1, 900)
        check_range("batch_size", self.batch_size, 1, 10_000)
        check_range("max_receive_count", self.max_receive_count, 1, 1_000)
        check_range("dlq_retention_seconds", self.dlq_retention_seconds, 60, MAX_RETENTION_SECONDS)
        if self.idempotency_ttl_seconds is not None:
            check_range("idempotency_ttl_seconds", self.idempotency_ttl_seconds, 1, 366 * DAY)
        if self.receive_wait_seconds is not None:
            check_range("receive_wait_seconds", self.receive_wait_seconds, 0, MAX_WAIT_SECONDS)


@dataclass(frozen=True)
class Finding:
    """One rule, whether the settings keep it, and the arithmetic behind the verdict."""

    rule: str
    ok: bool
    detail: str


def batch_seconds(settings: ConsumerSettings) -> float:
    """The longest one batch can take when every message uses its whole timeout."""
    return settings.timeout_seconds * settings.batch_size


def check(settings: ConsumerSettings) -> list[Finding]:
    """Every rule, kept or broken, with its numbers."""
    s = settings
    worst = batch_seconds(s)
    advised = LAMBDA_VISIBILITY_FACTOR * s.timeout_seconds
    findings = [
        Finding(
            "visibility >= timeout x batch",
            s.visibility_timeout_seconds >= worst,
            _("visibility {visibility} s vs {timeout} s x {batch} = {worst} s").format(
                visibility=number(s.visibility_timeout_seconds, "g"),
                timeout=number(s.timeout_seconds, "g"),
                batch=s.batch_size,
                worst=number(worst, "g"),
            ),
        ),
        Finding(
            "visibility >= 6 x timeout",
            s.visibility_timeout_seconds >= advised,
            _("visibility {visibility} s vs 6 x {timeout} s = {advised} s").format(
                visibility=number(s.visibility_timeout_seconds, "g"),
                timeout=number(s.timeout_seconds, "g"),
                advised=number(advised, "g"),
            ),
        ),
        Finding(
            "partial batch response",
            s.batch_size == 1 or s.partial_batch_response,
            (
                _("batch of {batch}, batchItemFailures on")
                if s.partial_batch_response
                else _("batch of {batch}, batchItemFailures off")
            ).format(batch=s.batch_size),
        ),
        Finding(
            "3 <= maxReceiveCount <= 5",
            3 <= s.max_receive_count <= 5,
            f"maxReceiveCount {s.max_receive_count}",
        ),
    ]
    wait = s.receive_wait_seconds
    findings.append(
        Finding(
            "long polling",
            wait is None or wait >= 1,
            _("Lambda's event source mapping long-polls by itself")
            if wait is None
            else (_("receives wait {wait} s (short polling)") if wait < 1 else _("receives wait {wait} s")).format(
                wait=number(wait, "g")
            ),
        )
    )
    if s.idempotency_ttl_seconds is not None:
        findings.append(
            Finding(
                "key TTL > DLQ retention",
                s.idempotency_ttl_seconds > s.dlq_retention_seconds,
                _("key lives {ttl} d vs DLQ retention {retention} d").format(
                    ttl=number(s.idempotency_ttl_seconds / DAY, "g"),
                    retention=number(s.dlq_retention_seconds / DAY, "g"),
                ),
            )
        )
    return findings


def problems(settings: ConsumerSettings) -> list[Finding]:
    """Only the broken rules (empty when the settings are safe to deploy)."""
    return [finding for finding in check(settings) if not finding.ok]


def require_safe(settings: ConsumerSettings) -> None:
    """Raise UnsafeConsumerSettingsError naming every broken rule; return quietly if none is broken."""
    broken = problems(settings)
    if broken:
        raise UnsafeConsumerSettingsError(settings.name, broken)


def minimum_visibility_seconds(timeout_seconds: float, batch_size: int) -> float:
    """The smallest visibility timeout that keeps both visibility rules."""
    check_range("timeout_seconds", timeout_seconds, 1, 900)
    check_range("batch_size", batch_size, 1, 10_000)
    return max(timeout_seconds * batch_size, LAMBDA_VISIBILITY_FACTOR * timeout_seconds)


def idle_receives(wait_seconds: float, pollers: int = 1, short_poll_pause_seconds: float = 1.0) -> dict[str, float]:
    """Receives a month on an empty queue, and what they cost, for pollers that wait `wait_seconds` each.

    Arithmetic, not a measurement: a long poll returns after `wait_seconds`
    when nothing arrives; a short poll (wait 0) returns at once, and the
    worker pauses `short_poll_pause_seconds` (our assumption) before the next.
    """
    check_range("wait_seconds", wait_seconds, 0, MAX_WAIT_SECONDS)
    check_range("pollers", pollers, 1, 10_000)
    check_range("short_poll_pause_seconds", short_poll_pause_seconds, 0.01, 60)
    every = wait_seconds if wait_seconds >= 1 else short_poll_pause_seconds
    receives = pollers * MONTH_SECONDS / every
    return {
        "wait_s": wait_seconds,
        "pollers": pollers,
        "empty_receives_a_month": round(receives),
        "usd_a_month": round(receives / 1e6 * SQS_USD_PER_MILLION, 2),
    }
