"""The checker as a process of its own: it waits for the learner's kernel, serves it, runs the hidden checks.

    python -m mercadofresco.course.checker      (the runner, `run.nbrun`, starts it beside pytest)

The runner starts it with the grader's plan (`protocol.PLAN_ENV`) and two pipes (`protocol.HANDOVER_ENV`). It
waits, doing nothing, until nbval has run the learner's cells and the grader's plugin hands it the kernel (a
`protocol.Handover` on the first pipe); then, as the grader's user, it loads the lab's checks, builds its own
world (moto, lab 3's database), connects a kernel client of its own, sends the serve cell
(`connection.serve_source`), runs every check against that world and appends their rows to the record. Closing
the second pipe (exiting) tells the plugin it may shut the kernel down.

Nothing here depends on nbval: the kernel is reached as any Jupyter client reaches one (its connection file),
and interrupted as jupyter_client interrupts one (SIGINT to its process group).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from mercadofresco.course import protocol
from mercadofresco.course.checker import lab as checks_lab
from mercadofresco.course.checker.boundary import BoundaryError
from mercadofresco.course.checker.connection import listen, serve_source

KERNEL_DIED_BEFORE = "the kernel had died before the checks"


def read_handover(fd: int) -> protocol.Handover | None:
    """The plugin's handover from pipe `fd`; None if the plugin ended without one (a run stopped or killed)."""
    with os.fdopen(fd, "rb") as pipe:
        line = pipe.readline(64 * 1024)
    return protocol.Handover.loads(line.decode()) if line.strip() else None


class Kernel:
    """The learner's kernel as the checker reaches it: a client of its own, and its process group to interrupt."""

    def __init__(self, handover: protocol.Handover) -> None:
        from jupyter_client import BlockingKernelClient

        self.pid, self.pgid = handover.pid, handover.pgid
        self.client = BlockingKernelClient(connection_file=handover.connection_file)
        self.client.load_connection_file()
        self.client.start_channels(iopub=False, stdin=False, hb=False, control=False)  # nbval's client reads iopub
        self.serve_id = ""

    def alive(self) -> bool:
        """False once the kernel's process has exited (a zombie its parent, pytest, has not reaped runs nothing)."""
        try:
            state = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state not in ("Z", "X")

    def serve(self, path: Path) -> None:
        """Send the serve cell: the kernel connects to the checker's socket at `path` and answers its calls."""
        self.serve_id = self.client.execute(serve_source(path), allow_stdin=False, store_history=False)

    def serve_cell_ended(self) -> bool:
        """True once the kernel has answered the serve cell (run, emptied or aborted) or died."""
        if not self.alive():
            return True
        with contextlib.suppress(Exception):  # queue.Empty: no reply yet
            while True:
                reply = self.client.get_shell_msg(timeout=0.01)
                if reply.get("parent_header", {}).get("msg_id") == self.serve_id:
                    return True
        return False

    def interrupt(self) -> None:
        """SIGINT to the kernel's process group, as jupyter_client's KernelManager.interrupt_kernel sends it."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, signal.SIGINT)

    def close(self) -> None:
        self.client.stop_channels()


def _tell_the_watch(plan: protocol.Plan, lab: checks_lab.Lab) -> None:
    """Where the grader's watch (`nbrun`) finds what the checker holds for this learner: the lab's database."""
    database = lab.database.db if lab.database is not None else None
    if database is None or database.server_pid() is None or not plan.checker:
        return
    held = {"pids": [database.server_pid()], "folders": [str(database.directory)]}
    Path(plan.checker).write_text(json.dumps(held))


def check(plan: protocol.Plan, handover: protocol.Handover) -> list[protocol.Row]:
    """Every hidden check of the plan's lab, against this process's own world and the kernel handed over."""
    module = checks_lab.load_checks(Path(plan.checks))
    wanted = [c for c in module.CHECKS if not plan.only or c.check in plan.only]
    if handover.stopped:
        return []  # a learner cell stopped the run: the report says which (grading.score)
    kernel = Kernel(handover) if not handover.gone else None
    if kernel is None or not kernel.alive():
        why = handover.gone or KERNEL_DIED_BEFORE
        return [protocol.CheckRow(c.check, False, f"not run: {why}") for c in wanted]
    services = tuple(getattr(module, "SERVICES", ("sqs", "dynamodb")))
    lab = checks_lab.Lab(services, Path(plan.workdir), plan.uid)
    lab.interrupt = kernel.interrupt
    listener, path = listen(Path(plan.workdir), plan.uid)
    rows: list[protocol.Row] = []
    try:
        module.setup(lab)
        _tell_the_watch(plan, lab)
        kernel.serve(path)
        with checks_lab.world_of_the_checker():
            try:
                lab.connect(listener, plan.uid, ended=kernel.serve_cell_ended)
            except BoundaryError as exc:
                return [protocol.CheckRow(c.check, False, f"not run: {exc}") for c in wanted]
            rows += checks_lab.run_checks(module, lab, plan.cell_timeout_seconds, plan.only)
            lab.hang_up()
    finally:
        listener.close()
        path.unlink(missing_ok=True)
        lab.close()
        kernel.close()
    if lab.wire is not None and lab.wire.out_of_turn:
        rows.append(protocol.NoteRow(f"the kernel sent {lab.wire.out_of_turn} message(s) out of turn (dropped)"))
    return rows


def main(environ: Any = os.environ) -> int:
    """Wait for the handover, run the checks, append their rows to the record; exit to tell the plugin."""
    plan = protocol.Plan.loads(Path(environ[protocol.PLAN_ENV]).read_text())
    read_fd, write_fd = (int(fd) for fd in environ[protocol.HANDOVER_ENV].split(","))
    try:
        handover = read_handover(read_fd)
        if handover is None:
            return 0  # pytest ended before the last cell: nothing to check, the runner reports why
        rows = check(plan, handover)
        with open(plan.record, "a", encoding="utf-8") as record:
            record.write(protocol.write_rows(rows))
    finally:
        os.close(write_fd)  # the plugin's read ends: it may shut the kernel down
    return 0


if __name__ == "__main__":
    sys.exit(main())
