"""JupyterLab started the way `make start` (or `make start-es`) starts it, and a headless Chromium page that drives it
like a learner.

The server gets its own port on 127.0.0.1, a random token, and Jupyter, IPython, matplotlib and home
directories of its own, so a run leaves nothing behind and reads nothing from the machine's user.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
# axe-core from npm, as .ci/run installs it (`npm install --prefix .cache/axe axe-core@…`): the accessibility pass.
AXE = ROOT / ".cache" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
ISOLATED = {  # environment variable -> folder under the run's own directory
    "HOME": "home",
    "JUPYTER_CONFIG_DIR": "jupyter/config",
    "JUPYTER_DATA_DIR": "jupyter/data",
    "JUPYTER_RUNTIME_DIR": "jupyter/runtime",
    "IPYTHONDIR": "ipython",
    "MPLCONFIGDIR": "matplotlib",
    "XDG_CACHE_HOME": "xdg/cache",
    "XDG_CONFIG_HOME": "xdg/config",
    "XDG_RUNTIME_DIR": "xdg/runtime",
}
WIDGETS_EXTENSION = "@jupyter-widgets/jupyterlab-manager"


def make_start_arguments(target: str = "start") -> list[str]:
    """The arguments `make <target>` gives `jupyter lab` (`start`, or `start-es` for the Spanish edition), read from
    the Makefile itself: the target's recipe `$(VARIABLE) notebook` and that variable's `jupyter lab` arguments."""
    makefile = (ROOT / "Makefile").read_text().replace("\\\n", " ")  # a variable continued on the next line
    start = re.search(rf"^{re.escape(target)}: .*\n\t\$\((\w+)\) (.+)$", makefile, re.MULTILINE)
    lab = start and re.search(rf"^{start.group(1)} := \$\(BIN\)/jupyter lab (.+)$", makefile, re.MULTILINE)
    if not lab:
        raise AssertionError(f"the Makefile no longer has `{target}:` running a `… := $(BIN)/jupyter lab …` variable")
    line = lab.group(1).replace("$(CURDIR)", str(ROOT))
    line = line.replace("$(ALLOW_ROOT)", "--allow-root" if os.geteuid() == 0 else "")
    return [*line.split(), *start.group(2).split()]


@dataclass
class LabServer:
    """A running `jupyter lab`: its URL, token and private directories."""

    home: Path
    port: int = 0
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    process: subprocess.Popen | None = None
    target: str = "start"  # the Makefile target it is started as: `start`, or `start-es` (JupyterLab in Spanish)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def environment(self) -> dict[str, str]:
        # Not MERCADOFRESCO_WHOLE_RUN either (the tests' conftest sets it): a lab's selfcheck cell must work here.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "JPY_", "MERCADOFRESCO_WHOLE"))}
        for name, sub in ISOLATED.items():
            path = self.home / sub
            path.mkdir(parents=True, exist_ok=True)
            env[name] = str(path)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))
        env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
        return env

    def disable_widgets(self) -> None:
        """`jupyter labextension disable` the widget manager, in this server's own config directory."""
        subprocess.run(
            [sys.executable, "-m", "jupyter", "labextension", "disable", "--level=user", WIDGETS_EXTENSION],
            env=self.environment(),
            check=True,
            capture_output=True,
        )

    def start(self, timeout: float = 90) -> LabServer:
        self.port = free_port()
        # The suite clears and reruns the repository's own notebooks: JupyterLab must never save them back (its
        # autosave runs every 120 s). A test that saves on purpose works on a copy of its own (test_learner_loop).
        settings = self.home / ISOLATED["JUPYTER_CONFIG_DIR"] / "lab/user-settings/@jupyterlab/docmanager-extension"
        settings.mkdir(parents=True, exist_ok=True)
        (settings / "plugin.jupyterlab-settings").write_text('{"autosave": false}')
        log = open(self.home / "server.log", "w")  # noqa: SIM115 (closed with the process)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyter",
                "lab",
                *make_start_arguments(self.target),
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={self.port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={self.token}",
                "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: the driver opens notebooks in one page
            ],
            cwd=ROOT,
            env=self.environment(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited: {(self.home / 'server.log').read_text()[-2000:]}")
            try:
                urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2)
                return self
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"jupyter lab did not answer in {timeout} s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def chromium_missing() -> str | None:
    """Why the browser suite cannot run here, or None."""
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        return "Debian's chromium is not installed (apt-get install chromium)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install -e '.[dev]')"
    return None


def axe_missing() -> str | None:
    """Why the accessibility pass cannot run here, or None."""
    if not AXE.is_file():
        return f"axe-core is not installed ({AXE.relative_to(ROOT)}; .ci/run installs it with npm)"
    return None
