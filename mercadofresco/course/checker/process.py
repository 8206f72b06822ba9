"""The checker as a process of its own: it waits for the learner's kernel, serves it, runs the hidden checks.

    python -m mercadofresco.course.checker      (the runner, `run.nbrun`, starts it beside pytest)

The runner starts it with the grader's plan (`protocol.PLAN_ENV`) and two pipes (`protocol.HANDOVER_ENV`). It
waits, doing nothing, until nbval has run the learner's cells and the grader's plugin hands it the kernel (a
`protocol.Handover` on the first pipe); then, as the grader's user, it loads the lab's checks, builds its own
world (moto, lab 3's database), listens on a socket in the learner's working copy and asks the plugin to run
the serve cell (`protocol.ServeCell`), which connects the kernel to it; it runs every check against its own
world and appends their rows to the record. Closing the second pipe (exiting) tells the plugin it may shut the
kernel down.

The serve cell goes through nbval's client, connected before any learner code ran: a client the checker made
now would follow the paths of the kernel's sockets, which are in the learner's working copy and the learner's to
replace (with a link to a classmate's checker, a hostile session found). The checker itself opens nothing of
the learner's but its own socket, whose peer it checks (`connection.accept_kernel`); it interrupts the kernel
as jupyter_client does (SIGINT to its process group).
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


class Kernel:
    """The learner's kernel as the checker sees it: its process, whether its serve cell has ended, an interrupt."""

    def __init__(self, handover: protocol.Handover, pipe: protocol.Pipe) -> None:
        self.pid, self.pgid, self.pipe, self.serve_cell_over = handover.pid, handover.pgid, pipe, False

    def alive(self) -> bool:
        """False once the kernel's process has exited (a zombie its parent, pytest, has not reaped runs nothing)."""
        try:
            state = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state not in ("Z", "X")

    def serve_cell_ended(self) -> bool:
        """True once the plugin has seen the kernel answer the serve cell (run, emptied or aborted), or it died."""
        if not self.serve_cell_over:
            line = self.pipe.line(timeout=0)
            self.serve_cell_over = line == protocol.SERVE_CELL_ENDED or self.pipe.closed
        return self.serve_cell_over or not self.alive()

    def interrupt(self) -> None:
        """SIGINT to the kernel's process group, as jupyter_client's KernelManager.interrupt_kernel sends it."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, signal.SIGINT)


def _tell_the_watch(plan: protocol.Plan, lab: checks_lab.Lab) -> None:
    """Where the grader's watch (`nbrun`) finds what the checker holds for this learner: the lab's database."""
    database = lab.database.db if lab.database is not None else None
    if database is None or database.server_pid() is None or not plan.checker:
        return
    held = {"pids": [database.server_pid()], "folders": [str(database.directory)]}
    Path(plan.checker).write_text(json.dumps(held))


def check(plan: protocol.Plan, handover: protocol.Handover, pipe: protocol.Pipe, plugin_fd: int) -> list[protocol.Row]:
    """Every hidden check of the plan's lab, against this process's own world and the kernel handed over."""
    module = checks_lab.load_checks(Path(plan.checks))
    wanted = [c for c in module.CHECKS if not plan.only or c.check in plan.only]
    if handover.stopped:
        return []  # a learner cell stopped the run: the report says which (grading.score)
    kernel = Kernel(handover, pipe)
    if handover.gone or not kernel.alive():
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
        with contextlib.suppress(BrokenPipeError):  # the plugin is gone: the kernel never connects, and we say so
            os.write(plugin_fd, protocol.ServeCell(serve_source(path)).dumps().encode())
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
    if lab.wire is not None and lab.wire.out_of_turn:
        rows.append(protocol.NoteRow(f"the kernel sent {lab.wire.out_of_turn} message(s) out of turn (dropped)"))
    return rows


def main(environ: Any = os.environ) -> int:
    """Wait for the handover, run the checks, append their rows to the record; exit to tell the plugin."""
    plan = protocol.Plan.loads(Path(environ[protocol.PLAN_ENV]).read_text())
    read_fd, write_fd = (int(fd) for fd in environ[protocol.HANDOVER_ENV].split(","))
    try:
        pipe = protocol.Pipe(read_fd)
        line = pipe.line(timeout=None)
        if line is None:
            return 0  # pytest ended before the last cell: nothing to check, the runner reports why
        rows = check(plan, protocol.Handover.loads(line), pipe, write_fd)
        with open(plan.record, "a", encoding="utf-8") as record:
            record.write(protocol.write_rows(rows))
    finally:
        os.close(write_fd)  # the plugin's read ends: it may shut the kernel down
    return 0


if __name__ == "__main__":
    sys.exit(main())
