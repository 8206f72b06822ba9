"""Figures of section 1 (notebook 01, lab 1): a run's timeline and the latency sweep, each a `show.Picture`."""

from __future__ import annotations

from collections import Counter
from typing import Any

from mercadofresco.lessons import show
from mercadofresco.lessons.delivery.experiments import DeliveryRun
from mercadofresco.lessons.show.pictures import BLUE, DARK_ORANGE

INK = "#8f3a00"  # a dark orange for the 8 pt "€ charged" text: 7.6:1 on white (DARK_ORANGE is 3.4:1)

EVENT_MARKERS = {"failed": ("x", show.BAD), "crashed": ("X", "black"), "deleted": ("D", show.GOOD)}
SHORTEST_AXIS_SECONDS = 10  # a run over within a second still gets an axis a reader can read


def processings(timeline: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each receive with the end of its own processing: the last thing its consumer did before receiving again.

    A consumer handles one batch at a time, so what it records between two receives belongs to the first
    (the messages of one batch are received together and end together).
    """
    found: list[dict[str, Any]] = []
    held: dict[str, list[dict[str, Any]]] = {}  # each consumer's batch in hand
    for row in timeline:
        consumer, seconds = row["consumer"], row["seconds"]
        if row["event"] == "received":
            if held.get(consumer) and held[consumer][0]["ended"]:  # that batch is done: this one starts anew
                held[consumer] = []
            one = {"consumer": consumer, "start": seconds, "end": seconds, "ended": False, "detail": row["detail"]}
            held.setdefault(consumer, []).append(one)
            found.append(one)
            continue
        for one in held.get(consumer, []):
            one["end"], one["ended"] = seconds, True
    return found


def timeline(run: DeliveryRun, title: str = "") -> show.Picture:
    """One lane per consumer: a bar from each receive to the end of its processing, and a € for every charge made."""
    figure, ax = show.canvas(9, 2.8)
    consumers = sorted({row["consumer"] for row in run.timeline})
    lane = {name: i for i, name in enumerate(consumers)}
    bars = processings(run.timeline)
    charges = Counter(run.charge_seconds())
    span = max([SHORTEST_AXIS_SECONDS, *charges, *(row["seconds"] for row in run.timeline)])
    ax.barh(
        [lane[bar["consumer"]] for bar in bars],
        [max(bar["end"] - bar["start"], span / 150) for bar in bars],  # an instant still shows as a sliver
        left=[bar["start"] for bar in bars], height=0.35, color=BLUE, alpha=0.5, edgecolor="white",
    )  # fmt: skip
    for bar in bars:
        ax.annotate(bar["detail"], (bar["start"], lane[bar["consumer"]] + 0.25), fontsize=8)
    for event, (marker, colour) in EVENT_MARKERS.items():
        rows = [row for row in run.timeline if row["event"] == event]
        if rows:
            xs, ys = [row["seconds"] for row in rows], [lane[row["consumer"]] for row in rows]
            edge = "white" if marker in ("D", "X") else colour  # a filled marker stands out from the bar it ends
            ax.plot(xs, ys, marker=marker, color=colour, markeredgecolor=edge, markersize=8, ls="", label=event)
    for seconds, count in charges.items():
        ax.axvline(seconds, color=DARK_ORANGE, linestyle="--", linewidth=1)
        said = "€ charged" if count == 1 else f"€ charged ×{count}"
        ax.annotate(said, (seconds, len(consumers) - 0.45), fontsize=8, color=INK)  # the line keeps the orange
    ax.set_yticks(range(len(consumers)), consumers)
    ax.set_xlim(-0.03 * span, 1.03 * span)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize=8)
    ax.set_ylim(-0.6, len(consumers) - 0.2)
    ax.set_xlabel("seconds since the order was sent (virtual time)")
    title = title or f"{len(run.ledger)} charge(s) for {run.orders_sent} order(s)"
    ax.set_title(title)
    return show.Picture(figure, _timeline_alt(run, bars, consumers, span, title))


def _timeline_alt(run: DeliveryRun, bars: list[dict[str, Any]], consumers: list[str], span: float, title: str) -> str:
    """What the timeline shows, said: its lanes, its receives and how long each took, its charges and ends."""
    again = sum(1 for bar in bars if bar["detail"] != "receive #1")
    redelivered = f"{again or 'none'} of them {'redeliveries' if again > 1 else 'a redelivery'}"
    longest = max((bar["end"] - bar["start"] for bar in bars), default=0)
    charged = sorted(run.charge_seconds())
    when = "at " + show.numbers(charged, "s") if len(charged) <= 6 else f"from {charged[0]:,g} to {charged[-1]:,g} s"
    ends = Counter(row["event"] for row in run.timeline if row["event"] in EVENT_MARKERS)
    return (
        f"Timeline: {title}. One lane per consumer ({', '.join(consumers) or 'none'}) over {span:,g} s since the "
        f"order was sent: {_many(len(bars), 'receive')}, {redelivered}, each a bar until its "
        f"processing ends, the longest {longest:,g} s. {_many(len(charged), 'charge')} for "
        f"{_many(run.orders_sent, 'order')}" + (f", {when} (dashed lines)" if charged else "") + "; ends marked: "
        + (", ".join(_many(count, event, event) for event, count in ends.items()) or "none") + "."
    )  # fmt: skip


def _many(count: int, one: str, many: str = "") -> str:
    """A count and its noun: "1 charge", "2 charges"."""
    return f"{count:,} {one if count == 1 else many or one + 's'}"


def latency_sweep(curves: dict[str, list[dict[str, Any]]], title: str = "") -> show.Picture:
    """Charges per order against gateway latency, one line per configuration (its own colour, marker and dashes)."""
    figure, ax = show.canvas(7, 3.2)
    said = []
    for n, (label, rows) in enumerate(curves.items()):
        latencies, charges = [r["latency_seconds"] for r in rows], [r["charges_per_order"] for r in rows]
        dashes = ("-", "--", "-.", ":")[n % 4]
        ax.plot(latencies, charges, marker=show.MARKERS[n % len(show.MARKERS)], linestyle=dashes, label=label)
        above = next((x for x, y in zip(latencies, charges, strict=True) if y > 1), None)
        crossing = f"above 1 from {above:,g} s" if above is not None else "never above 1"
        said.append(f"{label}: {show.numbers(charges)} charges per order, {crossing}")
    ax.axhline(1, color="grey", linewidth=0.8)
    ax.set_xlabel("gateway latency (s)")
    ax.set_ylabel("charges per order")
    ax.set_title(title)
    ax.legend(fontsize=8)
    every = sorted({r["latency_seconds"] for rows in curves.values() for r in rows})
    alt = (
        f"Line chart{': ' + title if title else ''}. Charges per order against gateway latency "
        f"({show.numbers(every, 's')}), one line per configuration. " + "; ".join(said) + "."
    )
    return show.Picture(figure, alt)
