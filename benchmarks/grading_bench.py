"""A class of 100 copies of a lab's solution graded `--jobs` at a time: the time, and seconds per learner.

    PYTHONPATH=$PWD python benchmarks/grading_bench.py                         # lab 1, 100 learners, --jobs 2
    PYTHONPATH=$PWD python benchmarks/grading_bench.py --copies 20 --jobs 2 --lab lab3    # issue 47: ≤ 10 s

Prints the machine's load average too: on a shared machine the number moves with it. Then the cost of one
AWS call from the learner's kernel through the boundary to the checker's moto, beside the same call in process,
and the time to merge 1,000 results into a gradebook (issue 24's budget: 5 s).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from mercadofresco.course import checker, grading
from mercadofresco.course.grading import gradebook, marks, results
from mercadofresco.course.handout import labs
from mercadofresco.course.run import forked, nbrun

CALLS = 300
KERNEL_CELL = """import time
def sqs_calls(aws, n):
    started = time.perf_counter()
    for _ in range(n):
        aws.sqs.get_queue_attributes(QueueUrl=aws.orders.url, AttributeNames=["All"])
    return (time.perf_counter() - started) / n
"""


def boundary_cost() -> tuple[float, float]:
    """Seconds per SQS call: from a kernel stand-in through the boundary, and in the checker's own process."""
    from mercadofresco import clock, queues, world

    with tempfile.TemporaryDirectory() as folder:
        notebook = Path(folder) / "calls.ipynb"
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(KERNEL_CELL)]), notebook)
        listener, path = checker.listen(Path(folder), None)
        stand_in = labs.ROOT / "tests" / "labs" / "kernel_stand_in.py"
        kernel = subprocess.Popen([sys.executable, str(stand_in), str(notebook), str(path)])
        lab = checker.Lab()
        with checker.world_of_the_checker(), clock.VirtualClock():
            lab.connect(listener, None)
            sqs = lab.client("sqs")
            pair = queues.create_queue_pair(
                sqs, world.ORDERS_QUEUE, world.ORDERS_DLQ, visibility_timeout_seconds=120, max_receive_count=4
            )
            aws = world.World(world.WorldConfig(), lab.session(), pair, "", "", {}, "", _clients={"sqs": sqs})
            lab.call("sqs_calls", aws, 20)  # the kernel's first client and imports
            through = lab.call("sqs_calls", aws, CALLS)
            started = time.perf_counter()
            for _ in range(CALLS):
                sqs.get_queue_attributes(QueueUrl=pair.url, AttributeNames=["All"])
            here = (time.perf_counter() - started) / CALLS
            lab.hang_up()
        listener.close()
        kernel.wait()
    return through, here


def merge_cost(report: grading.LearnerReport, lab: str, learners: int = 1_000) -> float:
    """Seconds to merge `learners` results (copies of `report` under other names) into every gradebook file."""
    solution = nbformat.read(labs.SOLUTIONS_DIR / labs.lab_file(lab), as_version=4)
    maxima = marks.answer_maxima(solution.metadata, len(labs.answer_questions(solution)))
    with tempfile.TemporaryDirectory() as folder:
        for number in range(learners):
            report.learner = f"learner{number:04d}"
            results.write(results.to_data(report, lab, None, "bench"), Path(folder) / "results")
        started = time.perf_counter()
        found = results.read_folder(Path(folder) / "results", lab)
        gradebook.merge(found, lab, Path(folder) / "report", maxima)
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--lab", choices=sorted(labs.LABS), default="lab1", help="whose solution (default lab1)")
    args = parser.parse_args()
    solution = labs.SOLUTIONS_DIR / labs.lab_file(args.lab)
    with tempfile.TemporaryDirectory() as folder:
        for number in range(args.copies):
            shutil.copy(solution, Path(folder) / f"learner{number:02d}.ipynb")
        load = os.getloadavg()[0]
        cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        forked_before = forked.cpu_seconds()
        started = time.perf_counter()
        reports = grading.grade(Path(folder), args.lab, nbrun.Limits(cell_timeout_seconds=60), jobs=args.jobs)
        seconds = time.perf_counter() - started
        cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        forked_after = forked.cpu_seconds()
    cpu = (cpu_after.ru_utime + cpu_after.ru_stime) - (cpu_before.ru_utime + cpu_before.ru_stime)
    cpu += forked_after - forked_before  # the runners, checkers and kernels forked by the fork server
    full = sum(report.score == report.max_score for report in reports)
    print(f"{args.copies} learners, jobs {args.jobs}: {seconds:.1f} s, {seconds / args.copies:.2f} s per learner")
    print(f"CPU of the graders and kernels: {cpu / args.copies:.2f} s per learner (less sensitive to other load)")
    print(f"full marks: {full}/{args.copies}; load average before/after: {load:.1f}/{os.getloadavg()[0]:.1f}")
    print(f"merging 1,000 results into the gradebook: {merge_cost(reports[0], args.lab):.2f} s")
    through, here = boundary_cost()
    print(
        f"one SQS call from the kernel through the boundary: {through * 1000:.2f} ms "
        f"(in the checker's own process: {here * 1000:.2f} ms; the boundary adds {(through - here) * 1000:.2f} ms)"
    )


if __name__ == "__main__":
    main()
