"""Run one notebook under nbval in a kernel with limits, and record what each cell did.

The grader (`grading`) calls `run_notebook`: a `pytest --nbval-lax` process of
its own, with this module loaded as a pytest plugin (`-p mercadofresco.course.nbrun`)
that writes each cell's outcome to a JSON-lines file, and a kernel started
from a kernelspec generated under .cache/grading whose process limits its own
address space (`python -m mercadofresco.course.nbrun kernel --memory-mb N -f FILE`).
Each line of the record: the cell number, passed/failed, a one-line reason
(never the cell's source), and the cell's stdout. A learner cell cut off by the
time limit, out of memory, or a dead kernel stops the run: the cells after it
never run. A run that stops answering altogether is killed with its kernel.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import secrets
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]  # the repository: mercadofresco/course/ is two levels down
KERNEL_NAME = "mercadofresco-grading"
CACHE_DIR = ROOT / ".cache" / "grading"
STARTUP_SECONDS = 60  # kernel start plus imports, on a slow machine
KERNEL_PID_ENV = "MERCADOFRESCO_GRADING_KERNEL_PID"
RECORD_ENV = "MERCADOFRESCO_GRADING_RECORD"
LEARNER_CELLS_ENV = "MERCADOFRESCO_GRADING_LEARNER_CELLS"
LEGACY_ENV = "MERCADOFRESCO_GRADING_LEGACY_MODULES"  # old module names a learner notebook imports
# A learner cell that failed like this leaves a kernel nobody should trust: grading of the notebook stops.
STOPPING_REASONS = ("Timeout of", "Kernel dead", "MemoryError", "Failed to interrupt")


def stops_grading(reason: str) -> bool:
    """True if a cell that failed for `reason` means the kernel ran out of time or memory, or died."""
    return any(marker in reason for marker in STOPPING_REASONS)


@dataclass(frozen=True)
class Limits:
    """How long each cell may run and how much memory the kernel may take."""

    cell_timeout_seconds: float = 20.0
    memory_mb: int = 2048

    def __post_init__(self) -> None:
        if not 1 <= self.cell_timeout_seconds <= 3_600:
            raise ValueError(f"cell_timeout_seconds must be between 1 and 3600; got {self.cell_timeout_seconds}")
        if not 256 <= self.memory_mb <= 65_536:
            raise ValueError(f"memory_mb must be between 256 and 65536; got {self.memory_mb}")


# -- the pytest plugin ----------------------------------------------------------------------
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


# -- the kernel with a memory limit ----------------------------------------------------
def write_kernelspec(limits: Limits, cache_dir: Path = CACHE_DIR) -> Path:
    """A kernelspec whose kernel limits its own address space; returns the JUPYTER_PATH to use."""
    jupyter_path = cache_dir / "jupyter"
    spec_dir = jupyter_path / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "mercadofresco.course.nbrun", "kernel", "--memory-mb", str(limits.memory_mb)]
    spec = {"argv": [*argv, "-f", "{connection_file}"], "display_name": "MercadoFresco grading", "language": "python"}
    partial = spec_dir / f"kernel.json.{os.getpid()}.{secrets.token_hex(4)}"
    partial.write_text(json.dumps(spec, indent=1))
    partial.replace(spec_dir / "kernel.json")  # atomic: notebooks graded in parallel never read half a file
    return jupyter_path


def run_limited_kernel(memory_mb: int, connection_file: str) -> None:
    """Start an IPython kernel whose process cannot grow past `memory_mb` of address space.

    It writes its pid where the grader asked (KERNEL_PID_ENV), so a run that stops
    answering can be killed together with its kernel.
    """
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if os.environ.get(KERNEL_PID_ENV):
        Path(os.environ[KERNEL_PID_ENV]).write_text(str(os.getpid()))
    if os.environ.get(LEGACY_ENV):  # a lab handed out before the package had layers: old names still import
        from mercadofresco.course import legacy

        legacy.install(set(os.environ[LEGACY_ENV].split(",")))
    from ipykernel import kernelapp

    kernelapp.launch_new_instance(argv=["-f", connection_file])


def _environment(
    jupyter_path: Path, record: Path, learner_cells: int, cache_dir: Path, legacy_names: set[str]
) -> dict[str, str]:
    env = dict(os.environ)
    env[LEGACY_ENV] = ",".join(sorted(legacy_names))
    env.update({"JUPYTER_PATH": str(jupyter_path), RECORD_ENV: str(record), LEARNER_CELLS_ENV: str(learner_cells)})
    env.update({KERNEL_PID_ENV: str(record.with_suffix(".kernel-pid")), "PYDEVD_DISABLE_FILE_VALIDATION": "1"})
    for name, sub in [("MPLCONFIGDIR", "matplotlib"), ("IPYTHONDIR", "ipython"), ("XDG_CACHE_HOME", "xdg")]:
        (cache_dir / sub).mkdir(parents=True, exist_ok=True)
        env.setdefault(name, str(cache_dir / sub))
    return env


# -- running and reading the results ----------------------------------------------------
def run_notebook(
    path: Path, limits: Limits, learner_cells: int, cache_dir: Path = CACHE_DIR, legacy_names: set[str] = frozenset()
) -> tuple[list[dict], bool]:
    """Run one assembled notebook under nbval; return the recorded cells and whether the run was killed.

    `legacy_names`: old module names the learner's cells import (see `course.legacy`).
    """
    jupyter_path = write_kernelspec(limits, cache_dir)
    record = path.with_suffix(".record.jsonl")
    record.unlink(missing_ok=True)
    ini = path.parent / "pytest.ini"
    ini.write_text("[pytest]\naddopts =\n")  # ignore the project's own pytest options
    cells = len(nbformat.read(path, as_version=4).cells)
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-c",
        str(ini),
        "--rootdir",
        str(path.parent),
        "-p",
        "no:cacheprovider",
        "-p",
        "mercadofresco.course.nbrun",
        "--nbval-lax",
        f"--nbval-kernel-name={KERNEL_NAME}",
        f"--nbval-cell-timeout={limits.cell_timeout_seconds:g}",
        str(path),
    ]
    budget = STARTUP_SECONDS + cells * (limits.cell_timeout_seconds + 10)
    process = subprocess.Popen(
        command,
        cwd=path.parent,
        env=_environment(jupyter_path, record, learner_cells, cache_dir, legacy_names),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # so a stuck run can be killed with its kernel
    )
    try:
        process.wait(timeout=budget)
        killed = False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        _kill_kernel(record.with_suffix(".kernel-pid"))  # jupyter starts kernels in a session of their own
        killed = True
    rows = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    return rows, killed


def _kill_kernel(pid_file: Path) -> None:
    """Kill the kernel whose pid is in `pid_file`; no file (no kernel started) or no process is fine."""
    with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
        os.kill(int(pid_file.read_text()), signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    """`kernel --memory-mb N -f FILE`: what the generated kernelspec runs."""
    parser = argparse.ArgumentParser(prog="python -m mercadofresco.course.nbrun")
    commands = parser.add_subparsers(dest="command", required=True)
    kernel = commands.add_parser("kernel", help="an IPython kernel with a memory limit")
    kernel.add_argument("--memory-mb", type=int, required=True)
    kernel.add_argument("-f", dest="connection_file", required=True)
    args = parser.parse_args(argv)
    run_limited_kernel(args.memory_mb, args.connection_file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
