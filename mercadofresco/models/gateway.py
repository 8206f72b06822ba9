"""The payment gateway, as a model: AWS has no such service, so the workbook writes one.

`PaymentGateway` is the provider's side: it keeps a ledger of every charge it
made and honours an `Idempotency-Key` (the same key returns the same charge, no
new one). Its latency follows the virtual clock (240 ms normally, a spike such
as 150 s at 19:14) and it can be told to fail: the response lost after the
charge was made, a 503, a 429 with Retry-After, a declined card (402).

`GatewayClient` is MercadoFresco's side: how long it waits for a response (the
read timeout) and how its retry layer retries (a `retry.RetryPolicy`; by default
the naive immediate retries of notebook 01, disciplined ones in notebooks 05-07).

What "the SDK" stands for here: the payment provider is not an AWS service, so
botocore never sees these calls and never retries them (botocore retries only
the AWS calls it makes itself). The client stands for the HTTP client's retry
layer MercadoFresco put in front of the gateway (the provider's SDK, or a
requests/urllib3 Retry), with an SDK's settings (exercise 1's are
`max_attempts=5` and a 180 s read timeout). The lesson's solution 1(a) says
botocore retries the charge; read that as this layer.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter, deque
from dataclasses import dataclass, field
from decimal import Decimal
from enum import Enum

from mercadofresco.clock import VirtualClock, Waiter
from mercadofresco.errors import MercadoFrescoError, check_range
from mercadofresco.i18n import _, number
from mercadofresco.patterns import backoff, retry, retry_budget, retry_rules

BASELINE_LATENCY_SECONDS = 0.240
MAX_FAULTS = 1_000  # calls `fail_next` may plan at once


class Fault(Enum):
    """A way the next call can go wrong."""

    RESPONSE_LOST = "response lost after the charge"
    UNAVAILABLE = "503 Service Unavailable"
    THROTTLED = "429 Too Many Requests"


# -- errors the caller sees -------------------------------------------------------
class GatewayError(MercadoFrescoError):
    """A charge call did not return a charge."""

    status: int | None = None
    outcome_unknown = False  # True when the charge may have been made all the same


class GatewayTimeoutError(GatewayError):
    """The caller stopped waiting (read timeout); the charge may or may not exist."""

    outcome_unknown = True

    def __init__(self, waited_seconds: float) -> None:
        super().__init__(_("no response after {seconds} s (read timeout)").format(seconds=number(waited_seconds, "g")))
        self.waited_seconds = waited_seconds


class ResponseLostError(GatewayError):
    """The connection dropped before the response arrived; the charge may exist."""

    outcome_unknown = True


class GatewayUnavailableError(GatewayError):
    """503: the gateway could not take the request; nothing was charged."""

    status = 503


class ThrottledError(GatewayError):
    """429: too many requests; come back after `retry_after_seconds`."""

    status = 429

    def __init__(self, retry_after_seconds: float) -> None:
        super().__init__(f"429 Too Many Requests, Retry-After: {retry_after_seconds:g}")
        self.retry_after_seconds = retry_after_seconds


class CardDeclinedError(GatewayError):
    """402: the card was declined; retrying will not change that."""

    status = 402


# -- data -------------------------------------------------------------------------
@dataclass(frozen=True)
class Charge:
    """One line of the gateway's ledger: money actually taken from a customer."""

    referencia_cobro: str
    pedido_id: str
    importe: Decimal
    idempotency_key: str | None
    cobrado_en: dt.datetime


@dataclass(frozen=True)
class LatencySpike:
    """From `starts_at` to `ends_at` every call takes `latency_seconds`."""

    starts_at: dt.datetime
    ends_at: dt.datetime
    latency_seconds: float


@dataclass(frozen=True)
class LatencyProfile:
    """How long the gateway takes to answer at each instant."""

    baseline_seconds: float = BASELINE_LATENCY_SECONDS
    spikes: tuple[LatencySpike, ...] = ()

    def latency_at(self, instant: dt.datetime) -> float:
        """Seconds a call started at `instant` takes."""
        for spike in self.spikes:
            if spike.starts_at <= instant < spike.ends_at:
                return spike.latency_seconds
        return self.baseline_seconds


def spike_at(start: dt.datetime, minutes: float, latency_seconds: float) -> LatencyProfile:
    """A profile with one spike, e.g. 150 s for ten minutes from 19:14."""
    return LatencyProfile(spikes=(LatencySpike(start, start + dt.timedelta(minutes=minutes), latency_seconds),))


@dataclass
class PaymentGateway:
    """The provider: charges cards, keeps the ledger, honours Idempotency-Key."""

    clock: VirtualClock
    latency: LatencyProfile = field(default_factory=LatencyProfile)
    declined_orders: set[str] = field(default_factory=set)
    ledger: list[Charge] = field(default_factory=list)
    calls: int = 0
    _by_key: dict[str, Charge] = field(default_factory=dict, repr=False)
    _faults: deque[tuple[Fault, float]] = field(default_factory=deque, repr=False)
    _outage: tuple[Fault, float] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        _check_latency(self.latency)

    def set_latency(self, latency: LatencyProfile) -> None:
        """From now on, answer as `latency` says (e.g. `spike_at(clock.now(), minutes=10, latency_seconds=150)`)."""
        _check_latency(latency)
        self.latency = latency

    def fail_next(self, fault: Fault, times: int = 1, retry_after_seconds: float = 5.0) -> None:
        """Make the next `times` calls fail with `fault`."""
        if not isinstance(fault, Fault):
            said = _("fault must be a {kind} (e.g. {example}), not {value}")
            raise TypeError(said.format(kind="gateway.Fault", example="gateway.Fault.RESPONSE_LOST", value=repr(fault)))
        check_range("times", times, 0, MAX_FAULTS)
        self._faults.extend([(fault, retry_after_seconds)] * times)

    def fail_every_call(self, fault: Fault, retry_after_seconds: float = 5.0) -> None:
        """Make every call fail with `fault` (after any planned by `fail_next`) until `recover()`."""
        if not isinstance(fault, Fault):
            said = _("fault must be a {kind} (e.g. {example}), not {value}")
            raise TypeError(said.format(kind="gateway.Fault", example="gateway.Fault.UNAVAILABLE", value=repr(fault)))
        self._outage = (fault, retry_after_seconds)

    def recover(self) -> None:
        """End an outage begun by `fail_every_call`."""
        self._outage = None

    def charge(
        self,
        pedido_id: str,
        importe: Decimal,
        *,
        idempotency_key: str | None = None,
        read_timeout_seconds: float = 30.0,
        waiter: Waiter | None = None,
    ) -> Charge:
        """Charge an order; the caller (`waiter`) waits for the answer, up to its read timeout."""
        waiter = waiter or self.clock
        self.calls += 1
        started = waiter.now()
        latency = self.latency.latency_at(started)
        fault, retry_after = self._faults.popleft() if self._faults else self._outage or (None, 0.0)

        if fault is Fault.THROTTLED:
            waiter.wait(min(self.latency.baseline_seconds, read_timeout_seconds))
            raise ThrottledError(retry_after)
        if fault is Fault.UNAVAILABLE:
            waiter.wait(min(self.latency.baseline_seconds, read_timeout_seconds))
            raise GatewayUnavailableError("503 Service Unavailable")
        if pedido_id in self.declined_orders:
            waiter.wait(min(latency, read_timeout_seconds))
            raise CardDeclinedError(_("402 card declined for {pedido_id}").format(pedido_id=pedido_id))

        charge = self._charge_once(pedido_id, importe, idempotency_key, started)
        # The money is taken now; only the answer is slow, lost or late.
        if latency > read_timeout_seconds:
            waiter.wait(read_timeout_seconds)
            raise GatewayTimeoutError(read_timeout_seconds)
        waiter.wait(latency)
        if fault is Fault.RESPONSE_LOST:
            raise ResponseLostError(_("connection reset before the answer for {pedido_id}").format(pedido_id=pedido_id))
        return charge

    def _charge_once(self, pedido_id: str, importe: Decimal, key: str | None, at: dt.datetime) -> Charge:
        if key is not None and key in self._by_key:
            return self._by_key[key]
        charge = Charge(f"ch_{len(self.ledger) + 1:05d}", pedido_id, importe, key, at)
        self.ledger.append(charge)
        if key is not None:
            self._by_key[key] = charge
        return charge

    def charges_per_order(self) -> Counter[str]:
        """How many times each order was charged."""
        return Counter(charge.pedido_id for charge in self.ledger)

    def charges_for(self, pedido_id: str) -> list[Charge]:
        """Every charge made for one order."""
        return [charge for charge in self.ledger if charge.pedido_id == pedido_id]


def _check_latency(latency: object) -> None:
    """Refuse what is not a LatencyProfile now: latency=150 would only fail later, inside a consumer."""
    if not isinstance(latency, LatencyProfile):
        said = _(
            "latency must be a LatencyProfile, not {type} {value}: use "
            "gateway.spike_at(start, minutes, latency_seconds) or gateway.LatencyProfile(baseline_seconds=...)"
        )
        raise TypeError(said.format(type=type(latency).__name__, value=repr(latency)))


def wrong_sdk_default(error: BaseException, idempotent: bool, now: dt.datetime | None = None) -> retry_rules.Decision:
    """WRONG, on purpose: a retry layer's default, which retries any timeout, lost response, 503 or 429, key or not.

    It stands for an HTTP client's retries configured like an SDK's (botocore
    retries only AWS calls, never the gateway's): the shape of botocore's
    standard mode, which retries read timeouts whatever the call does.

    A timeout or a lost response may have charged the card; retrying it without an
    idempotency key charges it again (exercise 1's second mechanism). It is the
    client's default only to show that; `retry_rules.classify` is the right one.
    """
    if getattr(error, "outcome_unknown", False) or getattr(error, "status", None) in (429, 503):
        return retry_rules.Decision(retry_rules.Verdict.RETRY, "the SDK retries it, whatever the call does")
    return retry_rules.Decision(retry_rules.Verdict.DO_NOT_RETRY, "the SDK does not retry it")


def is_permanent_failure(exc: Exception) -> bool:
    """A failure that retrying cannot fix: the card was declined (402)."""
    return isinstance(exc, CardDeclinedError)


@dataclass
class GatewayClient:
    """MercadoFresco's side of the call: read timeout, retry policy, and whether the key is sent.

    By default it behaves like an HTTP client whose retry layer is set up like an
    SDK's default (`wrong_sdk_default`; not botocore, which never sees a call to
    the gateway): up to `max_attempts` attempts, retrying timeouts, lost
    responses, 503 and 429 at once, whether or not the charge is idempotent
    (exercise 1's second mechanism). Pass a `retry.RetryPolicy` (backoff, classifier) and optionally
    a shared `retry_budget.RetryBudget` to retry with discipline; the waits are spent on
    the caller's waiter.
    """

    gateway: PaymentGateway
    read_timeout_seconds: float = 30.0
    max_attempts: int = 1
    send_idempotency_key: bool = True
    attempts: int = 0
    policy: retry.RetryPolicy | None = None
    budget: retry_budget.RetryBudget | None = None
    rng: random.Random = field(default_factory=lambda: random.Random(0), repr=False)
    retrier: retry.Retrier = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.read_timeout_seconds <= 0:
            said = _("{name} must be positive; got {value}")
            raise ValueError(said.format(name="read_timeout_seconds", value=self.read_timeout_seconds))
        check_range("max_attempts", self.max_attempts, 1, 20)
        if self.policy is None:
            self.policy = retry.RetryPolicy(backoff.NoBackoff(), self.max_attempts, should_retry=wrong_sdk_default)
        elif self.max_attempts not in (1, self.policy.max_attempts):
            raise ValueError(_("give max_attempts either to the client or to its policy, not two different values"))
        self.max_attempts = self.policy.max_attempts
        self.retrier = retry.Retrier(self.policy, self.rng, self.budget)

    def charge(
        self, pedido_id: str, importe: Decimal, clave: str | None = None, waiter: Waiter | None = None
    ) -> Charge:
        """Charge an order, passing `clave` as Idempotency-Key if configured to."""
        key = clave if self.send_idempotency_key else None
        waiter = waiter or self.gateway.clock

        def attempt() -> Charge:
            self.attempts += 1
            return self.gateway.charge(
                pedido_id, importe, idempotency_key=key, read_timeout_seconds=self.read_timeout_seconds, waiter=waiter
            )

        return self.retrier.call(attempt, waiter, idempotent=key is not None)
