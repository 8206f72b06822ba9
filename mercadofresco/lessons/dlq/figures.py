"""Tables, text and figures for notebooks 10-11 (DLQs, runbook); figures use matplotlib.figure.Figure.

The DLQ pattern returns samples and verdicts as data; this module words them for
people, in Madrid time. Each figure is a `show.Picture`: the figure and a text alternative with this run's numbers.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from mercadofresco.clock import MADRID
from mercadofresco.lessons import show
from mercadofresco.lessons.show.pictures import BLUE, DARK_ORANGE, ORANGE, PURPLE
from mercadofresco.patterns.dlq import Classification, FailureKind, Sample
from mercadofresco.sims.mass_redrive import MassRedriveConfig, MassRedriveResult

# How a redrive run looks (colour, marker): by its release, or, all at once at AWS's ramp, by its scaling
LOOKS = {
    "all_at_once": (show.BAD, "s"),
    "paced": (show.GOOD, "o"),
    "standard": (ORANGE, "^"),
    "provisioned": (PURPLE, "D"),
}
OLDEST_ALARM_MINUTES = 60  # the age alarm's threshold, drawn as a dotted line
SCALING_WORDS = {"as_stated": "class 210's ramp", "standard": "standard mapping", "provisioned": "provisioned mapping"}


def redrive_label(config: MassRedriveConfig) -> str:
    """One run of the redrive model in words: how it released, how it scaled, what capped it."""
    cap = f"reserved concurrency {config.reserved_concurrency}" if config.reserved_concurrency else ""
    cap = cap or f"concurrency {config.max_concurrency:,}"
    return f"{config.release.replace('_', ' ')}, {SCALING_WORDS[config.scaling]}, {cap}"


def madrid(instant: dt.datetime) -> str:
    """An instant as the runbook writes it: Madrid time, "Sun 18 22:04"."""
    return f"{instant.astimezone(MADRID):%a %d %H:%M}"


def sample_rows(samples: list[Sample]) -> list[dict[str, Any]]:
    """One printable row per inspected message (Madrid time), for show.table."""
    return [
        {
            "sent": madrid(s.sent_at),
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
    lines = [
        f"{verdict.messages} messages sent {madrid(verdict.first_sent)} to {madrid(verdict.last_sent)}:"
        f" a {verdict.time_shape.value}",
        "receive counts " + ", ".join(f"{n} x{c}" for n, c in verdict.receive_counts),
    ]
    if verdict.problems:
        top, how_many = verdict.problems[0]
        lines.append(f"content: {how_many}/{verdict.messages} say {top!r}")
    if verdict.kept_reasons:
        lines.append("kept reason: " + ", ".join(f"{name} x{c}" for name, c in verdict.kept_reasons))
    if verdict.kind is FailureKind.TRANSIENT:
        lines.append("the content is a valid order: the dependency failed, not the message")
    return lines


def _span(delta: dt.timedelta) -> str:
    """A stretch of time as the lesson says it: "29 min" under two hours, "72 h" beyond."""
    minutes = round(delta.total_seconds() / 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes / 60:,.0f} h"


def arrivals(groups: dict[str, list[Sample]], title: str = "") -> show.Picture:
    """When each DLQ's messages were sent: one lane per incident, one tick per message (Madrid time)."""
    figure, ax = show.canvas(9, 0.7 + 0.6 * len(groups))
    said = []
    for lane, (name, samples) in enumerate(groups.items()):
        times = [s.sent_at.astimezone(MADRID).replace(tzinfo=None) for s in samples]
        ax.plot(times, [lane] * len(times), "|", markersize=14, alpha=0.6)
        if samples:
            first, last = min(s.sent_at for s in samples), max(s.sent_at for s in samples)
            span = f"sent {madrid(first)} to {madrid(last)} ({_span(last - first)})"
            said.append(f"{name}: {len(samples)} message{'s' if len(samples) > 1 else ''}, {span}")
        else:
            said.append(f"{name}: no messages")
    ax.set_yticks(range(len(groups)), list(groups))
    ax.set_ylim(-0.6, len(groups) - 0.4)
    ax.set_xlabel("sent (Madrid time)")
    ax.set_title(title)
    alt = "A lane per DLQ, a tick per message at the time it was sent (Madrid time). "
    return show.Picture(figure, show.titled(title, alt + "; ".join(said) + "."))


def alarm_timeline(rows: list[dict[str, Any]], title: str = "") -> show.Picture:
    """Messages in the DLQ and the age of the oldest, with the instant each alarm went to ALARM."""
    figure, ax = show.canvas()
    times = [row["at"].astimezone(MADRID).replace(tzinfo=None) for row in rows]
    visible, oldest = [row["visible"] for row in rows], [row["oldest_minutes"] for row in rows]
    (count_line,) = ax.step(times, visible, where="post", color=BLUE, label="messages in the DLQ")
    ax.set_ylabel("messages")
    age_ax = ax.twinx()
    (age_line,) = age_ax.plot(times, oldest, color=DARK_ORANGE, marker="o", markersize=3, label="oldest (min)")
    age_ax.axhline(OLDEST_ALARM_MINUTES, color=DARK_ORANGE, linestyle=":", linewidth=1)
    age_ax.set_ylabel("age of the oldest message (min)")
    fired = {}
    for alarm, color, height in (("count", BLUE, 0.9), ("age", DARK_ORANGE, 0.2)):
        fired[alarm] = next((t for t, row in zip(times, rows, strict=True) if row[alarm] == "ALARM"), None)
        if fired[alarm] is not None:
            when = fired[alarm]
            ax.axvline(when, color=color, linestyle="--", linewidth=1)
            ax.annotate(f" {alarm} alarm {when:%H:%M}", (when, ax.get_ylim()[1] * height), fontsize=8, color=color)
    ax.legend(handles=[count_line, age_line], fontsize=8, loc="center left")
    ax.set_xlabel("Madrid time")
    ax.set_title(title)
    measured = {"count": (visible, "{:,g} messages"), "age": (oldest, "oldest {:,g} min")}
    alarms = []
    for alarm, when in fired.items():
        values, said = measured[alarm]
        at = f"went to ALARM at {when:%H:%M} ({said.format(values[times.index(when)])})" if when else "stayed OK"
        alarms.append(f"the {alarm} alarm {at}")
    alt = (
        f"Messages in the DLQ (left axis) and the age of the oldest message (right axis, the line with dots), "
        f"{times[0]:%H:%M} to {times[-1]:%H:%M} Madrid time: the messages go from {visible[0]:,g} to "
        f"{max(visible):,g}, the oldest from {oldest[0]:,g} to {max(oldest):,g} min against the "
        f"{OLDEST_ALARM_MINUTES} min line; {' and '.join(alarms)}."
    )
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
            f"{label}: at most {max(row.db_connections for row in result.timeline):,} connections, "
            f"{summary['failed_attempts']:,} failed attempts, {summary['back_in_dlq']:,} back in the DLQ, "
            f"done in {summary['minutes']:g} min"
        )
    limit = results[0].config.db_connections
    left.axhline(limit, color="grey", linestyle=":", linewidth=1)
    left.set_ylabel("database connections")
    left.set_title("connections in use (dotted: the limit)", fontsize=9)
    right.set_ylabel("messages")
    right.set_ylim(bottom=0, top=max(right.get_ylim()[1], 1))  # all zero: an axis from 0, not -0.04…0.04
    right.set_title("failed attempts (solid), back in the DLQ (dashed)", fontsize=9)
    for ax in (left, right):
        ax.set_xlabel("minutes (model time)")
    right.legend(fontsize=8)
    figure.suptitle(title)
    alt = (
        f"Database connections in use against the limit of {limit:,} (left), failed attempts and messages back "
        f"in the DLQ (right), over model minutes. {'; '.join(said)}."
    )
    return show.Picture(figure, show.titled(title, alt))
