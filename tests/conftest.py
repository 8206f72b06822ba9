"""Shared fixtures: a running virtual clock and a fresh MercadoFresco world in moto."""

from __future__ import annotations

import logging
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
_NBVAL: list = []  # test_notebooks' runs, when this session includes them; started early (see below)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Note whether the strict nbval runs of tests/test_notebooks.py are part of this session."""
    _NBVAL[:] = list({item.module.RUNS for item in session.items if item.path.name == "test_notebooks.py"})[:1]


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Start the nbval runs (in the background, at nice 10) once the browser suite is over (CPU-bound, two cores).

    The tests that follow mostly keep one core busy; the runs use the other, and their tests read the results.
    """
    if _NBVAL and "browser" not in item.path.parts:
        _NBVAL[0].start(Path(tempfile.mkdtemp(prefix="mercadofresco-nbval-")))


def pytest_sessionfinish(session: pytest.Session) -> None:
    for runs in _NBVAL:
        runs.stop()  # a session cut short: nothing left running, the box's user removed


@pytest.fixture
def reloj() -> Iterator:
    """The virtual clock, started at the lesson's Friday 19:14 and stopped afterwards."""
    from mercadofresco import clock, realtime  # imported here: a notebook-only run (nbval) does not need moto

    with clock.VirtualClock(pace=realtime.VIRTUAL) as running:  # virtual whatever MERCADOFRESCO_MODE says
        yield running


@pytest.fixture
def mf(reloj) -> Iterator:
    """A fresh world in moto, in this process."""
    from mercadofresco import world

    with world.build(world.WorldConfig()) as built:
        yield built
