"""The shared toolkit: tables, widget panels and the figures several sections draw; nothing here decides.

Figures are built with `matplotlib.figure.Figure` (not pyplot), so a function
returns its figure without touching global state: a notebook cell that ends
with it shows it once (after `%matplotlib inline`), and a test can inspect it.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn: a notebook that only prints stays light
    from matplotlib.figure import Figure


def table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> None:
    """Print `rows` as an aligned text table (deterministic, so nbval can compare it)."""
    if not rows:
        print("(no rows)")
        return
    columns = columns or list(rows[0])
    cells = [[_cell(row.get(column, "")) for column in columns] for row in rows]
    widths = [max(len(column), *(len(line[i]) for line in cells)) for i, column in enumerate(columns)]
    print("  ".join(column.ljust(width) for column, width in zip(columns, widths, strict=True)).rstrip())
    print("  ".join("-" * width for width in widths))
    for line in cells:
        print("  ".join(value.ljust(width) for value, width in zip(line, widths, strict=True)).rstrip())


def items(dynamodb_items: list[dict[str, Any]], columns: list[str] | None = None) -> None:
    """Print DynamoDB items (typed values such as {"S": "EN_CURSO"}) as a table, attributes sorted."""
    rows = [{name: next(iter(typed.values())) for name, typed in sorted(item.items())} for item in dynamodb_items]
    table(rows, columns or sorted({name for row in rows for name in row}, key=lambda n: (n != "clave", n)))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "-" if value != value else f"{value:g}"  # NaN (nothing to measure) shows as "-"
    return str(value)


WIDE = "min(640px, 100%)"  # ipywidgets' 300 px leave a slider a 100-135 px track, and cut a checkbox's question
INTEGER = "mf-integer"  # the class of a log slider whose value the panel passes on as a whole number
LOG_STEPS = 100_000  # a log slider's steps end to end
LOG_FORMAT = ".4g"  # a log slider's readout, and what the panel passes on
GONE = "⚠ The kernel that drew this panel is gone: run the notebook's cells again (Run → Run All Cells) to use it."
# JupyterLab marks every view of a widget whose kernel has restarted or died `jupyter-widgets-disconnected`, and
# keeps drawing it: without this the panel looks alive and its button does nothing. The rule travels in the
# panel's own HTML widget (which ipywidgets does not sanitise), so it needs no extension.
GONE_STYLE = (
    "<style>"
    ".mf-panel > .mf-panel-gone {display: none}"
    ".mf-panel.jupyter-widgets-disconnected > .mf-panel-gone {display: block; font-weight: bold; color: #b00020}"
    ".mf-panel.jupyter-widgets-disconnected > :not(.mf-panel-gone):not(.mf-panel-output)"
    " {opacity: 0.4; pointer-events: none}"
    "</style>"
)


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
    if integer:
        slider.add_class(INTEGER)
    return slider


def value_of(control: Any) -> Any:
    """What the panel passes on for `control`: its value; for a log slider, what its readout shows."""
    if INTEGER in getattr(control, "_dom_classes", ()):
        return round(control.value)
    if type(control).__name__ == "FloatLogSlider":  # typing 5 gives 5.0002: the readout says 5
        return float(format(control.value, LOG_FORMAT))
    return control.value


def panel(run: Callable[..., Any], controls: dict[str, Any], button: str = "Run experiment") -> Any:
    """Controls, a button and an output area that shows what `run(**values)` prints and returns.

    `controls` maps each argument of `run` to its widget; the widget's description is
    the label the learner reads. The output stays empty until the button is pressed;
    then it shows the result for the chosen values (draw it the way the notebook drew
    its default result above). A ValueError (a value out of range, a combination that
    makes no sense) is shown as a message naming the control, not as a traceback.
    After a kernel restart the panel says that its kernel is gone (GONE) and greys its controls.
    """
    import ipywidgets as widgets  # imported here so the package works without a notebook
    from IPython.display import display

    class Panel(widgets.VBox):
        def __repr__(self) -> str:  # what a saved notebook shows before a kernel brings the widgets back
            return "Interactive panel: run the notebook's cells in JupyterLab to use it."

    output = widgets.Output()
    output.add_class("mf-panel-output")
    run_button = widgets.Button(description=button, button_style="primary")
    hint = widgets.HTML(f"<i>Set the controls and press <b>{button}</b>: the result appears below.</i>")
    gone = widgets.HTML(GONE_STYLE + GONE)
    gone.add_class("mf-panel-gone")
    for control in controls.values():
        control.style.description_width = "initial"  # long labels stay readable
        if "Slider" in type(control).__name__ or type(control).__name__ == "Checkbox":
            control.layout.width = WIDE

    def on_click(_: Any) -> None:
        run_button.disabled = True  # one run at a time; a big value can take seconds
        with output:
            output.clear_output()
            print("Running…", flush=True)
            output.clear_output(wait=True)  # "Running…" stays until the result replaces it
            try:
                result = run(**{name: value_of(control) for name, control in controls.items()})
                if result is not None:
                    display(result)
            except ValueError as exc:
                print(f"⚠ {refusal(str(exc), controls)}")
            finally:
                sys.stdout.flush()  # the printed tables reach the page before the button says "done"
                run_button.disabled = False

    run_button.on_click(on_click)
    box = Panel([gone, *controls.values(), widgets.HBox([run_button, hint]), output])
    box.add_class("mf-panel")
    box.button, box.output, box.gone = run_button, output, gone  # for tests and for readers of the widget tree
    return box


def refusal(message: str, controls: dict[str, Any]) -> str:
    """`message` with each argument name replaced by the label of the control that sets it."""
    for name, control in controls.items():
        label = getattr(control, "description", "") or name
        message = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", f"“{label}”", message)
    return message


def bars(
    rows: list[dict[str, Any]], category: str, value: str, group: str | None = None, title: str = "", ylabel: str = ""
) -> Figure:
    """A bar per row (`category` on the x axis, `value` as height), side by side per `group` if given."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 3.2), layout="constrained")
    ax = figure.subplots()
    categories = list(dict.fromkeys(str(row[category]) for row in rows))
    groups = list(dict.fromkeys(str(row[group]) for row in rows)) if group else [""]
    width = 0.8 / len(groups)
    for g, name in enumerate(groups):
        heights = [
            next((row[value] for row in rows if str(row[category]) == c and (not group or str(row[group]) == name)), 0)
            for c in categories
        ]
        positions = [i + (g - (len(groups) - 1) / 2) * width for i in range(len(categories))]
        drawn = ax.bar(positions, heights, width, label=f"{group} = {name}" if group else None)
        ax.bar_label(drawn, fontsize=8)
    ax.set_xticks(range(len(categories)), categories, fontsize=8)
    ax.set_ylabel(ylabel or value)
    ax.set_title(title)
    if group:
        ax.legend(fontsize=8)
    return figure
