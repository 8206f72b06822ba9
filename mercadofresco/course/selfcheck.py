"""A learner's own check before handing a lab in: run the saved notebook top to bottom, report the public checks.

    selfcheck.here("lab1_double_charge.ipynb")     # the lab's last cell, in JupyterLab
    .venv/bin/python -m mercadofresco.course.selfcheck labs/lab1_double_charge.ipynb            # save first
    .venv/bin/python -m mercadofresco.course.selfcheck labs/lab1_double_charge.ipynb --hidden   # + the grader

It reads the notebook as saved (save it in JupyterLab first), runs it in a
fresh kernel and names each failing cell by the number JupyterLab shows after
"Restart Kernel and Run All Cells" ([13]) and its first line. It says "public
checks passed; N hidden checks run at grading" when every cell ran, never "all
passed", and lists the written answers still blank. It runs cells as the
grader does: the same time limit a cell (`protocol.CELL_TIMEOUT_SECONDS`), a cell past it
interrupted and the next ones run, and the run stopped where the grader would
stop (`protocol.stops`: a kernel that died or could not be interrupted). Only the
grader's memory limit is not applied here. With `--hidden`, and only
where the whole repository is (solutions/ beside labs/), it also runs the
instructor's hidden checks with the real grader, labelled as such. `here()`
does the same from the lab's own last cell, after making sure the saved file
holds the cell run last (otherwise it asks for a save, with a Save button), and
shows the report as a rich output: the lab's parts with ✓ or ✗, the first
failure open with what it found (a counterexample's story), the others folded.
For a half-done lab it says once what the checks of a cell need ("5 checks need
`fix_order`, `root_fix` and `fixed_config`, which cell [9] should set"), and it
shows no path beyond the lab's folder or the workbook's.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from mercadofresco import i18n
from mercadofresco.course import protocol
from mercadofresco.course.handout import labs, selfcheck_report
from mercadofresco.i18n import N_, _

PUBLIC_CHECK = N_("Public check")  # a public check cell's first line: "# Public check (a, contain)"


@dataclass(frozen=True)
class Cell:
    """A code cell as the run left it: its number after Run All, first line, public check part ("" if none), and
    what went wrong (no lines: it ran)."""

    number: int
    first_line: str
    part: str
    problem: tuple[str, ...] = ()


def examine(path: Path, timeout: float | None = None) -> tuple[list[Cell], str, int]:
    """Run the saved notebook as the grader runs its cells: each code cell, where the run stopped (or ""), and the
    number of hidden checks the lab announces."""
    timeout = timeout or protocol.CELL_TIMEOUT_SECONDS
    notebook = nbformat.read(path, as_version=4)
    hidden = int(notebook.metadata.get(labs.LAB_METADATA_KEY, {}).get("hidden_checks", 0))
    quiet = ["--IPKernelApp.log_level=ERROR"]  # no warning about the kernel's local TCP transport
    client = NotebookClient(
        notebook,
        timeout=timeout,
        interrupt_on_timeout=True,
        kernel_name="python3",
        allow_errors=True,
        extra_arguments=quiet,
    )
    started: list[int] = []  # the notebook's index of each cell as it starts
    client.on_cell_start = lambda cell, cell_index: started.append(cell_index)
    stopped = ""
    try:
        environment = {**os.environ, labs.WHOLE_RUN_ENV: "1"}  # its here() cell idles
        environment.setdefault(i18n.LANG_ENV, labs.edition_of(notebook))  # the kernel speaks the notebook's edition
        client.execute(cwd=str(path.parent), env=environment)
    except DeadKernelError:
        stopped = protocol.KERNEL_DIED
    cells, died_in = [], None
    code = [(index, cell) for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
    for number, (index, cell) in enumerate(code, start=1):
        problem: tuple[str, ...] = ()
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                problem = _said(output, timeout)
        if stopped and started and index == started[-1]:  # the cell the kernel died in
            died_in, problem = number, (stopped,)
        cells.append(Cell(number, _first_line(cell), _part_of(cell), problem))
        if died_in is not None:
            break
    for cell in cells:
        if not stopped and cell.problem and protocol.stops(cell.problem[0]):
            stopped, died_in = cell.problem[0], cell.number
    if stopped:
        said = _("grading stops at cell [{number}] ({reason}): no check after it runs")
        stopped = said.format(number=died_in, reason=stopped)
    return cells, stopped, hidden


def run(path: Path, timeout: float | None = None) -> tuple[list[str], int]:
    """The problems found (one line each) and the number of hidden checks the lab announces."""
    cells, stopped, hidden = examine(path, timeout)
    problems = []
    for cell in cells:
        if cell.problem:
            first, *more = cell.problem
            problems.append(f"cell [{cell.number}] ({cell.first_line}): {first}")
            problems += [f"    and: {line}" for line in more]  # every failed check of a public check cell
    if stopped:
        problems.append(stopped)
    return problems, hidden


def _said(output: dict, timeout: float) -> tuple[str, ...]:
    """An error output in the grader's words: a cell interrupted at the time limit says so."""
    if output.get("ename") == "KeyboardInterrupt":  # nobody presses Interrupt in this run: the time limit did
        return (f"Timeout of {timeout:g} seconds exceeded executing cell (interrupted)",)
    first, *more = str(output.get("evalue", "")).strip().splitlines() or [""]
    return (f"{output.get('ename')}: {first}", *more)


def _part_of(cell: nbformat.NotebookNode) -> str:
    """The public check a cell holds ("(a, contain)"), from its first line "# Public check (a, contain)"."""
    said = {PUBLIC_CHECK, _(PUBLIC_CHECK)}
    found = re.match(rf"# (?:{'|'.join(map(re.escape, said))}) (\([^)]*\))", cell.source.lstrip())
    return found.group(1) if found else ""


def blank_answers(path: Path) -> list[str]:
    """The written answers still to write: the question of each markdown cell that still holds the prompt."""
    notebook = nbformat.read(path, as_version=4)
    _code, prompt = labs.prompts(notebook)
    cells = [cell for cell in notebook.cells if cell.cell_type == "markdown" and prompt in cell.source]
    return [_first_line(cell) for cell in cells]


def hidden_report(path: Path, lab: str) -> str:
    """The instructor's hidden checks on this notebook, by the real grader (needs solutions/)."""
    from mercadofresco.course import grading
    from mercadofresco.course.grading import reports

    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / path.name
        copy.write_bytes(path.read_bytes())
        graded = grading.grade(Path(folder), lab, progress=reports.Progress(1, stream=io.StringIO()))
    return reports.summary_table(graded)


def here(name: str, hidden: bool = True) -> None:
    """Check the lab `name` (in the kernel's folder) as saved, from its last cell: the save-then-check loop.

    Asks for a save first when the saved file lacks the cell run last; `hidden=True` adds the
    instructor's hidden checks where solutions/ is there.
    """
    if os.environ.get(labs.WHOLE_RUN_ENV):  # selfcheck's own run of this notebook, the grader's, a refresh
        _say(_("(a run of the whole notebook by a tool: this cell checks nothing from inside it)"))
        return
    path = Path(name).resolve()
    if not path.exists():
        example = labs.LABS["lab1"]
        said = _("⚠ {name} is not in this notebook's folder: pass its file name, e.g. here('{example}')")
        _say(said.format(name=Path(name).name, example=example))
        return
    unsaved = _unsaved_cell(path)
    if unsaved is not None:
        _ask_for_a_save(unsaved)
        return
    arguments = [sys.executable, "-m", "mercadofresco.course.selfcheck", path.name, "--json"]
    _say(_("checking {name} as saved, in a fresh kernel, as the grader will…").format(name=path.name))
    environment = {**os.environ, labs.WHOLE_RUN_ENV: "1"}
    done = subprocess.run(
        arguments + (["--hidden"] if hidden else []),
        capture_output=True,
        text=True,
        env=environment,
        cwd=path.parent,
        check=False,
    )
    try:
        report = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):  # the check itself failed: its last words, the rest in a terminal
        said = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()] or ["(nothing)"]
        last = selfcheck_report.relative(said[-1], path.parent)
        _say(_("⚠ the check could not finish: {said}").format(said=last))
        command = f"python -m mercadofresco.course.selfcheck {path.name}"
        _say("  " + _("For all it said, run in a terminal: {command}").format(command=command))
        return
    from IPython.display import display

    display({"text/plain": selfcheck_report.as_text(report), "text/html": selfcheck_report.as_html(report)}, raw=True)


def _unsaved_cell(path: Path) -> str | None:
    """The first line of the cell run last in this kernel, when the saved file does not hold it; else None."""
    from IPython import get_ipython

    shell = get_ipython()
    history = shell.history_manager.input_hist_raw if shell is not None else []
    if len(history) < 3:  # [0] is empty and the last one is this very cell: nothing else ran yet
        return None
    last = history[-2].strip()
    saved = {cell.source.strip() for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"}
    return None if not last or last in saved else (last.splitlines() or [""])[0][:60]


def _ask_for_a_save(unsaved: str) -> None:
    from IPython.display import HTML, display

    said = _("⚠ The saved file does not hold the cell you ran last ({cell}): the check reads the saved file.")
    _say(said.format(cell=unsaved))
    _say("  " + _("Save the notebook (Ctrl+S, or File > Save Notebook), then run this cell again."))
    button = '<button class="jp-Button jp-mod-styled jp-mod-accept" data-commandlinker-command="docmanager:save">'
    display(HTML(_("{button}Save the notebook</button> then run this cell again.").format(button=button)))


def _say(text: str) -> None:
    """Print a line of here()'s own, broken between words: a notebook would break it inside one."""
    print(selfcheck_report.wrapped(text), flush=True)


def _first_line(cell: nbformat.NotebookNode) -> str:
    line = next((text.strip() for text in cell.source.splitlines() if text.strip()), "")
    return line[:60] + ("…" if len(line) > 60 else "")


def _lab_of(path: Path) -> str | None:
    return next((name for name, file in labs.LABS.items() if file == path.name), None)


def report_of(path: Path, hidden_too: bool) -> dict:
    """Everything selfcheck found in the saved notebook at `path`, as plain data (what `here` shows)."""
    cells, stopped, hidden = examine(path)
    missing = {name for cell in cells for line in cell.problem for name in selfcheck_report.NOT_DEFINED.findall(line)}
    sources = [cell.source for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]
    report = {
        "notebook": path.name,
        "cells": [asdict(cell) for cell in cells],
        "stopped": stopped,
        "hidden_checks": hidden,
        "blank": blank_answers(path),
        "hidden": None,
        "named_in": selfcheck_report.named_in(sources, missing),
    }
    if hidden_too:
        lab = _lab_of(path)
        if lab is None or not (labs.SOLUTIONS_DIR / labs.LABS[lab]).exists():
            report["hidden"] = _("the hidden checks are your instructor's: they need solutions/, which is not here")
        else:
            report["hidden"] = hidden_report(path, lab)
    return selfcheck_report.relative(report, path.resolve().parent)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mercadofresco.course.selfcheck", description=__doc__.split("\n")[0]
    )
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--hidden", action="store_true", help="also run the hidden checks (needs solutions/)")
    parser.add_argument("--json", action="store_true", help="print the report as one line of JSON (for here())")
    args = parser.parse_args(argv)
    with _in_its_edition(args.notebook):
        if not args.json:
            said = _("checking {name} as saved (save it in JupyterLab first); [N] is the cell's number after Run All")
            print(said.format(name=args.notebook))
        report = report_of(args.notebook, args.hidden)
        print(json.dumps(report) if args.json else selfcheck_report.as_text(report))
    return 1 if report["stopped"] or any(cell["problem"] for cell in report["cells"]) else 0


def _in_its_edition(path: Path) -> contextlib.AbstractContextManager:
    """Speak the notebook's edition (its metadata `edition`), unless MERCADOFRESCO_LANG says otherwise."""
    try:
        language = labs.edition_of(nbformat.read(path, as_version=4))
    except Exception:  # not a notebook: report_of says so, in the terminal's language
        return contextlib.nullcontext()
    return contextlib.nullcontext() if os.environ.get(i18n.LANG_ENV) else i18n.speaking(language)


if __name__ == "__main__":
    sys.exit(main())
