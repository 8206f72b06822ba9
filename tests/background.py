"""Work the tests start early and read late, on the core the other tests leave idle.

tests/conftest.py starts every `STARTED_EARLY` of the session's test modules with the session's first test: a
`Background` command at once, at nice 10; a `Later` fixture value once those commands and the browser suite have
ended. A test that needs the result waits for it, starting the work itself if need be.
"""

from __future__ import annotations

import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


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
