"""A command the tests start early and read late: it runs at nice 10 on the core the other tests leave idle.

tests/conftest.py starts every `STARTED_EARLY` of the session's test modules with the session's first test; a
test that needs the output waits for it, starting it itself if need be.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path


class Background:
    """One command, started once; its output and exit status once it has ended."""

    def __init__(self, *command: str, cwd: Path | None = None, timeout: float = 600) -> None:
        self.command, self.cwd, self.timeout = list(command), cwd, timeout
        self.process: subprocess.Popen | None = None
        self.log: Path | None = None

    def start(self, folder: Path | None = None) -> None:
        if self.process is None:
            self.log = Path(tempfile.mkstemp(prefix="mercadofresco-early-", suffix=".log")[1])
            with open(self.log, "w") as out:
                self.process = subprocess.Popen(
                    ["nice", "-n", "10", *self.command], cwd=self.cwd, stdout=out, stderr=subprocess.PIPE, text=True
                )

    def result(self) -> tuple[int, str, str]:
        """(exit status, stdout, stderr) of the command, started now if it was not yet."""
        self.start()
        try:
            _, stderr = self.process.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, stderr = self.process.communicate()
        return self.process.returncode, self.log.read_text(), stderr

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.communicate()
        if self.log is not None:
            self.log.unlink(missing_ok=True)
