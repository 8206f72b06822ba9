"""Figures for notebook 12 (ordering); like `show`, built on matplotlib.figure.Figure, never pyplot."""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from mercadofresco.lessons.ordering.stock_queue import OrderingRun

SETUP_COLOURS = {"standard queue": "tab:gray", "FIFO, group = sku": "tab:green"}  # any other FIFO setup: red


def _colour(setup: str) -> str:
    return SETUP_COLOURS.get(setup, "tab:red")


def throughput(runs: list[OrderingRun]) -> Figure:
    """Messages per virtual minute against the number of consumers, one bar per setup (log scale)."""
    figure = Figure(figsize=(8, 3.2), layout="constrained")
    ax = figure.subplots()
    setups = list(dict.fromkeys(run.config.label() for run in runs))
    counts = list(dict.fromkeys(run.config.consumers for run in runs))
    width = 0.8 / len(setups)
    for s, setup in enumerate(setups):
        mine = {run.config.consumers: run.per_minute for run in runs if run.config.label() == setup}
        positions = [i + (s - (len(setups) - 1) / 2) * width for i in range(len(counts))]
        bars = ax.bar(positions, [mine.get(c, 0) for c in counts], width, label=setup, color=_colour(setup))
        ax.bar_label(bars, fmt="%g", fontsize=8)
    ax.set_xticks(range(len(counts)), [f"{c} consumer{'s' if c > 1 else ''}" for c in counts])
    ax.set_yscale("log")
    ax.set_ylim(10, max(run.per_minute for run in runs) * 3)
    ax.set_ylabel("messages per virtual minute")
    ax.set_title("One group stays serial, whatever the number of consumers")
    ax.legend(fontsize=8, loc="upper left")
    return figure


def lanes(runs: list[OrderingRun]) -> Figure:
    """One panel per run: a lane per consumer, a bar per message processed, coloured by its group."""
    figure = Figure(figsize=(9, 1.2 + 1.6 * len(runs)), layout="constrained")
    axes = figure.subplots(len(runs), 1, sharex=True, squeeze=False)[:, 0]
    palette = [f"C{i}" for i in range(10)]
    for ax, run in zip(axes, runs, strict=True):
        groups = list(dict.fromkeys(row["grupo"] for row in run.applied))
        for row in run.applied:
            colour = palette[groups.index(row["grupo"]) % len(palette)]
            width = row["ended"] - row["started"]
            ax.barh(row["consumer"], width, left=row["started"], color=colour, height=0.7, edgecolor="white")
        ax.set_yticks(range(run.config.consumers), [f"c{i + 1}" for i in range(run.config.consumers)], fontsize=7)
        ax.invert_yaxis()
        ax.set_title(
            f"{run.config.label()}, {run.config.consumers} consumers: {len(run.applied)} messages "
            f"in {run.seconds:g} s, at most {run.most_in_flight} at once",
            fontsize=9,
        )
    axes[-1].set_xlabel("virtual seconds (one colour per message group)")
    return figure


def setups(rows: list[dict[str, Any]], title: str = "") -> Figure:
    """Two panels for the same messages through several setups: throughput, and what went out of order."""
    figure = Figure(figsize=(10, 2.8), layout="constrained")
    speed_ax, order_ax = figure.subplots(1, 2, sharey=True)
    labels = [row["setup"] for row in rows]
    y = list(range(len(rows)))
    speed = speed_ax.barh(y, [row["per_minute"] for row in rows], color=[_colour(label) for label in labels])
    speed_ax.bar_label(speed, fmt="%g", fontsize=8)
    speed_ax.set_xlabel("messages per virtual minute")
    speed_ax.set_yticks(y, labels)
    late = order_ax.barh([i - 0.2 for i in y], [row["out_of_order"] for row in rows], height=0.4, color="tab:orange")
    wrong = order_ax.barh([i + 0.2 for i in y], [row["wrong_skus"] for row in rows], height=0.4, color="black")
    late.set_label("messages applied after a newer one of their sku")
    wrong.set_label("skus left with the wrong stock")
    order_ax.bar_label(late, fontsize=8)
    order_ax.bar_label(wrong, fontsize=8)
    order_ax.set_xlabel("count")
    order_ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    order_ax.legend(fontsize=8, loc="lower right")
    speed_ax.invert_yaxis()
    figure.suptitle(title or "Order where it matters, parallelism where it does not", fontsize=10)
    return figure
