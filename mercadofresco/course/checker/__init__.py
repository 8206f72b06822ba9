"""The trusted side: the world a lab's checks own, and the wire to the learner's kernel.

A lab's hidden checks (`solutions/checks/labN.py`) import their names from here:

    from mercadofresco.course.checker import Callback, Check, Failed, ProcessDied, RemoteError

`lab` holds the `Lab` the checks use and the server of the kernel's calls, `boundary` the wire (JSON lines
over one Unix socket), `learner_side` what the learner's kernel runs at its end of it, `lab_database` lab 3's
PostgreSQL as the checker owns it, and `folder` where the checker keeps its sockets in a working copy.
"""

from mercadofresco.course.checker.boundary import BoundaryError, RemoteError
from mercadofresco.course.checker.lab import (
    ARGUMENTS_DIFFER,
    AWS_MB,
    GRACE_CALLS,
    SERVE_CELL_ENDED,
    Callback,
    Check,
    Failed,
    Lab,
    ProcessDied,
    listen,
    load_checks,
    run_checks,
    serve_source,
    world_of_the_checker,
)

__all__ = [
    "ARGUMENTS_DIFFER",
    "AWS_MB",
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
