"""Figures for notebook 18 (class 210's CloudShop); built with matplotlib.figure.Figure, never pyplot.

Each returns a `show.Picture`: the figure and a text alternative that reads this run's numbers out.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter

from matplotlib.ticker import FuncFormatter, NullFormatter

from mercadofresco.clock import MADRID
from mercadofresco.i18n import _, moment, ngettext, number, pgettext
from mercadofresco.lessons import show
from mercadofresco.lessons.cloudshop.case import BAD_MESSAGE, StockRun
from mercadofresco.lessons.cloudshop.dead_letters import RETENTION_SECONDS, DeadLetter, kind_of
from mercadofresco.lessons.show.pictures import BLUE, ORANGE, RED, SLATE

KIND_LOOKS = {"transient": (BLUE, ""), "poison": (ORANGE, "//"), "data": (RED, "..")}  # colour, hatch
DAY_HOUR = "%d %b %H:%M"  # an instant as the DLQ's figure writes it, Madrid time: "02 Nov 10:00"


def _seconds(values: list[float]) -> str:
    """When a consumer's receives happened: "at 0 s" or "from 0 to 31 s"."""
    low, high = min(values), max(values)
    if low == high:
        return _("at {seconds} s").format(seconds=number(low, ",g"))
    return _("from {first} to {last} s").format(first=number(low, ",g"), last=number(high, ",g"))


def _days(days: list[int]) -> str:
    """Days as a sentence says them, runs joined: "day 0", "days 1 to 5", "days 0 and 6 to 13", "days 12 and 13"."""
    runs: list[list[int]] = []
    for day in sorted(days):
        if runs and day == runs[-1][1] + 1:
            runs[-1][1] = day
        else:
            runs.append([day, day])
    parts = []
    for low, high in runs:
        if low == high or high == low + 1:
            parts += [number(low)] if low == high else [number(low), number(high)]
        else:
            parts.append(pgettext("a run of days", "{first} to {last}").format(first=number(low), last=number(high)))
    return ngettext("day {days}", "days {days}", len(days)).format(days=show.listed(parts))


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
    for index, (consumer, (seconds, rows)) in enumerate(dots.items()):  # one artist per consumer, not per dot
        marker = show.MARKERS[index % len(show.MARKERS)]
        ax.plot(seconds, rows, marker, markersize=5, linestyle="none", label=consumer)
        if seconds:
            said.append(
                _("{count} by {consumer} {when}").format(
                    count=number(len(seconds), ","), consumer=consumer, when=_seconds(seconds)
                )
            )
    for multiple in range(1, 4):
        ax.axvline(multiple * visibility_seconds, color="grey", linestyle=":", linewidth=1)
    ax.set_yticks(range(len(names)), [name[-3:] for name in names], fontsize=7)
    ax.set_xlabel(
        _("seconds (virtual); dotted: multiples of the {visibility} s visibility timeout").format(
            visibility=number(visibility_seconds, "g")
        )
    )
    ax.set_ylabel(_("order (last digits)"))
    ax.set_title(title or _("Each receive of each message; colour and marker = consumer"))
    if said:
        ax.legend(fontsize=8, loc="best")
    per_order = Counter(row for _, rows in dots.values() for row in rows)
    times = sorted(set(per_order.values()))
    if len(times) == 1:
        received = number(times[0], ",")
    else:
        received = pgettext("a range of times", "{fewest} to {most}").format(
            fewest=number(times[0], ","), most=number(times[-1], ",")
        )
    alt = " ".join(
        [
            _(
                "{title}. A row per order ({orders} orders), a dot per receive over virtual seconds, dotted lines at "
                "multiples of the {visibility} s visibility timeout."
            ).format(
                title=title or _("Each receive of each message"), orders=number(len(names)),
                visibility=number(visibility_seconds, "g"),
            ),
            _("{count} receives: {receives}.").format(
                count=number(sum(per_order.values()), ","), receives="; ".join(said) or pgettext("no receive", "none")
            ),
            _("Each order was received {times} times.").format(times=received if per_order else number(0)),
        ]
    )  # fmt: skip
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
    segments = {}  # kind: (day, bottom, top) of each bar drawn, to say which ones the log scale lets one see
    for kind, counts in by_day.items():
        heights = [counts[d] for d in days]
        colour, hatch = KIND_LOOKS[kind]
        ax.bar(days, heights, bottom=bottom, color=colour, hatch=hatch, edgecolor="white", label=_kind_word(kind))
        segments[kind] = [(d, b, b + h) for d, b, h in zip(days, bottom, heights, strict=True) if h]
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.set_yscale("symlog", linthresh=10)
    # 1,000 (1.000 in Spanish) rather than 10³: plain text draws faster
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _position: number(value, ",.0f")))
    ax.yaxis.set_minor_formatter(NullFormatter())
    marks = {"discovered": discovered, "retention deletes": first + dt.timedelta(seconds=RETENTION_SECONDS), **alarms}
    for i, (label, when) in enumerate(marks.items()):  # each line labelled where it stands: one colour for all
        if when is None:  # an alarm that would not have fired before the discovery
            continue
        x = (when - first).total_seconds() / 86_400
        ax.axvline(x, color=SLATE, linestyle="--", linewidth=1)
        ax.annotate(  # dark ink on a white box: readable over the bars and the other dashed lines
            f" {_mark_word(label)}", (x, 10 ** (4 - 0.6 * i)), fontsize=8, color="black",
            bbox=dict(facecolor="white", edgecolor="none", alpha=0.85, pad=1),
        )  # fmt: skip
    since = moment(first.astimezone(MADRID), DAY_HOUR)
    ax.set_xlabel(_("days since the first message ({when})").format(when=since))
    ax.set_ylabel(_("messages that day (log)"))
    ax.legend(fontsize=8, loc="center right")
    ax.set_title(_("Billing's DLQ: 41,200 messages, the 14-day clock and the alarms that would have fired"))
    # A segment stacked on thousands is a sliver on the log scale: say the days where each kind can be seen
    # (at least 1% of the axis' height) and the rest as too thin to see.
    scale = ax.yaxis.get_transform()
    low, high = scale.transform(ax.get_ylim())
    kinds = []
    for kind, counts in by_day.items():
        if not counts:
            continue
        seen = [
            d
            for d, b, t in segments[kind]
            if (scale.transform([t])[0] - scale.transform([b])[0]) >= 0.01 * (high - low)
        ]
        hidden = [d for d in counts if d not in seen]
        word, total = _kind_word(kind), number(sum(counts.values()), ",")
        if not hidden:
            kinds.append(_("{kind} {count} on {days}").format(kind=word, count=total, days=_days(seen)))
        elif not seen:
            said = _("{kind} {count} on {days}, too thin to see")
            kinds.append(said.format(kind=word, count=total, days=_days(hidden)))
        else:
            rest = sum(counts[d] for d in hidden)
            said = _("{kind} {count}, seen on {seen} (the other {rest}, on {hidden}, too thin to see)")
            kinds.append(
                said.format(kind=word, count=total, seen=_days(seen), rest=number(rest, ","), hidden=_days(hidden))
            )
    never = pgettext("alarm", "never")
    said = [
        f"{_mark_word(label)} {moment(when.astimezone(MADRID), DAY_HOUR) if when else never}"
        for label, when in marks.items()
    ]
    alt = _(
        "Billing's DLQ: messages arriving per day since the first ({first}), stacked by kind on a log scale; "
        "{count} in all: {kinds}. Dashed lines, Madrid time: {marks}."
    ).format(first=since, count=number(len(letters), ","), kinds=", ".join(kinds), marks="; ".join(said))
    return show.Picture(figure, alt)


def _kind_word(kind: str) -> str:
    """A DLQ message's kind as the figure names it (the letters keep the English kind)."""
    words = {
        "transient": pgettext("DLQ message kind", "transient"),
        "poison": pgettext("DLQ message kind", "poison"),
        "data": pgettext("DLQ message kind", "data"),
    }
    return words[kind]


def _mark_word(label: str) -> str:
    """A dashed line's label in the learner's words: the figure's own two, and an alarm's name as the table of
    `dead_letters.alarm_times` shows it (its labels are marked T_(), a table cell's words)."""
    words = {"discovered": _("discovered"), "retention deletes": _("retention deletes")}
    return words.get(label) or pgettext("table cell", label)
