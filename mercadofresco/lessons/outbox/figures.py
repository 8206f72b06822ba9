"""Figures for notebook 13 (the outbox); built with matplotlib.figure.Figure, never pyplot.

Each returns a `show.Picture`: the figure and a text alternative that reads this run's numbers out.
"""

from __future__ import annotations

from typing import Any

from mercadofresco.i18n import _, number, pgettext
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
    picture = show.bars(rows, "design", "events", group="outcome", title=title, ylabel=_("events"))
    said = [
        _("{design}: {lost} lost, {phantom} phantom, {duplicated} duplicated").format(
            design=r.design, lost=number(r.lost, ","), phantom=number(r.phantom, ","),
            duplicated=number(r.duplicated, ","),
        )
        for r in results
    ]  # fmt: skip
    first = results[0]
    same = all((r.orders, r.crashes) == (first.orders, first.crashes) for r in results)
    alt = _(
        "Bar chart: events lost, phantom (an event for an order that does not exist) and duplicated, "
        "a group of bars per design."
    )
    if same:
        alt += " " + _("Each design takes {orders} orders and {crashes} process deaths.").format(
            orders=number(first.orders, ","), crashes=number(first.crashes, ",")
        )
    alt += " " + "; ".join(said) + "."  # said per design: the bars' own text would read the designs' line breaks
    return show.Picture(picture.figure, show.titled(title, alt))


def backlog(rows: list[dict[str, Any]], down_minutes: int, title: str = "") -> show.Picture:
    """Pending rows and the age of the oldest while the publisher is down, with both thresholds."""
    figure, ax = show.canvas()
    minutes = [row["minute"] for row in rows]
    pending = [row["pending"] for row in rows]
    every = max(1, len(rows) // 10)
    (rows_line,) = ax.plot(minutes, pending, color=BLUE, marker="o", markevery=every, label=_("pending rows"))
    ax.axhline(outbox.PENDING_ALARM_ROWS, color=BLUE, linestyle=":", linewidth=1)
    ax.set_ylabel(_("pending rows"))
    age_ax = ax.twinx()
    (age_line,) = age_ax.plot(
        minutes, [row["oldest_seconds"] / 60 for row in rows], color=DARK_ORANGE, linestyle="--", marker="s",
        markevery=(every // 2, every), label=pgettext("oldest pending row", "oldest (min)"),
    )  # fmt: skip
    age_ax.set_ylabel(_("age of the oldest pending row (min)"))
    ax.axvspan(0, down_minutes, color="grey", alpha=0.12)
    ax.text(down_minutes / 2, 0.02, _("publisher down"), transform=ax.get_xaxis_transform(), ha="center", fontsize=8)
    fired = {}
    for alarm, color, height in (("pending_alarm", BLUE, 0.9), ("age_alarm", DARK_ORANGE, 0.5)):
        fired[alarm] = next((row["minute"] for row in rows if row[alarm] == "ALARM"), None)
        if fired[alarm] is not None:
            at = fired[alarm]
            ax.axvline(at, color=color, linestyle="--", linewidth=1)
            note = " " + _("{alarm} at minute {minute}").format(alarm=alarm, minute=number(at, "g"))
            ax.annotate(note, (at, ax.get_ylim()[1] * height), fontsize=8, color=color)
    ax.set_xlabel(_("minutes since the publisher stopped (virtual time)"))
    ax.legend(handles=[rows_line, age_line], loc="upper left", fontsize=8)
    ax.set_title(title)
    peak = max(pending)
    at_peak = minutes[pending.index(peak)]
    drained = next((m for m, p in zip(minutes, pending, strict=True) if m > at_peak and p == 0), None)
    if drained is not None:
        back = _("back to 0 at minute {minute}").format(minute=number(drained, "g"))
    else:
        back = _("not back to 0 by the end")
    alarms = [
        _("{alarm} went to ALARM at minute {minute}").format(alarm=a, minute=number(at, "g"))
        if at is not None
        else _("{alarm} stayed OK").format(alarm=a)
        for a, at in fired.items()
    ]  # two: show.listed says them as "a and b"
    alt = _(
        "Pending rows in the outbox (left axis, against the {threshold}-row threshold) and the age of the oldest "
        "pending row (right axis, dashed), by minute; the publisher is down for the first {down} minutes. Pending "
        "rows peak at {peak} at minute {minute}, {back}; {alarms}."
    ).format(
        threshold=number(outbox.PENDING_ALARM_ROWS, ","), down=number(down_minutes, "g"), peak=number(peak, ","),
        minute=number(at_peak, "g"), back=back, alarms=show.listed(alarms),
    )  # fmt: skip
    return show.Picture(figure, show.titled(title, alt))


def pipe_lag(rows: list[dict[str, Any]], stops_at: float, down_hours: float, title: str = "") -> show.Picture:
    """Age of the oldest undelivered stream record while the pipe is stopped, with the 24-hour trim and the alarm."""
    figure, ax = show.canvas()
    hours, ages = [row["hour"] for row in rows], [row["age_hours"] for row in rows]
    trim, alarm = stream_pipe.RETENTION_SECONDS / 3_600, LAG_ALARM_SECONDS / 3_600
    ax.plot(hours, ages, color=BLUE, marker=".", label=_("oldest undelivered"))
    ax.axhline(trim, color=RED, linestyle=":", label=_("stream trims at {hours} h").format(hours=number(trim, "g")))
    lag = _("lag alarm ({hours} h)").format(hours=number(alarm, "g"))
    ax.axhline(alarm, color=DARK_ORANGE, linestyle="--", linewidth=1, label=lag)
    ax.axvspan(stops_at, stops_at + down_hours, color="grey", alpha=0.12, label=_("pipe stopped"))
    ax.set_xlabel(_("hours (virtual time)"))
    ax.set_ylabel(_("age (h)"))
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(title)
    peak = max(ages)
    at_peak = [h for h, a in zip(hours, ages, strict=True) if a == peak]
    if len(at_peak) > 1:
        held = _("from hour {first} to hour {last}").format(
            first=number(at_peak[0], "g"), last=number(at_peak[-1], "g")
        )
    else:
        held = _("at hour {hour}").format(hour=number(at_peak[0], "g"))
    late = next((h for h, a in zip(hours, ages, strict=True) if a > alarm), None)
    if late is not None:
        crossed = _("above the lag alarm from hour {hour}").format(hour=number(late, "g"))
    else:
        crossed = _("never above the lag alarm")
    below = _("below the {hours} h trim").format(hours=number(trim, "g"))
    trimmed = _("the stream's trim") if peak >= trim else below
    alt = _(
        "Age of the oldest undelivered stream record, in hours of virtual time; the pipe is stopped from hour "
        "{start} to hour {end}. It peaks at {peak} h ({trimmed}) {held}, {crossed}, and is {last} h at hour "
        "{last_hour}."
    ).format(
        start=number(stops_at, "g"), end=number(stops_at + down_hours, "g"), peak=number(peak, "g"), trimmed=trimmed,
        held=held, crossed=crossed, last=number(ages[-1], "g"), last_hour=number(hours[-1], "g"),
    )  # fmt: skip
    return show.Picture(figure, show.titled(title, alt))
