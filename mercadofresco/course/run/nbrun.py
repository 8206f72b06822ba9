"""Run one assembled notebook under nbval, the learner's kernel set apart and watched, and read the grader's record.

The grader (`grading`) calls `run_notebook`: a `pytest --nbval-lax` process of
its own, run as the grader in a private folder (mode 700), with the grader's
plugin (`course.run.nbplugin`) that records what the grader saw for each cell,
and beside it the checker, a process of its own (what `python -m
mercadofresco.course.checker` runs, forked from a process that has imported what
it needs: `course.run.forked`), to which the plugin hands the kernel after the
last cell: two pipes join them. The kernel comes from a kernelspec generated
under .cache/grading that runs `python -m mercadofresco.course.run.nbrun kernel`:
that launcher sets the process apart (`course.run.sandbox`: namespaces, hidden
paths, limits, the learner's user) and then starts IPython's kernel in the same
process.

While the notebook runs the grader watches the learner's whole process tree
(by uid as root, by parent links otherwise; `course.run.watch`): together it may
not hold more than the memory limit, keep more than CPU_SHARE CPUs busy, fill
the working copy past DISK_MB, or last longer than its time budget; any of these
and it is killed at once, with pytest and the checker. When the notebook is done every process the learner
started is killed, including children in sessions of their own.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from mercadofresco import i18n
from mercadofresco.course import protocol
from mercadofresco.course.handout import labs
from mercadofresco.course.run import forked, watch
from mercadofresco.course.run import sandbox as sb
from mercadofresco.course.run.limits import CPU_WINDOW_SECONDS, Limits, files_mb, passed, time_budget

ROOT = Path(__file__).resolve().parents[3]  # the repository: this room of mercadofresco/course/ is three levels down
KERNEL_NAME = "mercadofresco-grading"
CACHE_DIR = ROOT / ".cache" / "grading"
WATCH_SECONDS = 0.25
SANDBOX_ENV = "MERCADOFRESCO_GRADING_SANDBOX"
IPC_ENV = "MERCADOFRESCO_GRADING_IPC"
KERNEL_FOLDERS = [
    ("MPLCONFIGDIR", ".matplotlib"),
    ("IPYTHONDIR", ".ipython"),
    ("XDG_CACHE_HOME", ".cache"),
    ("XDG_RUNTIME_DIR", ".xdg/runtime"),
    ("XDG_CONFIG_HOME", ".xdg/config"),
    ("XDG_DATA_HOME", ".xdg/data"),
    ("XDG_STATE_HOME", ".xdg/state"),
    ("JUPYTER_CONFIG_DIR", ".jupyter/config"),
    ("JUPYTER_DATA_DIR", ".jupyter/data"),
]
# What of the grader's environment a learner's kernel keeps: what starts Python and names the locale, nothing
# else. The grader's own AWS keys, its MERCADOFRESCO_MODE (aws, or an endpoint of a test that has ended), its
# database URL, its MERCADOFRESCO_LANG and its pipes are not the learner's to read or to follow (grading in the
# learner's language will pass it for each submission, issue 51).
KERNEL_ENV_KEPT = (
    i18n.LANG_ENV,  # the learner's edition, which the grader sets (`Plan.language`)
    "PATH",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "PYTHONPATH",
    "PYTHONHASHSEED",
    "VIRTUAL_ENV",
    "MPLBACKEND",
    "PYDEVD_DISABLE_FILE_VALIDATION",
    labs.WHOLE_RUN_ENV,
)
CHECKER_FAILED = "the grader's checker failed (exit code {code}) before it wrote every verdict: the grader's fault"


@dataclass
class Run:
    """What the grader saw of one notebook run."""

    rows: list[protocol.Row]
    stopped: str = ""  # why the grader killed the run: "" (it did not), a sentence otherwise
    peak_mb: float = 0.0  # the learner's processes together, at their largest
    peak_cpus: float = 0.0  # CPUs the learner's processes used together, averaged over CPU_WINDOW_SECONDS
    checker_peak_mb: float = 0.0  # the checker's process and what it started for this learner, at their largest
    left_behind: list[str] = field(default_factory=list)  # learner processes alive at the end (killed): names
    notes: list[str] = field(default_factory=list)


def write_kernelspec(cache_dir: Path = CACHE_DIR) -> Path:
    """The kernelspec whose kernel sets itself apart before IPython starts; returns the JUPYTER_PATH to use."""
    jupyter_path = cache_dir / "jupyter"
    spec_dir = jupyter_path / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "mercadofresco.course.run.nbrun", "kernel", "-f", "{connection_file}"]
    spec = {"argv": argv, "display_name": "MercadoFresco grading", "language": "python"}
    partial = spec_dir / f"kernel.json.{os.getpid()}.{secrets.token_hex(4)}"
    partial.write_text(json.dumps(spec, indent=1))
    partial.replace(spec_dir / "kernel.json")  # atomic: notebooks graded in parallel never read half a file
    return jupyter_path


# -- the kernel launcher (runs in the kernel's own process) ----------------------------------
def run_kernel(connection_file: str) -> None:
    """Set this process apart as the grader asked, then become an IPython kernel."""
    box_path = os.environ.get(SANDBOX_ENV)
    if box_path:
        box = sb.Sandbox.read(Path(box_path))
        workdir = Path(box.workdir)
        copy = workdir / ".kernel.json"
        copy.write_text(Path(connection_file).read_text())  # the grader's runtime folder stays closed to it
        if box.user is not None:
            os.chown(copy, box.uid, box.gid)
        copy.chmod(0o600)
        for name in [name for name in os.environ if name not in KERNEL_ENV_KEPT and not name.startswith("LC_")]:
            del os.environ[name]
        # Every folder a library may write or read by the environment points into the working copy: the rest of
        # the disk is covered in the kernel's namespace (pgserver reads XDG_RUNTIME_DIR at import).
        for name, sub in KERNEL_FOLDERS:
            os.environ[name] = str(workdir / sub)
        os.environ.update({"HOME": str(workdir), "TMPDIR": str(workdir), "PYTHONNOUSERSITE": "1"})
        os.environ["JUPYTER_RUNTIME_DIR"] = str(workdir / ".runtime")
        sb.enter(box)
        connection_file = str(copy)
    from ipykernel import kernelapp

    kernelapp.launch_new_instance(argv=["-f", connection_file])


# -- running and watching -------------------------------------------------------------------
def _environment(jupyter_path: Path, private: Path, box_path: Path, ipc: str) -> dict:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST")}
    env.update({"JUPYTER_PATH": str(jupyter_path), "JUPYTER_RUNTIME_DIR": str(private / "runtime")})
    env.update({protocol.PLAN_ENV: str(private / "plan.json"), SANDBOX_ENV: str(box_path)})
    env.update({"PYDEVD_DISABLE_FILE_VALIDATION": "1", "PYTHONNOUSERSITE": "1", "HOME": str(private)})
    env[labs.WHOLE_RUN_ENV] = "1"  # a lab's selfcheck.here() cell starts no run of its own
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # only nbval and the grader's plugin: the others cost a second
    for name, sub in [("MPLCONFIGDIR", "matplotlib"), ("IPYTHONDIR", "ipython"), ("XDG_CACHE_HOME", "xdg")]:
        env[name] = str(private / sub)
    if ipc:
        env[IPC_ENV] = ipc
    else:
        env.pop(IPC_ENV, None)
    return env


def _learner_processes(box: sb.Sandbox, runner: int, seen: set[int]) -> list[int]:
    if box.user is not None:
        return watch.processes_of(box.uid)
    found = watch.descendants(runner)  # without root: the kernel and what it started, by parent links
    seen.update(found)
    return found


def run_notebook(
    notebook: Path,
    limits: Limits,
    plan: protocol.Plan,
    box: sb.Sandbox,
    private: Path,
    cache_dir: Path = CACHE_DIR,
) -> Run:
    """Run `notebook` (in the grader's `private` folder) with the kernel set apart as `box` says."""
    jupyter_path = write_kernelspec(cache_dir)
    record, held = private / "record.jsonl", private / "checker.json"
    record.unlink(missing_ok=True)
    (private / "plan.json").write_text(dataclasses.replace(plan, record=str(record), checker=str(held)).dumps())
    box_path = box.write(private / "sandbox.json")
    (private / "pytest.ini").write_text("[pytest]\naddopts =\n")  # ignore the project's own pytest options
    ipc = ""
    if box.user is not None and not box.network:
        ipc_dir = Path(box.workdir) / ".ipc"
        ipc_dir.mkdir(exist_ok=True)
        os.chown(ipc_dir, box.uid, box.gid)
        ipc = str(ipc_dir / "k")
    command = [
        *(sys.executable, "-m", "pytest", "-q", "-c", str(private / "pytest.ini"), "--rootdir", str(private)),
        *("-p", "no:cacheprovider", "-p", "nbval.plugin", "-p", "mercadofresco.course.run.nbplugin", "--nbval-lax"),
        f"--nbval-kernel-name={KERNEL_NAME}",
        f"--nbval-cell-timeout={limits.cell_timeout_seconds:g}",
        str(notebook),
    ]
    budget = time_budget(plan, limits)
    env = _environment(jupyter_path, private, box_path, ipc)
    env[i18n.LANG_ENV] = plan.language if plan.language in i18n.EDITIONS else "en"  # whatever the grader's says
    started = time.monotonic()
    handover, back = os.pipe(), os.pipe()  # plugin -> checker: the kernel; checker -> plugin: closed when done
    plugin_fds, checker_fds = (back[0], handover[1]), (handover[0], back[1])
    process = _start(command, private, env, plugin_fds)
    checker_process = forked.checker(private, env, checker_fds, log=private / "checker.log")
    for fd in (*handover, *back):
        os.close(fd)  # each end lives in one child only: a child that dies closes it, and the other sees EOF
    run, seen, ticks = Run(rows=[]), set(), 0
    graders = [process, checker_process]
    cpu = watch.CpuWatch(CPU_WINDOW_SECONDS, full_after=CPU_WINDOW_SECONDS - 2 * WATCH_SECONDS)
    while alive := [p for p in graders if p.poll() is None]:
        with contextlib.suppress(subprocess.TimeoutExpired):
            alive[0].wait(timeout=WATCH_SECONDS)
        learner, ticks = _learner_processes(box, process.pid, seen), ticks + 1
        used = watch.resident_mb(learner)
        if box.user is not None and learner:  # its /tmp, /dev/shm… are memory too
            used += watch.scratch_mb(learner[0])
        checker, folders = watch.held_by_checker([p.pid for p in graders], held)  # the grader's work for them
        disk, database, why = files_mb(Path(box.workdir) if ticks % 4 == 0 else None, folders)
        checker_mb = watch.resident_mb(checker) + database
        cpus = cpu.sample(time.monotonic(), watch.cpu_seconds(learner + checker))
        run.peak_mb, run.peak_cpus = max(run.peak_mb, used), max(run.peak_cpus, cpus)
        run.checker_peak_mb = max(run.checker_peak_mb, checker_mb)
        why = why or passed(limits, used, disk, cpus, checker_mb, database)
        if time.monotonic() - started > budget:
            why = why or f"the notebook ran past its total time limit ({budget:.0f} s)"
        if why and not run.stopped:  # the kernel dies with them, the checker too: nothing more is graded
            run.stopped = why
            watch.kill(learner + checker)
            _kill_groups(graders)
    if checker_process.returncode and not run.stopped:  # a fault of the grader's: its log goes to the instructor
        run.stopped = CHECKER_FAILED.format(code=checker_process.returncode)
        log = (private / "checker.log").read_text(errors="replace").splitlines()[-20:]
        print(protocol.shown("\n".join(["The checker's last words:", *log]), 4_000), file=sys.stderr)
    run.left_behind = _clean_up(box, seen)
    if record.exists():
        run.rows = protocol.read_rows(record.read_text())
    return run


def _start(
    command: list[str], private: Path, env: dict, fds: tuple[int, int], log: Path | None = None
) -> subprocess.Popen:
    """One of the grader's two processes, in a session of its own, holding its ends of the pipes (`fds`)."""
    env = dict(env, **{protocol.HANDOVER_ENV: ",".join(str(fd) for fd in fds)})
    with open(log or os.devnull, "wb") as stderr:
        return subprocess.Popen(
            command,
            cwd=private,
            env=env,
            pass_fds=fds,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )


def _kill_groups(processes: list[subprocess.Popen | forked.Checker]) -> None:
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def _clean_up(box: sb.Sandbox, seen: set[int]) -> list[str]:
    """Kill whatever the learner left running; remove what its user left in the scratch folders."""
    if box.user is not None:
        left = [
            pid for pid in watch.processes_of(box.uid) if watch.running(pid) and not watch.is_workbook_database(pid)
        ]
        names = [watch.command_name(pid) for pid in left]
        watch.kill_user(box.uid)
        watch.remove_files_of(box.uid)
        return names
    alive = [pid for pid in seen if Path(f"/proc/{pid}").exists()]
    names = [watch.command_name(pid) for pid in alive]
    watch.kill(alive)
    return names


def matplotlib_cache(cache_dir: Path = CACHE_DIR) -> Path:
    """Matplotlib's font cache, built once: each learner gets a copy instead of a minute-long rebuild under load."""
    folder = cache_dir / "matplotlib"
    if not any(folder.glob("fontlist-*.json")):
        folder.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, MPLCONFIGDIR=str(folder))
        subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], env=env, check=False, timeout=300)
    return folder


def main(argv: list[str] | None = None) -> int:
    """`kernel -f FILE`: what the generated kernelspec runs."""
    parser = argparse.ArgumentParser(prog="python -m mercadofresco.course.run.nbrun")
    commands = parser.add_subparsers(dest="command", required=True)
    kernel = commands.add_parser("kernel", help="an IPython kernel set apart as the grader asked")
    kernel.add_argument("-f", dest="connection_file", required=True)
    args = parser.parse_args(argv)
    run_kernel(args.connection_file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
