"""The figure of notebook 09 (the circuit breaker during the outage), a `show.Picture`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mercadofresco.i18n import _, ngettext, number, pgettext
from mercadofresco.lessons import show
from mercadofresco.lessons.show.pictures import GREY, PALETTE

if TYPE_CHECKING:  # outage imports the Redis-backed breaker (redis, 0.15 s); here it only names a type
    from mercadofresco.lessons.breaker.outage import OutageRun

LOOKS = {"per_process": (show.BAD, "-"), "shared": (show.GOOD, "--")}  # colour and line style; each named at its end


def gateway_calls(runs: list[OutageRun], title: str = "") -> show.Picture:
    """Cumulative calls that reached the gateway, one line per kind of breaker; the outage shaded."""
    figure, ax = show.canvas(8, 3.2)
    down = runs[0].config.down_seconds
    said = []
    for n, run in enumerate(runs):
        colour, dashes = LOOKS.get(run.mode, (PALETTE[n % len(PALETTE)], ":"))
        seconds, mode = [call["second"] for call in run.calls], pgettext("table cell", run.mode)
        ax.step(seconds, range(1, len(seconds) + 1), where="post", color=colour, ls=dashes, label=mode)
        if seconds:  # the line's name written at its end
            ax.annotate(mode, (seconds[-1], len(seconds)), xytext=(4, 0), textcoords="offset points",
                        va="center", fontsize=8, color=colour)  # fmt: skip
        while_down = run.calls_while_down()
        said.append(
            ngettext(
                "{mode}: {count} call while it was down, {after} after, {refused} refused fast",
                "{mode}: {count} calls while it was down, {after} after, {refused} refused fast",
                while_down,
            ).format(
                mode=mode, count=number(while_down, ","), after=number(run.gateway_calls - while_down, ","),
                refused=number(run.fast_failures, ","),
            )
        )  # fmt: skip
    gone = _("gateway down")
    ax.axvspan(0, down, color=GREY, alpha=0.15, label=gone)
    ax.text(down / 2, 0.97, gone, transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=8)
    ax.set_xlabel(_("seconds since the gateway went down (virtual time)"))
    ax.set_ylabel(_("calls that reached the gateway"))
    ax.set_title(title)
    ax.legend(fontsize=8)
    if title:
        heading = _(
            "Step chart: {title}. Calls that reached the gateway, added up over time, one line per kind of breaker; "
            "the gateway is down for the first {down} s (shaded)."
        ).format(title=title, down=number(down, "g"))
    else:
        heading = _(
            "Step chart. Calls that reached the gateway, added up over time, one line per kind of breaker; "
            "the gateway is down for the first {down} s (shaded)."
        ).format(down=number(down, "g"))
    return show.Picture(figure, heading + " " + "; ".join(said) + ".")
