"""Time the retry simulations and compare the contention model with Brooker's published rerun.

    python benchmarks/retry_bench.py

A measurement, not a test. Targets: the contention model at 100 clients and 100
runs in <= 5 s, with full-jitter / exponential calls within 15 % of 0.43; one
retry-storm run in <= 1 s.
"""

from __future__ import annotations

import sys
import time

from mercadofresco.sims import contention, storm

BROOKER_RATIO = 0.43
TOLERANCE = 0.15


def main() -> int:
    started = time.perf_counter()
    rows = contention.contention_table(contention.brooker_backoffs(), clients=[100], runs=100)
    contention_seconds = time.perf_counter() - started
    print(f"{'strategy':14} {'calls':>8} {'time_ms':>9}")
    for row in rows:
        print(f"{row['strategy']:14} {row['calls']:8.1f} {row['time_ms']:9.1f}")
    calls = {row["strategy"]: row["calls"] for row in rows}
    ratio = calls["full"] / calls["exponential"]
    within = abs(ratio - BROOKER_RATIO) / BROOKER_RATIO <= TOLERANCE
    print(f"full jitter / exponential calls: {ratio:.3f} (Brooker ~{BROOKER_RATIO}; within 15 %: {within})")
    print(f"contention, 100 clients x 100 runs x {len(rows)} strategies: {contention_seconds:.2f} s (target 5 s)")

    started = time.perf_counter()
    run = storm.run_storm(storm.StormConfig(), storm.Defences(), seed=0)
    storm_seconds = time.perf_counter() - started
    print(f"one storm run (no defences): {storm_seconds:.2f} s (target 1 s); {run.summary()}")
    return 0 if within and contention_seconds <= 5 and storm_seconds <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
