"""Figures for notebook 14 (backpressure); built with matplotlib.figure.Figure, never pyplot.

Each returns a `show.Picture`: the figure and a text alternative that reads this run's numbers out. A run keeps
one colour and one marker across the panels; the markers are spread out (`_every`) so the lines stay readable.
"""

from __future__ import annotations

from typing import Any

from mercadofresco.i18n import T_, _, number, pgettext
from mercadofresco.lessons import show
from mercadofresco.lessons.show.pictures import RED
from mercadofresco.sims.buffer import FridayResult, clock_time
from mercadofresco.sims.connections import ConnectionResult
from mercadofresco.sims.storm import StormRun

STYLES = ("-", "--", "-.", ":")  # connections: each defence its line style, as well as its colour and marker
# Names notebook 14 gives its evenings (and the buffer's "no queue"), shown as a table cell's words; the names stay
# English as keys, and a table or a figure shows them in the learner's words.
SHOWN_WORDS = (T_("lesson (arrivals stop at 20:00)"), T_("real evening traffic after 20:00"), T_("no queue"))


def _look(index: int, points: int, runs: int) -> dict[str, Any]:
    """The n-th run's colour and marker, with about ten markers a line, staggered so that equal lines show both."""
    every = max(1, points // 10)
    return {
        "color": show.PALETTE[index % len(show.PALETTE)],
        "marker": show.MARKERS[index % len(show.MARKERS)],
        "markersize": 5,
        "markevery": (index * every // max(runs, 1), every),
    }


def _hour_ticks(ax: Any, start: float, end: float) -> None:
    hours = range(int(start), int(end) + 1)
    ax.set_xticks(list(hours), [clock_time(h) for h in hours], fontsize=8)


def friday(results: dict[str, FridayResult], title: str = "") -> show.Picture:
    """Arrivals against capacity (top); queue depth and the oldest message's age (bottom), one line per run."""
    figure, (top, bottom) = show.canvas(9, 5, 2, 1, sharex=True, height_ratios=(1, 2))
    age = bottom.twinx()
    said = []
    for index, (name, result) in enumerate(results.items()):
        label, hours = pgettext("table cell", name), [row["hour"] for row in result.rows]
        look = _look(index, len(hours), len(results))
        top.step(hours, [row["arriving_per_hour"] for row in result.rows], where="post", label=label, **look)
        bottom.plot(hours, [row["depth"] for row in result.rows], label=_("{label}: depth").format(label=label), **look)
        age.plot(hours, [row["oldest_minutes"] for row in result.rows], linestyle=":", linewidth=1, **look)
        summary = result.summary()
        arrived = number(summary["arrived"], ",")
        if summary["peak_depth"] == "-":
            said.append(
                _("{label}: {arrived} arrived, {refused} refused, no queue").format(
                    label=label, arrived=arrived, refused=number(summary["refused"], ",")
                )
            )
        else:
            empty = summary["empty_again"]  # "21:30", or "not by 23:00" when the evening ends with a queue
            if empty.startswith("not by "):
                empty = _("not empty again by {time}").format(time=empty.removeprefix("not by "))
            else:
                empty = _("empty again at {time}").format(time=empty)
            said.append(
                _(
                    "{label}: {arrived} arrived, the queue peaks at {depth} messages at {time}, the oldest waits "
                    "up to {wait} min, {empty}"
                ).format(
                    label=label, arrived=arrived, depth=number(summary["peak_depth"], ","), time=summary["peak_at"],
                    wait=number(summary["oldest_wait_min"], ",g"), empty=empty,
                )
            )  # fmt: skip
    first = next(iter(results.values())).config
    capacity = first.consumer_rate_per_hour
    top.axhline(capacity, color="black", linewidth=1, label=_("consumers: {rate}/h").format(rate=number(capacity, "g")))
    top.set_ylabel(_("orders/h"))
    top.legend(fontsize=8, loc="upper right")
    bottom.set_ylabel(_("messages in the queue"))
    age.set_ylabel(_("oldest message (min, dotted)"))
    bottom.legend(fontsize=8, loc="upper right")
    _hour_ticks(bottom, first.start_hour, first.end_hour)
    bottom.set_xlabel(_("Friday evening (clock time)"))
    top.set_title(title)
    alt = _(
        "Orders arriving per hour against the consumers' {rate}/h (top); messages in the queue and, dotted, "
        "the oldest message's age (bottom), {start} to {end}."
    ).format(rate=number(capacity, ",g"), start=clock_time(first.start_hour), end=clock_time(first.end_hour))
    alt += " " + "; ".join(said) + "."
    return show.Picture(figure, show.titled(title, alt))


def connections(results: list[ConnectionResult], title: str = "") -> show.Picture:
    """Connections asked of aurora-mf-escritor over time, one line per defence, with its limit."""
    figure, ax = show.canvas(9, 3.2)
    limit = results[0].config.db_connections
    said = []
    for index, result in enumerate(results):
        seconds = [row["second"] for row in result.rows]
        asked = [row["connections_asked"] for row in result.rows]
        look = _look(index, len(seconds), len(results))
        summary = result.summary()  # the peak as the table says it (the line shows one sample every few seconds)
        cap = pgettext("table cell", summary["cap"])
        ax.plot(seconds, asked, linestyle=STYLES[index % len(STYLES)], label=cap, **look)
        above = next((s for s, a in zip(seconds, asked, strict=True) if a > limit), None)
        if above is not None:
            crossing = _("above the limit from {seconds} s").format(seconds=number(above, "g"))
        else:
            crossing = _("never above the limit")
        done = summary["minutes"]  # "> 15" when the backlog was not through by the horizon
        if isinstance(done, str):
            done = _("not done within {minutes} min").format(minutes=done[2:])
        else:
            done = _("done in {minutes} min").format(minutes=number(done, "g"))
        said.append(
            _("{cap}: at most {peak}, {crossing}, {done}").format(
                cap=cap, peak=number(summary["peak_connections_asked"], ","), crossing=crossing, done=done
            )
        )
    limited = _("aurora-mf-escritor: {limit} connections").format(limit=number(limit))
    ax.axhline(limit, color="black", linestyle="--", linewidth=1, label=limited)
    ax.set_xlabel(_("seconds since the consumers started"))
    ax.set_ylabel(_("connections asked"))
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper right")
    # A title (notebook 14's names the database) starts the text: the rest then does not say it again.
    if title:
        alt = _(
            "A line per defence over the seconds since the consumers started; dashed, the limit of {limit} connections."
        )
    else:
        alt = _(
            "Connections asked of aurora-mf-escritor, a line per defence, over the seconds since the consumers "
            "started; dashed, the limit of {limit} connections."
        )
    alt = alt.format(limit=number(limit, ",")) + " " + "; ".join(said) + "."
    return show.Picture(figure, show.titled(title, alt))


def upstream_downstream(runs: dict[str, StormRun], alarm_threshold: float, title: str = "") -> show.Picture:
    """Queue depth and DLQ over time: holding parallelism (the queue grows, an alarm fires) vs adding pollers."""
    figure, (left, right) = show.canvas(9, 3.4, 1, 2, sharex=True)
    said = []
    for index, (name, run) in enumerate(runs.items()):
        label, seconds = pgettext("table cell", name), [row.seconds for row in run.rows]
        depth = [row.queue_depth for row in run.rows]
        look = _look(index, len(seconds), len(runs))
        left.plot(seconds, depth, label=label, **look)
        right.plot(seconds, [row.in_dlq for row in run.rows], label=label, **look)
        above = [s for s, d in zip(seconds, depth, strict=True) if d > alarm_threshold]
        if above:
            crossing = _("above the alarm from {start} s to {end} s").format(
                start=number(above[0], "g"), end=number(above[-1], "g")
            )
        else:
            crossing = _("never above the alarm")
        said.append(
            _("{label}: the queue peaks at {depth} orders, {crossing}, and {in_dlq} orders end in the DLQ").format(
                label=label, depth=number(max(depth), ","), crossing=crossing, in_dlq=number(run.in_dlq, ",")
            )
        )
    config = next(iter(runs.values())).config
    for ax in (left, right):
        ax.axvspan(config.degrade_from, config.degrade_until, color="grey", alpha=0.15)
        ax.set_xlabel(_("seconds (grey: the gateway is degraded)"))
    left.axhline(alarm_threshold, color=RED, linestyle=":", linewidth=1, label=_("queue alarm"))
    left.set_ylabel(_("orders waiting in the queue"))
    right.set_ylabel(_("orders in the DLQ"))
    left.legend(fontsize=8)
    figure.suptitle(title)
    alt = _(
        "Orders waiting in the queue (left, with the {threshold}-order alarm) and orders in the DLQ (right) over "
        "seconds; the gateway is degraded from {start} s to {end} s."
    ).format(
        threshold=number(alarm_threshold, ",g"), start=number(config.degrade_from, "g"),
        end=number(config.degrade_until, "g"),
    )  # fmt: skip
    alt += " " + "; ".join(said) + "."
    return show.Picture(figure, show.titled(title, alt))
