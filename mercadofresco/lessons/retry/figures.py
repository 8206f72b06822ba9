"""Figures for notebooks 05-08 (retries), each a `show.Picture`: the figure and what this run shows, said."""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from mercadofresco.lessons import show
from mercadofresco.lessons.show.pictures import GREY, ORANGE, PALETTE, PURPLE, SLATE
from mercadofresco.patterns import backoff, retry_layers
from mercadofresco.sims.recovery import OutageRun
from mercadofresco.sims.storm import StormRun

# Each strategy's look, the same in every figure: an index into show.PALETTE and show.MARKERS (full jitter,
# the lesson's advice, in blue; exponential without jitter in red).
STRATEGY_LOOKS = {"full": 0, "equal": 1, "exponential": 2, "none": 3, "decorrelated": 4}


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
    for _ in range(clients):
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
            xs = [attempt + jitter.uniform(-0.25, 0.25) for _ in waits]
            ax.scatter(xs, waits, s=3, alpha=0.35, color=PALETTE[look[name]], marker=show.MARKERS[look[name]])
        cap = getattr(strategy, "cap", None)
        if cap is not None:
            ax.axhline(cap, color="black", lw=0.8, ls="--")
        ax.set_title(name)
        ax.set_xlabel("attempt")
        low, high = round(min(columns[-1]), 2), round(max(columns[-1]), 2)
        said.append(f"{name} {low:,g} s for every client" if low == high else f"{name} {low:,g} to {high:,g} s")
    axes[0][0].set_ylabel("wait (s)")
    caps = sorted({strategy.cap for strategy in backoffs.values() if getattr(strategy, "cap", None) is not None})
    alt = (
        f"Scatter plots, one per strategy: the waits 100 clients draw at attempts 1 to {attempts}"
        + (f", the cap ({show.numbers(caps, 's')}) dashed" if caps else "")
        + f". At attempt {attempts}: "
        + "; ".join(said)
        + "."
    )
    return show.Picture(figure, alt)


def outage_arrivals(runs: dict[str, OutageRun], outage_seconds: float, capacity: int, until: int = 140) -> show.Picture:
    """Calls reaching the gateway per second, one panel per strategy, with the outage shaded."""
    figure, axes = show.canvas(11, 1.6 * len(runs), len(runs), 1, sharex=True, sharey=True, squeeze=False)
    look, said = looks(runs), []
    for ax, (name, run) in zip(axes[:, 0], runs.items(), strict=True):
        shown = run.arrivals[:until]
        # one filled outline instead of `until` bars: the same picture, a tenth of the drawing time
        ax.stairs(shown, [x - 0.5 for x in range(len(shown) + 1)], fill=True, color=PALETTE[look[name]])
        ax.axvspan(0, outage_seconds, color=show.BAD, alpha=0.08)
        ax.axhline(capacity, color="black", lw=0.8, ls="--")
        ax.set_ylabel(name, rotation=0, ha="right")
        last = max((second for second, calls in enumerate(shown) if calls), default=0)
        over = sum(1 for calls in shown if calls > capacity)
        said.append(f"{name} peaks at {max(shown, default=0):,} calls/s, is above {capacity:,} for {over} s, "
                    f"its last call at {last} s")  # fmt: skip
    top = axes[0, 0]
    top.text(outage_seconds / 2, 0.95, "gateway down", transform=top.get_xaxis_transform(), ha="center", va="top")
    axes[-1, 0].set_xlabel("seconds (shaded: gateway down; dashed: calls it can serve per second)")
    alt = (
        f"Step charts, one per strategy: calls reaching the gateway each second over the first {until} s; the "
        f"gateway is down for the first {outage_seconds:g} s (shaded) and serves {capacity:,} calls a second "
        "(dashed). " + "; ".join(said) + "."
    )
    return show.Picture(figure, alt)


def contention(rows: list[dict[str, Any]]) -> show.Picture:
    """Calls and completion time against the number of clients, one line per strategy."""
    figure, (calls_ax, time_ax) = show.canvas(11, 3.2, 1, 2)
    names = list(dict.fromkeys(row["strategy"] for row in rows))
    look = looks(names)
    for name in names:
        mine = [row for row in rows if row["strategy"] == name]
        clients = [row["clients"] for row in mine]
        style = {"color": PALETTE[look[name]], "marker": show.MARKERS[look[name]], "label": name}
        calls_ax.plot(clients, [row["calls"] for row in mine], **style)
        time_ax.plot(clients, [row["time_ms"] for row in mine], **style)
    calls_ax.set(xlabel="clients", ylabel="write calls", title="Work: total calls")
    time_ax.set(xlabel="clients", ylabel="ms until the last client is done", title="Time", yscale="log")
    calls_ax.legend()
    most = max(row["clients"] for row in rows)
    last = [row for row in rows if row["clients"] == most]
    alt = (
        "Line charts, one line per strategy: write calls (left) and ms until the last client is done (right, log "
        f"scale) against {show.numbers(sorted({row['clients'] for row in rows}))} clients. At {most:,} clients: "
        + "; ".join(f"{row['strategy']} {row['calls']:,g} calls in {row['time_ms']:,g} ms" for row in last)
        + f". Fewest calls: {min(last, key=lambda row: row['calls'])['strategy']}; "
        f"done soonest: {min(last, key=lambda row: row['time_ms'])['strategy']}."
    )
    return show.Picture(figure, alt)


def layers(reports: dict[str, dict[str, Any]]) -> show.Picture:
    """Worst-case calls per order for each configuration, against the limit of 15 (over it: red and hatched)."""
    figure, ax = show.canvas(7, 2.8)
    limit, names = retry_layers.WORST_CASE_LIMIT, list(reports)
    values = [reports[name]["per_order"] for name in names]
    over = [value > limit for value in values]
    colours = [show.BAD if o else show.GOOD for o in over]
    ax.barh(names, values, color=colours, hatch=["//" if o else "" for o in over], edgecolor="white")
    said = []
    for y, (value, name, o) in enumerate(zip(values, names, over, strict=True)):
        ax.text(value, y, f" {reports[name]['formula']} = {value} {'>' if o else '≤'} {limit}", va="center")
        said.append(f"{name}: {reports[name]['formula']} = {value:,}, {'over' if o else 'within'} the limit")
    ax.axvline(limit, color="black", ls="--", lw=0.8)
    ax.set_xlabel(f"gateway calls per order when every attempt fails (dashed: {limit})")
    ax.set_xlim(0, max(values) * 1.35)
    alt = (
        "Bar chart, one bar per configuration: gateway calls per order when every attempt fails, against the "
        f"limit of {limit} (dashed). " + "; ".join(said) + "."
    )
    return show.Picture(figure, alt)


def storm(run: StormRun) -> show.Picture:
    """Four panels over time: gateway load, success rate, queue depth and DLQ, pollers."""
    rows, config = run.rows, run.config
    seconds = [row.seconds for row in rows]
    figure, axes = show.canvas(11, 6, 4, 1, sharex=True)
    panels = [
        ([row.calls_per_second for row in rows], "gateway calls/s", show.BAD),
        ([row.success_rate for row in rows], "success rate", show.GOOD),
        ([row.queue_depth for row in rows], "queue depth", PURPLE),
        ([row.pollers for row in rows], "pollers", SLATE),
    ]
    for ax, (values, label, colour) in zip(axes, panels, strict=True):
        ax.plot(seconds, values, color=colour, drawstyle="steps-post", label=label)
        ax.set_ylabel(label)
        ax.axvspan(config.degrade_from, config.degrade_until, color=ORANGE, alpha=0.1)
        for start in run.collapses:
            ax.axvline(start, color="black", lw=0.6, ls=":")
    axes[2].plot(seconds, [row.in_dlq for row in rows], color="black", ls="--", label="in DLQ")
    axes[2].legend(loc="upper left")
    slow = f"latency {config.degraded_latency_seconds:g} s"
    axes[-1].set_xlabel(f"seconds (shaded: {slow}; dotted: the gateway falls over)")
    figure.suptitle(f"Retry storm, defences: {run.defences.label()}")
    deepest, lowest = max(rows, key=lambda row: row.queue_depth), min(row.success_rate for row in rows)
    first, most = rows[0].pollers, max(row.pollers for row in rows)
    alt = (
        f"Retry storm, defences: {run.defences.label()}. Four panels over {seconds[-1]:,} s, {slow} from "
        f"{config.degrade_from:g} to {config.degrade_until:g} s (shaded): gateway calls peak at "
        f"{max(row.calls_per_second for row in rows):,g}/s; the success rate "
        + (f"falls to {lowest:.0%}" if lowest < 1 else "stays at 100%")
        + f"; the queue is deepest at {deepest.seconds} s, {deepest.queue_depth:,} orders, and {run.in_dlq:,} "
        "orders end in the DLQ (dashed); pollers "
        + (f"go from {first} to {most}" if most > first else f"stay at {first}")
        + (f". The gateway falls over at {show.numbers(run.collapses, 's')} (dotted)." if run.collapses else
           ". The gateway never falls over.")
    )  # fmt: skip
    return show.Picture(figure, alt)


def storm_outcomes(summaries: list[dict[str, Any]]) -> show.Picture:
    """Orders in the DLQ and gateway calls for each combination of defences."""
    figure, (dlq_ax, calls_ax) = show.canvas(11, 2.8, 1, 2, sharey=True)
    labels = [row["defences"] for row in summaries]
    dlq_ax.barh(labels, [row["in_dlq"] for row in summaries], color=show.BAD)
    dlq_ax.set_xlabel("orders in the DLQ")
    calls_ax.barh(labels, [row["gateway_calls"] for row in summaries], color=show.GOOD)
    calls_ax.set_xlabel("gateway calls")
    dlq_ax.invert_yaxis()
    alt = (
        "Bar charts, one bar per combination of defences: orders in the DLQ (left) and gateway calls (right). "
        + "; ".join(
            f"{row['defences']}: {row['in_dlq']:,} in the DLQ, {row['gateway_calls']:,} calls" for row in summaries
        )
        + "."
    )
    return show.Picture(figure, alt)


def budgets(rows: list[dict[str, Any]]) -> show.Picture:
    """Share of failed calls that got a retry, ours (10 %) and botocore's standard-mode quota."""
    figure, ax = show.canvas(7, 2.8)
    rates, wanted = [row["failure_rate"] for row in rows], [row["failed_calls"] for row in rows]
    said = []
    lines = [("ours_retries", "RetryBudget(ratio=0.1)", "o"), ("botocore_retries", "botocore standard quota", "s")]
    for key, label, marker in lines:
        granted = [row[key] for row in rows]
        ax.plot(rates, granted, marker=marker, label=label)
        most = max(range(len(rows)), key=granted.__getitem__)
        short = next((rate for rate, g, w in zip(rates, granted, wanted, strict=True) if g < w), None)
        said.append(
            f"{label} grants at most {granted[most]:,} (at {rates[most]:g}), {granted[-1]:,} at {rates[-1]:g}, "
            + (f"fewer than wanted from {short:g}" if short is not None else "all that is wanted")
        )
    ax.plot(rates, wanted, color=GREY, ls=":", label="retries wanted")
    ax.set(xlabel="share of calls failing", ylabel=f"retries in {rows[0]['calls']} calls", yscale="log")
    ax.legend()
    alt = (
        f"Line chart (log scale): retries in {rows[0]['calls']:,} calls against the share of calls failing "
        f"({show.numbers(rates)}); the retries wanted (dotted) rise to {max(wanted):,}. " + "; ".join(said) + "."
    )
    return show.Picture(figure, alt)


def storm_steps(run: StormRun) -> list[dict[str, Any]]:
    """The lesson's eight steps, each with what this run shows for it."""
    rows, config = run.rows, run.config
    before = [r for r in rows if r.seconds <= config.degrade_from]
    during = [r for r in rows if config.degrade_from < r.seconds <= config.degrade_until]
    first_collapse = run.collapses[0] if run.collapses else None
    late = run.collapses[1:]
    ratio = round(max(r.pollers for r in rows) / rows[0].pollers, 1)  # each poller keeps one call in flight
    return [
        {
            "step": 1,
            "what": "latency 240 ms -> 4 s",
            "model": f"from {config.degrade_from:g} s to {config.degrade_until:g} s",
        },
        {
            "step": 2,
            "what": "the queue grows",
            "model": f"depth {max(r.queue_depth for r in before)} -> {max(r.queue_depth for r in during)}",
        },
        {"step": 3, "what": "pollers 20 -> 60", "model": f"{rows[0].pollers} -> {max(r.pollers for r in rows)}"},
        {
            "step": 4,
            "what": "3 times the requests; 503s start",
            "model": f"{rows[0].pollers} -> {max(r.pollers for r in rows)} calls at once ({ratio:g}×) where"
            f" {config.degraded_max_in_flight} fit; "
            + (f"first 503 at {run.first_refusal:.1f} s" if run.first_refusal is not None else "no 503"),
        },
        {
            "step": 5,
            "what": "retries multiply the load",
            "model": f"{run.gateway_calls:,} calls for {run.orders:,} orders",
        },
        {
            "step": 6,
            "what": "the gateway falls over",
            "model": f"first at {first_collapse} s" if first_collapse else "no",
        },
        {"step": 7, "what": "orders in the DLQ", "model": str(run.in_dlq)},
        {"step": 8, "what": "knocked over again on the way back", "model": f"again at {late} s" if late else "no"},
    ]
