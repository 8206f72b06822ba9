"""The shared toolkit: tables, widget panels and the figures several sections draw; nothing here decides.

Figures are built with `matplotlib.figure.Figure` (not pyplot), so a function
returns its figure without touching global state: a notebook cell that ends
with it shows it once (after `%matplotlib inline`), and a test can inspect it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mercadofresco import moved

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn: a notebook that only prints stays light
    from matplotlib.figure import Figure


# Unit suffixes of the package's column names, as a header shows them: "oldest_wait_min" reads "oldest wait (min)".
UNITS = {
    "s": "s", "seconds": "s", "ms": "ms", "min": "min", "minutes": "min", "h": "h", "hours": "h", "days": "days",
    "usd": "USD", "pct": "%", "per_s": "/s", "usd_per_month": "USD/month", "usd_a_month": "USD/month", "mb": "MB",
}  # fmt: skip
ACRONYMS = {"dlq": "DLQ", "erp": "ERP", "db": "DB", "ttl": "TTL", "usd": "USD", "sdk": "SDK", "api": "API"}
# The lesson's own names, shown as the code spells them (a learner looks for them in the package); a name without
# "_" (AWS's MessageGroupId) is shown as it is.
VERBATIM = {"pedido_id", "idempotency_key", "referencia_cobro", "cobrado_en", "caduca_bloqueo", "expira_en"}


def header(column: str) -> str:
    """A column's header: its words, and its unit in brackets ("max_calls_per_s" reads "max calls (/s)")."""
    if column in VERBATIM or "_" not in column:
        return column
    words = column.split("_")
    unit = ""
    for size in (3, 2, 1):  # the longest suffix first: "usd_per_month" before "month"
        suffix = "_".join(words[-size:])
        if len(words) > size and suffix in UNITS and not words[-size - 1].isdigit():  # "after_40_s" is a moment
            unit, words = f" ({UNITS[suffix]})", words[:-size]
            break
    return " ".join(ACRONYMS.get(word, word) for word in words) + unit


def cell(value: Any) -> str:
    """A value as a table shows it: thousands separated, a float to 6 significant digits, NaN as "-"."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if value != value:
        return "-"  # NaN: nothing to measure
    return f"{value:,.0f}" if abs(value) >= 1e6 else f"{value:,g}"


class Table:
    """Rows as Jupyter shows a DataFrame: an HTML table (pandas' Styler) and, for nbval and a terminal, aligned text.

    `frame` is the rows as a pandas DataFrame, for a learner who wants to sort, filter or plot them.
    Numbers are right-aligned, with thousands separators. No row wraps: a header may take two lines, so that a
    table of many columns stays narrow; what is still too wide scrolls sideways.
    """

    def __init__(self, rows: list[dict[str, Any]], columns: list[str] | None = None) -> None:
        self.columns = (columns or list(rows[0])) if rows else []
        self.rows = [[row.get(column, "") for column in self.columns] for row in rows]

    @property
    def frame(self) -> Any:
        import pandas as pd  # imported when a table is shown: a module that only computes stays light

        return pd.DataFrame(self.rows, columns=self.columns)

    def __repr__(self) -> str:
        if not self.rows:
            return "(no rows)"
        headers = [header(column) for column in self.columns]
        cells = [[cell(value) for value in row] for row in self.rows]
        widths = [max(len(name), *(len(line[i]) for line in cells)) for i, name in enumerate(headers)]
        numeric = [all(_is_number(row[i]) for row in self.rows) for i in range(len(headers))]

        def line(values: list[str]) -> str:
            padded = (v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric, strict=True))
            return "  ".join(padded).rstrip()

        return "\n".join([line(headers), "  ".join("-" * width for width in widths), *map(line, cells)])

    def _repr_html_(self) -> str:
        if not self.rows:
            return "<p><i>(no rows)</i></p>"
        frame = self.frame
        frame.columns = [header(column) for column in self.columns]
        uuid = hashlib.sha1(repr(self).encode()).hexdigest()[:8]  # the same table, the same HTML: nbval compares it
        styler = frame.style.hide(axis="index").format(cell).set_uuid(uuid)
        styler.cell_ids = False
        styler.set_table_styles(
            [{"selector": "td", "props": "white-space: nowrap"}, {"selector": "th", "props": "vertical-align: bottom"}]
        )
        return styler.to_html()


def duration(delta: dt.timedelta) -> str:
    """A span of time as a table shows it, to the minute, every unit kept so a column aligns: "0 d 1 h 47 min"."""
    minutes = int(delta.total_seconds() // 60)
    days, minutes = divmod(minutes, 24 * 60)
    return f"{days} d {minutes // 60} h {minutes % 60:02d} min"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> None:
    """Show `rows` as a table: HTML in Jupyter, aligned text elsewhere (both deterministic, so nbval compares them)."""
    from IPython.display import display

    display(Table(rows, columns))


def items(dynamodb_items: list[dict[str, Any]], columns: list[str] | None = None) -> None:
    """Show DynamoDB items (typed values such as {"S": "EN_CURSO"}) as a table, attributes sorted.

    Values are shown as DynamoDB sends them: a number attribute ({"N": "1767225600"}, an epoch for the TTL) as
    its digits, without separators.
    """
    rows = [{name: next(iter(typed.values())) for name, typed in sorted(item.items())} for item in dynamodb_items]
    table(rows, columns or sorted({name for row in rows for name in row}, key=lambda n: (n != "clave", n)))


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


def __getattr__(name: str) -> object:  # names that moved away keep working a while (mercadofresco.moved)
    return moved.attribute(__name__, name)
