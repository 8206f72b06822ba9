"""A learner's own check before handing a lab in: run the saved notebook top to bottom, report the public checks.

    selfcheck.here("lab1_double_charge.ipynb")     # the lab's last cell, in JupyterLab
    .venv/bin/python -m mercadofresco.course.selfcheck labs/lab1_double_charge.ipynb            # save first
    .venv/bin/python -m mercadofresco.course.selfcheck labs/lab1_double_charge.ipynb --hidden   # + the grader

It reads the notebook as saved (save it in JupyterLab first), runs it in a
fresh kernel and names each failing cell by the number JupyterLab shows after
"Restart Kernel and Run All Cells" ([13]) and its first line. It says "public
checks passed; N hidden checks run at grading" when every cell ran, never "all
passed", and lists the written answers still blank. With `--hidden`, and only
where the whole repository is (solutions/ beside labs/), it also runs the
instructor's hidden checks with the real grader, labelled as such. `here()`
does the same from the lab's own last cell, after making sure the saved file
holds the cell run last (otherwise it asks for a save, with a Save button).
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from mercadofresco.course import labs


def run(path: Path, timeout: int = 120) -> tuple[list[str], int]:
    """The problems found (one line each) and the number of hidden checks the lab announces."""
    notebook = nbformat.read(path, as_version=4)
    hidden = int(notebook.metadata.get(labs.LAB_METADATA_KEY, {}).get("hidden_checks", 0))
    quiet = ["--IPKernelApp.log_level=ERROR"]  # no warning about the kernel's local TCP transport
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3", allow_errors=True, extra_arguments=quiet)
    client.execute(cwd=str(path.parent), env={**os.environ, labs.WHOLE_RUN_ENV: "1"})  # its here() cell idles
    problems = []
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for number, cell in enumerate(code, start=1):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                first, *more = str(output.get("evalue", "")).strip().splitlines() or [""]
                problems.append(f"cell [{number}] ({_first_line(cell)}): {output.get('ename')}: {first}")
                problems += [f"    and: {line}" for line in more]  # every failed check of a public check cell
    return problems, hidden


def blank_answers(path: Path) -> list[str]:
    """The written answers still to write: the question of each markdown cell that still holds the prompt."""
    notebook = nbformat.read(path, as_version=4)
    cells = [cell for cell in notebook.cells if cell.cell_type == "markdown" and labs.MARKDOWN_PROMPT in cell.source]
    return [_first_line(cell) for cell in cells]


def hidden_report(path: Path, lab: str) -> str:
    """The instructor's hidden checks on this notebook, by the real grader (needs solutions/)."""
    from mercadofresco.course import grading, reports

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
        print("(a run of the whole notebook by a tool: this cell checks nothing from inside it)")
        return
    path = Path(name).resolve()
    if not path.exists():
        print(f"⚠ {name} is not in {Path.cwd()}: pass this notebook's file name, e.g. here('{labs.LABS['lab1']}')")
        return
    unsaved = _unsaved_cell(path)
    if unsaved is not None:
        _ask_for_a_save(unsaved)
        return
    arguments = [sys.executable, "-m", "mercadofresco.course.selfcheck", str(path)] + (["--hidden"] if hidden else [])
    environment = {**os.environ, labs.WHOLE_RUN_ENV: "1"}
    with subprocess.Popen(
        arguments, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment
    ) as run:
        for line in run.stdout or ():
            print(line, end="", flush=True)  # each line as it comes: a lab takes seconds, the grader a few more


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

    print(f"⚠ The saved file does not hold the cell you ran last ({unsaved}): the check reads the saved file.")
    print("  Save the notebook (Ctrl+S, or File > Save Notebook), then run this cell again.")
    button = '<button class="jp-Button jp-mod-styled jp-mod-accept" data-commandlinker-command="docmanager:save">'
    display(HTML(f"{button}Save the notebook</button> then run this cell again."))


def _first_line(cell: nbformat.NotebookNode) -> str:
    line = next((text.strip() for text in cell.source.splitlines() if text.strip()), "")
    return line[:60] + ("…" if len(line) > 60 else "")


def _lab_of(path: Path) -> str | None:
    return next((name for name, file in labs.LABS.items() if file == path.name), None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mercadofresco.course.selfcheck", description=__doc__.split("\n")[0]
    )
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--hidden", action="store_true", help="also run the hidden checks (needs solutions/)")
    args = parser.parse_args(argv)
    print(f"checking {args.notebook} as saved (save it in JupyterLab first); [N] is the cell's number after Run All")
    problems, hidden = run(args.notebook)
    if problems:
        print(f"{len(problems)} cell(s) failed; fix them from the first one down:")
        print("\n".join(f"  {line}" for line in problems))
    else:
        print(f"public checks passed; {hidden} hidden checks run at grading")
    blank = blank_answers(args.notebook)
    if blank:
        print(f"{len(blank)} written answer(s) still blank, after: " + "; ".join(blank))
    if args.hidden:
        lab = _lab_of(args.notebook)
        if lab is None or not (labs.SOLUTIONS_DIR / labs.LABS[lab]).exists():
            print("the hidden checks are your instructor's: they need solutions/, which is not here")
        else:
            print("\nhidden checks, by the instructor's grader (you have the whole repository):")
            print(hidden_report(args.notebook, lab))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
