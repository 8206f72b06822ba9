"""The course map of notebook 00: every notebook and lab in order, where each lab fits, and what each asks of you.

Nothing here is a guess about a person: the words to read are counted in each notebook's text, the
run time is what `make benchmark` measured (course_times.json beside this module), and a lab's size is
the cells to complete, the written answers and the lines of code its solution holds. Reading minutes are
those words at a stated pace; how long a lab takes you is yours, and nobody has timed it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from mercadofresco.i18n import _, edition, number, pgettext

ROOT = Path(__file__).resolve().parents[2]  # the workbook: mercadofresco/lessons/ is two levels down
NOTEBOOKS = ROOT / "notebooks"
LABS = ROOT / "labs"
TIMES = Path(__file__).with_name("course_times.json")  # written by `make benchmark`; shipped with the package
WORDS_PER_MINUTE = 200  # a usual pace for technical prose; code, figures and panels take what you give them
# The lab that fits after each notebook: it uses what that notebook showed (the links at each notebook's end agree).
LAB_AFTER = {"04": "lab1_double_charge", "11": "lab2_dlq_runbook", "13": "lab3_outbox"}
SOLUTION_REGION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.DOTALL)


@dataclass(frozen=True)
class Stop:
    """One notebook or lab on the way through the course."""

    step: int
    kind: str  # "notebook" or "lab"
    path: Path
    title: str
    words: int
    code_cells: int
    panels: int
    run_seconds: float | None  # measured by `make benchmark`; None when it has not measured this one

    @property
    def reading_minutes(self) -> int:
        """The words at WORDS_PER_MINUTE, rounded up to a whole minute."""
        return max(1, -(-self.words // WORDS_PER_MINUTE))


def stops(root: Path = ROOT) -> list[Stop]:
    """Notebooks 00-19 in order, each lab right after the notebook it builds on: those of the edition spoken here
    (notebooks/es/ and labs/es/ for the Spanish one, where they are)."""
    times = measured().get("seconds", {})
    notebooks, labs = _folder(root / "notebooks"), _folder(root / "labs")
    found: list[Stop] = []
    for path in sorted(notebooks.glob("[0-9][0-9]_*.ipynb")):
        found.append(_stop(len(found) + 1, "notebook", path, times))
        lab = LAB_AFTER.get(path.name[:2])
        if lab and (labs / f"{lab}.ipynb").exists():
            found.append(_stop(len(found) + 1, "lab", labs / f"{lab}.ipynb", times))
    return found


def _folder(english: Path) -> Path:
    """The edition's own folder of `english` (notebooks/ -> notebooks/es/), or `english` where it has none."""
    language = edition()
    return english / language if language != "en" and (english / language).is_dir() else english


def lab_size(path: Path) -> dict[str, int]:
    """What a lab asks you to write, counted in its solution when the solution is here (an instructor's copy)."""
    notebook = nbformat.read(path, as_version=4)
    answer, code = _("*Your answer here.*"), _("# YOUR CODE HERE: replace the next line with your solution.")
    questions = sum(1 for c in notebook.cells if c.cell_type == "markdown" and answer in c.source)
    size = {"code cells to complete": sum(1 for c in notebook.cells if code in c.source)}  # the lab's own prompts
    size["written answers"] = questions
    size["public check cells"] = sum(1 for c in notebook.cells if "checks.part(" in c.source)
    size["hidden checks"] = int(notebook.metadata.get("course_lab", {}).get("hidden_checks", 0))
    solution = path.parents[1] / "solutions" / path.name
    lines = solution_lines(solution) if solution.exists() else measured().get("solution_lines", {}).get(path.name)
    if lines is not None:
        size["lines of code in the solution"] = lines
    return size


def solution_lines(path: Path) -> int:
    """The non-blank lines of code between a solution's BEGIN and END SOLUTION markers."""
    text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    return sum(1 for region in SOLUTION_REGION.findall(text) for line in region.splitlines() if line.strip())


def table(root: Path = ROOT) -> list[dict[str, object]]:
    """The map: one row a stop, with the path to open it from notebooks/."""
    rows = []
    for stop in stops(root):
        where = os.path.relpath(stop.path, _folder(root / "notebooks"))  # a sibling, or ../labs/…, ../../labs/es/…
        rows.append(
            {
                "step": stop.step,
                "open": f"[{stop.path.stem}]({where})",
                "what": stop.title,
                "words": stop.words,
                "reading (min)": stop.reading_minutes,
                "panels": stop.panels,
                "runs in (s)": _("not measured") if stop.run_seconds is None else number(stop.run_seconds, ".1f"),
            }
        )
    return rows


def labs_table(root: Path = ROOT) -> list[dict[str, object]]:
    """What each lab asks of you, and where it fits."""
    after = {lab: number for number, lab in LAB_AFTER.items()}
    rows = []
    for stop in (s for s in stops(root) if s.kind == "lab"):
        row: dict[str, object] = {"lab": stop.path.stem, "after notebook": after[stop.path.stem]}
        row["reading (min)"] = stop.reading_minutes
        row |= lab_size(stop.path)
        row["solution runs in (s)"] = _("not measured") if stop.run_seconds is None else number(stop.run_seconds, ".1f")
        rows.append(row)
    return rows


def shown(root: Path = ROOT):  # -> IPython.display.Markdown
    """Both tables for notebook 00, with links that open each notebook, and where the times come from."""
    from IPython.display import Markdown

    facts = measured()
    source = (
        _("measured by `make benchmark` ({when})").format(when=facts["measured"])
        if facts
        else _("not measured yet (`make benchmark`)")
    )
    said = _("Reading at {pace} words a minute, diagrams and code not counted; run times {source}.")
    note = "*" + said.format(pace=WORDS_PER_MINUTE, source=source) + "*"
    return Markdown("\n\n".join([_markdown(table(root)), note, _markdown(labs_table(root))]))


def _markdown(rows: list[dict[str, object]]) -> str:
    columns = list(rows[0])
    headers = [pgettext("table header", column) for column in columns]  # the keys stay English, as in show.table
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(row.get(c, "")).replace("|", "\\|") for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def measured() -> dict:
    """What `make benchmark` last wrote: {"measured": when and where, "seconds": {...}, "solution_lines": {...}}."""
    return json.loads(TIMES.read_text()) if TIMES.exists() else {}


def _stop(step: int, kind: str, path: Path, times: dict[str, float]) -> Stop:
    notebook = nbformat.read(path, as_version=4)
    prose = " ".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    prose = re.sub(r"```.*?```", " ", prose, flags=re.DOTALL)  # a diagram is looked at, not read word by word
    prose = re.sub(r"<!--.*?-->", " ", prose, flags=re.DOTALL)  # comments for the tests, which JupyterLab hides
    code = [c for c in notebook.cells if c.cell_type == "code"]
    title = notebook.cells[0].source.splitlines()[0].lstrip("# ").strip()
    return Stop(
        step=step,
        kind=kind,
        path=path,
        title=title.split(" · ", 1)[-1],
        words=len(re.findall(r"[\w€%'’-]+", prose)),
        code_cells=len(code),
        panels=sum("show.panel(" in c.source for c in code),
        run_seconds=times.get(path.name),
    )
