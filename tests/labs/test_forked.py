"""The checker's process comes from a fork server (`course.run.forked`): each copy is set up as `subprocess.Popen`
would have started it, and its CPU is counted."""

from __future__ import annotations

import json
import os
import sys
import time
from multiprocessing import reduction

from mercadofresco.course import protocol
from mercadofresco.course.run import forked


def _probe(private: str, env: dict, handed: list, log: str) -> None:
    """A copy that reports what it was given, through the pipe it was handed, then burns a little CPU."""
    forked.set_up(private, env, handed, log)
    write_fd = int(os.environ[protocol.HANDOVER_ENV].split(",")[1])
    seen = {
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "own_session": os.getsid(0) == os.getpid(),
        "modules": sorted(name for name in sys.modules if name.split(".")[0] in ("pytest", "_pytest", "nbval")),
    }
    print("to the log", file=sys.stderr, flush=True)
    os.write(write_fd, json.dumps(seen).encode())
    os.close(write_fd)
    ended = time.process_time() + 0.3
    while time.process_time() < ended:
        pass


def test_a_copy_runs_where_and_with_what_it_was_given_and_its_cpu_is_counted(tmp_path):
    read_fd, write_fd = os.pipe()
    unused_read, unused_write = os.pipe()
    env = {"PATH": os.environ["PATH"], "ONLY_THIS": "1"}
    before = forked.cpu_seconds()
    handed = [reduction.DupFd(unused_read), reduction.DupFd(write_fd)]
    process = forked._CONTEXT.Process(target=_probe, args=(str(tmp_path), env, handed, str(tmp_path / "log")))
    process.start()
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        seen = json.loads(pipe.read())
    process.join(30)
    assert process.exitcode == 0
    assert seen["cwd"] == str(tmp_path) and seen["own_session"]
    assert set(seen["env"]) == {"PATH", "ONLY_THIS", protocol.HANDOVER_ENV}  # none of the grader's environment
    assert seen["modules"] == []  # the checks run where nothing of pytest or nbval is loaded
    assert (tmp_path / "log").read_text() == "to the log\n"
    assert forked.cpu_seconds() - before >= 0.25  # the copy's CPU, reaped by the fork server, is counted
    for fd in (unused_read, unused_write):
        os.close(fd)


def test_the_fork_server_preloads_nothing_that_runs_a_learners_cells():
    assert not [name for name in forked.PRELOAD if name.split(".")[0] in ("pytest", "nbval", "ipykernel", "IPython")]
