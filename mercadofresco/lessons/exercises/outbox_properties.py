"""What exercise 3's outbox must do in every world, and the notebook's bench to look for a world that breaks it.

Six properties, each a function `(bench, examples, seed) -> Counterexample | None`
over generated worlds (`lessons.worlds`), the lesson's own worlds first:
the cleanup and the backlog (`outbox_table`), each order's events in creation
order (`outbox_publisher`) and the publisher's contract (`outbox_contract`), a sent row that stays
claimed until it is marked (`outbox_rival`), the consumer that prepares an
event once (`outbox_consumer`). The public checks play a few worlds
on the notebook's PostgreSQL (`NotebookOutboxBench`); the instructor's checks
more, on another seed, on their own.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from typing import Any

import psycopg
from psycopg import pq

from mercadofresco import orders, world
from mercadofresco.clock import VirtualClock
from mercadofresco.lessons.exercises.outbox_consumer import consumer_prepares_once
from mercadofresco.lessons.exercises.outbox_contract import events_as_the_contract_says
from mercadofresco.lessons.exercises.outbox_publisher import events_in_creation_order
from mercadofresco.lessons.exercises.outbox_rival import Rival, sent_rows_stay_claimed
from mercadofresco.lessons.exercises.outbox_table import backlog_measures_the_pending, cleanup_deletes_only_the_expired
from mercadofresco.lessons.exercises.outbox_world import Row, Stored, pedido_of
from mercadofresco.models import event_faults
from mercadofresco.patterns import idempotency
from mercadofresco.runtime import database

PROPERTIES = (
    cleanup_deletes_only_the_expired,
    backlog_measures_the_pending,
    events_in_creation_order,
    events_as_the_contract_says,
    sent_rows_stay_claimed,
    consumer_prepares_once,
)
FIRST_EVENT = 990_001  # the consumer's worlds' outbox ids: far above the notebook's own rows
LOCK_GIVE_UP = "200ms"  # publisher B's wait for a row lock: a publisher that waits for another's rows is stuck
STORED_COLUMNS = "id, agregado_id, tipo_evento, payload, creado_en, publicado, publicado_en"


def seed_statement() -> str:
    """The INSERT a world's row is seeded with (by column name, as the lab asks the table to have them)."""
    return (
        "INSERT INTO outbox (tipo_agregado, agregado_id, tipo_evento, payload, creado_en, publicado, publicado_en)"
        " VALUES ('pedido', %s, %s, %s, %s, %s, %s) RETURNING id"
    )


def seed_values(row: Row, now: dt.datetime) -> tuple:
    """The values of `seed_statement` for `row` at `now`."""
    created = now - dt.timedelta(seconds=row.created_ago)
    published = None if row.published_ago is None else now - dt.timedelta(seconds=row.published_ago)
    payload = json.dumps({"pedido_id": pedido_of(row.agregado), "tipo": row.tipo})
    return (pedido_of(row.agregado), row.tipo, payload, created, published is not None, published)


class NotebookOutboxBench:
    """The notebook's own bench: a schema of its own (`lab3_mundos`) on the notebook's PostgreSQL, the notebook's
    moto bus behind EventBridge's limits, its idempotency table; the learner's functions by name from `functions`
    (the notebook's `globals()`), looked up at each call so that a function defined again is the one played."""

    SCHEMA = "lab3_mundos"

    def __init__(self, db: database.Database, aws: world.World, clock: VirtualClock, functions: Mapping) -> None:
        self.side = database.Database(db.url, self.SCHEMA)
        self.functions = functions
        self.bus = event_faults.FaultyEvents(aws.client("events"))
        self.dynamodb = aws.dynamodb
        self.store = idempotency.IdempotencyStore(aws.dynamodb, clock)
        self.conn: Any = None
        self.rival: Rival | None = None
        self.other: Any = None  # publisher B's connection
        self._keys_before: set[str] = set()

    def fresh(self) -> None:
        if self.conn is None:
            self.side.reset()
            self.conn = self.side.connect(autocommit=True)
            self.functions["create_schema"](self.conn)
        else:
            if self.conn.info.transaction_status != pq.TransactionStatus.IDLE:
                self.conn.rollback()  # a function of the learner's left a transaction open
            if self.other is not None and self.other.info.transaction_status != pq.TransactionStatus.IDLE:
                self.other.rollback()
            self.conn.execute("TRUNCATE outbox, pedidos RESTART IDENTITY")
        self.bus.taken.clear()

    def seed(self, rows: list[Row], now: dt.datetime) -> list[int]:
        with self.conn.transaction():
            return [self.conn.execute(seed_statement(), seed_values(row, now)).fetchone()[0] for row in rows]

    def stored(self) -> list[Stored]:
        return [Stored(*row) for row in self.conn.execute(f"SELECT {STORED_COLUMNS} FROM outbox ORDER BY id")]

    def place(self, order: orders.Order, now: dt.datetime) -> Any:
        return self.functions["place_order"](self.conn, self.bus, order, now)

    def publish(self, now: dt.datetime, batch: int, refused: tuple[frozenset[int], ...] = ()) -> Any:
        self.bus.failures = event_faults.ScriptedFailures(refused)
        try:
            return self.functions["publish_pending"](self.conn, self.bus, now, batch)
        finally:
            self.bus.failures = event_faults.PartialFailures()

    def publish_with_another(self, now: dt.datetime, batch: int) -> tuple[Any, bool, int]:
        if self.other is None:
            self.other = self.side.connect(autocommit=True)
            self.other.execute(f"SET lock_timeout = '{LOCK_GIVE_UP}'")
        waited, from_b = [], []

        def publisher_b() -> None:
            before = len(self.bus.taken)
            try:
                self.functions["publish_pending"](self.other, self.bus, now, batch)
            except psycopg.errors.LockNotAvailable:
                waited.append(True)
            from_b.append(len(self.bus.taken) - before)

        self.bus.first_call = publisher_b
        try:
            return self.publish(now, batch), bool(waited), sum(from_b)
        finally:
            self.bus.first_call = None

    def publish_beside_a_rival(
        self, now: dt.datetime, batch: int, refused: tuple[frozenset[int], ...] = ()
    ) -> tuple[Any, list[int]]:
        if self.rival is None:
            self.rival = Rival(self.side.connect(autocommit=True), self.side.connect(autocommit=True))
        self.bus.on_taken = self.rival.start
        try:
            answer = self.publish(now, batch, refused)
        finally:
            self.bus.on_taken = None
            took = self.rival.finish()
        return answer, took

    def accepted(self) -> list[dict]:
        return list(self.bus.taken)

    def cleanup(self, now: dt.datetime) -> Any:
        return self.functions["cleanup"](self.conn, now)

    def backlog(self, now: dt.datetime) -> Any:
        return self.functions["backlog"](self.conn, now)

    def consume(self, detail: dict, prepare: Callable[[dict], dict]) -> Any:
        return self.functions["handle_event"](self.store, detail, prepare)

    def event_ids(self, count: int) -> list[int]:
        self._keys_before = self._keys()
        return list(range(FIRST_EVENT, FIRST_EVENT + count))

    def forget(self) -> None:
        for key in self._keys() - self._keys_before:
            self.dynamodb.delete_item(TableName=world.IDEMPOTENCY_TABLE, Key={"clave": {"S": key}})

    def _keys(self) -> set[str]:
        pages = self.dynamodb.get_paginator("scan").paginate(
            TableName=world.IDEMPOTENCY_TABLE, ProjectionExpression="clave"
        )
        return {item["clave"]["S"] for page in pages for item in page["Items"]}
