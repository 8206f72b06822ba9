"""Grade a folder of learners' lab notebooks with the hidden checks, one nbval item per check.

    python -m mercadofresco.course.grading build                         # labs/ from solutions/ (see labs.py)
    python -m mercadofresco.course.grading grade SUBMISSIONS/ --lab lab1 # a report per learner and per check

For each learner notebook the grader drops any cell that claims to be hidden,
appends the solution's hidden cells after the learner's own, and runs the
whole notebook through `pytest --nbval-lax` in a fresh kernel: every cell is a
test item, and a hidden check passes only if its item passes *and* it printed
this run's secret token, so a check that never ran (a dead kernel, a killed
run) can never count as passed. Each cell has a time limit (an endless loop is
interrupted and reported); the kernel runs with a memory limit (a kernelspec
generated under .cache/grading); a notebook that stops answering is killed and
its remaining checks fail. Reports: a table on screen, report.json, report.csv.

The checks themselves fail through `checks.expect`, which gives the learner a hint.
"""

from __future__ import annotations

import argparse
import csv
import json
import secrets
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from mercadofresco.course import labs, legacy, nbrun

NOTES_ON_SCREEN = 3  # the first problems in a learner's own cells; report.json keeps them all


@dataclass
class CheckResult:
    """One check for one learner."""

    check: str
    passed: bool
    points: int
    reason: str
    hint: str


@dataclass
class LearnerReport:
    """Everything the grader found in one notebook."""

    learner: str
    checks: list[CheckResult]
    notes: list[str] = field(default_factory=list)  # learner cells that raised or ran out of time

    @property
    def score(self) -> int:
        return sum(result.points for result in self.checks if result.passed)

    @property
    def max_score(self) -> int:
        return sum(result.points for result in self.checks)


# -- assembling the notebook that is graded ------------------------------------------
def assemble(learner: NotebookNode, solution: NotebookNode, token: str) -> tuple[NotebookNode, int]:
    """The learner's cells, then the solution's hidden cells; returns it and the number of learner code cells."""
    kernelspec = {"name": nbrun.KERNEL_NAME, "display_name": nbrun.KERNEL_NAME}
    graded = nbformat.v4.new_notebook(metadata={"kernelspec": kernelspec})
    for cell in learner.cells:
        if labs.is_hidden(cell) or cell.cell_type != "code":
            continue  # a learner cannot bring their own "hidden" checks
        graded.cells.append(nbformat.v4.new_code_cell(cell.source))
    learner_code_cells = len(graded.cells)
    for cell in solution.cells:
        if labs.is_hidden(cell):
            proof = f"\nprint({token!r})" if labs.HIDDEN_CHECK in labs.cell_tags(cell) else ""
            graded.cells.append(nbformat.v4.new_code_cell(cell.source + proof))
    return graded, learner_code_cells


def score(
    rows: list[dict], learner_cells: int, specs: list[labs.CheckSpec], setup_cells: list[int], token: str, killed: bool
) -> tuple[list[CheckResult], list[str]]:
    """Turn recorded cells into check results: a check passes only if it passed and printed the token."""
    by_cell = {row["cell"]: row for row in rows}
    notes, stopped = [], ""
    for cell in range(learner_cells):
        row = by_cell.get(cell)
        if row and row["outcome"] == "failed":
            notes.append(f"your code cell {cell + 1}: {row['reason']}")
            if nbrun.stops_grading(row["reason"]):
                stopped = stopped or f"grading stopped at your code cell {cell + 1} ({row['reason']})"
    for cell in setup_cells:
        row = by_cell.get(cell)
        if row and row["outcome"] == "failed":
            stopped = stopped or f"the grader's setup could not run ({row['reason']})"
    results = []
    for number, spec in enumerate(specs):
        cell = learner_cells + len(setup_cells) + number
        row = by_cell.get(cell)
        passed = bool(row) and row["outcome"] == "passed" and token in row["stdout"] and not stopped
        if passed:
            reason = ""
        elif stopped:
            reason = f"not run: {stopped}"
        elif row is None:
            reason = "not run: grading was stopped (the notebook ran out of time)" if killed else "not run"
        else:
            reason = row["reason"] or "the check did not finish"
            if "Failed to interrupt" in reason or "Kernel dead" in reason:
                stopped = f"the kernel stopped answering during the check {spec.check}"
        results.append(CheckResult(spec.check, passed, spec.points, reason.replace(token, ""), spec.hint))
    return results, notes


def grade_notebook(
    path: Path, solution: NotebookNode, limits: nbrun.Limits, workdir: Path, cache_dir: Path = nbrun.CACHE_DIR
) -> LearnerReport:
    """Grade one learner notebook; a notebook that cannot even be read fails every check."""
    specs = labs.check_specs(solution)
    try:
        learner = nbformat.read(path, as_version=4)
    except Exception as exc:  # not a notebook at all: every check fails, grading goes on
        checks = [CheckResult(s.check, False, s.points, "not run: unreadable notebook", s.hint) for s in specs]
        return LearnerReport(path.stem, checks, [f"could not read {path.name}: {type(exc).__name__}: {exc}"])
    token = f"check-finished-{secrets.token_hex(8)}"
    graded, learner_cells = assemble(learner, solution, token)
    hidden = [cell for cell in solution.cells if labs.is_hidden(cell)]
    setup_cells = [learner_cells + i for i, cell in enumerate(hidden) if labs.HIDDEN_CHECK not in labs.cell_tags(cell)]
    if any(cell >= learner_cells + len(setup_cells) for cell in setup_cells):
        raise labs.SolutionFormatError("hidden-setup cells must come before every hidden-check cell")
    target = workdir / path.stem / f"{path.stem}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(graded, target)
    old_names = legacy.old_names_in("\n".join(cell.source for cell in learner.cells if cell.cell_type == "code"))
    rows, killed = nbrun.run_notebook(target, limits, learner_cells, cache_dir, old_names)
    checks, notes = score(rows, learner_cells, specs, setup_cells, token, killed)
    if killed:
        notes.append("the notebook was stopped: it ran past its total time limit")
    return LearnerReport(path.stem, checks, notes)


def grade(
    submissions: Path,
    lab: str,
    limits: nbrun.Limits | None = None,
    solutions_dir: Path = labs.SOLUTIONS_DIR,
    jobs: int = 1,
) -> list[LearnerReport]:
    """Grade every notebook in `submissions` with `lab`'s hidden checks, `jobs` notebooks at a time (sorted by name)."""
    limits = limits or nbrun.Limits()
    if not submissions.is_dir():
        raise ValueError(f"submissions must be a folder of .ipynb files; got {submissions}")
    if not 1 <= jobs <= 32:
        raise ValueError(f"jobs must be between 1 and 32; got {jobs}")
    solution = nbformat.read(solutions_dir / labs.lab_file(lab), as_version=4)
    paths = sorted(submissions.glob("*.ipynb"))
    with tempfile.TemporaryDirectory(prefix="grading-") as workdir, ThreadPoolExecutor(jobs) as pool:
        # Each notebook runs in its own pytest process and kernel; threads only wait for them.
        return list(pool.map(lambda path: grade_notebook(path, solution, limits, Path(workdir)), paths))


# -- reports ------------------------------------------------------------------------
def summary_table(reports: list[LearnerReport]) -> str:
    """Learners as rows, checks as columns (numbered), then each failed check with its reason and hint."""
    if not reports:
        return "(no notebooks to grade)"
    checks = [result.check for result in reports[0].checks]
    width = max(len("learner"), *(len(report.learner) for report in reports))
    header = f"{'learner':{width}}  score  " + " ".join(f"{i + 1:>2}" for i in range(len(checks)))
    lines = [header, "-" * len(header)]
    for report in reports:
        marks = " ".join(f"{'ok' if r.passed else '--':>2}" for r in report.checks)
        lines.append(f"{report.learner:{width}}  {report.score:>2}/{report.max_score:<2}  {marks}")
    lines += ["", "checks: " + ", ".join(f"{i + 1} {name}" for i, name in enumerate(checks))]
    for report in reports:
        lines += ["", f"{report.learner}: {report.score}/{report.max_score}"]
        lines += [f"  note: {note}" for note in report.notes[:NOTES_ON_SCREEN]]
        if len(report.notes) > NOTES_ON_SCREEN:
            lines.append(f"  note: … and {len(report.notes) - NOTES_ON_SCREEN} more in report.json")
        for result in report.checks:
            if not result.passed:
                lines.append(f"  FAILED {result.check}: {result.reason}")
                lines.append(f"         hint: {result.hint}")
    return "\n".join(lines)


def write_reports(reports: list[LearnerReport], lab: str, out_dir: Path) -> tuple[Path, Path]:
    """report.json (everything) and report.csv (one row per learner and check) for a gradebook."""
    out_dir.mkdir(parents=True, exist_ok=True)
    data = {
        "lab": lab,
        "learners": [
            {"learner": r.learner, "score": r.score, "max_score": r.max_score, "notes": r.notes}
            | {"checks": [asdict(c) for c in r.checks]}
            for r in reports
        ],
    }
    json_path, csv_path = out_dir / "report.json", out_dir / "report.csv"
    json_path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["learner", "check", "passed", "points", "reason", "hint"])
        for r in reports:
            for c in r.checks:
                writer.writerow([r.learner, c.check, int(c.passed), c.points if c.passed else 0, c.reason, c.hint])
    return json_path, csv_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mercadofresco.course.grading", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="write labs/ from solutions/")
    build.add_argument("--solutions", type=Path, default=labs.SOLUTIONS_DIR)
    build.add_argument("--labs", type=Path, default=labs.LABS_DIR)
    grade_ = commands.add_parser("grade", help="grade a folder of learner notebooks")
    grade_.add_argument("submissions", type=Path)
    grade_.add_argument("--lab", required=True, choices=sorted(labs.LABS))
    grade_.add_argument("--out", type=Path, help="where report.json/report.csv go (default grading-report-LAB)")
    grade_.add_argument("--cell-timeout", type=float, default=nbrun.Limits.cell_timeout_seconds)
    grade_.add_argument("--memory-mb", type=int, default=nbrun.Limits.memory_mb)
    grade_.add_argument("--jobs", type=int, default=1, help="notebooks graded at the same time")
    grade_.add_argument("--solutions", type=Path, default=labs.SOLUTIONS_DIR)
    args = parser.parse_args(argv)

    if args.command == "build":
        for path in labs.build(args.solutions, args.labs):
            print(f"wrote {path}")
        return 0
    limits = nbrun.Limits(cell_timeout_seconds=args.cell_timeout, memory_mb=args.memory_mb)
    reports = grade(args.submissions, args.lab, limits, args.solutions, args.jobs)
    print(summary_table(reports))
    json_path, csv_path = write_reports(reports, args.lab, args.out or Path(f"grading-report-{args.lab}"))
    print(f"\nwrote {json_path} and {csv_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
