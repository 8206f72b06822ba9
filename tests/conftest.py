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

from mercadofresco import clock, world  # noqa: E402


@pytest.fixture
def reloj() -> Iterator[clock.VirtualClock]:
    """The virtual clock, started at the lesson's Friday 19:14 and stopped afterwards."""
    with clock.VirtualClock() as running:
        yield running


@pytest.fixture
def mf(reloj: clock.VirtualClock) -> Iterator[world.World]:
    """A fresh world in moto, in this process."""
    with world.build(world.WorldConfig()) as built:
        yield built
