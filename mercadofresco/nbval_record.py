"""A pytest plugin for the grader: write each nbval cell's outcome to a JSON-lines file.

Loaded by `grading` as `-p mercadofresco.nbval_record` in the pytest process
that runs one learner's notebook; the file is named by MERCADOFRESCO_GRADING_RECORD.
Each line: the cell number, passed/failed, a one-line reason, and the cell's
stdout (where a hidden check prints its proof of having finished).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

RECORD_ENV = "MERCADOFRESCO_GRADING_RECORD"


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
