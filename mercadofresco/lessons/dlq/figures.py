"""Tables, text and figures for notebooks 10-11 (DLQs, runbook); figures use matplotlib.figure.Figure.

The DLQ pattern returns samples and verdicts as data; this module words them for
people, in Madrid time.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from matplotlib.figure import Figure

from mercadofresco.clock import MADRID
from mercadofresco.patterns.dlq import Classification, FailureKind, Sample
from mercadofresco.sims.mass_redrive import MassRedriveConfig, MassRedriveResult

COLORS = {"all_at_once": "tab:red", "paced": "tab:green"}
SCALING_COLORS = {"standard": "tab:orange", "provisioned": "tab:purple"}  # all at once, at AWS's ramp
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


def arrivals(groups: dict[str, list[Sample]], title: str = "") -> Figure:
    """When each DLQ's messages were sent: one lane per incident, one tick per message (Madrid time)."""
    figure = Figure(figsize=(9, 0.7 + 0.6 * len(groups)), layout="constrained")
    ax = figure.subplots()
    for lane, samples in enumerate(groups.values()):
        times = [s.sent_at.astimezone(MADRID).replace(tzinfo=None) for s in samples]
        ax.plot(times, [lane] * len(times), "|", markersize=14, alpha=0.6)
    ax.set_yticks(range(len(groups)), list(groups))
    ax.set_ylim(-0.6, len(groups) - 0.4)
    ax.set_xlabel("sent (Madrid time)")
    ax.set_title(title)
    return figure


def alarm_timeline(rows: list[dict[str, Any]], title: str = "") -> Figure:
    """Messages in the DLQ and the age of the oldest, with the instant each alarm went to ALARM."""
    figure = Figure(figsize=(8, 3.2), layout="constrained")
    ax = figure.subplots()
    times = [row["at"].astimezone(MADRID).replace(tzinfo=None) for row in rows]
    ax.step(times, [row["visible"] for row in rows], where="post", label="messages in the DLQ")
    ax.set_ylabel("messages")
    age_ax = ax.twinx()
    age_ax.plot(times, [row["oldest_minutes"] for row in rows], color="tab:orange", label="oldest (min)")
    age_ax.axhline(60, color="tab:orange", linestyle=":", linewidth=1)
    age_ax.set_ylabel("age of the oldest message (min)")
    for alarm, color, height in (("count", "tab:blue", 0.9), ("age", "tab:orange", 0.2)):
        fired = next((t for t, row in zip(times, rows, strict=True) if row[alarm] == "ALARM"), None)
        if fired is not None:
            ax.axvline(fired, color=color, linestyle="--", linewidth=1)
            ax.annotate(f" {alarm} alarm {fired:%H:%M}", (fired, ax.get_ylim()[1] * height), fontsize=8, color=color)
    ax.set_xlabel("Madrid time")
    ax.set_title(title)
    return figure


def mass_redrive(results: list[MassRedriveResult], title: str = "") -> Figure:
    """The simpy model: database connections in use, failed attempts and messages back in the DLQ."""
    figure = Figure(figsize=(9, 3.2), layout="constrained")
    left, right = figure.subplots(1, 2)
    for result in results:
        minutes = [row.second / 60 for row in result.timeline]
        config = result.config
        paced_or_stated = config.release == "paced" or config.scaling == "as_stated"
        color = COLORS[config.release] if paced_or_stated else SCALING_COLORS[config.scaling]
        label = redrive_label(config)
        left.plot(minutes, [row.db_connections for row in result.timeline], color=color, label=label)
        right.plot(minutes, [row.failed_attempts for row in result.timeline], color=color, label=label)
        right.plot(minutes, [row.back_in_dlq for row in result.timeline], color=color, linestyle="--")
    left.axhline(results[0].config.db_connections, color="grey", linestyle=":", linewidth=1)
    left.set_ylabel("database connections")
    left.set_title("connections in use (dotted: the limit)", fontsize=9)
    right.set_ylabel("messages")
    right.set_ylim(bottom=0, top=max(right.get_ylim()[1], 1))  # all zero: an axis from 0, not -0.04…0.04
    right.set_title("failed attempts (solid), back in the DLQ (dashed)", fontsize=9)
    for ax in (left, right):
        ax.set_xlabel("minutes (model time)")
    right.legend(fontsize=8)
    figure.suptitle(title)
    return figure
