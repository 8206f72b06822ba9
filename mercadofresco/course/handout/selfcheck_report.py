"""selfcheck's report, in two forms: lines of text (a terminal, the text form in a notebook) and HTML.

The HTML is what `selfcheck.here` shows in the lab's last cell: each public check part with ✓ or ✗ and its cell as
JupyterLab numbers it, the first failure open with what it found (a counterexample's story), the others folded
(`<details>`, which a keyboard opens), the hidden checks folded too. Both forms read the same plain data
(`selfcheck.report_of`), and neither shows a path beyond the notebook's own name.
"""

from __future__ import annotations

from html import escape


def as_text(report: dict) -> str:
    """The report as lines of text: failing cells first one first, blank answers, the hidden checks if run."""
    lines = []
    failing = [cell for cell in report["cells"] if cell["problem"]]
    if failing or report["stopped"]:
        lines.append(f"{len(failing)} cell(s) failed; fix them from the first one down:")
        for cell in failing:
            first, *more = cell["problem"]
            lines.append(f"  cell [{cell['number']}] ({cell['first_line']}): {first}")
            lines += [f"      and: {line}" for line in more]
        if report["stopped"]:
            lines.append(f"  {report['stopped']}")
    else:
        lines.append(f"public checks passed; {_hidden(report)} run at grading")
    if report["blank"]:
        lines.append(f"{len(report['blank'])} written answer(s) still blank, after: " + "; ".join(report["blank"]))
    if report["hidden"]:
        lines += ["", "hidden checks, by the instructor's grader (you have the whole repository):", report["hidden"]]
    return "\n".join(lines)


def _hidden(report: dict) -> str:
    """How many hidden checks the lab announces; a notebook that does not say (not one the build wrote): no number."""
    return f"{report['hidden_checks']} hidden checks" if report["hidden_checks"] else "the hidden checks"


def as_html(report: dict) -> str:
    """The report as HTML: each part of the lab with ✓ or ✗ and its cell, the first failure open, the rest folded."""
    shown = [cell for cell in report["cells"] if cell["part"] or cell["problem"]]
    failing = [cell for cell in shown if cell["problem"]]
    items = []
    for cell in shown:
        name = f"public check {cell['part']}" if cell["part"] else f"cell {cell['first_line']}"
        where = f"cell [{cell['number']}]"
        if not cell["problem"]:
            items.append(f"<li>✓ <b>{escape(name)}</b> passed ({where})</li>")
            continue
        opened = " open" if cell is failing[0] else ""
        text = "\n".join(cell["problem"])
        items.append(
            f"<li><details{opened}><summary>✗ <b>{escape(name)}</b> failed ({where})</summary>"
            f'<pre style="white-space: pre-wrap">{escape(text)}</pre></details></li>'
        )
    if failing or report["stopped"]:
        head = f"✗ {len(failing)} cell(s) failed: fix them from the first one down (cell numbers as after Run All)."
    else:
        head = f"✓ public checks passed; {_hidden(report)} run at grading."
    parts = [f"<p><b>{escape(head)}</b></p>", f'<ul style="list-style: none; padding-left: 0">{"".join(items)}</ul>']
    if report["stopped"]:
        parts.append(f"<p>⚠ {escape(report['stopped'])}</p>")
    if report["blank"]:
        blank = "; ".join(report["blank"])
        parts.append(f"<p>{len(report['blank'])} written answer(s) still blank, after: {escape(blank)}</p>")
    if report["hidden"]:
        parts.append(
            "<details><summary>hidden checks, by the instructor's grader (you have the whole repository)</summary>"
            f"<pre>{escape(report['hidden'])}</pre></details>"
        )
    label = escape(f"selfcheck of {report['notebook']}")
    return f'<div role="region" aria-label="{label}">{"".join(parts)}</div>'
