"""A pytest plugin for the grader: write each nbval cell's outcome to a JSON-lines file.

Loaded by `grading` as `-p mercadofresco.nbval_record` in the pytest process
that runs one learner's notebook; the file is named by MERCADOFRESCO_GRADING_RECORD.
Each line: the cell number, passed/failed, a one-line reason, and the cell's
stdout (where a hidden check prints its proof of having finished). A learner
cell cut off by the time limit, out of memory, or a dead kernel stops the run:
the checks after it are never run, so they can never pass.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

RECORD_ENV = "MERCADOFRESCO_GRADING_RECORD"
LEARNER_CELLS_ENV = "MERCADOFRESCO_GRADING_LEARNER_CELLS"
# A learner cell that failed like this leaves a kernel nobody should trust: grading of the notebook stops.
STOPPING_REASONS = ("Timeout of", "Kernel dead", "MemoryError", "Failed to interrupt")


def stops_grading(reason: str) -> bool:
    """True if a cell that failed for `reason` means the kernel ran out of time or memory, or died."""
    return any(marker in reason for marker in STOPPING_REASONS)


def _reason(item: Any, call: pytest.CallInfo) -> str:
    """One line that says why the cell failed, without the cell's source."""
    if call.excinfo is None:
        return ""
    for output in getattr(item, "test_outputs", None) or []:
        if output.get("output_type") == "error":
            evalue = str(output.get("evalue", "")).strip().splitlines()
            detail = f"{output.get('ename', 'Error')}: {evalue[0] if evalue else ''}".rstrip(": ")
            if output.get("ename") == "KeyboardInterrupt":
                return f"{call.excinfo.value} (interrupted)"
            if output.get("ename") == "MemoryError":
                return "MemoryError: the cell ran out of memory (the grader's memory limit)"
            return detail
    message = str(call.excinfo.value).strip().splitlines()
    return message[0] if message else call.excinfo.typename


def _stdout(item: Any) -> str:
    return "".join(o.get("text", "") for o in getattr(item, "test_outputs", None) or [] if o.get("name") == "stdout")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Record the call phase of every notebook cell (and any setup failure)."""
    outcome = yield
    report = outcome.get_result()
    path = os.environ.get(RECORD_ENV)
    cell = getattr(item, "cell_num", None)
    if path is None or cell is None or (report.when != "call" and report.passed):
        return
    row = {"cell": cell, "outcome": report.outcome, "reason": _reason(item, call), "stdout": _stdout(item)}
    with open(path, "a", encoding="utf-8") as record:
        record.write(json.dumps(row) + "\n")
    learner_cells = int(os.environ.get(LEARNER_CELLS_ENV, "0"))
    if report.failed and cell < learner_cells and stops_grading(row["reason"]):
        item.session.shouldstop = f"learner cell {cell} was cut off: {row['reason']}"
