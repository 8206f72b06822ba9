"""Names that moved: each keeps working for at least one release, with a warning that names its new place.

A learner's notebook outlives a release: a class whose hub image is updated mid-term runs labs written against
the package of some weeks ago. So a name the labs call (docs/lab-surface.md) never simply disappears: the
module it left asks here, in a module `__getattr__` (PEP 562), which Python calls only for a name the module
does not have:

    def __getattr__(name: str) -> object:  # names that moved away (mercadofresco.moved)
        return moved.attribute(__name__, name)

The old name then gives the new object, with a `MovedName` warning (a FutureWarning, which Python and JupyterLab
show by default) that says where it lives now. A release is a tree that CI landed; `since` is its date.
"""

from __future__ import annotations

import ast
import importlib
import warnings
from dataclasses import dataclass
from typing import Any

from mercadofresco import source as python_source
from mercadofresco.i18n import _


@dataclass(frozen=True)
class Move:
    """One name's new place (a module or a module's attribute, dotted) and the release that moved it."""

    new: str
    since: str


# Old dotted name -> where it is now. Section 1 took a folder of its own and the plumbing went to runtime/
# (issue 26); the labs of those weeks call these names.
MOVES: dict[str, Move] = {
    "mercadofresco.lessons.delivery.INCIDENT_ORDER": Move(
        "mercadofresco.lessons.delivery.experiments.INCIDENT_ORDER", "2026-12-02"
    ),
    "mercadofresco.lessons.delivery.DeliveryRun": Move(
        "mercadofresco.lessons.delivery.experiments.DeliveryRun", "2026-12-02"
    ),
    "mercadofresco.lessons.delivery.run_orders": Move(
        "mercadofresco.lessons.delivery.experiments.run_orders", "2026-12-02"
    ),
    "mercadofresco.lessons.show.timeline": Move("mercadofresco.lessons.delivery.figures.timeline", "2026-12-02"),
    "mercadofresco.lessons.incidents": Move("mercadofresco.lessons.dlq.incidents", "2026-12-02"),
    "mercadofresco.database": Move("mercadofresco.runtime.database", "2026-12-02"),
    "mercadofresco.lessons.duplicates": Move("mercadofresco.lessons.keys_and_table", "2026-12-07"),
}


class MovedName(FutureWarning):
    """A name of the package that moved: it still works, and the warning says its new name."""


def message(old: str) -> str:
    """What the warning (and a report's note) says of `old`."""
    move = MOVES[old]
    said = _("{old} moved to {new} in the release of {since}; the old name still works for now: use the new one")
    return said.format(old=old, new=move.new, since=move.since)


def attribute(module: str, name: str) -> Any:
    """The object `module.name` stands for now, with a `MovedName` warning; AttributeError if it never moved."""
    old = f"{module}.{name}"
    if old not in MOVES:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(message(old), MovedName, stacklevel=3)  # at the learner's line, past the module's __getattr__
    return resolve(MOVES[old].new)


def resolve(dotted: str) -> Any:
    """The module, or the module's attribute (`Fault.RESPONSE_LOST` too), that `dotted` names."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):  # the longest part that is a module, then its attributes
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            found = getattr(found, name)
        return found
    raise ModuleNotFoundError(f"no module in {dotted!r}")


def used_in(source: str) -> list[str]:
    """The moved names (keys of MOVES) that Python `source` calls, in the order it first names them."""
    return [name for name in names_in(source) if name in MOVES]


def names_in(source: str) -> list[str]:
    """Every dotted name of the package that Python `source` calls, in the order it first names them.

    Read as data, never run: `from mercadofresco.x import a`, `import mercadofresco.x as m` then `m.a`, and
    `module.a` after `from mercadofresco import module`. Lines of IPython magics are skipped; source that is
    not Python names nothing.
    """
    tree = python_source.tree(source)
    if tree is None:  # not Python, or too deep for the parser
        return []
    bound: dict[str, str] = {}  # a name in the source -> the dotted name it stands for
    found: dict[str, None] = {}  # in the order first named (a dict: 60,000 names once took 40 s as a list)

    def note(dotted: str) -> None:
        if dotted.startswith("mercadofresco."):
            found.setdefault(dotted)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                bound[alias.asname or top] = alias.name if alias.asname else top
                note(alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                note(f"{node.module}.{alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            parts = [node.attr]
            value = node.value
            while isinstance(value, ast.Attribute):
                parts.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in bound:
                note(".".join([bound[value.id], *reversed(parts)]))
    return list(found)
