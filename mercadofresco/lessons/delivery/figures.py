"""Figures of section 1 (notebook 01, lab 1): a run's timeline and the latency sweep; matplotlib.figure.Figure."""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from mercadofresco.lessons.delivery.experiments import DeliveryRun

END_EVENTS = ("deleted", "failed", "crashed", "handler_error", "timed_out")
EVENT_MARKERS = {"failed": ("x", "tab:red"), "crashed": ("X", "black"), "deleted": ("D", "tab:green")}


def timeline(run: DeliveryRun, title: str = "") -> Figure:
    """One lane per consumer: a bar from each receive to its end, and a € for every charge made."""
    figure = Figure(figsize=(9, 2.8), layout="constrained")
    ax = figure.subplots()
    consumers = sorted({row["consumer"] for row in run.timeline})
    lane = {name: i for i, name in enumerate(consumers)}
    for row in run.timeline:
        if row["event"] != "received":
            continue
        end = next(
            (
                later["seconds"]
                for later in run.timeline
                if later["consumer"] == row["consumer"]
                and later["seconds"] >= row["seconds"]
                and later["event"] in END_EVENTS
            ),
            row["seconds"],
        )
        y = lane[row["consumer"]]
        ax.barh(y, max(end - row["seconds"], 1.0), left=row["seconds"], height=0.35, color="tab:blue", alpha=0.5)
        ax.annotate(row["detail"], (row["seconds"], y + 0.25), fontsize=8)
    labelled = set()
    for row in run.timeline:
        if row["event"] in EVENT_MARKERS:
            marker, color = EVENT_MARKERS[row["event"]]
            label = None if row["event"] in labelled else row["event"]
            labelled.add(row["event"])
            ax.plot(
                row["seconds"],
                lane[row["consumer"]],
                marker=marker,
                color=color,
                markersize=8,
                linestyle="",
                label=label,
            )
    for seconds in run.charge_seconds():
        ax.axvline(seconds, color="tab:orange", linestyle="--", linewidth=1)
        ax.annotate("€ charged", (seconds, len(consumers) - 0.45), fontsize=8, color="tab:orange")
    ax.set_yticks(range(len(consumers)), consumers)
    ax.set_xlim(left=-10)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_ylim(-0.6, len(consumers) - 0.2)
    ax.set_xlabel("seconds since the order was sent (virtual time)")
    ax.set_title(title or f"{len(run.ledger)} charge(s) for {run.orders_sent} order(s)")
    return figure


def latency_sweep(curves: dict[str, list[dict[str, Any]]], title: str = "") -> Figure:
    """Charges per order against gateway latency, one line per configuration."""
    figure = Figure(figsize=(7, 3.2), layout="constrained")
    ax = figure.subplots()
    for label, rows in curves.items():
        ax.plot([r["latency_seconds"] for r in rows], [r["charges_per_order"] for r in rows], marker="o", label=label)
    ax.axhline(1, color="grey", linewidth=0.8)
    ax.set_xlabel("gateway latency (s)")
    ax.set_ylabel("charges per order")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return figure
