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

import importlib
import io
import tokenize
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

    Read as data, never run, and never parsed into a tree: Python's tokenizer reads it (a C loop, no recursion),
    because CPython 3.11 keeps `ast`'s constructor state for the whole interpreter and this runs in threads beside
    other code that parses (CI saw "AST constructor recursion depth mismatch" in such a thread, twice, with every
    parse of the package's own behind one lock). Found: `from mercadofresco.x import a`,
    `import mercadofresco.x as m` then `m.a`, and `module.a` after `from mercadofresco import module`. Lines of
    IPython magics are skipped; source that is not Python, or a statement too long to be sure of, names nothing.
    """
    python = python_source.without_magics(source)
    if python_source.too_deep(python):
        return []
    try:
        tokens = [
            token
            for token in tokenize.generate_tokens(io.StringIO(python).readline)
            if token.type not in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT)
        ]
    except (tokenize.TokenError, SyntaxError):  # not Python
        return []
    bound: dict[str, str] = {}  # a name in the source -> the dotted name it stands for
    found: dict[str, None] = {}  # in the order first named (a dict: 60,000 names once took 40 s as a list)
    for statement in _statements(tokens):
        words = [token.string for token in statement]
        if words[:1] == ["import"]:
            for dotted, alias in _imported(words[1:]):
                bound[alias or dotted.split(".")[0]] = dotted if alias else dotted.split(".")[0]
                found.setdefault(dotted)
        elif words[:1] == ["from"] and "import" in words and words[1] != ".":
            module = "".join(words[1 : words.index("import")])
            for name, alias in _imported(words[words.index("import") + 1 :]):
                bound[alias or name] = f"{module}.{name}"
                found.setdefault(f"{module}.{name}")
        else:
            for chain in _chains(statement):
                if chain[0] in bound:
                    for end in range(2, len(chain) + 1):  # `m.a.b` names `m.a` and `m.a.b`, as each is looked up
                        found.setdefault(".".join([bound[chain[0]], *chain[1:end]]))
    return [name for name in found if name.startswith("mercadofresco.")]


def _statements(tokens: list[tokenize.TokenInfo]) -> list[list[tokenize.TokenInfo]]:
    """The tokens cut at each end of a logical line and each `;`."""
    statements, current = [], []
    for token in tokens:
        if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER) or token.string == ";":
            if current:
                statements.append(current)
            current = []
        else:
            current.append(token)
    return statements


def _imported(words: list[str]) -> list[tuple[str, str]]:
    """`a.b as c, d` (an import's names, brackets allowed) as [(dotted name, alias or "")]."""
    found = []
    for part in " ".join(word for word in words if word not in "()").split(","):
        pieces = part.split()
        if not pieces:
            continue
        dotted = "".join(pieces[: pieces.index("as")] if "as" in pieces else pieces)
        alias = pieces[pieces.index("as") + 1] if "as" in pieces and pieces.index("as") + 1 < len(pieces) else ""
        found.append((dotted, alias))
    return found


def _chains(statement: list[tokenize.TokenInfo]) -> list[list[str]]:
    """Every `name.attr.attr…` of a statement whose first name follows no `.` (an attribute of a name)."""
    chains, index = [], 0
    while index < len(statement):
        token = statement[index]
        after_dot = index > 0 and statement[index - 1].string == "."
        if token.type == tokenize.NAME and not after_dot:
            chain = [token.string]
            while (
                index + 2 < len(statement)
                and statement[index + 1].string == "."
                and statement[index + 2].type == tokenize.NAME
            ):
                chain.append(statement[index + 2].string)
                index += 2
            if len(chain) > 1:
                chains.append(chain)
        index += 1
    return chains
