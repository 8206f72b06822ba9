"""Time section 14's Friday model and section 16's end-to-end flow, and notebooks 14-16 under strict nbval.

    python benchmarks/backpressure_bench.py            # models, the flow, and the three notebooks
    python benchmarks/backpressure_bench.py --no-notebooks

A measurement, not a test. Targets: one Friday run (the lesson's profile, 10 h
of simulated evening) <= 0.5 s with its peak within 10 % of the lesson's 1,200;
each notebook <= 6 s under pytest --nbval, kernel start included. The machine's
load average is printed: on a shared 2-core machine every figure grows with it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ("14_backpressure.ipynb", "15_decision_table.ipynb", "16_architecture.ipynb")
FRIDAY_TARGET, NOTEBOOK_TARGET = 0.5, 6.0


def time_friday() -> tuple[float, int]:
    from mercadofresco.sims import buffer

    started = time.perf_counter()
    result = buffer.run_friday(buffer.FridayConfig(), seed=0)
    return time.perf_counter() - started, result.peak["depth"]


def time_flow() -> tuple[float, float, bool]:
    """The notebook's two runs, one clean order and three orders with every fault, on one fresh world."""
    from mercadofresco import world
    from mercadofresco.clock import VirtualClock
    from mercadofresco.lessons.architecture import flow as architecture
    from mercadofresco.lessons.architecture import report

    with VirtualClock() as clock, world.build() as aws:
        started = time.perf_counter()
        architecture.run_flow(aws, clock, 1)
        clean = time.perf_counter() - started
        started = time.perf_counter()
        run = architecture.run_flow(aws, clock, 3, architecture.EVERY_FAULT, first=90_001)
        faulty = time.perf_counter() - started
    once = all(row["charges"] == row["written"] == row["correo"] == 1 for row in report.tally(run))
    return clean, faulty, once


def time_notebook(name: str) -> tuple[float, bool]:
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", f"notebooks/{name}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return time.perf_counter() - started, result.returncode == 0


def main(argv: list[str]) -> int:
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    seconds, peak = time_friday()
    within = abs(peak - 1_200) <= 120
    print(
        f"Friday model: {seconds:.3f} s (target {FRIDAY_TARGET} s); peak {peak} (lesson ~1,200; within 10 %: {within})"
    )
    clean, faulty, once = time_flow()
    print(f"end-to-end flow: one clean order {clean:.2f} s; three orders, every fault {faulty:.2f} s")
    print(f"  every order charged, written and emailed exactly once: {once}")
    ok = seconds <= FRIDAY_TARGET and within and once
    if "--no-notebooks" not in argv:
        for name in NOTEBOOKS:
            took, passed = time_notebook(name)
            over = "" if took <= NOTEBOOK_TARGET else "  (over 6 s)"
            print(f"{name:28} {took:5.1f} s  {'passed' if passed else 'FAILED'}{over}")
            ok = ok and passed
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
