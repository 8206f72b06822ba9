"""How an SQS event source mapping adds concurrent invocations: one scaler for every simulation (notebooks 11, 14, 18).

AWS documents it for standard mode: when messages are available, Lambda reads them with 5
concurrent batches; while messages are still available it adds up to 300 a minute, and it runs
at most 1,000 at once. Provisioned mode scales faster and further. `Scaling` holds those three
numbers, `MODES` the two modes, and `scale` is the simpy process that applies them, run by
`sims.connections` (Lambda against the database, notebook 14) and `sims.mass_redrive` (class
210's redrive, notebooks 11 and 18). What an invocation does, and when it ends, is each model's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import simpy

from mercadofresco.errors import check_range

TICK_SECONDS = 1.0  # the scaler looks once a second


@dataclass(frozen=True)
class Scaling:
    """How an SQS event source mapping adds concurrent invocations while messages wait."""

    start: int  # concurrent batches when messages appear
    per_minute: int  # added each minute while messages are still waiting
    ceiling: int  # the most batches the mapping runs at once

    def concurrency_after(self, seconds: float, limit: int | None = None) -> int:
        """Concurrent invocations `seconds` into a backlog that never empties."""
        top = self.ceiling if limit is None else min(self.ceiling, limit)
        return min(top, self.start + int(self.per_minute * seconds / 60))

    def seconds_to_reach(self, concurrency: int) -> float | None:
        """Seconds until `concurrency` runs at once; None if the ceiling is below it."""
        if concurrency > self.ceiling:
            return None
        return max(0.0, (concurrency - self.start) * 60 / self.per_minute)


# https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html: standard mode starts
# with 5 batches, adds up to 300 a minute, runs at most 1,000 at once; provisioned mode scales up
# to 1,000 a minute and up to 20,000 (AWS News Blog, provisioned mode for SQS, 2025), starting
# from its minimum pollers (2 by default, up to 10 invocations each).
MODES = {
    "standard": Scaling(start=5, per_minute=300, ceiling=1_000),
    "provisioned": Scaling(start=20, per_minute=1_000, ceiling=20_000),
}


def per_minute_needed(concurrency: int, seconds: float, start: int = 5) -> float:
    """The scaling rate a mapping would need to reach `concurrency` in `seconds` from `start`."""
    check_range("seconds", seconds, 1, 86_400)
    return (concurrency - start) * 60 / seconds


def scale(
    env: simpy.Environment,
    scaling: Scaling,
    limit: int,
    waiting: Callable[[], bool],
    running: Callable[[], int],
    start_one: Callable[[], None],
):
    """The mapping's scaler: `start` invocations, then `per_minute` more a minute while messages wait.

    Never more than `limit` (the mapping's MaximumConcurrency, or the function's) nor the mode's
    ceiling run at once: `running()` says how many do now (a model whose invocations end frees
    room for new ones). While nothing waits it adds nothing and saves nothing up: when messages
    come back it starts again from what a second of scaling allows.
    """
    top = min(scaling.ceiling, limit)
    budget = float(scaling.start)
    while True:
        while budget >= 1 and running() < top and waiting():
            start_one()
            budget -= 1
        yield env.timeout(TICK_SECONDS)
        budget = min(budget + scaling.per_minute / 60, scaling.per_minute) if waiting() else 0.0
