"""Print how long each lesson notebook takes under strict nbval, kernel start included.

    python benchmarks/notebook_times.py            # every notebook in notebooks/
    python benchmarks/notebook_times.py notebooks/01_delivery_guarantees.ipynb

The target is 6 s per notebook on a 2-core laptop: the script exits with status 1 when a
notebook fails or takes longer (so CI or a maintainer can act on it), 0 otherwise.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_SECONDS = 6.0


def time_notebook(path: Path) -> tuple[float, bool]:
    """Seconds `pytest --nbval` takes on one notebook, and whether it passed."""
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", str(path)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return time.perf_counter() - started, result.returncode == 0


def main(argv: list[str]) -> int:
    paths = [Path(name) for name in argv] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    print(f"{'notebook':45} {'seconds':>8}  result")
    slow = failed = 0
    for path in paths:
        seconds, passed = time_notebook(path)
        slow += seconds > TARGET_SECONDS
        failed += not passed
        flag = "passed" if passed else "FAILED"
        over = "  (over the 6 s target)" if seconds > TARGET_SECONDS else ""
        print(f"{path.name:45} {seconds:8.1f}  {flag}{over}")
    print(f"{len(paths)} notebook(s), {slow} over {TARGET_SECONDS:g} s, {failed} failed")
    return 1 if slow or failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
