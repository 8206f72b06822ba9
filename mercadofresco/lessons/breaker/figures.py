"""The figure of notebook 09 (the circuit breaker during the outage); matplotlib.figure.Figure, never pyplot."""

from __future__ import annotations

from typing import TYPE_CHECKING

from matplotlib.figure import Figure

if TYPE_CHECKING:  # outage imports the Redis-backed breaker (redis, 0.15 s); here it only names a type
    from mercadofresco.lessons.breaker.outage import OutageRun

COLORS = {"per_process": "tab:red", "shared": "tab:blue"}


def gateway_calls(runs: list[OutageRun], title: str = "") -> Figure:
    """Cumulative calls that reached the gateway, one line per kind of breaker; the outage shaded."""
    figure = Figure(figsize=(8, 3.2), layout="constrained")
    ax = figure.subplots()
    for run in runs:
        seconds = [call["second"] for call in run.calls]
        ax.step(seconds, range(1, len(seconds) + 1), where="post", color=COLORS[run.mode], label=run.mode)
    down = runs[0].config.down_seconds
    ax.axvspan(0, down, color="grey", alpha=0.15, label="gateway down")
    ax.set_xlabel("seconds since the gateway went down (virtual time)")
    ax.set_ylabel("calls that reached the gateway")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return figure
