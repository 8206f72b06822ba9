"""Tables, text and figures for notebooks 10-11 (DLQs, runbook); figures use matplotlib.figure.Figure.

The DLQ pattern returns samples and verdicts as data; this module words them for
people, in Madrid time. Each figure is a `show.Picture`: the figure and a text alternative with this run's numbers.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from mercadofresco.clock import MADRID
from mercadofresco.i18n import N_, _, moment, ngettext, number, pgettext
from mercadofresco.lessons import show
from mercadofresco.lessons.show.pictures import BLUE, DARK_ORANGE, ORANGE, PURPLE
from mercadofresco.patterns.dlq import Classification, FailureKind, Sample, TimeShape
from mercadofresco.sims.mass_redrive import MassRedriveConfig, MassRedriveResult

# How a redrive run looks (colour, marker): by its release, or, all at once at AWS's ramp, by its scaling
LOOKS = {
    "all_at_once": (show.BAD, "s"),
    "paced": (show.GOOD, "o"),
    "standard": (ORANGE, "^"),
    "provisioned": (PURPLE, "D"),
}
OLDEST_ALARM_MINUTES = 60  # the age alarm's threshold, drawn as a dotted line
SCALING_WORDS = {
    "as_stated": N_("class 210's ramp"), "standard": N_("standard mapping"), "provisioned": N_("provisioned mapping"),
}  # fmt: skip
RELEASE_WORDS = {"all_at_once": N_("all at once"), "paced": N_("paced")}  # a release as a sentence says it
WEEKDAY_TIME = "%a %d %H:%M"  # an instant as the runbook writes it, Madrid time: "Sun 18 22:04"
# The first line of a verdict's evidence, by the shape of its messages in time
SENT_AS = {
    TimeShape.BURST: N_("{count} messages sent {first} to {last}: a burst"),
    TimeShape.TRICKLE: N_("{count} messages sent {first} to {last}: a trickle"),
}


def redrive_label(config: MassRedriveConfig) -> str:
    """One run of the redrive model in words: how it released, how it scaled, what capped it."""
    if config.reserved_concurrency:
        cap = _("reserved concurrency {count}").format(count=number(config.reserved_concurrency))
    else:
        cap = _("concurrency {count}").format(count=number(config.max_concurrency, ","))
    release = RELEASE_WORDS.get(config.release)
    release = _(release) if release else config.release.replace("_", " ")
    scaling = _(SCALING_WORDS[config.scaling])
    return f"{release}, {scaling}, {cap}"


def _said(instant: dt.datetime) -> str:
    """An instant as the runbook writes it, in the learner's language: Madrid time, "Sun 18 22:04" in English."""
    return moment(instant.astimezone(MADRID), WEEKDAY_TIME)


def sample_rows(samples: list[Sample]) -> list[dict[str, Any]]:
    """One printable row per inspected message (Madrid time), for show.table."""
    return [
        {
            "sent": _said(s.sent_at),
            "receives": s.receive_count,
            "pedido_id": _pedido(s.body),
            "content_problem": s.problem or "-",
            "kept_reason": s.reason.error_class if s.reason else "-",
        }
        for s in samples
    ]


def _pedido(body: str) -> str:
    found = re.search(r"PED-\d{4}-\d{6}", body)
    return found.group(0) if found else "?"


def evidence(verdict: Classification) -> list[str]:
    """The evidence behind a verdict, one line each: the time shape, the receive counts, the content, the reason."""
    counts = ", ".join(f"{number(n)} x{number(c)}" for n, c in verdict.receive_counts)
    lines = [
        _(SENT_AS[verdict.time_shape]).format(
            count=number(verdict.messages), first=_said(verdict.first_sent), last=_said(verdict.last_sent)
        ),
        _("receive counts {counts}").format(counts=counts),
    ]
    if verdict.problems:
        top, how_many = verdict.problems[0]
        said = _("content: {count}/{total} say {problem}")
        lines.append(said.format(count=number(how_many), total=number(verdict.messages), problem=repr(top)))
    if verdict.kept_reasons:
        reasons = ", ".join(f"{name} x{number(c)}" for name, c in verdict.kept_reasons)
        lines.append(_("kept reason: {reasons}").format(reasons=reasons))
    if verdict.kind is FailureKind.TRANSIENT:
        lines.append(_("the content is a valid order: the dependency failed, not the message"))
    return lines


def _span(delta: dt.timedelta) -> str:
    """A stretch of time as the lesson says it: "29 min" under two hours, "72 h" beyond."""
    minutes = round(delta.total_seconds() / 60)
    return f"{number(minutes)} min" if minutes < 120 else f"{number(minutes / 60, ',.0f')} h"


def arrivals(groups: dict[str, list[Sample]], title: str = "") -> show.Picture:
    """When each DLQ's messages were sent: one lane per incident, one tick per message (Madrid time)."""
    figure, ax = show.canvas(9, 0.7 + 0.6 * len(groups))
    said = []
    for lane, (name, samples) in enumerate(groups.items()):
        times = [s.sent_at.astimezone(MADRID).replace(tzinfo=None) for s in samples]
        ax.plot(times, [lane] * len(times), "|", markersize=14, alpha=0.6)
        if samples:
            first, last = min(s.sent_at for s in samples), max(s.sent_at for s in samples)
            span = _("sent {first} to {last} ({duration})").format(
                first=_said(first), last=_said(last), duration=_span(last - first)
            )
            said.append(
                ngettext("{name}: {count} message, {span}", "{name}: {count} messages, {span}", len(samples)).format(
                    name=name, count=number(len(samples)), span=span
                )
            )
        else:
            said.append(_("{name}: no messages").format(name=name))
    ax.set_yticks(range(len(groups)), list(groups))
    ax.set_ylim(-0.6, len(groups) - 0.4)
    ax.set_xlabel(_("sent (Madrid time)"))
    ax.set_title(title)
    alt = _("A lane per DLQ, a tick per message at the time it was sent (Madrid time).")
    return show.Picture(figure, show.titled(title, alt + " " + "; ".join(said) + "."))


def alarm_timeline(rows: list[dict[str, Any]], title: str = "") -> show.Picture:
    """Messages in the DLQ and the age of the oldest, with the instant each alarm went to ALARM."""
    figure, ax = show.canvas()
    times = [row["at"].astimezone(MADRID).replace(tzinfo=None) for row in rows]
    visible, oldest = [row["visible"] for row in rows], [row["oldest_minutes"] for row in rows]
    (count_line,) = ax.step(times, visible, where="post", color=BLUE, label=_("messages in the DLQ"))
    ax.set_ylabel(_("messages"))
    age_ax = ax.twinx()
    (age_line,) = age_ax.plot(
        times, oldest, color=DARK_ORANGE, marker="o", markersize=3, label=pgettext("oldest message", "oldest (min)")
    )
    age_ax.axhline(OLDEST_ALARM_MINUTES, color=DARK_ORANGE, linestyle=":", linewidth=1)
    age_ax.set_ylabel(_("age of the oldest message (min)"))
    fired = {}
    notes = {"count": _("count alarm {time}"), "age": _("age alarm {time}")}  # each alarm's line, labelled
    for alarm, color, height in (("count", BLUE, 0.9), ("age", DARK_ORANGE, 0.2)):
        fired[alarm] = next((t for t, row in zip(times, rows, strict=True) if row[alarm] == "ALARM"), None)
        if fired[alarm] is not None:
            when = fired[alarm]
            ax.axvline(when, color=color, linestyle="--", linewidth=1)
            note = " " + notes[alarm].format(time=moment(when, "%H:%M"))
            ax.annotate(note, (when, ax.get_ylim()[1] * height), fontsize=8, color=color)
    ax.legend(handles=[count_line, age_line], fontsize=8, loc="center left")
    ax.set_xlabel(_("Madrid time"))
    ax.set_title(title)
    went = {  # an alarm that fired, with what it measured then
        "count": (visible, _("the count alarm went to ALARM at {time} ({value} messages)")),
        "age": (oldest, _("the age alarm went to ALARM at {time} (oldest {value} min)")),
    }
    stayed = {"count": _("the count alarm stayed OK"), "age": _("the age alarm stayed OK")}
    alarms = []
    for alarm, when in fired.items():
        values, said = went[alarm]
        if when:
            alarms.append(said.format(time=moment(when, "%H:%M"), value=number(values[times.index(when)], ",g")))
        else:
            alarms.append(stayed[alarm])
    alt = _(
        "Messages in the DLQ (left axis) and the age of the oldest message (right axis, the line with dots), "
        "{start} to {end} Madrid time: the messages go from {first_count} to {most_count}, the oldest from "
        "{first_age} to {most_age} min against the {threshold} min line; {alarms}."
    ).format(
        start=moment(times[0], "%H:%M"), end=moment(times[-1], "%H:%M"), first_count=number(visible[0], ",g"),
        most_count=number(max(visible), ",g"), first_age=number(oldest[0], ",g"), most_age=number(max(oldest), ",g"),
        threshold=number(OLDEST_ALARM_MINUTES), alarms=show.listed(alarms),
    )  # fmt: skip
    return show.Picture(figure, show.titled(title, alt))


def mass_redrive(results: list[MassRedriveResult], title: str = "") -> show.Picture:
    """The simpy model: database connections in use, failed attempts and messages back in the DLQ."""
    figure, (left, right) = show.canvas(9, 3.2, 1, 2)
    said = []
    for result in results:
        minutes = [row.second / 60 for row in result.timeline]
        config = result.config
        paced_or_stated = config.release == "paced" or config.scaling == "as_stated"
        color, marker = LOOKS[config.release if paced_or_stated else config.scaling]
        label = redrive_label(config)
        look = {"color": color, "marker": marker, "markersize": 4}
        left.plot(minutes, [row.db_connections for row in result.timeline], label=label, **look)
        right.plot(minutes, [row.failed_attempts for row in result.timeline], label=label, **look)
        right.plot(minutes, [row.back_in_dlq for row in result.timeline], linestyle="--", **look)
        summary = result.summary()
        said.append(
            _(
                "{label}: at most {connections} connections, {failed} failed attempts, {back} back in the DLQ, "
                "done in {minutes} min"
            ).format(
                label=label, connections=number(max(row.db_connections for row in result.timeline), ","),
                failed=number(summary["failed_attempts"], ","), back=number(summary["back_in_dlq"], ","),
                minutes=number(summary["minutes"], "g"),
            )
        )  # fmt: skip
    limit = results[0].config.db_connections
    left.axhline(limit, color="grey", linestyle=":", linewidth=1)
    left.set_ylabel(_("database connections"))
    left.set_title(_("connections in use (dotted: the limit)"), fontsize=9)
    right.set_ylabel(_("messages"))
    right.set_ylim(bottom=0, top=max(right.get_ylim()[1], 1))  # all zero: an axis from 0, not -0.04…0.04
    right.set_title(_("failed attempts (solid), back in the DLQ (dashed)"), fontsize=9)
    for ax in (left, right):
        ax.set_xlabel(_("minutes (model time)"))
    right.legend(fontsize=8)
    figure.suptitle(title)
    alt = _(
        "Database connections in use against the limit of {limit} (left), failed attempts and messages back "
        "in the DLQ (right), over model minutes."
    ).format(limit=number(limit, ","))
    alt += " " + "; ".join(said) + "."
    return show.Picture(figure, show.titled(title, alt))
