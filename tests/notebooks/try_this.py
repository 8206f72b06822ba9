"""What each notebook's "try this" asks of its panel, and whether the panel's controls can give it.

A "try this" item that asks for control values carries them in an HTML comment, which JupyterLab does not show:

    3. Set the visibility timeout to 0. What does SQS do ...? <!-- try: visibility (s) = 0 -->

Each comment is one thing to try: `label = value` pairs separated by `;`, where the label is the control's
description (what the learner reads) and the value is JSON (a number, true/false, "a dropdown's option"). A value
the package must refuse with its rule ends in `refused`: `<!-- try: latency (s) = 0 refused -->`.

`problem(control, value)` says why a control cannot give a value, or gives it only by luck: outside its range,
between its steps, or on a linear slider so long for its track that one pixel jumps many steps (then a log
scale or a text box fits). The fast test (tests/notebooks/test_try_this.py) builds each panel's controls from the
notebook and asks this of every value; the browser suite (tests/browser/driver.py) sets every value in the page.
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TRY = re.compile(r"<!--\s*try:(.*?)-->", re.DOTALL)
ASK = re.compile(r"^(?P<label>.+)\s=\s(?P<value>.+?)(?P<refused>\s+refused)?$")
TRACK_PIXELS = 300  # the least track a panel's slider gets (show.WIDE); the browser suite measures it
MAX_STEPS_PER_PIXEL = 10  # a drag lands within 5 steps; the arrow keys do the rest
MAX_RATIO_PER_PIXEL = 0.05  # a log slider: one pixel changes the value by at most 5 %


@dataclass(frozen=True)
class Ask:
    label: str
    value: Any
    refused: bool = False  # the panel must answer with the package's rule, naming this control


TRY_HEADINGS = ("### try this", "### prueba esto")


@dataclass(frozen=True)
class Scenario:
    """One comment: the controls to set together, and the item it belongs to."""

    item: str
    asks: tuple[Ask, ...]


def try_this_section(source: str) -> str:
    """The text from a "### Try this" heading ("### Prueba esto" in the Spanish edition) to the next heading."""
    starts = [found for heading in TRY_HEADINGS if (found := source.lower().find(heading)) >= 0]
    if not starts:
        return ""
    start = min(starts)
    rest = source[start:].split("\n")
    end = next((i for i, line in enumerate(rest[1:], 1) if line.startswith("#")), len(rest))
    return "\n".join(rest[:end])


def parse(comment: str) -> tuple[Ask, ...]:
    asks = []
    for part in comment.split(";"):
        match = ASK.match(part.strip())
        if not match:
            raise ValueError(f"not `label = value`: {part.strip()!r} in <!-- try:{comment}-->")
        asks.append(Ask(match["label"].strip(), json.loads(match["value"]), bool(match["refused"])))
    return tuple(asks)


def scenarios(path: Path) -> list[Scenario]:
    """Every `<!-- try: ... -->` of the notebook's "try this" sections, in order."""
    found = []
    for cell in json.loads(Path(path).read_text())["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for line in try_this_section("".join(cell["source"])).splitlines():
            item = TRY.sub("", line).strip()
            found += [Scenario(item, parse(comment)) for comment in TRY.findall(line)]
    return found


def _code(cell: dict) -> str:
    """A code cell without its IPython magics, so that ast can read it."""
    return "\n".join(line for line in "".join(cell["source"]).splitlines() if not line.lstrip().startswith(("%", "!")))


class _Names(dict):
    """The notebook's top-level names, each computed from its assignment only when an expression asks for it."""

    def __init__(self, module_names: dict, assignments: dict[str, ast.expr]):
        super().__init__()
        self.module_names, self.assignments = module_names, assignments

    def __missing__(self, name: str) -> Any:
        if name not in self.assignments:
            raise KeyError(name)  # then Python looks in the imports and the builtins, or raises NameError
        self[name] = eval(compile(ast.Expression(self.assignments[name]), name, "eval"), self.module_names, self)
        return self[name]


def controls(path: Path) -> _Lazy:
    """The widgets of the notebook's panels, by label, built as the panel cell builds them.

    Only the imports of the notebook run, and the assignments a control's expression needs (notebook 08's
    `config = storm.StormConfig()`); a control is built only when asked for, so a dropdown over seeded data
    costs nothing until a test needs it. Use it in a `with`: leaving it stops what the assignments started.
    """
    cells = [cell for cell in json.loads(Path(path).read_text())["cells"] if cell["cell_type"] == "code"]
    module_names: dict[str, Any] = {}
    assignments: dict[str, ast.expr] = {}
    expressions: dict[str, ast.expr] = {}
    for cell in cells:
        tree = ast.parse(_code(cell))
        for node in tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                exec(compile(ast.Module([node], []), str(path), "exec"), module_names)
            elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and not expressions:
                assignments[node.targets[0].id] = node.value  # the value a name has when the panel is built
        for call in ast.walk(tree):
            if isinstance(call, ast.Call) and ast.unparse(call.func) == "show.panel":
                given = [*call.args[1:], *(k.value for k in call.keywords if k.arg == "controls")]
                expressions.update(_by_label(given[0]))
    names = _Names(module_names, assignments)
    return _Lazy(expressions, module_names, names)


def _by_label(given: ast.expr) -> dict[str, ast.expr]:
    """Each control's expression by its description; a comprehension is one expression for all of them."""
    if isinstance(given, ast.Dict):
        found = {}
        for value in given.values:
            label = _description(value)
            found[label if label is not None else ast.unparse(value)] = value
        return found
    return {"*": given}  # e.g. notebook 15's {name: Checkbox(description=question) for ...}


def _description(call: ast.expr) -> str | None:
    if not isinstance(call, ast.Call):
        return None
    for keyword in call.keywords:
        if keyword.arg == "description" and isinstance(keyword.value, ast.Constant):
            return keyword.value.value
    if ast.unparse(call.func) == "show.log_slider" and call.args and isinstance(call.args[0], ast.Constant):
        return call.args[0].value
    return None


class _Lazy(dict):
    def __init__(self, expressions: dict[str, ast.expr], module_names: dict, names: _Names):
        super().__init__()
        self.expressions, self.module_names, self.names = expressions, module_names, names

    def __enter__(self) -> _Lazy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Stop what the notebook's assignments started (its `clock`, its world), newest first.

        Notebook 10's dropdown needs `seeded`, which needs `clock = VirtualClock().start()` and a world in moto:
        left running, they turned the next test's time and AWS into notebook 10's.
        """
        for value in reversed(list(self.names.values())):
            if hasattr(value, "__exit__"):
                value.__exit__(None, None, None)

    def _build(self, expression: ast.expr) -> Any:
        return eval(compile(ast.Expression(expression), "panel", "eval"), self.module_names, self.names)

    def __missing__(self, label: str) -> Any:
        if label in self.expressions:
            self[label] = self._build(self.expressions[label])
            return self[label]
        if "*" in self.expressions:
            for control in self._build(self.expressions["*"]).values():
                self.setdefault(control.description, control)
            if label in self:
                return self[label]
        raise KeyError(f"no control labelled {label!r}; the panel's are {sorted(k for k in self.expressions)}")


def problem(control: Any, value: Any, track_pixels: int = TRACK_PIXELS) -> str | None:
    """Why `control` cannot be set to `value`, or only by luck; None when a learner can set it."""
    import ipywidgets as widgets

    label = f"{control.description!r}"
    if isinstance(control, widgets.Checkbox):
        return None if isinstance(value, bool) else f"{label} is a checkbox: ask true or false, not {value!r}"
    if isinstance(control, widgets.Dropdown):
        options = list(control._options_labels)
        return None if value in options else f"{label} offers {options}, not {value!r}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{label} takes a number, not {value!r}"
    whole = isinstance(control, widgets.IntText | widgets.IntSlider | widgets.BoundedIntText) or (
        "mf-integer" in control._dom_classes
    )
    if whole and value != int(value):
        return f"{label} takes whole numbers, not {value!r}"
    if isinstance(control, widgets.BoundedIntText | widgets.BoundedFloatText):
        # a bounded box clamps what is typed without a word: the value must be inside
        return None if control.min <= value <= control.max else _outside(label, value, control.min, control.max)
    if isinstance(control, widgets.IntText | widgets.FloatText):
        return None  # typed exactly; the package refuses what is out of range, with the rule
    if isinstance(control, widgets.FloatLogSlider):
        from mercadofresco.lessons import show

        low, high = control.base**control.min, control.base**control.max
        if not low * (1 - 1e-9) <= value <= high * (1 + 1e-9):
            return _outside(label, value, low, high)
        landed = typed(control, value)
        shown = round(landed) if whole else float(format(landed, show.LOG_FORMAT))
        if shown != value:
            return f"{label}: typing {value:g} lands on the step {landed:g}, which the panel passes on as {shown:g}"
        per_pixel = control.base ** ((control.max - control.min) / track_pixels) - 1
        if per_pixel > MAX_RATIO_PER_PIXEL and not math.isclose(value, low) and not math.isclose(value, high):
            return f"{label}: on {track_pixels} pixels one pixel changes it by {per_pixel:.0%}; narrow its range"
        return None  # typed exactly in its readout; a drag comes within 5 %
    if isinstance(control, widgets.IntSlider | widgets.FloatSlider):
        if not control.min <= value <= control.max:
            return _outside(label, value, control.min, control.max)
        steps = (value - control.min) / control.step
        if not math.isclose(steps, round(steps), abs_tol=1e-6):
            return f"{label} moves in steps of {control.step:g} from {control.min:g}: {value:g} is between two"
        per_pixel = (control.max - control.min) / control.step / track_pixels
        if per_pixel > MAX_STEPS_PER_PIXEL and value not in (control.min, control.max):
            return (
                f"{label} spans {control.min:g}-{control.max:g} on {track_pixels} pixels: one pixel moves it"
                f" {per_pixel * control.step:g}, so {value:g} is a matter of luck; use show.log_slider or a text box"
            )
        return None
    return f"{label} is a {type(control).__name__}, which this check does not know"


def typed(control: Any, value: float) -> float:
    """Where a log slider puts `value` typed in its readout: on its nearest step (noUiSlider snaps; measured)."""
    exponent = math.log(value, control.base)
    steps = round((exponent - control.min) / control.step)
    return control.base ** min(control.max, control.min + steps * control.step)


def _outside(label: str, value: float, low: float, high: float) -> str:
    return f"{label} reaches {low:g} to {high:g}, not {value:g}"
