"""Figures for notebook 13 (the outbox); built with matplotlib.figure.Figure, never pyplot."""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from mercadofresco.lessons import show
from mercadofresco.lessons.outbox.experiments import LossResult
from mercadofresco.lessons.outbox.pipe_operations import LAG_ALARM_SECONDS
from mercadofresco.models import stream_pipe
from mercadofresco.patterns import outbox

OUTCOMES = ("lost", "phantom", "duplicated")


def losses(results: list[LossResult], title: str = "") -> Figure:
    """Lost events, phantom events and duplicates, one group of bars per design."""
    rows = [
        {"design": result.design.replace(", ", ",\n"), "outcome": outcome, "events": getattr(result, outcome)}
        for result in results
        for outcome in OUTCOMES
    ]
    return show.bars(rows, "design", "events", group="outcome", title=title, ylabel="events")


def backlog(rows: list[dict[str, Any]], down_minutes: int, title: str = "") -> Figure:
    """Pending rows and the age of the oldest while the publisher is down, with both thresholds."""
    figure = Figure(figsize=(8, 3.2), layout="constrained")
    ax = figure.subplots()
    minutes = [row["minute"] for row in rows]
    ax.plot(minutes, [row["pending"] for row in rows], label="pending rows")
    ax.axhline(outbox.PENDING_ALARM_ROWS, color="tab:blue", linestyle=":", linewidth=1)
    ax.set_ylabel("pending rows")
    age_ax = ax.twinx()
    age_ax.plot(minutes, [row["oldest_seconds"] / 60 for row in rows], color="tab:orange", label="oldest (min)")
    age_ax.set_ylabel("age of the oldest pending row (min)")
    ax.axvspan(0, down_minutes, color="grey", alpha=0.12, label="publisher down")
    for alarm, color, height in (("pending_alarm", "tab:blue", 0.9), ("age_alarm", "tab:orange", 0.5)):
        fired = next((row["minute"] for row in rows if row[alarm] == "ALARM"), None)
        if fired is not None:
            ax.axvline(fired, color=color, linestyle="--", linewidth=1)
            ax.annotate(f" {alarm} at minute {fired:g}", (fired, ax.get_ylim()[1] * height), fontsize=8, color=color)
    ax.set_xlabel("minutes since the publisher stopped (virtual time)")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(title)
    return figure


def pipe_lag(rows: list[dict[str, Any]], stops_at: float, down_hours: float, title: str = "") -> Figure:
    """Age of the oldest undelivered stream record while the pipe is stopped, with the 24-hour trim and the alarm."""
    figure = Figure(figsize=(8, 3.2), layout="constrained")
    ax = figure.subplots()
    ax.plot([row["hour"] for row in rows], [row["age_hours"] for row in rows], marker=".", label="oldest undelivered")
    ax.axhline(stream_pipe.RETENTION_SECONDS / 3_600, color="tab:red", linestyle=":", label="stream trims at 24 h")
    ax.axhline(LAG_ALARM_SECONDS / 3_600, color="tab:orange", linestyle="--", linewidth=1, label="lag alarm (1 h)")
    ax.axvspan(stops_at, stops_at + down_hours, color="grey", alpha=0.12, label="pipe stopped")
    ax.set_xlabel("hours (virtual time)")
    ax.set_ylabel("age (h)")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(title)
    return figure
