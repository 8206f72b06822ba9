"""Shared fixtures (a running virtual clock, a fresh MercadoFresco world in moto, the learner bundle), and the
session's order and early work, which tests/scheduling.py decides."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import scheduling
from tools import nbtools

ROOT = Path(__file__).resolve().parents[1]

nbtools.quiet_environment()  # kernels started by nbval inherit it: nothing is written to $HOME
logging.getLogger("werkzeug").setLevel(logging.ERROR)
# learner notebooks the tests use or write, not to test
collect_ignore_glob = ["browser/artifacts/*", "labs/old_labs/*"]


@pytest.hookimpl(trylast=True)  # after pytest's own reordering by fixture
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    scheduling.order(items)


def pytest_collection_finish(session: pytest.Session) -> None:
    scheduling.note_early(session.items)


def pytest_runtest_setup(item: pytest.Item) -> None:
    scheduling.start_early()


def pytest_sessionfinish(session: pytest.Session) -> None:
    scheduling.stop_early()


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
