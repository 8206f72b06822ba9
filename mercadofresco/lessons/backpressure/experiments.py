"""Section 14's experiments beyond the simulations themselves (notebook 14).

- `upstream_vs_downstream`: the retry storm's Friday (`sims.storm`) twice, once
  holding parallelism at 20 pollers (the queue grows, an alarm on its depth
  fires) and once letting Lambda add pollers against the degraded gateway;
- `throttle_limits`: the ERP's notices sent flat out, under a rate limit (an API
  destination's or an SNS HTTP/S subscription's), and under a Map's
  MaxConcurrency, which caps calls in flight, not calls a second;
- `evening`: the widget's experiment, the Friday buffer and the connection limit
  for one choice of arrivals, consumers and cap.
"""

from __future__ import annotations

from typing import Any

from mercadofresco import alarms
from mercadofresco.i18n import T_, _, number
from mercadofresco.sims import buffer, connections, storm, throttle

DEPTH_ALARM = alarms.AlarmRule(
    name="cola-mercadofresco-pedidos-profundidad",
    namespace="AWS/SQS",
    metric_name="ApproximateNumberOfMessagesVisible",
    threshold=500,
    period_seconds=60,
    # world.ORDERS_QUEUE, written out: this module stays free of boto3 and moto, so notebook 14 starts fast
    dimensions=(("QueueName", "cola-mercadofresco-pedidos"),),
)


def upstream_vs_downstream(seed: int = 0) -> dict[str, storm.StormRun]:
    """The storm's Friday with parallelism held (backpressure upstream) and with pollers added (downstream)."""
    config = storm.StormConfig()
    return {
        T_("hold 20 pollers, let the queue grow"): storm.run_storm(config, storm.Defences(concurrency_cap=True), seed),
        T_("add pollers, 20 -> 60"): storm.run_storm(config, storm.Defences(), seed),
    }


def first_alarm_second(run: storm.StormRun, rule: alarms.AlarmRule = DEPTH_ALARM) -> int | None:
    """The first sample (seconds) at which the queue's depth breaches the rule; None if it never does."""
    return next((row.seconds for row in run.rows if rule.breached_by(row.queue_depth)), None)


def outcome_rows(runs: dict[str, storm.StormRun]) -> list[dict[str, Any]]:
    """One line per run: what the customer and the gateway got, and when the queue alarm fired."""
    return [
        {
            "policy": label,
            "max_queue": max(row.queue_depth for row in run.rows),
            "alarm_at_s": first_alarm_second(run),
            "charged": run.charged,
            "in_dlq": run.in_dlq,
            "gateway_calls": run.gateway_calls,
            "collapses": len(run.collapses),
        }
        for label, run in runs.items()
    ]


def throttle_limits(rate_per_second: int = 15, seed: int = 0) -> list[dict[str, Any]]:
    """The ERP notices flat out, under a rate limit, and under a Map whose MaxConcurrency is the rate or fits it."""
    flat_out = throttle.ThrottleConfig()
    in_flight = throttle.concurrency_for_rate(rate_per_second, flat_out.call_seconds)
    configs = {
        _("flat out, {senders} senders").format(senders=number(flat_out.senders)): flat_out,
        _("rate limit {rate}/s").format(rate=number(rate_per_second)): throttle.ThrottleConfig(
            rate_limit_per_second=rate_per_second
        ),
        f"Map MaxConcurrency {rate_per_second}": throttle.ThrottleConfig(senders=rate_per_second),
        f"Map MaxConcurrency {in_flight}": throttle.ThrottleConfig(senders=in_flight),
    }
    rows = []
    for label, config in configs.items():
        summary = throttle.run_throttle(config, seed).summary()
        del summary["our_limit"]
        # callers in flight allow senders / call time calls a second; a rate limit can only lower that
        ceiling = throttle.rate_for_concurrency(config.senders, config.call_seconds)
        ceiling = min(ceiling, config.rate_limit_per_second or ceiling)
        rows.append({"limit": label, "max_calls_per_s": round(ceiling)} | summary)
    return rows


def evening(
    profile: str, peak_per_hour: int, consumer_rate_per_hour: int, cap: str, cap_value: int, seed: int = 0
) -> tuple[buffer.FridayResult, connections.ConnectionResult]:
    """The widget's experiment: the buffer for one evening, and the database for one cap."""
    if profile not in buffer.PROFILES:
        said = _("profile must be one of {profiles}; got {profile}")
        raise ValueError(said.format(profiles=", ".join(buffer.PROFILES), profile=repr(profile)))
    friday = buffer.FridayConfig(
        profile=buffer.with_peak(buffer.PROFILES[profile], peak_per_hour), consumer_rate_per_hour=consumer_rate_per_hour
    )
    limits = connections.ConnectionConfig(cap=cap, cap_value=cap_value)
    return buffer.run_friday(friday, seed), connections.run_connections(limits, seed)
