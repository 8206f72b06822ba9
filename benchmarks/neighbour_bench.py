"""A correct learner graded beside a hostile one: its score, and its time against a quiet run (issue 46: within 20 %).

    PYTHONPATH=$PWD python benchmarks/neighbour_bench.py              # labs 1 and 3, each attack, 3 runs each
    PYTHONPATH=$PWD python benchmarks/neighbour_bench.py --runs 1

The attacks are the ones `tests/labs/hostile.py` says the checker must stop at once (a reply nested 100,000 deep,
1,000 lanes, a gigabyte sent to DynamoDB, lab 3's database filled): each is graded with `--jobs 2` beside the lab's
solution, and the solution's own time (from the start to its report) is compared with the solution graded alone.
Prints the median of `--runs` runs and the hostile learner's time and reason too.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import statistics
import tempfile
import time
from pathlib import Path

import nbformat

from mercadofresco.course import grading
from mercadofresco.course.grading import reports
from mercadofresco.course.handout import labs

HOSTILE = labs.ROOT / "tests" / "labs" / "hostile.py"


class Clock(reports.Progress):
    """A progress bar that notes when each learner's report came back, in seconds from its making."""

    def __init__(self, total: int) -> None:
        super().__init__(total, stream=io.StringIO())
        self.started, self.finished = time.perf_counter(), {}

    def advance(self, learner: str, score: int, max_score: int) -> None:
        self.finished[learner] = time.perf_counter() - self.started
        super().advance(learner, score, max_score)


def graded(lab: str, notebooks: dict[str, nbformat.NotebookNode]) -> tuple[dict, dict]:
    """Grade `notebooks` with --jobs 2; each learner's report and seconds."""
    with tempfile.TemporaryDirectory() as folder:
        for name, notebook in notebooks.items():
            nbformat.write(notebook, Path(folder) / f"{name}.ipynb")
        clock = Clock(len(notebooks))
        found = grading.grade(Path(folder), lab, jobs=2, progress=clock)
    return {report.learner: report for report in found}, clock.finished


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("hostile", HOSTILE)
    hostile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hostile)
    for lab, attacks in hostile.STOPPED_BY.items():
        solution = nbformat.read(labs.SOLUTIONS_DIR / labs.lab_file(lab), as_version=4)
        quiet = statistics.median(graded(lab, {"correct": solution})[1]["correct"] for _ in range(args.runs))
        print(f"{lab}: the solution alone, {quiet:.1f} s")
        for name, (source, _) in attacks.items():
            attack = labs.handed_out(lab)
            attack.cells.append(nbformat.v4.new_code_cell(source))
            runs = [graded(lab, {"correct": solution, name: attack}) for _ in range(args.runs)]
            beside = statistics.median(seconds["correct"] for _, seconds in runs)
            found, seconds = runs[-1]
            full = found["correct"].score == found["correct"].max_score
            why = next((check.reason for check in found[name].checks if check.reason), "")[:90]
            print(
                f"  beside {name}: {beside:.1f} s ({100 * (beside / quiet - 1):+.0f} %), full marks {full}; "
                f"{name} {found[name].score}/{found[name].max_score} in {seconds[name]:.1f} s: {why}"
            )


if __name__ == "__main__":
    main()
