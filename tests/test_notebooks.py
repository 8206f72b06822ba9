"""Every lesson notebook and lab solution under strict nbval, in the small box when this runs as root (issue 25).

As root (CI, a container) the run is an ordinary learner's: a user of its own whose home holds a copy of the
workbook and is its only writable place besides /tmp, /dev/shm of 64 MB, 2 GB of memory (tests/small_box.py).
Without root the same nbval run goes in a subprocess as this user, and the box's own test is skipped.
One nbval run serves every notebook's test: each reads its cells' results from that run's JUnit report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import small_box

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(str(p.relative_to(ROOT)) for p in [*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("solutions/*.ipynb")])
IN_BOX = os.geteuid() == 0 and sys.platform == "linux"
RUN_SECONDS = 600
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


@pytest.fixture(scope="session")
def box_user():
    """The small box's user and the copy of the workbook in its home; removed with everything it ran."""
    if not IN_BOX:
        pytest.skip("the small box needs root on Linux (a user of its own, a private /dev/shm)")
    small_box.remove_user()  # whatever an interrupted run left
    uid, gid, home = small_box.create_user()
    small_box.copy_workbook(home, uid, gid)
    yield home
    small_box.remove_user()


def in_box(home: Path, *command: str, timeout: float) -> subprocess.CompletedProcess:
    launcher = [sys.executable, str(ROOT / "tests" / "small_box.py"), small_box.USER, str(home)]
    return subprocess.run([*launcher, *command], capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="session")
def nbval_run(request, tmp_path_factory) -> NbvalRun:
    nbval = ["-m", "pytest", "-q", "-p", "no:cacheprovider", *NOTEBOOKS]
    if IN_BOX:
        home = request.getfixturevalue("box_user")
        report = home / "nbval.xml"
        done = in_box(home, sys.executable, *nbval, f"--junitxml={report}", timeout=RUN_SECONDS)
        where = "the small box (an ordinary user, 64 MB /dev/shm, 2 GB)"
    else:
        report = tmp_path_factory.mktemp("nbval") / "nbval.xml"
        command = [sys.executable, *nbval, f"--junitxml={report}"]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=RUN_SECONDS, check=False)
        where = "this user's own environment (not root: no small box)"
    run = NbvalRun(where, done.stdout[-6000:] + done.stderr[-3000:], done.returncode)
    if report.exists():
        _read_junit(report, run)
    return run


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
