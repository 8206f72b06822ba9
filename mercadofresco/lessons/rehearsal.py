"""Against a server that keeps real time, an experiment says up front how long it will take, or refuses.

In process the clock is virtual and nothing here runs. Against a moto server in
another process, LocalStack or AWS every wait is real (`realtime`), and an
experiment made of many short waits (a sweep of five latencies, three crashes in
a row) would otherwise be refused halfway, at the first wait that no longer fits
the notebook's budget. So before it runs for real, the experiment is rehearsed
here: the same function on a fresh moto world in this process and a virtual clock
at the same instant, which takes a moment. The virtual time the rehearsal moved
through is the real time the experiment needs; the clock refuses now, naming it,
if the budget cannot cover it (`VirtualClock.need`), or the experiment runs.

The rehearsal starts from an empty world, so an experiment that depends on what
earlier cells left behind may need a little more or less; the clock still refuses
any single wait that does not fit.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from mercadofresco import world
from mercadofresco.clock import VirtualClock
from mercadofresco.i18n import _
from mercadofresco.runtime.realtime import VIRTUAL

Experiment = TypeVar("Experiment", bound=Callable[..., Any])


def rehearsed(what: str) -> Callable[[Experiment], Experiment]:
    """Mark `experiment(aws, clock, ...)` so that, with a real pace, it declares its real time before it starts.

    `what` names the experiment in the clock's refusal: marked with `N_` where it is written, said in the learner's
    language when the experiment runs.
    """

    def mark(experiment: Experiment) -> Experiment:
        @functools.wraps(experiment)
        def run(aws: world.World, clock: VirtualClock, *args: Any, **kwargs: Any) -> Any:
            if clock.real_time:
                clock.need(virtual_span(experiment, clock, *args, **kwargs), _(what))
            return experiment(aws, clock, *args, **kwargs)

        return run  # type: ignore[return-value]

    return mark


def virtual_span(experiment: Callable[..., Any], clock: VirtualClock, *args: Any, **kwargs: Any) -> float:
    """Seconds of virtual time `experiment` moves through on a fresh world in this process, from `clock`'s instant."""
    with VirtualClock(start=clock.now(), pace=VIRTUAL) as rehearsal:
        aws = world.build(world.WorldConfig())
        try:
            experiment(aws, rehearsal, *args, **kwargs)
            return rehearsal.seconds_since_start()
        finally:
            aws.close()
