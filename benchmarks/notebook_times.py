"""Print how long each lesson notebook takes under strict nbval, kernel start included.

    python benchmarks/notebook_times.py            # every notebook in notebooks/
    python benchmarks/notebook_times.py notebooks/01_delivery_guarantees.ipynb
    python benchmarks/notebook_times.py --write    # every notebook and lab solution; notebook 00's course map reads it

The target is 6 s per notebook on a 2-core laptop: the script exits with status 1 when a
notebook fails or takes longer (so CI or a maintainer can act on it), 0 otherwise.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from mercadofresco.lessons import course_map  # noqa: E402 (the map reads what this script writes)

TARGET_SECONDS = 6.0
LAB_TARGET_SECONDS = 10.0


def time_notebook(path: Path) -> tuple[float, bool]:
    """Seconds `pytest --nbval` takes on one notebook, and whether it passed."""
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", str(path)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return time.perf_counter() - started, result.returncode == 0


def main(argv: list[str]) -> int:
    write = "--write" in argv
    names = [name for name in argv if name != "--write"]
    paths = [Path(name) for name in names] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    if write:  # the course map needs every notebook and every lab's solution
        paths = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("lab*.ipynb"))
    print(f"{'notebook':45} {'seconds':>8}  result")
    slow = failed = 0
    seconds_of: dict[str, float] = {}
    for path in paths:
        seconds, passed = time_notebook(path)
        target = LAB_TARGET_SECONDS if path.parent.name == "solutions" else TARGET_SECONDS
        slow += seconds > target
        failed += not passed
        seconds_of[path.name] = round(seconds, 1)
        flag = "passed" if passed else "FAILED"
        over = f"  (over the {target:g} s target)" if seconds > target else ""
        print(f"{path.name:45} {seconds:8.1f}  {flag}{over}")
    print(f"{len(paths)} notebook(s), {slow} over target, {failed} failed")
    if write:
        lines = {p.name: course_map.solution_lines(p) for p in sorted((ROOT / "solutions").glob("lab*.ipynb"))}
        measured = f"{dt.date.today():%d %B %Y}, {os.cpu_count()} CPUs, under nbval, kernel start included"
        facts = {"measured": measured, "seconds": seconds_of, "solution_lines": lines}
        course_map.TIMES.write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")
        print(f"wrote {course_map.TIMES.relative_to(ROOT)}")
    return 1 if slow or failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
