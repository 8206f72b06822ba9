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
import nbtools  # noqa: E402

nbtools.quiet_environment()  # kernels started by nbval inherit it: nothing is written to $HOME
logging.getLogger("werkzeug").setLevel(logging.ERROR)
collect_ignore_glob = ["fixtures/*", "browser/artifacts/*"]  # learner notebooks the tests use or write, not to test
_EARLY: list = []  # the STARTED_EARLY objects of this session's test modules (tests/background.py)
_STARTED: list[Path] = []  # the folder they were given, once they are started


def pytest_collection_finish(session: pytest.Session) -> None:
    """Note the session's work that starts early: the strict nbval runs, the endpoint sweep."""
    found = {id(early): early for item in session.items if (early := getattr(item.module, "STARTED_EARLY", None))}
    _EARLY[:] = found.values()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Start that work with the session's first test, in the background at nice 10: it takes only the CPU the
    tests leave idle (the browser suite keeps both cores busy, most tests after it one), and its tests, which come
    later, read the results.
    """
    if _EARLY and not _STARTED:
        _STARTED.append(Path(tempfile.mkdtemp(prefix="mercadofresco-early-")))
        for early in _EARLY:
            early.start(_STARTED[0])


def pytest_sessionfinish(session: pytest.Session) -> None:
    for early in _EARLY:
        early.stop()  # a session cut short: nothing left running (the box's user removed)
    for folder in _STARTED:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory) -> Path:
    """The learner bundle built from this repository, unzipped in a fresh folder: the folder a learner works in."""
    import zipfile

    from mercadofresco.course import bundle

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
