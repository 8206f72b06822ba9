"""moto's DynamoDB writes made atomic, as DynamoDB's own are: one lock around each write of this process's moto.

What moto 5.2.5 does (`moto/dynamodb/models/table.py`): a PutItem with a
ConditionExpression reads the item, evaluates the condition, then stores the
new item, three steps in plain Python. Two threads of one moto can both read
"no item" and both store. moto serves requests in threads when it is a server
(`ThreadedMotoServer`, `moto_server`) and when one process's moto answers
another's consumers, so two consumers could both take `cobro:PED-…` as
EN_CURSO and both charge. That is moto's race, not the pattern's: DynamoDB
evaluates a condition and writes in one step. CI saw it once, as two charges
in the two-process test of `tests/package/test_endpoint_mode.py`.

The fix: PutItem, UpdateItem, DeleteItem and TransactWriteItems of every
DynamoDB backend in this process run one at a time, under one lock. Reads are
not locked. A moto server started in another process (`moto_server -p 5000`
in a terminal) does not have the fix: there two conditional writes can still
both pass, rarely.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from moto.dynamodb.models import DynamoDBBackend

WRITES = ("put_item", "update_item", "delete_item", "transact_write_items")
LOCK = threading.RLock()  # re-entrant: a transaction's writes may call the other writes


def _one_at_a_time(write: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(write)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with LOCK:
            return write(*args, **kwargs)

    locked.moto_atomic_original = write
    return locked


def is_applied() -> bool:
    """True while this process's moto writes DynamoDB items one at a time."""
    return hasattr(DynamoDBBackend.put_item, "moto_atomic_original")


def apply() -> None:
    """Make this process's moto DynamoDB writes atomic (for the rest of the process; applying twice is a no-op)."""
    if not is_applied():
        for name in WRITES:
            setattr(DynamoDBBackend, name, _one_at_a_time(getattr(DynamoDBBackend, name)))


def undo() -> None:
    """moto's own writes back (for the test that shows the race without the fix)."""
    if is_applied():
        for name in WRITES:
            setattr(DynamoDBBackend, name, getattr(DynamoDBBackend, name).moto_atomic_original)
