"""Figures for notebook 12 (ordering); like `show`, built on matplotlib.figure.Figure, never pyplot.

Each returns a `show.Picture`: the figure and a text alternative that reads this run's numbers out.
"""

from __future__ import annotations

from typing import Any

from matplotlib.ticker import MaxNLocator

from mercadofresco.i18n import _, ngettext, number
from mercadofresco.lessons import show
from mercadofresco.lessons.ordering.stock_queue import OrderingRun, said_setup
from mercadofresco.lessons.show.pictures import GREY, ORANGE, SLATE

SETUP_LOOKS = {"standard queue": (GREY, ".."), "FIFO, group = sku": (show.GOOD, "")}  # colour, hatch
SERIAL = (show.BAD, "//")  # any other FIFO setup: few groups, so serial


def _look(setup: str) -> tuple[str, str]:
    """A setup's colour and hatch, the same in every figure of the notebook."""
    return SETUP_LOOKS.get(setup, SERIAL)


def throughput(runs: list[OrderingRun]) -> show.Picture:
    """Messages per virtual minute against the number of consumers, one bar per setup (log scale)."""
    figure, ax = show.canvas()
    setups = list(dict.fromkeys(run.config.label() for run in runs))
    counts = list(dict.fromkeys(run.config.consumers for run in runs))
    width = 0.8 / len(setups)
    said = []
    for s, setup in enumerate(setups):
        mine = {run.config.consumers: run.per_minute for run in runs if run.config.label() == setup}
        positions = [i + (s - (len(setups) - 1) / 2) * width for i in range(len(counts))]
        colour, hatch = _look(setup)
        heights = [mine.get(c, 0) for c in counts]
        bars = ax.bar(positions, heights, width, label=said_setup(setup), color=colour, hatch=hatch, edgecolor="white")
        ax.bar_label(bars, fmt="%g", fontsize=8)
        said.append(f"{said_setup(setup)}: {show.numbers(heights)}")
    ticks = [ngettext("{count} consumer", "{count} consumers", c).format(count=number(c)) for c in counts]
    ax.set_xticks(range(len(counts)), ticks)  # a run has 1 to 50 consumers
    ax.set_yscale("log")
    ax.set_ylim(10, max(run.per_minute for run in runs) * 3)
    ax.set_ylabel(_("messages per virtual minute"))
    title = _("One group stays serial, whatever the number of consumers")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left")
    alt = _(
        "{title}. Bar chart: messages per virtual minute (log scale) with {counts} consumers, a bar per setup."
    ).format(title=title, counts=show.numbers(counts))
    return show.Picture(figure, alt + " " + "; ".join(said) + ".")


def _ink(colour: str) -> str:
    """Black or white, whichever reads better on `colour` (WCAG contrast)."""
    from matplotlib.colors import to_rgb

    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(colour)]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return "black" if luminance > 0.179 else "white"


def lanes(runs: list[OrderingRun]) -> show.Picture:
    """One panel per run: a lane per consumer, a bar per message processed, coloured and labelled by its group."""
    figure, axes = show.canvas(9, 1.2 + 1.6 * len(runs), len(runs), 1, sharex=True, squeeze=False)
    said = []
    for ax, run in zip(axes[:, 0], runs, strict=True):
        groups = list(dict.fromkeys(row["grupo"] for row in run.applied))
        for row in run.applied:
            colour = show.PALETTE[groups.index(row["grupo"]) % len(show.PALETTE)]
            width = row["ended"] - row["started"]
            ax.barh(row["consumer"], width, left=row["started"], color=colour, height=0.7, edgecolor="white")
            middle = row["started"] + width / 2  # the group written on the bar: not by colour alone
            ax.text(middle, row["consumer"], row["grupo"], ha="center", va="center", fontsize=6, color=_ink(colour))
        ax.set_yticks(range(run.config.consumers), [f"c{i + 1}" for i in range(run.config.consumers)], fontsize=7)
        ax.invert_yaxis()
        setup = said_setup(run.config.label())
        consumers, messages = number(run.config.consumers), number(len(run.applied))
        seconds, most = number(run.seconds, "g"), number(run.most_in_flight)
        ax.set_title(
            _("{setup}, {consumers} consumers: {messages} messages in {seconds} s, at most {most} at once").format(
                setup=setup, consumers=consumers, messages=messages, seconds=seconds, most=most
            ),
            fontsize=9,
        )
        busy = len({row["consumer"] for row in run.applied})
        said.append(
            _(
                "{setup}, {consumers} consumers: {messages} messages of {groups} in {seconds} s, processed by {busy}, "
                "at most {most} at once"
            ).format(
                setup=setup, consumers=consumers, messages=messages, seconds=seconds, most=most,
                groups=ngettext("{count} group", "{count} groups", len(groups)).format(count=number(len(groups))),
                busy=ngettext("{count} consumer", "{count} consumers", busy).format(count=number(busy)),
            )
        )  # fmt: skip
    axes[-1, 0].set_xlabel(_("virtual seconds (each bar is one message, labelled and coloured by its group)"))
    alt = _("A lane per consumer, a bar per message over virtual seconds, labelled with its group.")
    return show.Picture(figure, alt + " " + "; ".join(said) + ".")


def setups(rows: list[dict[str, Any]], title: str = "") -> show.Picture:
    """Two panels for the same messages through several setups: throughput, and what went out of order."""
    figure, (speed_ax, order_ax) = show.canvas(10, 2.8, 1, 2, sharey=True)
    labels = [row["setup"] for row in rows]
    y = list(range(len(rows)))
    colours, hatches = zip(*(_look(label) for label in labels), strict=True)
    per_minute = [row["per_minute"] for row in rows]
    speed = speed_ax.barh(y, per_minute, color=colours, hatch=hatches, edgecolor="white")
    speed_ax.bar_label(speed, fmt="%g", fontsize=8)
    speed_ax.set_xlabel(_("messages per virtual minute"))
    speed_ax.set_yticks(y, [said_setup(label) for label in labels])
    late = order_ax.barh([i - 0.2 for i in y], [row["out_of_order"] for row in rows], height=0.4, color=ORANGE)
    wrong = order_ax.barh(
        [i + 0.2 for i in y], [row["wrong_skus"] for row in rows], height=0.4, color=SLATE, hatch="//",
        edgecolor="white",
    )  # fmt: skip
    late.set_label(_("messages applied after a newer one of their sku"))
    wrong.set_label(_("skus left with the wrong stock"))
    order_ax.bar_label(late, fontsize=8)
    order_ax.bar_label(wrong, fontsize=8)
    order_ax.set_xlabel(_("count"))
    order_ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    order_ax.legend(fontsize=8, loc="lower right")
    speed_ax.invert_yaxis()
    title = title or _("Order where it matters, parallelism where it does not")
    figure.suptitle(title, fontsize=10)
    said = [
        _("{setup}: {per_minute} a minute, {late} late, {wrong} wrong").format(
            setup=said_setup(row["setup"]), per_minute=number(row["per_minute"], ",g"),
            late=number(row["out_of_order"], ",g"), wrong=number(row["wrong_skus"], ",g"),
        )
        for row in rows
    ]  # fmt: skip
    alt = _(
        "{title}. Two bar charts, a row per setup: messages per virtual minute, and how many messages were "
        "applied after a newer one of their sku (late) and how many skus were left with the wrong stock (wrong)."
    ).format(title=title)
    alt += " " + "; ".join(said) + "."
    return show.Picture(figure, alt)
