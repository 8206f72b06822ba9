"""A command the tests start early and read late: it runs at nice 10 on the core the other tests leave idle.

tests/conftest.py starts every `STARTED_EARLY` of the session's test modules with the session's first test; a
test that needs the output waits for it, starting it itself if need be.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path


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

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for log in self.logs or ():
            log.unlink(missing_ok=True)
