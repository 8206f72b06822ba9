"""Figures for notebook 13 (the outbox); built with matplotlib.figure.Figure, never pyplot.

Each returns a `show.Picture`: the figure and a text alternative that reads this run's numbers out.
"""

from __future__ import annotations

from typing import Any

from mercadofresco.lessons import show
from mercadofresco.lessons.outbox.experiments import LossResult
from mercadofresco.lessons.outbox.pipe_operations import LAG_ALARM_SECONDS
from mercadofresco.lessons.show.pictures import BLUE, DARK_ORANGE, RED
from mercadofresco.models import stream_pipe
from mercadofresco.patterns import outbox

OUTCOMES = ("lost", "phantom", "duplicated")


def losses(results: list[LossResult], title: str = "") -> show.Picture:
    """Lost events, phantom events and duplicates, one group of bars per design."""
    rows = [
        {"design": result.design.replace(", ", ",\n"), "outcome": outcome, "events": getattr(result, outcome)}
        for result in results
        for outcome in OUTCOMES
    ]
    picture = show.bars(rows, "design", "events", group="outcome", title=title, ylabel="events")
    said = [f"{r.design}: {r.lost:,} lost, {r.phantom:,} phantom, {r.duplicated:,} duplicated" for r in results]
    first = results[0]
    same = all((r.orders, r.crashes) == (first.orders, first.crashes) for r in results)
    deaths = f" Each design takes {first.orders:,} orders and {first.crashes:,} process deaths." if same else ""
    alt = (
        "Bar chart: events lost, phantom (an event for an order that does not exist) and duplicated, "
        f"a group of bars per design.{deaths} {'; '.join(said)}."
    )  # said per design: the bars' own text would read the designs with their line breaks
    return show.Picture(picture.figure, show.titled(title, alt))


def backlog(rows: list[dict[str, Any]], down_minutes: int, title: str = "") -> show.Picture:
    """Pending rows and the age of the oldest while the publisher is down, with both thresholds."""
    figure, ax = show.canvas()
    minutes = [row["minute"] for row in rows]
    pending = [row["pending"] for row in rows]
    every = max(1, len(rows) // 10)
    (rows_line,) = ax.plot(minutes, pending, color=BLUE, marker="o", markevery=every, label="pending rows")
    ax.axhline(outbox.PENDING_ALARM_ROWS, color=BLUE, linestyle=":", linewidth=1)
    ax.set_ylabel("pending rows")
    age_ax = ax.twinx()
    (age_line,) = age_ax.plot(
        minutes, [row["oldest_seconds"] / 60 for row in rows], color=DARK_ORANGE, linestyle="--", marker="s",
        markevery=(every // 2, every), label="oldest (min)",
    )  # fmt: skip
    age_ax.set_ylabel("age of the oldest pending row (min)")
    ax.axvspan(0, down_minutes, color="grey", alpha=0.12)
    ax.text(down_minutes / 2, 0.02, "publisher down", transform=ax.get_xaxis_transform(), ha="center", fontsize=8)
    fired = {}
    for alarm, color, height in (("pending_alarm", BLUE, 0.9), ("age_alarm", DARK_ORANGE, 0.5)):
        fired[alarm] = next((row["minute"] for row in rows if row[alarm] == "ALARM"), None)
        if fired[alarm] is not None:
            at = fired[alarm]
            ax.axvline(at, color=color, linestyle="--", linewidth=1)
            ax.annotate(f" {alarm} at minute {at:g}", (at, ax.get_ylim()[1] * height), fontsize=8, color=color)
    ax.set_xlabel("minutes since the publisher stopped (virtual time)")
    ax.legend(handles=[rows_line, age_line], loc="upper left", fontsize=8)
    ax.set_title(title)
    peak = max(pending)
    at_peak = minutes[pending.index(peak)]
    drained = next((m for m, p in zip(minutes, pending, strict=True) if m > at_peak and p == 0), None)
    back = f"back to 0 at minute {drained:g}" if drained is not None else "not back to 0 by the end"
    alarms = [f"{a} {f'went to ALARM at minute {at:g}' if at is not None else 'stayed OK'}" for a, at in fired.items()]
    alt = (
        f"Pending rows in the outbox (left axis, against the {outbox.PENDING_ALARM_ROWS:,}-row threshold) and the "
        f"age of the oldest pending row (right axis, dashed), by minute; the publisher is down for the first "
        f"{down_minutes:g} minutes. Pending rows peak at {peak:,} at minute {at_peak:g}, {back}; "
        f"{' and '.join(alarms)}."
    )
    return show.Picture(figure, show.titled(title, alt))


def pipe_lag(rows: list[dict[str, Any]], stops_at: float, down_hours: float, title: str = "") -> show.Picture:
    """Age of the oldest undelivered stream record while the pipe is stopped, with the 24-hour trim and the alarm."""
    figure, ax = show.canvas()
    hours, ages = [row["hour"] for row in rows], [row["age_hours"] for row in rows]
    trim, alarm = stream_pipe.RETENTION_SECONDS / 3_600, LAG_ALARM_SECONDS / 3_600
    ax.plot(hours, ages, color=BLUE, marker=".", label="oldest undelivered")
    ax.axhline(trim, color=RED, linestyle=":", label=f"stream trims at {trim:g} h")
    ax.axhline(alarm, color=DARK_ORANGE, linestyle="--", linewidth=1, label=f"lag alarm ({alarm:g} h)")
    ax.axvspan(stops_at, stops_at + down_hours, color="grey", alpha=0.12, label="pipe stopped")
    ax.set_xlabel("hours (virtual time)")
    ax.set_ylabel("age (h)")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(title)
    peak = max(ages)
    at_peak = [h for h, a in zip(hours, ages, strict=True) if a == peak]
    held = f"from hour {at_peak[0]:g} to hour {at_peak[-1]:g}" if len(at_peak) > 1 else f"at hour {at_peak[0]:g}"
    late = next((h for h, a in zip(hours, ages, strict=True) if a > alarm), None)
    crossed = f"above the lag alarm from hour {late:g}" if late is not None else "never above the lag alarm"
    trimmed = "the stream's trim" if peak >= trim else f"below the {trim:g} h trim"
    alt = (
        f"Age of the oldest undelivered stream record, in hours of virtual time; the pipe is stopped from hour "
        f"{stops_at:g} to hour {stops_at + down_hours:g}. It peaks at {peak:g} h ({trimmed}) {held}, "
        f"{crossed}, and is {ages[-1]:g} h at hour {hours[-1]:g}."
    )
    return show.Picture(figure, show.titled(title, alt))
