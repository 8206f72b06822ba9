"""The checker's process for one notebook, forked from a process that has already imported what it needs.

Each notebook graded starts the checker (`nbrun`), the process that runs the hidden checks. Started as `python -m
mercadofresco.course.checker`, it spent about a CPU-second importing moto, boto3, hypothesis and the checker's
own modules before doing anything: for a class of a hundred, close to two minutes of one core. Here it comes
from Python's own fork server (`multiprocessing`'s "forkserver" start method): one plain process, started once
per grader, imports those modules (PRELOAD) and forks a copy for each learner, which sets itself up as the
command would have been started (its own session, working folder, environment, standard streams, the two pipes
it is handed, its `sys.argv`) and then runs the same `main`.

Only the grader's code runs in it. Nothing of pytest or nbval is preloaded (the checks run where neither is
loaded: `tests/labs/test_grading_holes.py`), and the runner that starts the learner's kernel is still a
`python -m pytest` of its own. The fork server starts with the grader's environment, but nothing in PRELOAD
reads it at import, and each copy replaces it with its own before running anything.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from multiprocessing import reduction
from pathlib import Path

from mercadofresco.course import protocol

PRELOAD = (
    "boto3",
    "moto",
    "hypothesis",
    "mercadofresco.course.checker.process",
    "mercadofresco.course.checker.lab",
)
_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(list(PRELOAD))


class Checker:
    """The forked checker, seen as the grader's loop sees a `subprocess.Popen`: pid, poll, wait, returncode."""

    def __init__(self, process: multiprocessing.process.BaseProcess) -> None:
        self._process = process
        self.pid = process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        return self._process.exitcode

    def wait(self, timeout: float | None = None) -> int | None:
        self._process.join(timeout)
        return self._process.exitcode


def checker(private: Path, env: dict, fds: tuple[int, int], log: Path) -> Checker:
    """The checker for one notebook: in folder `private`, with environment `env`, holding `fds`, stderr to `log`."""
    handed = [reduction.DupFd(fd) for fd in fds]  # sent to the copy through the fork server's socket
    process = _CONTEXT.Process(target=_become_the_checker, args=(str(private), env, handed, str(log)))
    process.start()
    return Checker(process)


def cpu_seconds() -> float:
    """CPU-seconds of the fork server and of every copy it forked that has ended (0 before it starts): theirs is
    not the grader's own children's time (`resource.RUSAGE_CHILDREN` misses it)."""
    from multiprocessing import forkserver

    pid = forkserver._forkserver._forkserver_pid  # the standard library keeps its one server here
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime


def _become_the_checker(private: str, env: dict, handed: list, log: str) -> None:
    set_up(private, env, handed, log)
    from mercadofresco.course.checker import process

    sys.argv = [str(Path(process.__file__).with_name("__main__.py"))]
    sys.exit(process.main())


def set_up(private: str, env: dict, handed: list, log: str) -> None:
    """In a copy: what `subprocess.Popen(..., cwd=private, env=env, start_new_session=True)` would have set, the
    handed pipes named in the environment as `protocol.HANDOVER_ENV`."""
    os.setsid()
    os.chdir(private)
    fds = [each.detach() for each in handed]
    os.environ.clear()
    os.environ.update(env, **{protocol.HANDOVER_ENV: ",".join(str(fd) for fd in fds)})
    null = os.open(os.devnull, os.O_RDWR)
    errors = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    for target, source in ((0, null), (1, null), (2, errors)):
        os.dup2(source, target)
