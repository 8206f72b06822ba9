"""Figures for notebook 18 (class 210's CloudShop); built with matplotlib.figure.Figure, never pyplot.

Each returns a `show.Picture`: the figure and a text alternative that reads this run's numbers out.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter

from matplotlib.ticker import NullFormatter, StrMethodFormatter

from mercadofresco.clock import MADRID
from mercadofresco.lessons import show
from mercadofresco.lessons.cloudshop.case import BAD_MESSAGE, StockRun
from mercadofresco.lessons.cloudshop.dead_letters import RETENTION_SECONDS, DeadLetter, kind_of
from mercadofresco.lessons.show.pictures import BLUE, ORANGE, RED, SLATE

KIND_LOOKS = {"transient": (BLUE, ""), "poison": (ORANGE, "//"), "data": (RED, "..")}  # colour, hatch


def _seconds(values: list[float]) -> str:
    """When a consumer's receives happened: "at 0 s" or "from 0 to 31 s"."""
    low, high = min(values), max(values)
    return f"at {low:,g} s" if low == high else f"from {low:,g} to {high:,g} s"


def stock_receives(run: StockRun, visibility_seconds: float, title: str = "") -> show.Picture:
    """One row per message: a dot at each receive, its colour and marker saying the consumer that got it."""
    figure, ax = show.canvas(8, 3)
    names = sorted({p for p in run.receives if p != BAD_MESSAGE})
    consumers = sorted({row["consumer"] for row in run.timeline})
    dots: dict[str, tuple[list[float], list[int]]] = {consumer: ([], []) for consumer in consumers}
    for row in run.timeline:
        if row["event"] == "received" and row["pedido_id"] in names:
            dots[row["consumer"]][0].append(row["seconds"])
            dots[row["consumer"]][1].append(names.index(row["pedido_id"]))
    said = []
    for number, (consumer, (seconds, rows)) in enumerate(dots.items()):  # one artist per consumer, not per dot
        marker = show.MARKERS[number % len(show.MARKERS)]
        ax.plot(seconds, rows, marker, markersize=5, linestyle="none", label=consumer)
        if seconds:
            said.append(f"{len(seconds):,} by {consumer} {_seconds(seconds)}")
    for multiple in range(1, 4):
        ax.axvline(multiple * visibility_seconds, color="grey", linestyle=":", linewidth=1)
    ax.set_yticks(range(len(names)), [name[-3:] for name in names], fontsize=7)
    ax.set_xlabel(f"seconds (virtual); dotted: multiples of the {visibility_seconds:g} s visibility timeout")
    ax.set_ylabel("order (last digits)")
    ax.set_title(title or "Each receive of each message; colour and marker = consumer")
    if said:
        ax.legend(fontsize=8, loc="best")
    per_order = Counter(row for _, rows in dots.values() for row in rows)
    times = sorted(set(per_order.values()))
    received = f"{times[0]:,}" if len(times) == 1 else f"{times[0]:,} to {times[-1]:,}"
    alt = (
        f"{title or 'Each receive of each message'}. A row per order ({len(names)} orders), a dot per receive over "
        f"virtual seconds, dotted lines at multiples of the {visibility_seconds:g} s visibility timeout. "
        f"{sum(per_order.values()):,} receives: {'; '.join(said) or 'none'}. "
        f"Each order was received {received if per_order else 0} times."
    )
    return show.Picture(figure, alt)


def dlq_clock(
    letters: list[DeadLetter], discovered: dt.datetime, alarms: dict[str, dt.datetime | None]
) -> show.Picture:
    """Messages arriving in the DLQ per day by kind, the day discovered, when retention deletes, the alarms."""
    figure, ax = show.canvas(9, 3.2)
    first = letters[0].sent_at
    by_day = {kind: Counter() for kind in KIND_LOOKS}
    one_day = dt.timedelta(days=1)
    for letter in letters:
        by_day[kind_of(letter)][(letter.sent_at - first) // one_day] += 1
    days = range(16)
    bottom = [0] * len(days)
    for kind, counts in by_day.items():
        heights = [counts[d] for d in days]
        colour, hatch = KIND_LOOKS[kind]
        ax.bar(days, heights, bottom=bottom, color=colour, hatch=hatch, edgecolor="white", label=kind)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.set_yscale("symlog", linthresh=10)
    ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))  # 1,000 rather than 10³: plain text draws faster
    ax.yaxis.set_minor_formatter(NullFormatter())
    marks = {"discovered": discovered, "retention deletes": first + dt.timedelta(seconds=RETENTION_SECONDS), **alarms}
    for i, (label, when) in enumerate(marks.items()):  # each line labelled where it stands: one colour for all
        if when is None:  # an alarm that would not have fired before the discovery
            continue
        x = (when - first).total_seconds() / 86_400
        ax.axvline(x, color=SLATE, linestyle="--", linewidth=1)
        ax.annotate(f" {label}", (x, 10 ** (4 - 0.6 * i)), fontsize=8, color=SLATE)
    ax.set_xlabel(f"days since the first message ({first.astimezone(MADRID):%d %b %H:%M})")
    ax.set_ylabel("messages that day (log)")
    ax.legend(fontsize=8, loc="center right")
    ax.set_title("Billing's DLQ: 41,200 messages, the 14-day clock and the alarms that would have fired")
    kinds = []
    for kind, counts in by_day.items():
        if counts:
            low, high = min(counts), max(counts)
            on = f"day {low}" if low == high else f"days {low} to {high}"
            kinds.append(f"{kind} {sum(counts.values()):,} on {on}")
    said = [f"{label} {f'{when.astimezone(MADRID):%d %b %H:%M}' if when else 'never'}" for label, when in marks.items()]
    alt = (
        f"Billing's DLQ: messages arriving per day since the first ({first.astimezone(MADRID):%d %b %H:%M}), "
        f"stacked by kind on a log scale; {len(letters):,} in all: {', '.join(kinds)}. "
        f"Dashed lines, Madrid time: {'; '.join(said)}."
    )
    return show.Picture(figure, alt)
