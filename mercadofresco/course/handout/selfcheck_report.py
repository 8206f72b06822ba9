"""selfcheck's report, in two forms: lines of text (a terminal, the text form in a notebook) and HTML.

The HTML is what `selfcheck.here` shows in the lab's last cell: each public check part with ✓ or ✗ and its cell as
JupyterLab numbers it, the first failure open with what it found (a counterexample's story), the others folded
(`<details>`, which a keyboard opens), the hidden checks folded too. Both forms read the same plain data
(`selfcheck.report_of`). They are written for a half-done lab as much as a finished one: the checks of a cell that
could not run for one reason (a name an earlier cell should set) are said once, a path is shown from the lab's
folder or the workbook's, and text breaks between words, never inside one.
"""

from __future__ import annotations

import ast
import re
import textwrap
from html import escape
from pathlib import Path
from typing import TypeVar

from mercadofresco import source as python_source
from mercadofresco.course import checks
from mercadofresco.course.handout import labs
from mercadofresco.i18n import _, ngettext

WIDTH = 88  # the text form's lines: what a notebook beside its file browser shows without breaking a line
NOT_DEFINED = re.compile(r"NameError: name '(\w+)' is not defined")
DEFINE = re.compile(r"^\s*# Defin[ea] (.*)$", re.MULTILINE)  # how a lab's exercise cell asks for names (en, es)
NEEDS = "needs a name set by "  # the group of the checks that need names one cell should set
ABSOLUTE_PATH = re.compile(r"(?<![\w./~-])/(?:[\w.@+-]+/)+[\w.@+-]*")  # /a/b..., not a/b, 1/2 or https://
T = TypeVar("T")
# JupyterLab styles an output's <pre> with `word-break: break-all`, which splits words anywhere: not ours.
PRE = '<pre style="white-space: pre-wrap; word-break: normal; overflow-wrap: break-word">'


def relative(data: T, folder: Path) -> T:
    """`data` (a text, or the report) with every absolute path as the learner knows it: from the lab's folder
    `folder`, the workbook's, or ~."""

    def shown(found: re.Match) -> str:
        path = Path(found.group())
        for base, prefix in ((folder, ""), (labs.ROOT, ""), (Path.home(), "~/")):
            if path.is_relative_to(base):
                return prefix + path.relative_to(base).as_posix()
        return path.name  # elsewhere (a library, a temporary folder): its file name says enough

    if isinstance(data, str):
        return ABSOLUTE_PATH.sub(shown, data)
    if isinstance(data, list | tuple):
        return type(data)(relative(item, folder) for item in data)
    if isinstance(data, dict):
        return {key: relative(value, folder) for key, value in data.items()}
    return data


def named_in(sources: list[str], names: set[str]) -> dict[str, int]:
    """For each of `names`, the code cell (numbered from 1) that should set it: the first that assigns or defines
    it, or asks for it ("# Define why_not_retry …"); else the first that uses it."""
    sets: dict[str, int] = {}
    uses: dict[str, int] = {}
    for number, source in enumerate(sources, start=1):
        asked = {word for line in DEFINE.findall(source) for word in re.findall(r"\w+", line)}
        tree = python_source.tree(source)  # None: a cell that does not parse, only its comments say something
        nodes = list(ast.walk(tree)) if tree is not None else []
        bound = {node.id for node in nodes if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
        bound |= {node.name for node in nodes if isinstance(node, ast.FunctionDef | ast.ClassDef)}
        used = {node.id for node in nodes if isinstance(node, ast.Name)}
        sets |= {name: number for name in names & (bound | asked) if name not in sets}
        uses |= {name: number for name in names & used if name not in uses}
    return uses | sets


def wrapped(line: str) -> str:
    """One line broken between words at WIDTH, the next lines indented under it."""
    indent = line[: len(line) - len(line.lstrip())]
    return textwrap.fill(line, WIDTH, subsequent_indent=indent + "    ", break_long_words=False, break_on_hyphens=False)


def problem_lines(cell: dict, setters: dict[str, int]) -> list[str]:
    """A failing cell's problem as the report says it: the checks that could not run for one reason, in one line.

    `setters` gives, for a name a NameError says is not defined, the cell that should set it (`named_in`). The
    checks needing names one cell should set are said together; the checks another reason stopped, once when two
    or more share it.
    """
    first, *rest = cell["problem"]
    prefix = "CheckFailed: " if first.startswith("CheckFailed: ") else ""  # what the kernel says of a check cell
    groups: dict[str, list[str]] = {}  # a group of checks that could not run -> the reason of each
    entries: list[tuple[str | None, list[str]]] = []  # (its group or None, its lines), in the checks' order
    lines = iter([first.removeprefix(prefix), *rest])
    could_not_run = _could_not_run()
    for line in lines:
        _before, marker, cause = line.partition(could_not_run)
        if not marker:
            entries.append((None, [line]))
            continue
        taken = [line]
        while not taken[-1].endswith(")") and (more := next(lines, None)) is not None:  # an SQL error: LINE 1, ^
            taken.append(more)
        reason = cause.removesuffix(")")
        group = _group(reason, setters, cell["number"])
        if group not in groups:
            entries.append((group, taken))
        groups.setdefault(group, []).append(reason)
    shown: list[str] = []
    for index, (group, said) in enumerate(entries):
        reasons = groups.get(group, []) if group else []
        if group and group.startswith(NEEDS):
            said = [_needs(reasons, setters, cell["number"])]
        elif len(reasons) > 1:
            said = [_("{count} checks could not run: {reason}").format(count=len(reasons), reason=group)]
        elif index == 0:
            said = [prefix + said[0], *said[1:]]  # a check's own words, as the kernel said them
        shown += said
    return shown


def _could_not_run() -> str:
    """How `checks.expect` says, in this edition, that the learner's code raised inside a check: the text between
    the hint and the error (" (the check could not run: ")."""
    return _(checks.COULD_NOT_RUN).split("{hint}", 1)[1].split("{error}", 1)[0]


def _group(reason: str, setters: dict[str, int], number: int) -> str:
    """What a check that could not run is said with: the cell that should set the name it needs, or its reason."""
    missing = NOT_DEFINED.fullmatch(reason)
    if missing is None:
        return reason
    setter = setters.get(missing.group(1), number)
    return f"{NEEDS}{setter if setter < number else 'no cell'}"


def _needs(reasons: list[str], setters: dict[str, int], number: int) -> str:
    """One line for the checks of cell `number` that need names one earlier cell should set (or none does)."""
    names = list(dict.fromkeys(NOT_DEFINED.fullmatch(reason).group(1) for reason in reasons))
    quoted = [f"`{name}`" for name in names]
    listed = quoted[0]
    if len(quoted) > 1:
        listed = _("{names} and {last}").format(names=", ".join(quoted[:-1]), last=quoted[-1])
    setter = setters.get(names[0], number)
    need = ngettext("{count} check needs {names}", "{count} checks need {names}", len(reasons))
    need = need.format(count=len(reasons), names=listed)
    if setter < number:
        return _("{need}, which cell [{cell}] should set: finish that cell first").format(need=need, cell=setter)
    define = ngettext("define it as asked", "define them as asked", len(names))
    return _("{need}, which no cell above sets: {define}").format(need=need, define=define)


def as_text(report: dict) -> str:
    """The report as lines of text: failing cells first one first, blank answers, the hidden checks if run."""
    lines = []
    failing = [cell for cell in report["cells"] if cell["problem"]]
    setters = report.get("named_in", {})
    if failing or report["stopped"]:
        lines.append(_("{count} cell(s) failed; fix them from the first one down:").format(count=len(failing)))
        for cell in failing:
            first, *more = problem_lines(cell, setters)
            where = _("cell [{number}] ({first_line})").format(number=cell["number"], first_line=cell["first_line"])
            lines.append(f"  {where}: {first}")
            lines += ["      " + _("and: {problem}").format(problem=line) for line in more]
        if report["stopped"]:
            lines.append(f"  {report['stopped']}")
    else:
        lines.append(_("public checks passed; {hidden} run at grading").format(hidden=_hidden(report)))
    if report["blank"]:
        lines.append(_blank(report))
    text = "\n".join(wrapped(line) for line in lines)
    if report["hidden"]:  # the grader's own table, as it prints it
        text += "\n\n" + _hidden_head() + ":\n" + report["hidden"]
    return text


def _hidden_head() -> str:
    return _("hidden checks, by the instructor's grader (you have the whole repository)")


def _blank(report: dict) -> str:
    said = _("{count} written answer(s) still blank, after: {questions}")
    return said.format(count=len(report["blank"]), questions="; ".join(report["blank"]))


def _hidden(report: dict) -> str:
    """How many hidden checks the lab announces; a notebook that does not say (not one the build wrote): no number."""
    if not report["hidden_checks"]:
        return _("the hidden checks")
    return _("{count} hidden checks").format(count=report["hidden_checks"])


def as_html(report: dict) -> str:
    """The report as HTML: each part of the lab with ✓ or ✗ and its cell, the first failure open, the rest folded."""
    shown = [cell for cell in report["cells"] if cell["part"] or cell["problem"]]
    failing = [cell for cell in shown if cell["problem"]]
    items = []
    for cell in shown:
        if cell["part"]:
            name = _("public check {part}").format(part=cell["part"])
        else:
            name = _("cell {first_line}").format(first_line=cell["first_line"])
        where = _("cell [{number}]").format(number=cell["number"])
        if not cell["problem"]:
            items.append(
                "<li>✓ " + _("<b>{name}</b> passed ({where})").format(name=escape(name), where=where) + "</li>"
            )
            continue
        opened = " open" if cell is failing[0] else ""
        text = "\n".join(problem_lines(cell, report.get("named_in", {})))
        summary = _("<b>{name}</b> failed ({where})").format(name=escape(name), where=where)
        items.append(f"<li><details{opened}><summary>✗ {summary}</summary>{PRE}{escape(text)}</pre></details></li>")
    if failing or report["stopped"]:
        head = "✗ " + _("{count} cell(s) failed: fix them from the first one down (cell numbers as after Run All).")
        head = head.format(count=len(failing))
    else:
        head = "✓ " + _("public checks passed; {hidden} run at grading.").format(hidden=_hidden(report))
    parts = [f"<p><b>{escape(head)}</b></p>", f'<ul style="list-style: none; padding-left: 0">{"".join(items)}</ul>']
    if report["stopped"]:
        parts.append(f"<p>⚠ {escape(report['stopped'])}</p>")
    if report["blank"]:
        parts.append(f"<p>{escape(_blank(report))}</p>")
    if report["hidden"]:
        parts.append(
            f"<details><summary>{escape(_hidden_head())}</summary>{PRE}{escape(report['hidden'])}</pre></details>"
        )
    label = escape(_("selfcheck of {notebook}").format(notebook=report["notebook"]))
    return f'<div role="region" aria-label="{label}">{"".join(parts)}</div>'
