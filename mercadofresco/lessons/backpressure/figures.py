"""Figures for notebook 14 (backpressure); built with matplotlib.figure.Figure, never pyplot."""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from mercadofresco.sims.buffer import FridayResult, clock_time
from mercadofresco.sims.connections import ConnectionResult
from mercadofresco.sims.storm import StormRun

COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")
STYLES = ("-", "--", "-.", ":", "-")


def _hour_ticks(ax: Any, start: float, end: float) -> None:
    hours = range(int(start), int(end) + 1)
    ax.set_xticks(list(hours), [clock_time(h) for h in hours], fontsize=8)


def friday(results: dict[str, FridayResult], title: str = "") -> Figure:
    """Arrivals against capacity (top); queue depth and the oldest message's age (bottom), one line per run."""
    figure = Figure(figsize=(9, 5), layout="constrained")
    top, bottom = figure.subplots(2, 1, sharex=True, height_ratios=(1, 2))
    age = bottom.twinx()
    for color, (label, result) in zip(COLORS, results.items(), strict=False):
        hours = [row["hour"] for row in result.rows]
        top.step(hours, [row["arriving_per_hour"] for row in result.rows], where="post", color=color, label=label)
        bottom.plot(hours, [row["depth"] for row in result.rows], color=color, label=f"{label}: depth")
        age.plot(hours, [row["oldest_minutes"] for row in result.rows], color=color, linestyle=":", linewidth=1)
    capacity = next(iter(results.values())).config.consumer_rate_per_hour
    top.axhline(capacity, color="black", linewidth=1, label=f"consumers: {capacity:g}/h")
    top.set_ylabel("orders/h")
    top.legend(fontsize=8, loc="upper right")
    bottom.set_ylabel("messages in the queue")
    age.set_ylabel("oldest message (min, dotted)")
    bottom.legend(fontsize=8, loc="upper right")
    first = next(iter(results.values())).config
    _hour_ticks(bottom, first.start_hour, first.end_hour)
    bottom.set_xlabel("Friday evening (clock time)")
    top.set_title(title)
    return figure


def connections(results: list[ConnectionResult], title: str = "") -> Figure:
    """Connections asked of aurora-mf-escritor over time, one line per defence, with its limit."""
    figure = Figure(figsize=(9, 3.2), layout="constrained")
    ax = figure.subplots()
    for color, style, result in zip(COLORS, STYLES, results, strict=False):
        ax.plot(
            [row["second"] for row in result.rows],
            [row["connections_asked"] for row in result.rows],
            color=color,
            linestyle=style,
            label=result.summary()["cap"],
        )
    limit = results[0].config.db_connections
    ax.axhline(limit, color="black", linestyle="--", linewidth=1, label=f"aurora-mf-escritor: {limit} connections")
    ax.set_xlabel("seconds since the consumers started")
    ax.set_ylabel("connections asked")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper right")
    return figure


def upstream_downstream(runs: dict[str, StormRun], alarm_threshold: float, title: str = "") -> Figure:
    """Queue depth and DLQ over time: holding parallelism (the queue grows, an alarm fires) vs adding pollers."""
    figure = Figure(figsize=(9, 3.4), layout="constrained")
    left, right = figure.subplots(1, 2, sharex=True)
    for color, (label, run) in zip(COLORS, runs.items(), strict=False):
        seconds = [row.seconds for row in run.rows]
        left.plot(seconds, [row.queue_depth for row in run.rows], color=color, label=label)
        right.plot(seconds, [row.in_dlq for row in run.rows], color=color, label=label)
    config = next(iter(runs.values())).config
    for ax in (left, right):
        ax.axvspan(config.degrade_from, config.degrade_until, color="grey", alpha=0.15)
        ax.set_xlabel("seconds (grey: the gateway is degraded)")
    left.axhline(alarm_threshold, color="tab:red", linestyle=":", linewidth=1, label="queue alarm")
    left.set_ylabel("orders waiting in the queue")
    right.set_ylabel("orders in the DLQ")
    left.legend(fontsize=8)
    figure.suptitle(title)
    return figure
