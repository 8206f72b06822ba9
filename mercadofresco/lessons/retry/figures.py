"""Figures for notebooks 05-08 (retries); like `show`, built on matplotlib.figure.Figure, never pyplot."""

from __future__ import annotations

import random
from typing import Any

from matplotlib.figure import Figure

from mercadofresco.patterns import backoff, retry_layers
from mercadofresco.sims.recovery import OutageRun
from mercadofresco.sims.storm import StormRun

COLOURS = {
    "none": "tab:gray",
    "exponential": "tab:red",
    "full": "tab:green",
    "equal": "tab:blue",
    "decorrelated": "tab:purple",
}


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


def backoff_waits(backoffs: dict[str, backoff.Backoff], attempts: int = 8, seed: int = 0) -> Figure:
    """One panel per strategy: the waits of 100 clients at each attempt, with the cap."""
    figure = Figure(figsize=(11, 2.6), layout="constrained")
    axes = figure.subplots(1, len(backoffs), sharey=True)
    for ax, (name, strategy) in zip(axes, backoffs.items(), strict=True):
        jitter = random.Random(seed)
        for attempt, waits in enumerate(sample_waits(strategy, attempts, clients=100, seed=seed), start=1):
            xs = [attempt + jitter.uniform(-0.25, 0.25) for _ in waits]
            ax.scatter(xs, waits, s=3, alpha=0.35, color=COLOURS.get(name, "tab:blue"))
        cap = getattr(strategy, "cap", None)
        if cap is not None:
            ax.axhline(cap, color="black", lw=0.8, ls="--")
        ax.set_title(name)
        ax.set_xlabel("attempt")
    axes[0].set_ylabel("wait (s)")
    return figure


def outage_arrivals(runs: dict[str, OutageRun], outage_seconds: float, capacity: int, until: int = 140) -> Figure:
    """Calls reaching the gateway per second, one panel per strategy, with the outage shaded."""
    figure = Figure(figsize=(11, 1.6 * len(runs)), layout="constrained")
    axes = figure.subplots(len(runs), 1, sharex=True, sharey=True)
    for ax, (name, run) in zip(axes, runs.items(), strict=True):
        # one filled outline instead of `until` bars: the same picture, a tenth of the drawing time
        ax.stairs(
            run.arrivals[:until], [x - 0.5 for x in range(until + 1)], fill=True, color=COLOURS.get(name, "tab:blue")
        )
        ax.axvspan(0, outage_seconds, color="tab:red", alpha=0.08)
        ax.axhline(capacity, color="black", lw=0.8, ls="--")
        ax.set_ylabel(name, rotation=0, ha="right")
    axes[-1].set_xlabel("seconds (red: gateway down; dashed: calls it can serve per second)")
    return figure


def contention(rows: list[dict[str, Any]]) -> Figure:
    """Calls and completion time against the number of clients, one line per strategy."""
    figure = Figure(figsize=(11, 3.2), layout="constrained")
    calls_ax, time_ax = figure.subplots(1, 2)
    for name in dict.fromkeys(row["strategy"] for row in rows):
        mine = [row for row in rows if row["strategy"] == name]
        clients = [row["clients"] for row in mine]
        colour = COLOURS.get(name, "tab:blue")
        calls_ax.plot(clients, [row["calls"] for row in mine], marker="o", label=name, color=colour)
        time_ax.plot(clients, [row["time_ms"] for row in mine], marker="o", label=name, color=colour)
    calls_ax.set(xlabel="clients", ylabel="write calls", title="Work: total calls")
    time_ax.set(xlabel="clients", ylabel="ms until the last client is done", title="Time", yscale="log")
    calls_ax.legend()
    return figure


def layers(reports: dict[str, dict[str, Any]]) -> Figure:
    """Worst-case calls per order for each configuration, against the limit of 15."""
    figure = Figure(figsize=(7, 2.8), layout="constrained")
    ax = figure.subplots()
    names = list(reports)
    values = [reports[name]["per_order"] for name in names]
    colours = ["tab:red" if v > retry_layers.WORST_CASE_LIMIT else "tab:green" for v in values]
    ax.barh(names, values, color=colours)
    for y, (value, name) in enumerate(zip(values, names, strict=True)):
        ax.text(value, y, f" {reports[name]['formula']} = {value}", va="center")
    ax.axvline(retry_layers.WORST_CASE_LIMIT, color="black", ls="--", lw=0.8)
    ax.set_xlabel("gateway calls per order when every attempt fails (dashed: 15)")
    ax.set_xlim(0, max(values) * 1.35)
    return figure


def storm(run: StormRun) -> Figure:
    """Four panels over time: gateway load, success rate, queue depth and DLQ, pollers."""
    seconds = [row.seconds for row in run.rows]
    figure = Figure(figsize=(11, 6), layout="constrained")
    axes = figure.subplots(4, 1, sharex=True)
    series = [
        ([row.calls_per_second for row in run.rows], "gateway calls/s", "tab:red"),
        ([row.success_rate for row in run.rows], "success rate", "tab:green"),
        ([row.queue_depth for row in run.rows], "queue depth", "tab:blue"),
        ([row.pollers for row in run.rows], "pollers", "tab:gray"),
    ]
    for ax, (values, label, colour) in zip(axes, series, strict=True):
        ax.plot(seconds, values, color=colour, drawstyle="steps-post")
        ax.set_ylabel(label)
        ax.axvspan(run.config.degrade_from, run.config.degrade_until, color="orange", alpha=0.1)
        for start in run.collapses:
            ax.axvline(start, color="black", lw=0.6, ls=":")
    axes[2].plot(seconds, [row.in_dlq for row in run.rows], color="black", label="in DLQ")
    axes[2].legend(loc="upper left")
    axes[-1].set_xlabel("seconds (orange: latency 4 s; dotted: the gateway falls over)")
    figure.suptitle(f"Retry storm, defences: {run.defences.label()}")
    return figure


def storm_outcomes(summaries: list[dict[str, Any]]) -> Figure:
    """Orders in the DLQ and gateway calls for each combination of defences."""
    figure = Figure(figsize=(11, 2.8), layout="constrained")
    dlq_ax, calls_ax = figure.subplots(1, 2, sharey=True)
    labels = [row["defences"] for row in summaries]
    dlq_ax.barh(labels, [row["in_dlq"] for row in summaries], color="tab:red")
    dlq_ax.set_xlabel("orders in the DLQ")
    calls_ax.barh(labels, [row["gateway_calls"] for row in summaries], color="tab:blue")
    calls_ax.set_xlabel("gateway calls")
    dlq_ax.invert_yaxis()
    return figure


def budgets(rows: list[dict[str, Any]]) -> Figure:
    """Share of failed calls that got a retry, ours (10 %) and botocore's standard-mode quota."""
    figure = Figure(figsize=(7, 2.8), layout="constrained")
    ax = figure.subplots()
    rates = [row["failure_rate"] for row in rows]
    ax.plot(rates, [row["ours_retries"] for row in rows], marker="o", label="RetryBudget(ratio=0.1)")
    ax.plot(rates, [row["botocore_retries"] for row in rows], marker="s", label="botocore standard quota")
    ax.plot(rates, [row["failed_calls"] for row in rows], color="gray", ls=":", label="retries wanted")
    ax.set(xlabel="share of calls failing", ylabel=f"retries in {rows[0]['calls']} calls", yscale="log")
    ax.legend()
    return figure


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
