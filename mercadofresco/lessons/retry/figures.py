"""Figures for notebooks 05-08 (retries), each a `show.Picture`: the figure and what this run shows, said."""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from mercadofresco.i18n import T_, _, number, pgettext
from mercadofresco.lessons import show
from mercadofresco.lessons.show.pictures import GREY, ORANGE, PALETTE, PURPLE, SLATE
from mercadofresco.patterns import backoff, retry_layers
from mercadofresco.sims.recovery import OutageRun
from mercadofresco.sims.storm import StormRun

# Each strategy's look, the same in every figure: an index into show.PALETTE and show.MARKERS (full jitter,
# the lesson's advice, in blue; exponential without jitter in red).
STRATEGY_LOOKS = {"full": 0, "equal": 1, "exponential": 2, "none": 3, "decorrelated": 4}
# Words a table shows in these notebooks, built elsewhere from English: the formula of a strategy that is words (its
# docstring, `waits_table`), the storm's defences (`storm.Defences.label`) and notebook 07's configurations. Each is
# shown as a table cell's words.
SHOWN_WORDS = (
    T_("Retry at once"), T_("half + uniform(0, half) of min(cap, base · 2^attempt)"), T_("none"), T_("jitter"),
    T_("cap"), T_("budget"), T_("breaker"), T_("jitter+cap+budget+breaker"), T_("lesson: SDK 5, queue 4, workflow 4"),
    T_("SDK 2, queue 4, workflow 4"), T_("disciplined: SDK 2, workflow 4, queue safety net"),
)  # fmt: skip


def shown(name: str) -> str:
    """A strategy's or a combination of defences' name as a learner reads it (the data keeps the English)."""
    return pgettext("table cell", name)


def looks(names: Iterable[str]) -> dict[str, int]:
    """Each name's look: its strategy's ("exponential (reference)" is exponential's), else one not used yet."""
    chosen: dict[str, int] = {}
    for name in names:
        look = STRATEGY_LOOKS.get(name.split(" (")[0])
        if look is None or look in chosen.values():
            look = next(i for i in (*range(5, len(PALETTE)), *range(5)) if i not in chosen.values())
        chosen[name] = look
    return chosen


def sample_waits(strategy: backoff.Backoff, attempts: int = 8, clients: int = 200, seed: int = 0) -> list[list[float]]:
    """For each attempt 1..`attempts`, the waits `clients` clients draw (decorrelated follows each client's chain)."""
    rng = random.Random(seed)
    columns: list[list[float]] = [[] for _ in range(attempts)]
    for _client in range(clients):
        previous = 0.0
        for attempt in range(1, attempts + 1):
            previous = strategy.wait(attempt, rng, previous)
            columns[attempt - 1].append(previous)
    return columns


def waits_table(backoffs: dict[str, backoff.Backoff], attempts: int = 6, seed: int = 0) -> list[dict[str, Any]]:
    """Each strategy's formula (its docstring) and the waits of one client, attempt by attempt."""
    rows = []
    for name, strategy in backoffs.items():
        one_client = [column[0] for column in sample_waits(strategy, attempts, clients=1, seed=seed)]
        formula = (type(strategy).__doc__ or "").split(":")[0]
        rows.append(
            {"strategy": name, "formula": formula, **{f"#{i}": round(w, 2) for i, w in enumerate(one_client, 1)}}
        )
    return rows


def backoff_waits(backoffs: dict[str, backoff.Backoff], attempts: int = 8, seed: int = 0) -> show.Picture:
    """One panel per strategy: the waits of 100 clients at each attempt, with the cap."""
    figure, axes = show.canvas(11, 2.6, 1, len(backoffs), sharey=True, squeeze=False)
    look, said = looks(backoffs), []
    for ax, (name, strategy) in zip(axes[0], backoffs.items(), strict=True):
        jitter = random.Random(seed)
        columns = sample_waits(strategy, attempts, clients=100, seed=seed)
        for attempt, waits in enumerate(columns, start=1):
            xs = [attempt + jitter.uniform(-0.25, 0.25) for _wait in waits]
            ax.scatter(xs, waits, s=3, alpha=0.35, color=PALETTE[look[name]], marker=show.MARKERS[look[name]])
        cap = getattr(strategy, "cap", None)
        if cap is not None:
            ax.axhline(cap, color="black", lw=0.8, ls="--")
        ax.set_title(shown(name))
        ax.set_xlabel(_("attempt"))
        low, high = round(min(columns[-1]), 2), round(max(columns[-1]), 2)
        if low == high:
            said.append(_("{name} {wait} s for every client").format(name=shown(name), wait=number(low, ",g")))
        else:
            waits = _("{name} {low} to {high} s")
            said.append(waits.format(name=shown(name), low=number(low, ",g"), high=number(high, ",g")))
    axes[0][0].set_ylabel(_("wait (s)"))
    caps = sorted({strategy.cap for strategy in backoffs.values() if getattr(strategy, "cap", None) is not None})
    if caps:
        alt = _(
            "Scatter plots, one per strategy: the waits 100 clients draw at attempts 1 to {attempts}, the cap "
            "({caps}) dashed. At attempt {attempts}:"
        ).format(attempts=number(attempts), caps=show.numbers(caps, "s"))
    else:
        alt = _(
            "Scatter plots, one per strategy: the waits 100 clients draw at attempts 1 to {attempts}. "
            "At attempt {attempts}:"
        ).format(attempts=number(attempts))
    return show.Picture(figure, alt + " " + "; ".join(said) + ".")


def outage_arrivals(runs: dict[str, OutageRun], outage_seconds: float, capacity: int, until: int = 140) -> show.Picture:
    """Calls reaching the gateway per second, one panel per strategy, with the outage shaded."""
    figure, axes = show.canvas(11, 1.6 * len(runs), len(runs), 1, sharex=True, sharey=True, squeeze=False)
    look, said = looks(runs), []
    for ax, (name, run) in zip(axes[:, 0], runs.items(), strict=True):
        label, drawn = shown(name), run.arrivals[:until]
        # one filled outline instead of `until` bars: the same picture, a tenth of the drawing time
        ax.stairs(drawn, [x - 0.5 for x in range(len(drawn) + 1)], fill=True, color=PALETTE[look[name]])
        ax.axvspan(0, outage_seconds, color=show.BAD, alpha=0.08)
        ax.axhline(capacity, color="black", lw=0.8, ls="--")
        ax.set_ylabel(label, rotation=0, ha="right")
        last = max((second for second, calls in enumerate(drawn) if calls), default=0)
        over = sum(1 for calls in drawn if calls > capacity)
        said.append(
            _("{name} peaks at {peak} calls/s, is above {capacity} for {over} s, its last call at {last} s").format(
                name=label, peak=number(max(drawn, default=0), ","), capacity=number(capacity, ","),
                over=number(over), last=number(last),
            )
        )  # fmt: skip
    top = axes[0, 0]
    top.text(outage_seconds / 2, 0.95, _("gateway down"), transform=top.get_xaxis_transform(), ha="center", va="top")
    axes[-1, 0].set_xlabel(_("seconds (shaded: gateway down; dashed: calls it can serve per second)"))
    alt = _(
        "Step charts, one per strategy: calls reaching the gateway each second over the first {until} s; the "
        "gateway is down for the first {outage} s (shaded) and serves {capacity} calls a second (dashed)."
    ).format(until=number(until), outage=number(outage_seconds, "g"), capacity=number(capacity, ","))
    return show.Picture(figure, alt + " " + "; ".join(said) + ".")


def contention(rows: list[dict[str, Any]]) -> show.Picture:
    """Calls and completion time against the number of clients, one line per strategy."""
    figure, (calls_ax, time_ax) = show.canvas(11, 3.2, 1, 2)
    names = list(dict.fromkeys(row["strategy"] for row in rows))
    look = looks(names)
    for name in names:
        mine = [row for row in rows if row["strategy"] == name]
        clients = [row["clients"] for row in mine]
        style = {"color": PALETTE[look[name]], "marker": show.MARKERS[look[name]], "label": shown(name)}
        calls_ax.plot(clients, [row["calls"] for row in mine], **style)
        time_ax.plot(clients, [row["time_ms"] for row in mine], **style)
    calls_ax.set(xlabel=_("clients"), ylabel=_("write calls"), title=_("Work: total calls"))
    time_ax.set(xlabel=_("clients"), ylabel=_("ms until the last client is done"), title=_("Time"), yscale="log")
    calls_ax.legend()
    most = max(row["clients"] for row in rows)
    last = [row for row in rows if row["clients"] == most]
    heading = _(
        "Line charts, one line per strategy: write calls (left) and ms until the last client is done (right, log "
        "scale) against {clients} clients. At {most} clients:"
    ).format(clients=show.numbers(sorted({row["clients"] for row in rows})), most=number(most, ","))
    each = _("{strategy} {calls} calls in {ms} ms")
    said = [
        each.format(strategy=shown(row["strategy"]), calls=number(row["calls"], ",g"), ms=number(row["time_ms"], ",g"))
        for row in last
    ]
    best = _("Fewest calls: {fewest}; done soonest: {soonest}.").format(
        fewest=shown(min(last, key=lambda row: row["calls"])["strategy"]),
        soonest=shown(min(last, key=lambda row: row["time_ms"])["strategy"]),
    )
    return show.Picture(figure, heading + " " + "; ".join(said) + ". " + best)


def layers(reports: dict[str, dict[str, Any]]) -> show.Picture:
    """Worst-case calls per order for each configuration, against the limit of 15 (over it: red and hatched)."""
    figure, ax = show.canvas(7, 2.8)
    limit, names = retry_layers.WORST_CASE_LIMIT, list(reports)
    labels = [shown(name) for name in names]
    values = [reports[name]["per_order"] for name in names]
    over = [value > limit for value in values]
    colours = [show.BAD if o else show.GOOD for o in over]
    ax.barh(labels, values, color=colours, hatch=["//" if o else "" for o in over], edgecolor="white")
    said = []
    for y, (value, name, label, o) in enumerate(zip(values, names, labels, over, strict=True)):
        ax.text(value, y, f" {reports[name]['formula']} = {value} {'>' if o else '≤'} {limit}", va="center")
        judged = (
            _("{name}: {formula} = {value}, over the limit")
            if o
            else _("{name}: {formula} = {value}, within the limit")
        )
        said.append(judged.format(name=label, formula=reports[name]["formula"], value=number(value, ",")))
    ax.axvline(limit, color="black", ls="--", lw=0.8)
    ax.set_xlabel(_("gateway calls per order when every attempt fails (dashed: {limit})").format(limit=number(limit)))
    ax.set_xlim(0, max(values) * 1.35)
    alt = _(
        "Bar chart, one bar per configuration: gateway calls per order when every attempt fails, against the "
        "limit of {limit} (dashed)."
    ).format(limit=number(limit))
    return show.Picture(figure, alt + " " + "; ".join(said) + ".")


def storm(run: StormRun) -> show.Picture:
    """Four panels over time: gateway load, success rate, queue depth and DLQ, pollers."""
    rows, config = run.rows, run.config
    seconds = [row.seconds for row in rows]
    figure, axes = show.canvas(11, 6, 4, 1, sharex=True)
    panels = [
        ([row.calls_per_second for row in rows], _("gateway calls/s"), show.BAD),
        ([row.success_rate for row in rows], _("success rate"), show.GOOD),
        ([row.queue_depth for row in rows], _("queue depth"), PURPLE),
        ([row.pollers for row in rows], _("pollers"), SLATE),
    ]
    for ax, (values, label, colour) in zip(axes, panels, strict=True):
        ax.plot(seconds, values, color=colour, drawstyle="steps-post", label=label)
        ax.set_ylabel(label)
        ax.axvspan(config.degrade_from, config.degrade_until, color=ORANGE, alpha=0.1)
        for start in run.collapses:
            ax.axvline(start, color="black", lw=0.6, ls=":")
    axes[2].plot(seconds, [row.in_dlq for row in rows], color="black", ls="--", label=_("in DLQ"))
    axes[2].legend(loc="upper left")
    slow = _("latency {seconds} s").format(seconds=number(config.degraded_latency_seconds, "g"))
    axes[-1].set_xlabel(_("seconds (shaded: {latency}; dotted: the gateway falls over)").format(latency=slow))
    storm_of = _("Retry storm, defences: {defences}").format(defences=shown(run.defences.label()))
    figure.suptitle(storm_of)
    deepest, lowest = max(rows, key=lambda row: row.queue_depth), min(row.success_rate for row in rows)
    first, most = rows[0].pollers, max(row.pollers for row in rows)
    success = _("falls to {share}").format(share=number(lowest, ".0%")) if lowest < 1 else _("stays at 100%")
    if most > first:
        pollers = _("go from {first} to {most}").format(first=number(first), most=number(most))
    else:
        pollers = _("stay at {first}").format(first=number(first))
    alt = _(
        "{storm}. Four panels over {seconds} s, {latency} from {start} to {end} s (shaded): gateway calls peak at "
        "{peak}/s; the success rate {success}; the queue is deepest at {deepest} s, {depth} orders, and {in_dlq} "
        "orders end in the DLQ (dashed); pollers {pollers}."
    ).format(
        storm=storm_of, seconds=number(seconds[-1], ","), latency=slow, start=number(config.degrade_from, "g"),
        end=number(config.degrade_until, "g"), peak=number(max(row.calls_per_second for row in rows), ",g"),
        success=success, deepest=number(deepest.seconds), depth=number(deepest.queue_depth, ","),
        in_dlq=number(run.in_dlq, ","), pollers=pollers,
    )  # fmt: skip
    if run.collapses:
        fell = _("The gateway falls over at {times} (dotted).").format(times=show.numbers(run.collapses, "s"))
    else:
        fell = _("The gateway never falls over.")
    return show.Picture(figure, alt + " " + fell)


def storm_outcomes(summaries: list[dict[str, Any]]) -> show.Picture:
    """Orders in the DLQ and gateway calls for each combination of defences."""
    figure, (dlq_ax, calls_ax) = show.canvas(11, 2.8, 1, 2, sharey=True)
    labels = [shown(row["defences"]) for row in summaries]
    dlq_ax.barh(labels, [row["in_dlq"] for row in summaries], color=show.BAD)
    dlq_ax.set_xlabel(_("orders in the DLQ"))
    calls_ax.barh(labels, [row["gateway_calls"] for row in summaries], color=show.GOOD)
    calls_ax.set_xlabel(_("gateway calls"))
    dlq_ax.invert_yaxis()
    alt = _("Bar charts, one bar per combination of defences: orders in the DLQ (left) and gateway calls (right).")
    each = _("{defences}: {in_dlq} in the DLQ, {calls} calls")
    said = [
        each.format(
            defences=shown(row["defences"]), in_dlq=number(row["in_dlq"], ","), calls=number(row["gateway_calls"], ",")
        )
        for row in summaries
    ]
    return show.Picture(figure, alt + " " + "; ".join(said) + ".")


def budgets(rows: list[dict[str, Any]]) -> show.Picture:
    """Share of failed calls that got a retry, ours (10 %) and botocore's standard-mode quota."""
    figure, ax = show.canvas(7, 2.8)
    rates, wanted = [row["failure_rate"] for row in rows], [row["failed_calls"] for row in rows]
    said = []
    lines = [("ours_retries", "RetryBudget(ratio=0.1)", "o"), ("botocore_retries", _("botocore standard quota"), "s")]
    for key, label, marker in lines:
        granted = [row[key] for row in rows]
        ax.plot(rates, granted, marker=marker, label=label)
        most = max(range(len(rows)), key=granted.__getitem__)
        short = next((rate for rate, g, w in zip(rates, granted, wanted, strict=True) if g < w), None)
        if short is not None:
            grants = _(
                "{label} grants at most {most} (at {rate}), {last} at {last_rate}, fewer than wanted from {short}"
            )
        else:
            grants = _("{label} grants at most {most} (at {rate}), {last} at {last_rate}, all that is wanted")
        said.append(
            grants.format(
                label=label, most=number(granted[most], ","), rate=number(rates[most], "g"),
                last=number(granted[-1], ","), last_rate=number(rates[-1], "g"),
                short=number(short, "g") if short is not None else "",
            )
        )  # fmt: skip
    ax.plot(rates, wanted, color=GREY, ls=":", label=_("retries wanted"))
    ylabel = _("retries in {calls} calls").format(calls=number(rows[0]["calls"]))
    ax.set(xlabel=_("share of calls failing"), ylabel=ylabel, yscale="log")
    ax.legend()
    alt = _(
        "Line chart (log scale): retries in {calls} calls against the share of calls failing ({rates}); the retries "
        "wanted (dotted) rise to {wanted}."
    ).format(calls=number(rows[0]["calls"], ","), rates=show.numbers(rates), wanted=number(max(wanted), ","))
    return show.Picture(figure, alt + " " + "; ".join(said) + ".")
