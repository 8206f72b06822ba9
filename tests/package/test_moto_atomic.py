"""moto_atomic: two consumers that acquire one key at the same instant, in two threads of one moto, get it once."""

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from moto.dynamodb.models.table import Table

from mercadofresco.patterns.idempotency import IdempotencyStore
from mercadofresco.runtime import moto_atomic

CLAVE = "cobro:PED-2026-084417"


def acquire_side_by_side(aws, clock, monkeypatch, wait_seconds: float = 0.3) -> list:
    """Both threads read the item before either writes it, where moto lets them: the race made certain, not likely.

    With the fix the barrier breaks after `wait_seconds` (the lock holds the other thread back); without it both
    threads reach it, so a long wait costs nothing there and keeps a loaded machine from breaking it.
    """
    both_read = threading.Barrier(2, timeout=wait_seconds)
    read = Table.get_item

    def get_item(table, *args, **kwargs):
        item = read(table, *args, **kwargs)
        with contextlib.suppress(threading.BrokenBarrierError):
            both_read.wait()  # the condition is evaluated on what was read before this point
        return item

    monkeypatch.setattr(Table, "get_item", get_item)
    store = IdempotencyStore(aws.dynamodb, clock)
    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(lambda _: store.acquire(CLAVE), range(2)))


def test_a_world_makes_moto_write_one_item_at_a_time(aws):
    assert moto_atomic.is_applied()


def test_two_acquires_at_once_give_the_key_to_one_consumer(aws, clock, monkeypatch):
    got = acquire_side_by_side(aws, clock, monkeypatch)
    assert got.count(None) == 1, got  # the other sees the first one's EN_CURSO
    assert [record.estado.value for record in got if record is not None] == ["EN_CURSO"]


@pytest.fixture
def without_the_fix(aws):
    moto_atomic.undo()
    yield
    moto_atomic.apply()


def test_without_the_fix_moto_gives_it_to_both(aws, clock, monkeypatch, without_the_fix):
    """The guard can fail: moto's own PutItem lets both conditional writes pass."""
    assert acquire_side_by_side(aws, clock, monkeypatch, wait_seconds=10) == [None, None]
