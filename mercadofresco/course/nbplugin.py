"""The grader's pytest plugin: nbval runs the cells, the grader records what it saw itself.

Loaded into the grader's own `pytest --nbval-lax` process (`-p mercadofresco.course.nbplugin`),
never into the learner's kernel. For each cell it records nbval's outcome and,
for the hidden cells, the grader's own verdict:

- the `execute_reply` the grader received on the shell channel (status `ok`),
- a proof that the check ran to its end: a secret drawn at the moment the cell
  is sent (`secrets.token_hex`), printed by the cell's last line and seen on
  its own stdout; code that ran earlier cannot know it,
- the guard cell (`course.guard`) sent just before: nothing tampered with,
- a kernel that is alive: the wait for a reply polls the kernel process, so a
  kernel that died (`os._exit`) is reported as dead at once, not after a timeout.

The record (JSON lines) is written to a file in the grader's private folder,
which the learner's user cannot read or write. Each line: the cell, its role
(learner/setup/check), nbval's outcome, one line of reason (never the cell's
source), the grader's verdict and what the guard found.

A little over one sitting (~330 lines): nbval's kernel as the grader wants it, the record, and the
hand-over to the checker are the one plugin pytest loads.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path
from queue import Empty
from typing import Any

import pytest

from mercadofresco.course import watch
from mercadofresco.course.reports import shown

PLAN_ENV = "MERCADOFRESCO_GRADING_PLAN"
POLL_SECONDS = 0.2
KERNEL_DIED = "Kernel died while running the cell (os._exit, a crash, or killed by the grader's limits)"
STDOUT_KEPT = 4_000  # characters of a learner cell's stdout kept in the record
REASON_CHARS = 400  # a reason is one line (a public check's hint and the error that stopped it)
OUTPUT_CHARS = 2_000_000  # of one cell's output kept by the grader; the solutions print a few thousand
_NBVAL_GET_MESSAGE: Any = None  # nbval's own get_message, wrapped by _get_message
LEARNER_TEXT_IN_CHECK = 120  # of the learner's own exception text, when a hidden check fails with it
# A cell that failed like this leaves a kernel nobody should trust: the run stops (grading.STOPPING_REASONS too).
OUT_OF_MEMORY = "the cell ran out of memory (the grader's memory limit)"
# nbval's and the grader's own words, never the learner's: an exception merely named MemoryError stops nothing.
STOPPING_REASONS = ("Timeout of", "Kernel dead", "Kernel died", "Failed to interrupt", OUT_OF_MEMORY)


def _stops(reason: str) -> bool:
    return any(marker in reason for marker in STOPPING_REASONS)


def _plan() -> dict | None:
    path = os.environ.get(PLAN_ENV)
    return json.loads(Path(path).read_text()) if path else None


# -- nbval's kernel, as the grader wants it ---------------------------------------------
def _await_reply(self: Any, msg_id: str, timeout: float | None = None) -> None:
    """nbval's wait for the execute_reply, polling the kernel's life and keeping the reply."""
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
            self.mf_replies[msg_id] = msg["content"]
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


def _execute_cell_input(self: Any, cell_input: str, allow_stdin: bool | None = None) -> str:
    msg_id = self.kc.execute(cell_input, store_history=False, allow_stdin=allow_stdin, stop_on_error=False)
    self.mf_last_msg_id = msg_id
    return msg_id


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
    kernel.RunningKernel.mf_replies = {}
    kernel.RunningKernel.mf_output_chars = {}
    kernel.RunningKernel.get_message = _get_message
    kernel.RunningKernel.await_reply = _await_reply
    kernel.RunningKernel.execute_cell_input = _execute_cell_input
    kernel.start_new_kernel = _start_new_kernel
    config.mf_plan = plan  # type: ignore[attr-defined]
    config.mf_state = {}  # type: ignore[attr-defined]


# -- a cell of the grader's own ------------------------------------------------------------
def run_quiet(kernel: Any, source: str, timeout: float) -> tuple[str | None, str]:
    """Run `source` in the kernel outside nbval's items; return the reply status and the stdout."""
    msg_id = kernel.execute_cell_input(source, allow_stdin=False)
    try:
        kernel.await_reply(msg_id, timeout=timeout)
    except (Empty, RuntimeError):
        return None, ""
    stdout = []
    while True:
        try:
            msg = kernel.get_message(stream="iopub", timeout=5)
        except Empty:
            return None, "".join(stdout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
            stdout.append(msg["content"]["text"])
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return kernel.mf_replies.get(msg_id, {}).get("status"), "".join(stdout)


def _guard(item: Any, timeout: float) -> list[str]:
    """Send a guard cell; what it found, or the reason it could not be trusted."""
    from mercadofresco.course import guard

    kernel = item.parent.kernel
    if kernel is None or not kernel.is_alive():
        return []  # nbval reports the dead kernel itself
    nonce = f"guard-{secrets.token_hex(12)}"
    status, stdout = run_quiet(kernel, guard.cell(nonce, item.config.mf_plan["reference"], True), timeout)
    found = guard.findings(stdout, nonce)
    if status != "ok" or found is None:
        return ["the grader's integrity check did not run as sent (a learner cell changed how cells run)"]
    return found


# -- the hooks ----------------------------------------------------------------------------
def _role(item: Any) -> dict:
    cells = item.config.mf_plan["cells"]
    number = getattr(item, "cell_num", -1)
    return cells[number] if 0 <= number < len(cells) else {"role": "unknown"}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Before a hidden cell: the guard; for a check, the proof appended at the moment of sending."""
    if not hasattr(item.config, "mf_plan") or not hasattr(item, "cell_num"):
        yield
        return
    role = _role(item)
    state: dict[str, Any] = {"guard": [], "proof": None}
    if role["role"] in ("setup", "check"):
        state["guard"] = _guard(item, item.config.option.nbval_cell_timeout)
    if role["role"] == "check":
        state["proof"] = f"proof-{secrets.token_hex(16)}"
        item.cell = type(item.cell)(item.cell)  # nbval's copy only; the file is never rewritten
        item.cell.source = item.cell.source + f"\nprint({state['proof']!r})"
    item.config.mf_state[item.cell_num] = state
    yield
    kernel = item.parent.kernel
    if kernel is not None:
        state["reply"] = kernel.mf_replies.get(getattr(kernel, "mf_last_msg_id", None), {}).get("status")


def _reason(item: Any, call: pytest.CallInfo) -> str:
    """One short line that says why the cell failed, without the cell's source.

    The text of an exception is the learner's to choose: it is cut short, and shorter still in a
    hidden check (whoever raised it), so it cannot carry much of the check's code out; control
    characters (a terminal's escape codes) are dropped (`reports.shown`).
    """
    if call.excinfo is None:
        return ""
    for output in getattr(item, "test_outputs", None) or []:
        if output.get("output_type") == "error":
            ename = shown(str(output.get("ename", "Error")), 60)
            evalue = str(output.get("evalue", "")).strip().splitlines()
            first = evalue[0] if evalue else ""
            if ename == "KeyboardInterrupt":
                return shown(f"{str(call.excinfo.value).strip().splitlines()[0]} (interrupted)", REASON_CHARS)
            if ename == "MemoryError" and _near_memory_limit(item):  # seen by the grader, not claimed by the cell
                return f"MemoryError: {OUT_OF_MEMORY}"
            limit = LEARNER_TEXT_IN_CHECK if _role(item)["role"] == "check" else REASON_CHARS
            return f"{ename}: {shown(first, limit)}".rstrip(": ")
    message = str(call.excinfo.value).strip().splitlines()
    return shown(message[0], REASON_CHARS) if message else call.excinfo.typename


def _near_memory_limit(item: Any) -> bool:
    """True if the kernel's address space has reached 90 % of the grader's per-process limit."""
    limit_mb = item.config.mf_plan.get("memory_mb")
    kernel = getattr(item.parent, "kernel", None)
    pid = getattr(getattr(getattr(kernel, "km", None), "provisioner", None), "pid", None)
    return bool(limit_mb and pid) and watch.peak_address_space_mb(pid) >= 0.9 * limit_mb


def _stdout(item: Any) -> str:
    return "".join(o.get("text", "") for o in getattr(item, "test_outputs", None) or [] if o.get("name") == "stdout")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Record the call phase of every cell (and any setup failure) with the grader's verdict."""
    outcome = yield
    report = outcome.get_result()
    plan = getattr(item.config, "mf_plan", None)
    cell = getattr(item, "cell_num", None)
    if plan is None or cell is None or (report.when != "call" and report.passed):
        return
    role = _role(item)
    state = item.config.mf_state.get(cell, {})
    stdout = _stdout(item)
    proof = state.get("proof")
    row = {
        "cell": cell,
        "role": role["role"],
        "check": role.get("check"),
        "outcome": report.outcome,
        "reason": _reason(item, call),
        "reply": state.get("reply"),
        "guard": state.get("guard", []),
    }
    if role["role"] == "check":
        seen = proof is not None and proof in stdout.splitlines()
        row["verdict"] = report.passed and row["reply"] == "ok" and seen and not row["guard"]
        row["proof_seen"] = seen
    else:
        row["stdout"] = stdout[:STDOUT_KEPT]
    with open(plan["record"], "a", encoding="utf-8") as record:
        record.write(json.dumps(row) + "\n")
    if report.failed and _stops(row["reason"]) and (role["role"] != "check" or "Kernel" in row["reason"]):
        item.session.shouldstop = f"cell {cell}: {row['reason']}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    """After the last cell: the lab's hidden checks in this process (`course.checker`), or one more guard."""
    plan = getattr(item.config, "mf_plan", None)
    if plan is not None and nextitem is None and hasattr(item, "cell_num"):
        if plan.get("checks"):
            rows = _run_checker(item, plan)
        else:
            found = _guard(item, item.config.option.nbval_cell_timeout)
            kernel = item.parent.kernel
            rows = [{"cell": "final", "guard": found, "alive": kernel is not None and kernel.is_alive()}]
        with open(plan["record"], "a", encoding="utf-8") as record:
            record.writelines(json.dumps(row) + "\n" for row in rows)
    yield


def _run_checker(item: Any, plan: dict) -> list[dict]:
    """Ask the kernel to serve, then run every hidden check here, against this process's own world."""
    from mercadofresco.course import checker

    module = checker.load_checks(Path(plan["checks"]))
    kernel = item.parent.kernel
    gone = "the kernel had died before the checks" if kernel is None or not kernel.is_alive() else ""
    if not gone and item.session.shouldstop:
        return []  # a learner cell stopped the run: the report says which (grading.score)
    if gone:
        return [
            {"role": "checker", "check": c.check, "verdict": False, "reason": f"not run: {gone}"} for c in module.CHECKS
        ]
    services = tuple(getattr(module, "SERVICES", ("sqs", "dynamodb")))
    lab = checker.Lab(services, Path(plan["workdir"]), plan.get("uid"))
    lab.interrupt = kernel.km.interrupt_kernel
    listener, path = checker.listen(Path(plan["workdir"]), plan.get("uid"))
    try:
        module.setup(lab)
        kernel.execute_cell_input(checker.serve_source(path), allow_stdin=False)
        with checker.world_of_the_checker():
            try:
                lab.connect(listener, plan.get("uid"))
            except checker.BoundaryError as exc:
                why = f"not run: {exc}"
                return [{"role": "checker", "check": c.check, "verdict": False, "reason": why} for c in module.CHECKS]
            rows = list(checker.run_checks(module, lab, item.config.option.nbval_cell_timeout))
            lab.hang_up()
    finally:
        listener.close()
        path.unlink(missing_ok=True)
        lab.close()
    if lab.wire is not None and lab.wire.out_of_turn:
        rows.append(
            {"role": "note", "note": f"the kernel sent {lab.wire.out_of_turn} message(s) out of turn (dropped)"}
        )
    return rows
