"""A panel's controls: a log slider, a dropdown's options in the edition, what a control's tooltip says, and
the value the panel passes on for it."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from mercadofresco.i18n import N_, _
from mercadofresco.lessons.show.tables import cell

WIDE = "min(640px, 100%)"  # ipywidgets' 300 px leave a slider a 100-135 px track, and cut a checkbox's question
INTEGER = "mf-integer"  # the class of a log slider whose value the panel passes on as a whole number
LOG = "mf-log"  # the class of every log slider: its handle's own value is an exponent, its arrow steps tiny
LOG_STEPS = 100_000  # a log slider's steps end to end
LOG_FORMAT = ".4g"  # a log slider's readout, and what the panel passes on

# Units as a screen reader should say them, by what a label writes in its brackets: "wait (s)" is in seconds.
UNIT_WORDS = {
    "s": N_("in seconds"), "ms": N_("in milliseconds"), "min": N_("in minutes"), "h": N_("in hours"),
    "/s": N_("per second"), "/h": N_("per hour"), "%": N_("in percent"), "USD": N_("in US dollars"),
}  # fmt: skip


def log_slider(description: str, value: float, low: float, high: float, integer: bool = False) -> Any:
    """A slider on a log scale from `low` to `high`, for a setting whose useful values span orders of magnitude.

    `low` and `high` are values, not exponents (ipywidgets' FloatLogSlider takes exponents). On a panel's
    400-odd pixels of track a drag moves it 2-3 % a pixel; a value typed in the readout beside it stays what
    was typed. The slider snaps what is typed to its steps, so they are fine (LOG_STEPS of them): 600 lands
    on 600.02, where 1,000 steps from 1 to 86,399 put it on 602.
    `panel` passes on what the readout shows: 4 significant digits, or with `integer` a whole number (an int).
    """
    import ipywidgets as widgets

    low_exponent, high_exponent = math.log10(low), math.log10(high)
    slider = widgets.FloatLogSlider(
        value=value,
        base=10,
        min=low_exponent,
        max=high_exponent,
        step=(high_exponent - low_exponent) / LOG_STEPS,
        readout_format="d" if integer else LOG_FORMAT,
        description=description,
    )
    slider.tooltip = describe(slider, _("from {low} to {high}, on a log scale").format(low=cell(low), high=cell(high)))
    slider.add_class(LOG)
    if integer:
        slider.add_class(INTEGER)
    return slider


def describe(control: Any, span: str = "") -> str:
    """What a control's tooltip says, and a screen reader reads after its name: its unit and its range.

    The unit comes from the label's brackets ("wait (s)": "in seconds"); the range, `span` or the control's own
    `min` and `max` ("from 0 to 900").
    """
    bracket = re.search(r"\(([^()]+)\)\s*$", getattr(control, "description", "") or "")
    unit = bracket.group(1).strip() if bracket else ""
    if not span and hasattr(control, "min") and hasattr(control, "max"):
        span = _("from {low} to {high}").format(low=cell(control.min), high=cell(control.max))
    said = _(UNIT_WORDS[unit]) if unit in UNIT_WORDS else ""
    if not said and unit and not unit[0].isdigit():  # not "(20)", a count
        said = _("in {unit}").format(unit=unit)
    return ", ".join(part for part in (said, span) if part)


def value_of(control: Any) -> Any:
    """What the panel passes on for `control`: its value; for a log slider, what its readout shows."""
    if INTEGER in getattr(control, "_dom_classes", ()):
        return round(control.value)
    if type(control).__name__ == "FloatLogSlider":  # typing 5 gives 5.0002: the readout says 5
        return float(format(control.value, LOG_FORMAT))
    return control.value


def choices(names: Iterable[str]) -> list[tuple[str, str]]:
    """A dropdown's options: each name as the edition says it (a table's word), the name itself as the value the
    experiment receives (`widgets.Dropdown(options=show.choices(backoff.STRATEGIES))`)."""
    return [(cell(name), name) for name in names]
