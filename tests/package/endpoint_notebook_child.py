"""Run one notebook against an external endpoint and judge it: the same text outputs, or a clear refusal.

Usage: python -m tests.package.endpoint_notebook_child NOTEBOOK (from the repository). The environment carries
MERCADOFRESCO_MODE, MERCADOFRESCO_ENDPOINT_URL and MERCADOFRESCO_REAL_TIME_BUDGET_SECONDS. Prints one JSON line:
{"notebook", "verdict": "same" | "refused" | "different" | "error", "cell", "detail", "seconds"}.
Text outputs are stdout streams, results and displays as text/plain, with the nbval sanitizers applied;
stderr is where the real-time mode speaks (its notice, its progress), so it is not compared.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from tools.nbtools import nbval_sanitizers

SANITIZE = nbval_sanitizers()  # tests/nbval_sanitize.cfg, as strict nbval applies it


def texts(outputs: list) -> list[str]:
    """The outputs strict nbval compares, as sanitized text (stderr and images left out)."""
    found = []
    for output in outputs:
        if output.get("output_type") == "stream" and output.get("name") == "stdout":
            found.append(output["text"])
        elif output.get("output_type") in ("execute_result", "display_data"):
            data = output.get("data", {})
            if "text/plain" in data and not any(key.startswith("image/") for key in data):
                found.append(data["text/plain"])
    joined = "".join(found)
    for pattern, replacement in SANITIZE:
        joined = pattern.sub(replacement, joined)
    return [joined]


def judge(path: Path) -> dict:
    committed = nbformat.read(path, as_version=4)
    running = nbformat.read(path, as_version=4)
    for cell in running.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    started = time.perf_counter()
    client = NotebookClient(
        running, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    failure = None
    try:
        client.execute()
    except CellExecutionError as exc:
        failure = exc
    verdict = {"notebook": path.name, "seconds": round(time.perf_counter() - started, 1), "cell": None, "detail": ""}
    for index, (before, after) in enumerate(zip(committed.cells, running.cells, strict=True)):
        if before.cell_type != "code":
            continue
        errors = [o for o in after.outputs if o.get("output_type") == "error"]
        if errors:
            error = errors[0]
            refused = error["ename"] == "RealTimeRefusedError"
            detail = error["evalue"]
            return verdict | {"verdict": "refused" if refused else "error", "cell": index, "detail": detail}
        if "nbval-ignore-output" in before.get("metadata", {}).get("tags", []):
            continue
        if texts(before.outputs) != texts(after.outputs):
            detail = {"committed": texts(before.outputs)[0][:600], "got": texts(after.outputs)[0][:600]}
            return verdict | {"verdict": "different", "cell": index, "detail": detail}
    if failure is not None:
        return verdict | {"verdict": "error", "detail": str(failure)[-600:]}
    return verdict | {"verdict": "same"}


if __name__ == "__main__":
    print(json.dumps(judge(Path(sys.argv[1]))))
