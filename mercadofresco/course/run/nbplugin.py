"""The grader's pytest plugin: nbval runs the learner's cells; after the last, the kernel is handed to the checker.

Loaded into the grader's own `pytest --nbval-lax` process (`-p mercadofresco.course.run.nbplugin`),
never into the learner's kernel. It records nbval's outcome for each learner cell (one line of reason, never
the cell's source). After the last cell it writes a `protocol.Handover` (the kernel's process and process
group, or why there is no kernel to check) on the pipe to the checker, a process of its own (`python -m
mercadofresco.course.checker`, started by `nbrun`); when the checker listens it sends back the serve cell,
which this process runs with nbval's client (connected before any learner code ran, so the learner could not
point it elsewhere), telling the checker when the kernel has answered it; then it waits until the checker
closes its pipe: only then may nbval shut the kernel down. Nothing of the checks, their world or the wire
runs here.

The record (JSON lines) is written to a file in the grader's private folder, which the learner's user cannot
read or write.

Three of nbval's kernel functions are replaced (`pytest_configure`), each for a reason of the grader's and none
for the checks: its wait for a cell's reply also polls the kernel's life (a kernel that called `os._exit` is
reported at once, not after the cell's timeout); its read of the kernel's output keeps at most OUTPUT_CHARS of
a cell's (600 MB printed once took the grader's runner to 1.7 GB); and its kernel start uses Unix sockets when
the kernel has no network. An nbval upgrade that renames them fails `tests/labs/test_grading.py` loudly.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from queue import Empty
from typing import Any

import pytest

from mercadofresco.course import protocol
from mercadofresco.course.protocol import KERNEL_DIED, OUT_OF_MEMORY, learner_name, shown
from mercadofresco.course.run import watch

POLL_SECONDS = 0.2
STDOUT_KEPT = 4_000  # characters of a learner cell's stdout kept in the record
REASON_CHARS = 400  # a reason is one line (a public check's hint and the error that stopped it)
OUTPUT_CHARS = 2_000_000  # of one cell's output kept by the grader; the solutions print a few thousand
_NBVAL_GET_MESSAGE: Any = None  # nbval's own get_message, wrapped by _get_message


def _plan() -> protocol.Plan | None:
    path = os.environ.get(protocol.PLAN_ENV)
    return protocol.Plan.loads(Path(path).read_text()) if path else None


# -- nbval's kernel, as the grader wants it ---------------------------------------------
def _await_reply(self: Any, msg_id: str, timeout: float | None = None) -> None:
    """nbval's wait for the execute_reply, polling the kernel's life."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = POLL_SECONDS if deadline is None else min(POLL_SECONDS, deadline - time.monotonic())
        if left <= 0:
            raise Empty
        try:
            msg = self.get_message(stream="shell", timeout=left)
        except Empty:
            if not self.km.is_alive():
                raise RuntimeError(KERNEL_DIED) from None
            continue
        if msg["parent_header"].get("msg_id") == msg_id:
            if msg["content"]["status"] == "aborted":
                raise RuntimeError("Kernel aborted execution request")
            return


def _get_message(self: Any, stream: str, timeout: float | None = None) -> dict:
    """nbval's read of a kernel message, keeping at most OUTPUT_CHARS of a cell's output (the rest is dropped)."""
    msg = _NBVAL_GET_MESSAGE(self, stream, timeout)
    if stream != "iopub" or msg["msg_type"] not in ("stream", "display_data", "execute_result", "error"):
        return msg
    parent = msg["parent_header"].get("msg_id")
    kept = self.mf_output_chars.get(parent, 0)
    size = len(json.dumps(msg["content"]))
    self.mf_output_chars[parent] = kept + size
    if kept + size > OUTPUT_CHARS:  # 600 MB printed once took the grader's runner to 1.7 GB
        cut = "" if kept > OUTPUT_CHARS else f"[output cut by the grader after {OUTPUT_CHARS:,} characters]\n"
        if msg["msg_type"] == "stream":
            msg["content"]["text"] = cut
        elif msg["msg_type"] == "error":
            msg["content"].update(evalue=msg["content"].get("evalue", "")[:1000], traceback=[])
        else:
            msg["content"]["data"] = {"text/plain": cut}
    return msg


def _start_new_kernel(startup_timeout: float = 60, kernel_name: str = "python", **kwargs: Any) -> tuple:
    """nbval's kernel start, over unix sockets when the kernel has a network of its own (none)."""
    from jupyter_client.manager import KernelManager
    from nbval.kernel import NbvalKernelspecManager

    ipc = os.environ.get("MERCADOFRESCO_GRADING_IPC")
    transport = {"transport": "ipc", "ip": ipc} if ipc else {}
    km = KernelManager(kernel_name=kernel_name, kernel_spec_manager=NbvalKernelspecManager(), **transport)
    km.start_kernel(**kwargs)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=startup_timeout)
    except RuntimeError:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        raise
    return km, kc


def pytest_configure(config: pytest.Config) -> None:
    plan = _plan()
    if plan is None:
        return
    from nbval import kernel

    global _NBVAL_GET_MESSAGE
    _NBVAL_GET_MESSAGE = kernel.RunningKernel.get_message
    kernel.RunningKernel.mf_output_chars = {}
    kernel.RunningKernel.get_message = _get_message
    kernel.RunningKernel.await_reply = _await_reply
    kernel.start_new_kernel = _start_new_kernel
    config.mf_plan = plan  # type: ignore[attr-defined]


# -- the hooks ----------------------------------------------------------------------------
def _reason(item: Any, call: pytest.CallInfo) -> tuple[str, bool]:
    """One short line that says why the cell failed, without the cell's source, and whether the run stops there.

    The text of an exception is the learner's to choose: it is cut short, and control characters
    (a terminal's escape codes) are dropped (`protocol.shown`). Whether the run stops is the grader's to see,
    never that text's to say: memory the grader measured, or nbval's and the grader's own failure with no
    exception of the learner's (a kernel that died, wedged or could not be interrupted).
    """
    if call.excinfo is None:
        return "", False
    for output in getattr(item, "test_outputs", None) or []:
        if output.get("output_type") == "error":
            ename = learner_name(str(output.get("ename", "Error")))
            evalue = str(output.get("evalue", "")).strip().splitlines()
            first = evalue[0] if evalue else ""
            if ename == "KeyboardInterrupt":
                return shown(f"{str(call.excinfo.value).strip().splitlines()[0]} (interrupted)", REASON_CHARS), False
            if ename == "MemoryError" and _near_memory_limit(item):  # seen by the grader, not claimed by the cell
                return f"MemoryError: {OUT_OF_MEMORY}", True
            return f"{ename}: {shown(first, REASON_CHARS)}".rstrip(": "), False
    message = str(call.excinfo.value).strip().splitlines()
    own = message[0] if message else call.excinfo.typename  # nbval's or the grader's words: no learner exception
    return shown(own, REASON_CHARS), protocol.stops(own)


def _near_memory_limit(item: Any) -> bool:
    """True if the kernel's address space has reached 90 % of the grader's per-process limit."""
    limit_mb = item.config.mf_plan.memory_mb
    kernel = getattr(item.parent, "kernel", None)
    pid = getattr(getattr(getattr(kernel, "km", None), "provisioner", None), "pid", None)
    return bool(limit_mb and pid) and watch.peak_address_space_mb(pid) >= 0.9 * limit_mb


def _stdout(item: Any) -> str:
    return "".join(o.get("text", "") for o in getattr(item, "test_outputs", None) or [] if o.get("name") == "stdout")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Record the call phase of every cell (and any setup failure)."""
    outcome = yield
    report = outcome.get_result()
    plan = getattr(item.config, "mf_plan", None)
    cell = getattr(item, "cell_num", None)
    if plan is None or cell is None or (report.when != "call" and report.passed):
        return
    reason, stops = _reason(item, call)
    row = protocol.CellRow(cell, plan.role_of(cell), report.outcome, reason, _stdout(item)[:STDOUT_KEPT], stops)
    with open(plan.record, "a", encoding="utf-8") as record:
        record.write(protocol.write_rows([row]))
    if report.failed and stops:
        item.session.shouldstop = f"cell {cell}: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    """After the last cell: hand the kernel to the checker, run its serve cell, keep the kernel until it is done."""
    plan = getattr(item.config, "mf_plan", None)
    pipes = os.environ.get(protocol.HANDOVER_ENV)
    if plan is not None and pipes and nextitem is None and hasattr(item, "cell_num"):
        read_fd, write_fd = (int(fd) for fd in pipes.split(","))
        kernel = item.parent.kernel
        try:
            with contextlib.suppress(BrokenPipeError):  # the checker is gone: the runner says why
                os.write(write_fd, handover(kernel, stopped=bool(item.session.shouldstop)).dumps().encode())
                serve_for_the_checker(read_fd, write_fd, kernel)
        finally:
            os.close(write_fd)
            os.close(read_fd)
    yield


def handover(kernel: Any, stopped: bool) -> protocol.Handover:
    """What the checker needs of nbval's kernel: its process and process group, or why it is gone."""
    if stopped:
        return protocol.Handover(stopped=True)
    if kernel is None or not kernel.is_alive():
        return protocol.Handover(gone="the kernel had died before the checks")
    provisioner = kernel.km.provisioner
    return protocol.Handover(int(provisioner.pid), int(provisioner.pgid or provisioner.pid))


def serve_for_the_checker(read_fd: int, write_fd: int, kernel: Any) -> None:
    """Run the checker's serve cell when it asks, say when the kernel has answered it, wait until it is done.

    The learner's code runs for the checks and may print: nbval's client is subscribed to the kernel's output,
    so it is read here and dropped (`_get_message` caps it), never left to pile up in this process.
    """
    pipe, serve_id = protocol.Pipe(read_fd), None
    while not pipe.closed:  # closed: the checker is done
        line = pipe.line(timeout=POLL_SECONDS)
        if line and serve_id is None:
            serve_id = kernel.execute_cell_input(protocol.ServeCell.loads(line).source, allow_stdin=False)
        if serve_id and _answered(kernel, serve_id):
            os.write(write_fd, f"{protocol.SERVE_CELL_ENDED}\n".encode())
            serve_id = ""
        _drop_output(kernel)


def _answered(kernel: Any, msg_id: str) -> bool:
    """True once the kernel has answered the request `msg_id`, aborted it or died: the serve cell is over."""
    try:
        _await_reply(kernel, msg_id, timeout=0.01)
    except Empty:
        return False
    except RuntimeError:  # the kernel died, or aborted the request
        return True
    except Exception:  # a reply of the kernel's own making, not of the protocol's shape: not the answer
        return False
    return True


def _drop_output(kernel: Any) -> None:
    with contextlib.suppress(Exception):  # Empty, a dead kernel, or a message of the kernel's own making
        for _ in range(1_000):
            kernel.get_message(stream="iopub", timeout=0)
