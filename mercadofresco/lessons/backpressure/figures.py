"""Figures for notebook 14 (backpressure); built with matplotlib.figure.Figure, never pyplot.

Each returns a `show.Picture`: the figure and a text alternative that reads this run's numbers out. A run keeps
one colour and one marker across the panels; the markers are spread out (`_every`) so the lines stay readable.
"""

from __future__ import annotations

from typing import Any

from mercadofresco.lessons import show
from mercadofresco.lessons.show.pictures import RED
from mercadofresco.sims.buffer import FridayResult, clock_time
from mercadofresco.sims.connections import ConnectionResult
from mercadofresco.sims.storm import StormRun

STYLES = ("-", "--", "-.", ":")  # connections: each defence its line style, as well as its colour and marker


def _look(number: int, points: int, runs: int) -> dict[str, Any]:
    """The n-th run's colour and marker, with about ten markers a line, staggered so that equal lines show both."""
    every = max(1, points // 10)
    return {
        "color": show.PALETTE[number % len(show.PALETTE)],
        "marker": show.MARKERS[number % len(show.MARKERS)],
        "markersize": 5,
        "markevery": (number * every // max(runs, 1), every),
    }


def _hour_ticks(ax: Any, start: float, end: float) -> None:
    hours = range(int(start), int(end) + 1)
    ax.set_xticks(list(hours), [clock_time(h) for h in hours], fontsize=8)


def friday(results: dict[str, FridayResult], title: str = "") -> show.Picture:
    """Arrivals against capacity (top); queue depth and the oldest message's age (bottom), one line per run."""
    figure, (top, bottom) = show.canvas(9, 5, 2, 1, sharex=True, height_ratios=(1, 2))
    age = bottom.twinx()
    said = []
    for number, (label, result) in enumerate(results.items()):
        hours = [row["hour"] for row in result.rows]
        look = _look(number, len(hours), len(results))
        top.step(hours, [row["arriving_per_hour"] for row in result.rows], where="post", label=label, **look)
        bottom.plot(hours, [row["depth"] for row in result.rows], label=f"{label}: depth", **look)
        age.plot(hours, [row["oldest_minutes"] for row in result.rows], linestyle=":", linewidth=1, **look)
        summary = result.summary()
        if summary["peak_depth"] == "-":
            said.append(f"{label}: {summary['arrived']:,} arrived, {summary['refused']:,} refused, no queue")
        else:
            empty = summary["empty_again"]
            empty = f"not empty again {empty[4:]}" if empty.startswith("not by") else f"empty again at {empty}"
            said.append(
                f"{label}: {summary['arrived']:,} arrived, the queue peaks at {summary['peak_depth']:,} messages "
                f"at {summary['peak_at']}, the oldest waits up to {summary['oldest_wait_min']:,g} min, {empty}"
            )
    first = next(iter(results.values())).config
    capacity = first.consumer_rate_per_hour
    top.axhline(capacity, color="black", linewidth=1, label=f"consumers: {capacity:g}/h")
    top.set_ylabel("orders/h")
    top.legend(fontsize=8, loc="upper right")
    bottom.set_ylabel("messages in the queue")
    age.set_ylabel("oldest message (min, dotted)")
    bottom.legend(fontsize=8, loc="upper right")
    _hour_ticks(bottom, first.start_hour, first.end_hour)
    bottom.set_xlabel("Friday evening (clock time)")
    top.set_title(title)
    alt = (
        f"Orders arriving per hour against the consumers' {capacity:,g}/h (top); messages in the queue and, dotted, "
        f"the oldest message's age (bottom), {clock_time(first.start_hour)} to {clock_time(first.end_hour)}. "
        f"{'; '.join(said)}."
    )
    return show.Picture(figure, show.titled(title, alt))


def connections(results: list[ConnectionResult], title: str = "") -> show.Picture:
    """Connections asked of aurora-mf-escritor over time, one line per defence, with its limit."""
    figure, ax = show.canvas(9, 3.2)
    limit = results[0].config.db_connections
    said = []
    for number, result in enumerate(results):
        seconds = [row["second"] for row in result.rows]
        asked = [row["connections_asked"] for row in result.rows]
        look = _look(number, len(seconds), len(results))
        summary = result.summary()  # the peak as the table says it (the line shows one sample every few seconds)
        cap = summary["cap"]
        ax.plot(seconds, asked, linestyle=STYLES[number % len(STYLES)], label=cap, **look)
        above = next((s for s, a in zip(seconds, asked, strict=True) if a > limit), None)
        crossing = f"above the limit from {above:g} s" if above is not None else "never above the limit"
        done = summary["minutes"]  # "> 15" when the backlog was not through by the horizon
        done = f"not done within {done[2:]} min" if isinstance(done, str) else f"done in {done:g} min"
        said.append(f"{cap}: at most {summary['peak_connections_asked']:,}, {crossing}, {done}")
    ax.axhline(limit, color="black", linestyle="--", linewidth=1, label=f"aurora-mf-escritor: {limit} connections")
    ax.set_xlabel("seconds since the consumers started")
    ax.set_ylabel("connections asked")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper right")
    # A title (notebook 14's names the database) starts the text: the rest then does not say it again.
    what = "A line per defence" if title else "Connections asked of aurora-mf-escritor, a line per defence,"
    alt = (
        f"{what} over the seconds since the consumers started; dashed, the limit of {limit:,} connections. "
        f"{'; '.join(said)}."
    )
    return show.Picture(figure, show.titled(title, alt))


def upstream_downstream(runs: dict[str, StormRun], alarm_threshold: float, title: str = "") -> show.Picture:
    """Queue depth and DLQ over time: holding parallelism (the queue grows, an alarm fires) vs adding pollers."""
    figure, (left, right) = show.canvas(9, 3.4, 1, 2, sharex=True)
    said = []
    for number, (label, run) in enumerate(runs.items()):
        seconds = [row.seconds for row in run.rows]
        depth = [row.queue_depth for row in run.rows]
        look = _look(number, len(seconds), len(runs))
        left.plot(seconds, depth, label=label, **look)
        right.plot(seconds, [row.in_dlq for row in run.rows], label=label, **look)
        above = [s for s, d in zip(seconds, depth, strict=True) if d > alarm_threshold]
        crossing = f"above the alarm from {above[0]:g} s to {above[-1]:g} s" if above else "never above the alarm"
        said.append(
            f"{label}: the queue peaks at {max(depth):,} orders, {crossing}, and {run.in_dlq:,} orders end in the DLQ"
        )
    config = next(iter(runs.values())).config
    for ax in (left, right):
        ax.axvspan(config.degrade_from, config.degrade_until, color="grey", alpha=0.15)
        ax.set_xlabel("seconds (grey: the gateway is degraded)")
    left.axhline(alarm_threshold, color=RED, linestyle=":", linewidth=1, label="queue alarm")
    left.set_ylabel("orders waiting in the queue")
    right.set_ylabel("orders in the DLQ")
    left.legend(fontsize=8)
    figure.suptitle(title)
    alt = (
        f"Orders waiting in the queue (left, with the {alarm_threshold:,g}-order alarm) and orders in the DLQ "
        f"(right) over seconds; the gateway is degraded from {config.degrade_from:g} s to {config.degrade_until:g} s. "
        f"{'; '.join(said)}."
    )
    return show.Picture(figure, show.titled(title, alt))
