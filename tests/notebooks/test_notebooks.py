"""Every lesson notebook and lab solution under strict nbval, in the small box when this runs as root (issue 25).

As root (CI, a container) the run is an ordinary learner's: a user of its own whose home holds a copy of the
workbook and is its only writable place besides /tmp, /dev/shm of 64 MB, 2 GB of memory (tests/small_box.py).
Without root the same nbval run goes in a subprocess as this user, and the box's own test is skipped.
Two nbval runs side by side serve every notebook's test: each reads its cells' results from the runs' JUnit reports.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests import small_box
from tests.scheduling import Background

ROOT = Path(__file__).resolve().parents[2]
EDITIONS = ("notebooks/*.ipynb", "notebooks/es/*.ipynb", "solutions/*.ipynb", "solutions/es/*.ipynb")  # issue 51
NOTEBOOKS = sorted(str(p.relative_to(ROOT)) for pattern in EDITIONS for p in ROOT.glob(pattern))
IN_BOX = os.geteuid() == 0 and sys.platform == "linux"
RUN_SECONDS = 600
KERNEL_DIED_AT_START = "Kernel died before replying to kernel_info"  # jupyter_client's words
# What the box looks like from inside: who it is, where it can write, how big /dev/shm is, which package it runs.
PROBE = """
import json, os, shutil, sys
import mercadofresco
def memory_limit_mb():
    for line in open("/proc/self/cgroup").read().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return int(open(f"/sys/fs/cgroup/memory{path}/memory.limit_in_bytes").read()) >> 20
places = ["/", "/etc", "/usr", "/var", "/opt", "/root", "/home", "/work", sys.prefix, sys.argv[1], os.getcwd(),
          os.path.expanduser("~"), "/tmp", "/var/tmp", "/dev/shm"]
print(json.dumps({"uid": os.getuid(), "package": mercadofresco.__file__, "cwd": os.getcwd(),
                  "writable": sorted(p for p in set(places) if os.path.isdir(p) and os.access(p, os.W_OK)),
                  "shm_mb": shutil.disk_usage("/dev/shm").total >> 20,
                  "memory": os.environ.get("MERCADOFRESCO_BOX_MEMORY"), "memory_limit_mb": memory_limit_mb()}))
"""


@dataclass
class NbvalRun:
    """One strict nbval run over every notebook: where it ran, its output, each notebook's failed cells."""

    where: str
    output: str
    returncode: int
    cells: dict[str, int] = field(default_factory=dict)  # notebook -> cells run
    failures: dict[str, list[str]] = field(default_factory=dict)  # notebook -> "Cell 3: the message"


def _read_junit(path: Path, run: NbvalRun) -> None:
    for case in ET.parse(path).getroot().iter("testcase"):
        notebook = case.get("file") or case.get("classname", "").replace(".", "/").replace("/ipynb", ".ipynb")
        run.cells[notebook] = run.cells.get(notebook, 0) + 1
        for problem in [*case.iter("failure"), *case.iter("error")]:
            message = (problem.get("message") or problem.text or "").strip()
            run.failures.setdefault(notebook, []).append(f"{case.get('name')}: {message[:1500]}")


def halves(notebooks: list[str]) -> list[list[str]]:
    """The notebooks in two runs of about equal time (course_times.json), longest first, for the two cores."""
    seconds = json.loads((ROOT / "mercadofresco" / "lessons" / "course_times.json").read_text())["seconds"]
    runs: list[list[str]] = [[], []]
    totals = [0.0, 0.0]
    for notebook in sorted(notebooks, key=lambda name: -seconds.get(Path(name).name, 5.0)):
        lighter = totals.index(min(totals))
        runs[lighter].append(notebook)
        totals[lighter] += seconds.get(Path(notebook).name, 5.0)
    return [sorted(run) for run in runs]


class Runs:
    """The two nbval runs side by side (each notebook's kernel keeps one core busy), in one box: 2 GB for both.

    tests/conftest.py starts them with the session's first test, at a lower priority (nice 10), so they use
    the CPU the other tests leave idle; the tests below read their results.
    """

    def __init__(self) -> None:
        self.runs: list[tuple[Background, Path]] = []  # each nbval process and its JUnit report
        self.home: Path | None = None
        self.run: NbvalRun | None = None
        self.launcher: list[str] = []
        self.folder: Path | None = None

    def start(self, folder: Path) -> None:
        if self.runs or self.run:
            return
        launcher: list[str] = []
        if IN_BOX:
            small_box.remove_user()  # whatever an interrupted run left
            uid, gid, self.home = small_box.create_user()
            small_box.copy_workbook(self.home, uid, gid)
            folder = self.home
            launcher = [sys.executable, str(ROOT / "tests" / "small_box.py"), small_box.USER, str(self.home)]
        self.launcher, self.folder = launcher, folder
        for number, notebooks in enumerate(halves(NOTEBOOKS)):
            self.runs.append(self._nbval(notebooks, folder / f"nbval-{number}.xml"))
        for process, _ in self.runs:
            process.start()

    def _nbval(self, notebooks: list[str], report: Path) -> tuple[Background, Path]:
        nbval = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *notebooks, f"--junitxml={report}"]
        return Background(*self.launcher, *nbval, cwd=ROOT, timeout=RUN_SECONDS), report

    def result(self, folder: Path) -> NbvalRun:
        if self.run is None:
            self.start(folder)
            where = "the small box (an ordinary user, 64 MB /dev/shm, 2 GB)" if IN_BOX else "this user's own run"
            self.run = NbvalRun(where if IN_BOX else where + " (not root: no small box)", "", 0)
            for process, report in self.runs:
                status, out, err = process.result()
                self.run.output += out[-5000:] + err[-2000:]
                self.run.returncode = self.run.returncode or status
                if report.exists():
                    _read_junit(report, self.run)
            self._run_again_where_the_kernel_died_at_start()
        return self.run

    def _run_again_where_the_kernel_died_at_start(self) -> None:
        """A notebook whose kernel died before its first reply (every cell failed so) runs once more, alone.

        Seen once in a clean-clone CI run, on notebook 12, with the machine at half its usual speed: the kernel
        process was gone before it answered kernel_info, before any of the notebook's code ran. A notebook whose
        kernel dies again fails as before; the ones run again are named in a warning.
        """
        died = [
            notebook
            for notebook, failures in self.run.failures.items()
            if all(KERNEL_DIED_AT_START in failure for failure in failures)
        ]
        if not died:
            return
        for notebook in died:
            del self.run.failures[notebook], self.run.cells[notebook]
        process, report = self._nbval(sorted(died), self.folder / "nbval-again.xml")
        self.runs.append((process, report))
        status, out, err = process.result()
        self.run.output += out[-5000:] + err[-2000:]
        if report.exists():
            _read_junit(report, self.run)
        if not self.run.failures:  # the first runs failed only on those kernels' start
            self.run.returncode = status
        warnings.warn(f"kernel died before its first reply; run again alone: {', '.join(sorted(died))}", stacklevel=1)

    def wait(self) -> None:
        """Wait for the first runs to end (a notebook run again alone, if any, is not waited for)."""
        for process, _ in list(self.runs):
            process.wait()

    def stop(self) -> None:
        """Kill a run still going (a session cut short) and remove the box's user with all it ran."""
        for process, _ in self.runs:
            process.stop()
        self.runs.clear()
        if IN_BOX and self.home is not None:
            small_box.remove_user()
            self.home = None


STARTED_EARLY = RUNS = Runs()  # tests/conftest.py starts it (tests/scheduling.py)


def in_box(home: Path, *command: str, timeout: float) -> subprocess.CompletedProcess:
    launcher = [sys.executable, str(ROOT / "tests" / "small_box.py"), small_box.USER, str(home)]
    return subprocess.run([*launcher, *command], capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="session")
def nbval_run(tmp_path_factory):
    yield RUNS.result(tmp_path_factory.mktemp("nbval"))
    RUNS.stop()


@pytest.fixture(scope="session")
def box_user(nbval_run):
    """The small box's user, with the copy of the workbook in its home (the nbval runs made it)."""
    if not IN_BOX:
        pytest.skip("the small box needs root on Linux (a user of its own, a private /dev/shm)")
    return RUNS.home


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_the_notebook_passes_strict_nbval(nbval_run, notebook):
    cells = nbval_run.cells.get(notebook, 0)
    assert cells, f"{notebook} did not run in {nbval_run.where}; nbval said:\n{nbval_run.output}"
    failed = nbval_run.failures.get(notebook, [])
    assert not failed, f"{notebook} in {nbval_run.where}, {len(failed)} of {cells} cells failed:\n" + "\n".join(failed)


def test_the_run_covered_every_notebook_and_ended_cleanly(nbval_run):
    assert set(nbval_run.cells) == set(NOTEBOOKS), nbval_run.output
    assert nbval_run.returncode == 0, nbval_run.output


def test_the_box_is_an_ordinary_user_with_a_small_dev_shm_and_only_its_home_to_write(box_user):
    done = in_box(box_user, sys.executable, "-c", PROBE, str(ROOT), timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    workbook = str(box_user / small_box.COPY)
    assert seen["uid"] != 0 and seen["cwd"] == workbook
    assert seen["package"].startswith(workbook + "/"), "the box must run the learner's copy of the package"
    assert seen["shm_mb"] == small_box.SHM_MB
    assert seen["writable"] == sorted({"/dev/shm", "/tmp", "/var/tmp", str(box_user), workbook}), seen
    if any(root.is_dir() for root in small_box.CGROUPS[:1]):  # version 1's memory controller, as on this machine
        assert seen["memory"] == "cgroup", "with a memory cgroup, the box's 2 GB must be one limit for all it runs"
        assert seen["memory_limit_mb"] == small_box.MEMORY_MB


def test_a_notebook_whose_kernel_died_at_start_runs_again_alone_and_no_other_failure_is_touched(tmp_path):
    runs = Runs()
    runs.folder = tmp_path  # as this user, outside the box: the run again is the same nbval command
    died, wrong = "notebooks/19_conclusion.ipynb", "notebooks/06_what_to_retry.ipynb"
    runs.run = NbvalRun("a test", "", 1, cells={died: 3, wrong: 4})
    runs.run.failures = {died: [f"Cell {n}: {KERNEL_DIED_AT_START}" for n in range(3)], wrong: ["Cell 2: a diff"]}
    with pytest.warns(UserWarning, match="19_conclusion"):
        runs._run_again_where_the_kernel_died_at_start()
    runs.stop()
    assert died not in runs.run.failures and runs.run.cells[died] > 0, runs.run.output
    assert runs.run.failures == {wrong: ["Cell 2: a diff"]} and runs.run.returncode == 1
