"""Shared fixtures: a running virtual clock and a fresh MercadoFresco world in moto."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import nbtools  # noqa: E402

nbtools.quiet_environment()  # kernels started by nbval inherit it: nothing is written to $HOME
logging.getLogger("werkzeug").setLevel(logging.ERROR)
collect_ignore_glob = ["fixtures/*", "browser/artifacts/*"]  # learner notebooks the tests use or write, not to test


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
