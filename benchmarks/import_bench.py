"""Print how long `import mercadofresco.patterns.idempotency` takes in a fresh interpreter.

    python benchmarks/import_bench.py               # the idempotency pattern, 7 fresh interpreters
    python benchmarks/import_bench.py mercadofresco.patterns.outbox --runs 5

A pattern a team copies should cost little to import: it takes the lesson's names from
`mercadofresco.names` (which imports nothing) and its clock only as a type hint. Before that split
the idempotency pattern imported `world`, and with it moto and boto3: 0.34 s on a 2-core laptop.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"


def import_seconds(module: str) -> float:
    """Seconds one fresh interpreter spends importing `module` (its own start not counted)."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("module", nargs="?", default="mercadofresco.patterns.idempotency")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    import_seconds(args.module)  # a first run warms the file cache and writes the .pyc files
    times = [import_seconds(args.module) for _ in range(args.runs)]
    print(f"import {args.module}: median {statistics.median(times):.3f} s over {args.runs} fresh interpreters")
    print("  " + ", ".join(f"{t:.3f}" for t in times))


if __name__ == "__main__":
    main()
