"""Figures of section 1 (notebook 01, lab 1): a run's timeline and the latency sweep, each a `show.Picture`."""

from __future__ import annotations

from collections import Counter
from typing import Any

from mercadofresco.i18n import T_, _, ngettext, number, pgettext
from mercadofresco.lessons import show
from mercadofresco.lessons.delivery.experiments import DeliveryRun
from mercadofresco.lessons.show.pictures import BLUE, DARK_ORANGE

INK = "#8f3a00"  # a dark orange for the 8 pt "€ charged" text: 7.6:1 on white (DARK_ORANGE is 3.4:1)

EVENT_MARKERS = {"failed": ("x", show.BAD), "crashed": ("X", "black"), "deleted": ("D", show.GOOD)}
# The names of events a timeline table shows, recorded elsewhere (the shop's handlers, the poller): each a table
# cell's words; the rows keep the English names, which code compares. Then notebook 01's configurations.
SHOWN_WORDS = (
    T_("charged"), T_("failed"), T_("answered"), T_("written"), T_("declined"), T_("crashed"), T_("timed_out"),
    T_("handler_error"), T_("workflow_failed"), T_("incident"), T_("tuned"),
)  # fmt: skip
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
            label = _event_word(event)
            ax.plot(xs, ys, marker=marker, color=colour, markeredgecolor=edge, markersize=8, ls="", label=label)
    for seconds, count in charges.items():
        ax.axvline(seconds, color=DARK_ORANGE, linestyle="--", linewidth=1)
        said = ngettext("€ charged", "€ charged ×{count}", count).format(count=number(count))
        ax.annotate(said, (seconds, len(consumers) - 0.45), fontsize=8, color=INK)  # the line keeps the orange
    ax.set_yticks(range(len(consumers)), consumers)
    ax.set_xlim(-0.03 * span, 1.03 * span)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize=8)
    ax.set_ylim(-0.6, len(consumers) - 0.2)
    ax.set_xlabel(_("seconds since the order was sent (virtual time)"))
    title = title or _("{charges} charge(s) for {orders} order(s)").format(
        charges=number(len(run.ledger)), orders=number(run.orders_sent)
    )
    ax.set_title(title)
    return show.Picture(figure, _timeline_alt(run, bars, consumers, span, title))


def _timeline_alt(run: DeliveryRun, bars: list[dict[str, Any]], consumers: list[str], span: float, title: str) -> str:
    """What the timeline shows, said: its lanes, its receives and how long each took, its charges and ends."""
    again = sum(1 for bar in bars if bar["detail"] != "receive #1")
    if again:
        redelivered = ngettext("{count} of them a redelivery", "{count} of them redeliveries", again)
        redelivered = redelivered.format(count=number(again))
    else:
        redelivered = _("none of them a redelivery")
    longest = max((bar["end"] - bar["start"] for bar in bars), default=0)
    charged = sorted(run.charge_seconds())
    if len(charged) <= 6:
        when = _("at {seconds}").format(seconds=show.numbers(charged, "s"))
    else:
        when = _("from {first} to {last} s").format(first=number(charged[0], ",g"), last=number(charged[-1], ",g"))
    ends = Counter(row["event"] for row in run.timeline if row["event"] in EVENT_MARKERS)
    lanes = _(
        "Timeline: {title}. One lane per consumer ({consumers}) over {span} s since the order was sent: "
        "{receives}, {redelivered}, each a bar until its processing ends, the longest {longest} s."
    ).format(
        title=title, consumers=", ".join(consumers) or pgettext("no consumer", "none"), span=number(span, ",g"),
        receives=_count(len(bars), ngettext("{count} receive", "{count} receives", len(bars))),
        redelivered=redelivered, longest=number(longest, ",g"),
    )  # fmt: skip
    charges = _count(len(charged), ngettext("{count} charge", "{count} charges", len(charged)))
    orders = _count(run.orders_sent, ngettext("{count} order", "{count} orders", run.orders_sent))
    marked = ", ".join(_count(count, _end_said(event, count)) for event, count in ends.items())
    marked = marked or pgettext("no end marked", "none")
    if charged:
        said = _("{charges} for {orders}, {when} (dashed lines); ends marked: {ends}.")
    else:
        said = _("{charges} for {orders}; ends marked: {ends}.")
    return lanes + " " + said.format(charges=charges, orders=orders, when=when, ends=marked)


def _count(count: int, template: str) -> str:
    """A count said with its noun, `template` the count's form ("{count} charges"): "1 charge", "1,500 charges"."""
    return template.format(count=number(count, ","))


def _event_word(event: str) -> str:
    """An event's name as a legend shows it (the timeline's rows keep the English name)."""
    words = {
        "failed": pgettext("timeline event", "failed"),
        "crashed": pgettext("timeline event", "crashed"),
        "deleted": pgettext("timeline event", "deleted"),
    }
    return words[event]


def _end_said(event: str, count: int) -> str:
    """The form of "{count} failed" (a marked end) for `count`."""
    forms = {
        "failed": ngettext("{count} failed", "{count} failed", count),
        "crashed": ngettext("{count} crashed", "{count} crashed", count),
        "deleted": ngettext("{count} deleted", "{count} deleted", count),
    }
    return forms[event]


def latency_sweep(curves: dict[str, list[dict[str, Any]]], title: str = "") -> show.Picture:
    """Charges per order against gateway latency, one line per configuration (its own colour, marker and dashes)."""
    figure, ax = show.canvas(7, 3.2)
    said = []
    for n, (label, rows) in enumerate(curves.items()):
        latencies, charges = [r["latency_seconds"] for r in rows], [r["charges_per_order"] for r in rows]
        dashes = ("-", "--", "-.", ":")[n % 4]
        ax.plot(latencies, charges, marker=show.MARKERS[n % len(show.MARKERS)], linestyle=dashes, label=label)
        above = next((x for x, y in zip(latencies, charges, strict=True) if y > 1), None)
        if above is not None:
            crossing = _("above 1 from {latency} s").format(latency=number(above, ",g"))
        else:
            crossing = _("never above 1")
        said.append(
            _("{label}: {charges} charges per order, {crossing}").format(
                label=label, charges=show.numbers(charges), crossing=crossing
            )
        )
    ax.axhline(1, color="grey", linewidth=0.8)
    ax.set_xlabel(_("gateway latency (s)"))
    ax.set_ylabel(_("charges per order"))
    ax.set_title(title)
    ax.legend(fontsize=8)
    every = sorted({r["latency_seconds"] for rows in curves.values() for r in rows})
    if title:
        heading = _(
            "Line chart: {title}. Charges per order against gateway latency ({latencies}), one line per configuration."
        ).format(title=title, latencies=show.numbers(every, "s"))
    else:
        heading = _(
            "Line chart. Charges per order against gateway latency ({latencies}), one line per configuration."
        ).format(latencies=show.numbers(every, "s"))
    alt = heading + " " + "; ".join(said) + "."
    return show.Picture(figure, alt)
