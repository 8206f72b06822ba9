"""Figures for notebook 18 (class 210's CloudShop); built with matplotlib.figure.Figure, never pyplot."""

from __future__ import annotations

import datetime as dt
from collections import Counter

from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter, StrMethodFormatter

from mercadofresco.clock import MADRID
from mercadofresco.lessons.cloudshop.case import BAD_MESSAGE, StockRun
from mercadofresco.lessons.cloudshop.dead_letters import RETENTION_SECONDS, DeadLetter, kind_of

KIND_COLORS = {"transient": "tab:blue", "poison": "tab:orange", "data": "tab:red"}


def stock_receives(run: StockRun, visibility_seconds: float, title: str = "") -> Figure:
    """One row per message: a dot at each receive, coloured by the consumer that got it."""
    figure = Figure(figsize=(8, 3), layout="constrained")
    ax = figure.subplots()
    names = sorted({p for p in run.receives if p != BAD_MESSAGE})
    consumers = sorted({row["consumer"] for row in run.timeline})
    dots: dict[str, tuple[list[float], list[int]]] = {consumer: ([], []) for consumer in consumers}
    for row in run.timeline:
        if row["event"] == "received" and row["pedido_id"] in names:
            dots[row["consumer"]][0].append(row["seconds"])
            dots[row["consumer"]][1].append(names.index(row["pedido_id"]))
    for number, (seconds, rows) in enumerate(dots.values()):  # one artist per consumer, not one per dot
        ax.plot(seconds, rows, "o", color=f"C{number}", markersize=5, linestyle="none")
    for multiple in range(1, 4):
        ax.axvline(multiple * visibility_seconds, color="grey", linestyle=":", linewidth=1)
    ax.set_yticks(range(len(names)), [name[-3:] for name in names], fontsize=7)
    ax.set_xlabel(f"seconds (virtual); dotted: multiples of the {visibility_seconds:g} s visibility timeout")
    ax.set_ylabel("order (last digits)")
    ax.set_title(title or "Each receive of each message; colour = consumer")
    return figure


def dlq_clock(letters: list[DeadLetter], discovered: dt.datetime, alarms: dict[str, dt.datetime]) -> Figure:
    """Messages arriving in the DLQ per day by kind, the day discovered, when retention deletes, the alarms."""
    figure = Figure(figsize=(9, 3.2), layout="constrained")
    ax = figure.subplots()
    first = letters[0].sent_at
    by_day = {kind: Counter() for kind in KIND_COLORS}
    one_day = dt.timedelta(days=1)
    for letter in letters:
        by_day[kind_of(letter)][(letter.sent_at - first) // one_day] += 1
    days = range(16)
    bottom = [0] * len(days)
    for kind, counts in by_day.items():
        heights = [counts[d] for d in days]
        ax.bar(days, heights, bottom=bottom, color=KIND_COLORS[kind], label=kind)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.set_yscale("symlog", linthresh=10)
    ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))  # 1,000 rather than 10³: plain text draws faster
    ax.yaxis.set_minor_formatter(NullFormatter())
    marks = {"discovered": discovered, "retention deletes": first + dt.timedelta(seconds=RETENTION_SECONDS), **alarms}
    for i, (label, when) in enumerate(marks.items()):
        x = (when - first).total_seconds() / 86_400
        ax.axvline(x, color=f"C{i + 3}", linestyle="--", linewidth=1)
        ax.annotate(f" {label}", (x, 10 ** (4 - 0.6 * i)), fontsize=8, color=f"C{i + 3}")
    ax.set_xlabel(f"days since the first message ({first.astimezone(MADRID):%d %b %H:%M})")
    ax.set_ylabel("messages that day (log)")
    ax.legend(fontsize=8, loc="center right")
    ax.set_title("Billing's DLQ: 41,200 messages, the 14-day clock and the alarms that would have fired")
    return figure
