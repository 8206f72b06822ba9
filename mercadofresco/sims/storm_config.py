"""The Friday of the retry storm (notebook 08) as plain numbers: the load, the gateway's bad minutes, the pollers,
the queue, and the SDK's retries and the breaker's policy. The simulation (`storm`) and its gateway
(`storm_gateway`) both read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mercadofresco.errors import check_range
from mercadofresco.i18n import _
from mercadofresco.models import gateway as gw
from mercadofresco.patterns import backoff, breaker, retry


@dataclass(frozen=True)
class StormConfig:
    """The Friday of the storm, in seconds from the start."""

    orders_per_second: float = 12.0
    horizon_seconds: float = 600.0
    baseline_latency_seconds: float = gw.BASELINE_LATENCY_SECONDS
    degraded_latency_seconds: float = 4.0
    degrade_from: float = 60.0
    degrade_until: float = 360.0
    max_in_flight: int = 100
    degraded_max_in_flight: int = 40
    collapse_rejections: int = 30
    down_seconds: float = 45.0
    start_pollers: int = 20
    max_pollers: int = 60
    scale_every_seconds: float = 60.0
    visibility_timeout_seconds: float = 30.0
    max_receive_count: int = 4
    # the SDK's retries without the jitter defence: 3 attempts, exponential from 0.1 s up to 5 s
    sdk_policy: retry.RetryPolicy = field(
        default_factory=lambda: retry.RetryPolicy(backoff.Exponential(base=0.1, cap=5.0), max_attempts=3)
    )
    breaker_policy: breaker.BreakerPolicy = field(default_factory=breaker.BreakerPolicy)  # 20 failures, 30 s open

    def __post_init__(self) -> None:
        check_range("orders_per_second", self.orders_per_second, 0, 50, low_excluded=True)
        check_range("horizon_seconds", self.horizon_seconds, 60, 3600)
        check_range("max_pollers", self.max_pollers, 1, 1000)
        check_range(
            "start_pollers", self.start_pollers, 1, self.max_pollers, why=_("at most {name}").format(name="max_pollers")
        )
        check_range("max_in_flight", self.max_in_flight, 1, 10_000)
        check_range(
            "degraded_max_in_flight",
            self.degraded_max_in_flight,
            1,
            self.max_in_flight,
            why=_("at most {name}").format(name="max_in_flight"),
        )
        if not 0 <= self.degrade_from < self.degrade_until <= self.horizon_seconds:
            said = _("need {rule}; got {first}, {second}")
            raise ValueError(
                said.format(
                    rule="0 <= degrade_from < degrade_until <= horizon_seconds",
                    first=self.degrade_from,
                    second=self.degrade_until,
                )
            )
        if not isinstance(self.sdk_policy.backoff, backoff.Exponential):
            said = _("{name} must back off exponentially (the jitter defence draws over its window); got {value}")
            raise ValueError(said.format(name="sdk_policy", value=self.sdk_policy.backoff))
        check_range("max_receive_count", self.max_receive_count, 1, 1000)
