"""Shared fixtures: a running virtual clock and a fresh MercadoFresco world in moto."""

from __future__ import annotations

import logging
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import background  # noqa: E402
import nbtools  # noqa: E402

nbtools.quiet_environment()  # kernels started by nbval inherit it: nothing is written to $HOME
logging.getLogger("werkzeug").setLevel(logging.ERROR)
# learner notebooks the tests use or write, not to test
collect_ignore_glob = ["fixtures/*", "browser/artifacts/*", "old_labs/*"]
_EARLY: list = []  # the STARTED_EARLY objects of this session's test modules (tests/background.py)
_STARTED: list[Path] = []  # the folder they were given, once they are started


# Modules whose tests grade at --jobs 2 or run servers side by side: they keep both cores busy. They run after the
# others, which mostly keep one core busy, so that the work started early (below) has idle CPU from the start.
# Labs 2 and 3 are graded early too (a `Later` each): their tests come first of these, so that no other grading runs
# beside theirs (a test that looks for a grading user's leftover processes, a timed solution) once the others start.
GRADED_EARLY = ("test_lab2.py", "test_lab3.py")
BOTH_CORES = {
    "test_checker.py",
    "test_class_grading.py",
    "test_grading_holes.py",
    "test_hub.py",
    "test_lab1.py",
    "test_lab2.py",
    "test_lab3.py",
}
BROWSER = ROOT / "tests" / "browser"


@pytest.hookimpl(trylast=True)  # after pytest's own reordering by fixture
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The order of the session: the tests that keep one core busy, then those that keep two busy (labs 2 and 3
    first), then those that read the strict nbval runs, then the browser tests (their own pages compete with
    nothing), and last those that read the browser suite's reports of every notebook. The nbval runs and the
    browser suite's run (tests/browser/conftest.py) go in the background from the first test on, so they come late
    to be waited for.
    """

    def place(item: pytest.Item) -> int:
        if BROWSER in item.path.parents:
            return 5 if "reports" in getattr(item, "fixturenames", ()) else 4
        if item.path.name == "test_notebooks.py":
            return 3
        if item.path.name in BOTH_CORES:
            return 1 if item.path.name in GRADED_EARLY else 2
        return 0

    items.sort(key=place)  # stable: each group keeps pytest's order


def pytest_collection_finish(session: pytest.Session) -> None:
    """Note the session's work that starts early: the browser suite's run, the strict nbval runs, the endpoint sweep."""
    found = {id(early): early for item in session.items if (early := getattr(item.module, "STARTED_EARLY", None))}
    _EARLY[:] = found.values()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Start that work with the session's first test, in the background: it takes the CPU the tests leave idle
    (most keep one core busy, not two), and its tests, which come later, read the results. The commands run at
    nice 10; the browser suite, a thread of this process, at the tests' own priority (its page waits time out);
    a `Later` fixture value (a lab's grading) once all of those have ended, in the one-core tests' last stretch.
    """
    if _EARLY and not _STARTED:
        _STARTED.append(Path(tempfile.mkdtemp(prefix="mercadofresco-early-")))
        first = [early for early in _EARLY if not isinstance(early, background.Later)]
        for early in first:
            early.start(_STARTED[0])
        later = [early for early in _EARLY if early not in first]
        for number, early in enumerate(later):  # one after the other: each keeps one or two cores busy alone
            early.start(_STARTED[0] / f"later-{number}", after=first + later[:number])


def pytest_sessionfinish(session: pytest.Session) -> None:
    for early in _EARLY:
        early.stop()  # a session cut short: nothing left running (the box's user removed)
    for folder in _STARTED:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory) -> Path:
    """The learner bundle built from this repository, unzipped in a fresh folder: the folder a learner works in."""
    import zipfile

    from mercadofresco.course.handout import bundle

    archive = bundle.write(tmp_path_factory.mktemp("dist") / "mercadofresco-learner.zip")
    folder = tmp_path_factory.mktemp("learner")
    with zipfile.ZipFile(archive) as opened:
        opened.extractall(folder)
    return folder / bundle.PREFIX


@pytest.fixture
def clock() -> Iterator:
    """The virtual clock, started at the lesson's Friday 19:14 and stopped afterwards."""
    from mercadofresco import clock  # imported here: a notebook-only run (nbval) does not need moto
    from mercadofresco.runtime import realtime

    with clock.VirtualClock(pace=realtime.VIRTUAL) as running:  # virtual whatever MERCADOFRESCO_MODE says
        yield running


@pytest.fixture
def aws(clock) -> Iterator:
    """A fresh world in moto, in this process."""
    from mercadofresco import world

    with world.build(world.WorldConfig()) as built:
        yield built


@pytest.fixture
def events(aws):
    """The world's EventBridge client, with `bus-mercadofresco` there."""
    from mercadofresco import world

    client = aws.client("events")
    if world.BUS not in [found["Name"] for found in client.list_event_buses()["EventBuses"]]:
        client.create_event_bus(Name=world.BUS)
    return client
