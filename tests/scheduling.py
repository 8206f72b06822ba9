"""The session's use of the machine's two cores: the order of the tests, and the work started early and read late.

The one place the suite schedules CPU (tests/conftest.py only calls it). Most tests keep one core busy; the work a
test module names `STARTED_EARLY` (the strict nbval runs, the browser suite, the endpoint sweep, a lab's
grading) starts with the session's first test and takes the other: a `Background` command at once, at nice 10;
a `Later` fixture value once those commands and the browser suite have ended. A test that needs the result waits
for it, starting the work itself if need be. `order` puts the tests that keep both cores busy after the others.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest


class Background:
    """One command, started once; its exit status, stdout and stderr (each kept in a file) once it has ended."""

    def __init__(self, *command: str, cwd: Path | None = None, timeout: float = 600) -> None:
        self.command, self.cwd, self.timeout = list(command), cwd, timeout
        self.process: subprocess.Popen | None = None
        self.logs: tuple[Path, Path] | None = None

    def start(self, folder: Path | None = None) -> None:
        if self.process is None:
            self.logs = tuple(
                Path(tempfile.mkstemp(prefix="mercadofresco-early-", suffix=n)[1]) for n in (".out", ".err")
            )
            with open(self.logs[0], "w") as out, open(self.logs[1], "w") as err:
                self.process = subprocess.Popen(
                    ["nice", "-n", "10", *self.command], cwd=self.cwd, stdout=out, stderr=err
                )

    def result(self) -> tuple[int, str, str]:
        """(exit status, stdout, stderr) of the command, started now if it was not yet."""
        self.start()
        try:
            self.process.wait(self.timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        out, err = (log.read_text(errors="replace") for log in self.logs)
        return self.process.returncode, out, err

    def wait(self) -> None:
        if self.process is not None:
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for log in self.logs or ():
            log.unlink(missing_ok=True)


class InThread:
    """A value computed in a thread of this process, once; `result()` waits for it or re-raises what stopped it.

    `start(folder, after)` waits in the thread for each of `after` to end (their `wait()`) before computing.
    """

    def __init__(self, compute: Callable[[Path], Any], what: str) -> None:
        self.compute, self.what = compute, what
        self.thread: threading.Thread | None = None
        self.outcome: Any = None
        self.failed = False

    def start(self, folder: Path, after: Iterable = ()) -> None:
        if self.thread is None:
            waits = [early for early in after if early is not self]
            self.thread = threading.Thread(target=self._run, args=(folder, waits), name=self.what, daemon=True)
            self.thread.start()

    def _run(self, folder: Path, waits: list) -> None:
        try:
            for early in waits:
                early.wait()
            self.outcome = self.compute(folder)
        except BaseException as exc:  # handed to the test that reads the value
            self.outcome, self.failed = exc, True

    def result(self, folder: Path) -> Any:
        """The value, computed now in `folder` if it was not started early."""
        self.start(folder)
        self.thread.join()
        if self.failed:
            raise RuntimeError(f"{self.what} failed: {self.outcome!r}") from self.outcome
        return self.outcome

    def wait(self) -> None:
        if self.thread is not None:
            self.thread.join()

    def stop(self) -> None:
        """Nothing to stop: a session cut short while the thread computes leaves what the fixture itself would."""


class Later(InThread):
    """A module fixture's value, computed in a thread after the session's other early work (tests/conftest.py).

    After the browser suite and the strict nbval runs end (about a third into `make test`), the tests left keep
    one core busy for a while before the two-core modules come: a lab's grading, computed here meanwhile, takes
    the other core instead of adding its time to theirs. It runs at the tests' own priority (its checks time
    calls into a kernel; at nice 10 it would stall while the tests run), and only after the rest of the early
    work, which it would otherwise slow down.
    """

    def __init__(self, compute: Callable[[Path], Any]) -> None:
        super().__init__(compute, f"computing {compute.__name__} in the background")


# -- the session's order -----------------------------------------------------------------------------------------
# Modules whose tests grade at --jobs 2 or run servers side by side: they keep both cores busy. They run after the
# others, which mostly keep one core busy, so that the work started early has idle CPU from the start. Labs 2 and
# 3 are graded early too (a `Later` each): their tests come first of these, so that no other grading runs beside
# theirs (a test that looks for a grading user's leftover processes, a timed solution) once the others start.
GRADED_EARLY = ("test_lab2.py", "test_lab3.py")
BOTH_CORES = {
    "test_checker.py",
    "test_class_grading.py",
    "test_grading_holes.py",
    "test_hub.py",
    "test_lab1.py",
    "test_lab2.py",
    "test_lab3.py",
}
BROWSER = Path(__file__).resolve().parent / "browser"


def order(items: list[pytest.Item]) -> None:
    """The order of the session: the tests that keep one core busy, then those that keep two busy (labs 2 and 3
    first), then those that read the strict nbval runs, then the browser tests (their own pages compete with
    nothing), and last those that read the browser suite's reports of every notebook. The nbval runs and the
    browser suite's run (tests/browser/conftest.py) go in the background from the first test on, so they come late
    to be waited for.
    """

    def place(item: pytest.Item) -> int:
        if BROWSER in item.path.parents:
            return 5 if "reports" in getattr(item, "fixturenames", ()) else 4
        if item.path.name == "test_notebooks.py":
            return 3
        if item.path.name in BOTH_CORES:
            return 1 if item.path.name in GRADED_EARLY else 2
        return 0

    items.sort(key=place)  # stable: each group keeps pytest's order


# -- the work started early ----------------------------------------------------------------------------------------
_EARLY: list = []  # the STARTED_EARLY objects of this session's test modules
_STARTED: list[Path] = []  # the folder they were given, once they are started


def note_early(items: list[pytest.Item]) -> None:
    """Note the session's work that starts early: the browser suite's run, the strict nbval runs, the endpoint sweep."""
    found = {id(early): early for item in items if (early := getattr(item.module, "STARTED_EARLY", None))}
    _EARLY[:] = found.values()


def start_early() -> None:
    """Start that work with the session's first test, in the background: it takes the CPU the tests leave idle
    (most keep one core busy, not two), and its tests, which come later, read the results. The commands run at
    nice 10; the browser suite, a thread of this process, at the tests' own priority (its page waits time out);
    a `Later` fixture value (a lab's grading) once all of those have ended, in the one-core tests' last stretch.
    """
    if _EARLY and not _STARTED:
        _STARTED.append(Path(tempfile.mkdtemp(prefix="mercadofresco-early-")))
        first = [early for early in _EARLY if not isinstance(early, Later)]
        for early in first:
            early.start(_STARTED[0])
        later = [early for early in _EARLY if early not in first]
        for number, early in enumerate(later):  # one after the other: each keeps one or two cores busy alone
            early.start(_STARTED[0] / f"later-{number}", after=first + later[:number])


def stop_early() -> None:
    """A session that ends, or is cut short: nothing left running (the box's user removed), no folder left."""
    for early in _EARLY:
        early.stop()
    for folder in _STARTED:
        shutil.rmtree(folder, ignore_errors=True)
