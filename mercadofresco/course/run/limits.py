"""What one learner may use while graded, and the words a report says when a limit is passed.

The learner's processes together (`nbrun` watches them four times a second), and what the grader's checker
holds while it answers their code: memory, CPUs, files on the grader's disk, the time of the whole notebook.
Past any limit the learner's processes and the checker are killed, and every check not yet run says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mercadofresco.course.protocol import CELL_TIMEOUT_SECONDS, Plan
from mercadofresco.course.run import watch
from mercadofresco.errors import check_range

STARTUP_SECONDS = 60  # kernel start plus imports, on a slow machine
# Measured (benchmarks, 2026-11-30): under a 1024 MB address-space limit lab 1's solution cannot start its poller's
# threads; labs 1 and 2 pass at 1280 MB. 1536 leaves a margin. Their resident memory peaks near 190 MB.
MIN_MEMORY_MB = 1536
DISK_MB = 1024  # the learner's working copy on the grader's disk (its /tmp and the like count as memory)
EXTRA_LEARNER_CELLS = 10  # cells a learner may add to the lab's and still have them in the time budget
# Learners graded side by side share the machine's CPUs: one whose processes spin (a hundred busy loops) would
# starve the other's kernel into timeouts. A notebook's kernel uses one CPU (two with lab 3's PostgreSQL for an
# instant); more than this many on average over the window and all the learner's processes are killed.
CPU_SHARE = 1.6
CPU_WINDOW_SECONDS = 3.0
# What the checker holds while it answers one learner's code: its own process (moto, the gateway, the poller) and
# lab 3's database with its files (in memory, /dev/shm). A learner who makes it hold more (1 GB of DynamoDB items,
# a table filled by a loop) is stopped like one whose own processes pass their limit. The solutions: 110-270 MB.
CHECKER_MEMORY_MB = 1_024
DATABASE_MB = 256  # of it, lab 3's database files (the solution's: about 45 MB, 38 of them PostgreSQL's own)


@dataclass(frozen=True)
class Limits:
    """How long each cell may run and how much memory the learner's processes may take together."""

    cell_timeout_seconds: float = CELL_TIMEOUT_SECONDS
    memory_mb: int = 2048

    def __post_init__(self) -> None:
        check_range("cell_timeout_seconds", self.cell_timeout_seconds, 1, 3_600)
        check_range("memory_mb (the solutions need at least this much)", self.memory_mb, MIN_MEMORY_MB, 65_536)


def files_mb(workdir: Path | None, databases: list[Path]) -> tuple[float, float, str]:
    """MB in the working copy (when given) and in the checker's database folders; a limit passed on the way."""
    try:
        disk = watch.folder_mb(workdir) if workdir is not None else 0.0
    except watch.TooManyFilesError as exc:
        return 0.0, 0.0, f"the learner's working copy holds {exc} (the limit)"
    try:
        return disk, sum(watch.folder_mb(folder) for folder in databases), ""
    except watch.TooManyFilesError as exc:
        return disk, 0.0, f"the lab's database holds {exc} (the checker's limit)"


def passed(limits: Limits, memory_mb: float, disk_mb: float, cpus: float, checker_mb: float, database_mb: float) -> str:
    """The first limit the learner's processes, or the checker's work for them, have passed, in words; "" if none."""
    if memory_mb > limits.memory_mb:
        used = f"the learner's processes and scratch files together used {memory_mb:.0f} MB"
        return f"{used}, over the {limits.memory_mb} MB limit"
    if disk_mb > DISK_MB:
        return f"the learner's files in its working copy reached {disk_mb:.0f} MB, over the {DISK_MB} MB limit"
    if cpus > CPU_SHARE:
        return (
            f"the learner's processes and the checker's work for them together kept {cpus:.1f} CPUs busy for "
            f"{CPU_WINDOW_SECONDS:g} s (at most {CPU_SHARE:g}: other learners are graded on the same machine)"
        )
    if database_mb > DATABASE_MB:
        return f"the lab's database grew to {database_mb:.0f} MB of files, over the checker's {DATABASE_MB} MB limit"
    if checker_mb > CHECKER_MEMORY_MB:
        return (
            f"the grader's checker held {checker_mb:.0f} MB answering your code (its process and the lab's "
            f"database together), over its {CHECKER_MEMORY_MB} MB limit"
        )
    return ""


def time_budget(plan: Plan, limits: Limits) -> float:
    """Seconds the whole notebook may take: the kernel's start, then each cell's timeout and a margin.

    The learner chooses how many cells there are: beyond the lab's own cells (and a few of their own) they
    add nothing, or 2,000 sleeping cells would hold a grading slot for a day.
    """
    grader_cells = plan.grader_cells()
    learner_cells = min(plan.learner_cells(), plan.lab_cells + EXTRA_LEARNER_CELLS)
    checks = plan.check_count  # run by the grader after the cells, each within one cell's timeout
    return STARTUP_SECONDS + (grader_cells + learner_cells + checks) * (limits.cell_timeout_seconds + 10)
