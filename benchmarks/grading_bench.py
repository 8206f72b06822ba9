"""Seconds per learner when grading copies of lab 1's solution, `--jobs` at a time (issue 13's budget: 5.3 s).

    PYTHONPATH=$PWD python benchmarks/grading_bench.py --copies 20 --jobs 2

Prints the machine's load average too: on a shared machine the number moves with it.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

from mercadofresco.course import grading, labs, nbrun


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    solution = labs.SOLUTIONS_DIR / labs.lab_file("lab1")
    with tempfile.TemporaryDirectory() as folder:
        for number in range(args.copies):
            shutil.copy(solution, Path(folder) / f"learner{number:02d}.ipynb")
        load = os.getloadavg()[0]
        cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        reports = grading.grade(Path(folder), "lab1", nbrun.Limits(cell_timeout_seconds=60), jobs=args.jobs)
        seconds = time.perf_counter() - started
        cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime + cpu_after.ru_stime) - (cpu_before.ru_utime + cpu_before.ru_stime)
    full = sum(report.score == report.max_score for report in reports)
    print(f"{args.copies} learners, jobs {args.jobs}: {seconds:.1f} s, {seconds / args.copies:.2f} s per learner")
    print(f"CPU of the graders and kernels: {cpu / args.copies:.2f} s per learner (less sensitive to other load)")
    print(f"full marks: {full}/{args.copies}; load average before/after: {load:.1f}/{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
