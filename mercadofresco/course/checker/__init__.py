"""The trusted side: the world a lab's checks own, and the wire to the learner's kernel.

A process of the grader's own (`python -m mercadofresco.course.checker`, `process`): the runner starts it beside
pytest, and it checks the learner's kernel once nbval has run its cells. A lab's hidden checks
(`solutions/checks/labN.py`) import their names from here:

    from mercadofresco.course.checker import Callback, Check, Failed, ProcessDied, RemoteError

`lab` holds the `Lab` the checks use: the learner's names, the checker's own world, and the server of the
kernel's calls; `run_checks` runs a lab's checks against it. `codec` decides what crosses the wire and how,
`aws_requests` what the kernel's AWS requests become before moto reads them, `connection` how the kernel
connects, `boundary` the wire itself (JSON lines over one Unix socket), `learner_side` what the learner's kernel
runs at its end of it, `lab_database` lab 3's PostgreSQL as the checker owns it, and `folder` where the checker
keeps its sockets in a working copy.
"""

from mercadofresco.course.checker.boundary import BoundaryError, RemoteError
from mercadofresco.course.checker.codec import Callback
from mercadofresco.course.checker.connection import SERVE_CELL_ENDED, listen, serve_source
from mercadofresco.course.checker.lab import (
    ARGUMENTS_DIFFER,
    AWS_MB,
    CHECK_TIMEOUTS,
    GRACE_CALLS,
    Check,
    Failed,
    Lab,
    ProcessDied,
    load_checks,
    run_checks,
    world_of_the_checker,
)

__all__ = [
    "ARGUMENTS_DIFFER",
    "AWS_MB",
    "CHECK_TIMEOUTS",
    "GRACE_CALLS",
    "SERVE_CELL_ENDED",
    "BoundaryError",
    "Callback",
    "Check",
    "Failed",
    "Lab",
    "ProcessDied",
    "RemoteError",
    "listen",
    "load_checks",
    "run_checks",
    "serve_source",
    "world_of_the_checker",
]
