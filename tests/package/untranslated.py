"""The package's sentences a learner reads that do not go through the catalog yet: where they are, and how many.

A sentence is a string literal or f-string of two words or more in a place a learner reads it: the message of
a raised error, what is printed, a figure's title, axis label, legend label or text, a picture's text
alternative, a control's label, a table's caption. It is translated when it is the argument of `_`, `N_`,
`pgettext` or `ngettext` (`mercadofresco.i18n`). tests/package/test_untranslated.py holds each module to the
count recorded in tests/package/untranslated.json, which only goes down: the Spanish edition's work queue.
"""

from __future__ import annotations

import ast
from pathlib import Path

from mercadofresco import source as python_source

TRANSLATING = {"_", "N_", "pgettext", "ngettext"}
SHOWING_CALLS = {"print", "set_title", "set_xlabel", "set_ylabel", "suptitle", "text", "annotate", "Picture"}
SHOWING_KEYWORDS = {"label", "title", "alt", "description", "caption", "xlabel", "ylabel", "button"}


def _words(node: ast.AST) -> bool:
    """Whether a literal or f-string holds a sentence: two words or more of letters."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
    elif isinstance(node, ast.JoinedStr):
        text = "".join(part.value for part in node.values if isinstance(part, ast.Constant))
    else:
        return False
    return sum(1 for word in text.split() if any(c.isalpha() for c in word)) >= 2


def _name(call: ast.Call) -> str:
    function = call.func
    return function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")


def sentences(source: str) -> list[int]:
    """The line of each sentence in `source` a learner reads that no translating call holds."""
    with python_source.PARSING:  # not while a grading thread of this process parses (mercadofresco.source)
        tree = ast.parse(source)
    translated: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node) in TRANSLATING:
            translated |= {id(inner) for argument in node.args for inner in ast.walk(argument)}
    found: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            found += node.exc.args[:1]
        if isinstance(node, ast.Call):
            if _name(node) in SHOWING_CALLS:
                found += node.args
            found += [keyword.value for keyword in node.keywords if keyword.arg in SHOWING_KEYWORDS]
    shown = {id(inner): inner for value in found for inner in _parts(value)}
    return sorted(node.lineno for key, node in shown.items() if key not in translated and _words(node))


def _parts(value: ast.AST) -> list[ast.AST]:
    """The literals a shown value is made of: itself, both sides of `a + b`, each branch of `a if c else b`."""
    if isinstance(value, ast.BinOp):
        return _parts(value.left) + _parts(value.right)
    if isinstance(value, ast.IfExp):
        return _parts(value.body) + _parts(value.orelse)
    return [value]


def counts(package: Path) -> dict[str, int]:
    """Each module of `package` with the number of its untranslated sentences (modules with none left out)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        number = len(sentences(path.read_text()))
        if number:
            found[path.relative_to(package.parent).as_posix()] = number
    return found
