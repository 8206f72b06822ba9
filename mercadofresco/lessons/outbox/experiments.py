"""Experiments of section 13 (notebook 13): the dual write loses events, the outbox loses none.

Everything runs for real: orders in PostgreSQL (`database`), events through
put_events on moto's `bus-mercadofresco`. A process death is injected with a
seeded probability at one point: right after the order's COMMIT. `BusTap` writes
down every entry the bus accepted (moto's archive keeps the events too, but only a
replay could read them back), so an experiment can say which orders have an event.

`create_order_07_01` is a RECONSTRUCTION of the lost code of class 07-01: INSERT and
COMMIT in Aurora, then put_events. Its events are `PedidoCreado`, which the bus's
rule to the warehouse queue does not route, so thousands of them cost no queue.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

from mercadofresco import clock, orders, world
from mercadofresco.errors import check_range
from mercadofresco.i18n import _, ngettext, number
from mercadofresco.models import event_faults
from mercadofresco.patterns import outbox
from mercadofresco.runtime.database import Database

ORDERS_PER_MONTH = 240_000  # the lesson's figure
MARTA_RATE = 1 / 900  # 1 in 900 orders exists in Aurora without an event
ORDER_SPACING_SECONDS = 11  # 240,000 orders in 30 days is one every ~11 s
MAX_ROUNDS = 10_000


@dataclass(frozen=True)
class CrashConfig:
    """How many orders, how often a process dies, how many publishers, how many put_events attempts."""

    orders: int = 900
    crash_probability: float = MARTA_RATE
    publishers: int = 2
    put_events_attempts: int = 1
    throttle_probability: float = 0.0  # a put_events call that fails (the kind retries do cover)
    refuse_probability: float = 0.0  # an entry refused inside a call that succeeds (FailedEntryCount > 0)
    resend_refused: bool = False  # read the answer and send the refused entries again

    def __post_init__(self) -> None:
        check_range("orders", self.orders, 1, 2_000)
        check_range("crash_probability", self.crash_probability, 0.0, 0.5)
        check_range("publishers", self.publishers, 1, 8)
        check_range("put_events_attempts", self.put_events_attempts, 1, 10)
        check_range("throttle_probability", self.throttle_probability, 0.0, 0.5)
        check_range("refuse_probability", self.refuse_probability, 0.0, 0.5)


@dataclass(frozen=True)
class LossResult:
    """What one design did with the same orders and the same crashes."""

    design: str
    orders: int
    crashes: int  # process deaths injected
    in_database: int  # orders that exist in pedidos
    published: int  # orders with at least one event on the bus
    lost: int  # orders in the database whose event never existed
    phantom: int  # events announcing an order that does not exist
    duplicated: int  # events the bus received more than once

    def row(self) -> dict[str, Any]:
        return asdict(self)


class BusTap:
    """The events client the experiments use: forwards put_events to moto and notes each accepted entry.

    With `throttle_probability` a call fails before reaching the bus, as a
    ThrottlingException would: that failure is one a retry covers.
    """

    def __init__(self, events: Any, rng: random.Random | None = None, throttle_probability: float = 0.0) -> None:
        self.events = events
        self.rng = rng or random.Random(0)
        self.throttle_probability = throttle_probability
        self.accepted: list[dict[str, Any]] = []  # the Detail of every entry the bus took

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        if self.rng.random() < self.throttle_probability:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "PutEvents")
        response = self.events.put_events(Entries=Entries)
        for entry, result in zip(Entries, response["Entries"], strict=True):
            if "EventId" in result:
                self.accepted.append(json.loads(entry["Detail"]))
        return response


# -- the 07-01 code, reconstructed -----------------------------------------------------------
def order_event(order: orders.Order) -> dict[str, Any]:
    """The entry 07-01 put on the bus for a new order."""
    detail = json.dumps(outbox.order_payload(order))
    return {
        "Source": world.ORDER_SOURCE,
        "DetailType": outbox.ORDER_CREATED,
        "Detail": detail,
        "EventBusName": world.BUS,
    }


def put_with_retries(bus: Any, entry: dict[str, Any], attempts: int, resend_refused: bool = False) -> None:
    """put_events, retried when the CALL fails. It cannot retry for a process that no longer exists.

    A call that succeeds can still refuse the entry (FailedEntryCount 1): only
    `resend_refused` reads the answer and sends it again; otherwise it is gone.
    """
    for attempt in range(1, attempts + 1):
        try:
            answer = bus.put_events(Entries=[entry])
        except ClientError:
            if attempt == attempts:
                raise
            continue
        if not (resend_refused and answer.get("FailedEntryCount", 0)):
            return


@dataclass(frozen=True)
class Shop:
    """What 07-01's order code talks to: the database, the bus and how it retries, the instant, where it may die."""

    conn: Any
    bus: Any
    now: dt.datetime
    checkpoint: Callable[[str], None]
    attempts: int = 1
    resend_refused: bool = False


def create_order_07_01(shop: Shop, order: orders.Order) -> None:
    """RECONSTRUCTION of 07-01: INSERT the order and COMMIT, then publish. Two writes, no transaction between."""
    with shop.conn.transaction():
        shop.conn.execute(
            "INSERT INTO pedidos (pedido_id, importe, creado_en) VALUES (%s, %s, %s)",
            (order.pedido_id, order.importe, shop.now),
        )
    shop.checkpoint("after_commit")  # the process may die here: the order exists, nobody will publish it
    put_with_retries(shop.bus, order_event(order), shop.attempts, shop.resend_refused)


def create_order_publish_first(shop: Shop, order: orders.Order) -> None:
    """07-01 the other way round: publish, then INSERT and COMMIT. A death between them announces a ghost."""
    put_with_retries(shop.bus, order_event(order), shop.attempts, shop.resend_refused)
    shop.checkpoint("after_publish")
    with shop.conn.transaction():
        shop.conn.execute(
            "INSERT INTO pedidos (pedido_id, importe, creado_en) VALUES (%s, %s, %s)",
            (order.pedido_id, order.importe, shop.now),
        )


# -- the experiments ---------------------------------------------------------------------------
def fresh_tables(conn: Any) -> None:
    """Create the tables if needed and empty them (ids start at 1 again)."""
    outbox.create_tables(conn)
    with conn.transaction():
        conn.execute("TRUNCATE pedidos, outbox RESTART IDENTITY")


def crash_schedule(config: CrashConfig, seed: int) -> list[bool]:
    """For each order, whether the process dies right after its COMMIT (seeded, shared by every design)."""
    rng = random.Random(seed)
    return [rng.random() < config.crash_probability for _ in range(config.orders)]


def _orders(config: CrashConfig) -> list[tuple[orders.Order, dt.datetime]]:
    """The orders of a run, one every 11 s from the lesson's Friday (their creado_en)."""
    start = clock.LESSON_START
    return [
        (
            orders.Order(orders.order_id(100_001 + n), Decimal("48.20")),
            start + dt.timedelta(seconds=ORDER_SPACING_SECONDS * n),
        )
        for n in range(config.orders)
    ]


def _dies_when(flag: bool) -> Callable[[str], None]:
    def checkpoint(step: str) -> None:
        if flag:
            raise outbox.Crash(step)

    return checkpoint


def _result(design: str, config: CrashConfig, crashes: int, conn: Any, pedido_ids: list[str]) -> LossResult:
    with conn.transaction():
        stored = {row[0] for row in conn.execute("SELECT pedido_id FROM pedidos").fetchall()}
    seen = Counter(pedido_ids)
    return LossResult(
        design=design,
        orders=config.orders,
        crashes=crashes,
        in_database=len(stored),
        published=len(set(seen) & stored),
        lost=len(stored - set(seen)),
        phantom=len(set(seen) - stored),
        duplicated=sum(count - 1 for count in seen.values()),
    )


def run_dual_write(
    db: Database, events: Any, config: CrashConfig, seed: int, publish_first: bool = False
) -> LossResult:
    """Every order through the 07-01 code (or its reverse), a process death injected after the first write."""
    if config.refuse_probability:  # a model: moto never refuses part of a call
        events = event_faults.FaultyEvents(events, event_faults.PartialFailures(config.refuse_probability, seed + 3))
    bus = BusTap(events, random.Random(seed + 1), config.throttle_probability)
    create = create_order_publish_first if publish_first else create_order_07_01
    schedule = crash_schedule(config, seed)
    with db.connect() as conn:
        fresh_tables(conn)
        for (order, now), dies in zip(_orders(config), schedule, strict=True):
            # A Crash: the process is gone; a ClientError: the call failed for good. The next order starts afresh.
            with contextlib.suppress(outbox.Crash, ClientError):
                shop = Shop(conn, bus, now, _dies_when(dies), config.put_events_attempts, config.resend_refused)
                create(shop, order)
        parts = [_("publish, then INSERT") if publish_first else _("07-01: INSERT, then put_events")]
        if config.throttle_probability:
            share = number(config.throttle_probability, ".0%")
            parts.append(_("{share} of calls throttled").format(share=share))
        if config.refuse_probability:
            parts.append(_("{share} of entries refused").format(share=number(config.refuse_probability, ".0%")))
        if config.put_events_attempts > 1:
            attempts = config.put_events_attempts
            parts.append(ngettext("{count} attempt", "{count} attempts", attempts).format(count=number(attempts)))
        if config.resend_refused:
            parts.append(_("refused entries re-sent"))
        return _result(", ".join(parts), config, sum(schedule), conn, [detail["pedido_id"] for detail in bus.accepted])


def run_outbox(
    db: Database, events: Any, config: CrashConfig, seed: int, publisher_dies_in_round: int | None = None
) -> tuple[LossResult, BusTap]:
    """The same orders and deaths with the outbox, drained by `config.publishers` publishers in rounds.

    Each round every publisher claims a batch while the others hold theirs
    (SKIP LOCKED hands each a different one), then each publishes and commits;
    each may die between publishing and marking with the same probability.
    `publisher_dies_in_round` also kills the first publisher there, for sure.
    """
    schedule = crash_schedule(config, seed)
    rng = random.Random(seed + 2)
    bus = BusTap(events)
    with db.connect() as conn:
        fresh_tables(conn)
        for order, now in _orders(config):
            outbox.place_order(conn, order, now)  # a death after this COMMIT loses nothing: the event is a row
        links = [db.connect() for _ in range(config.publishers)]
        try:
            publishers = [outbox.Publisher(link, outbox.EventBusSink(bus)) for link in links]
            deaths = _drain(publishers, now, rng, config.crash_probability, publisher_dies_in_round)
        finally:
            for link in links:
                link.close()
        result = _result("outbox", config, sum(schedule) + deaths, conn, [d["pedido_id"] for d in bus.accepted])
    return result, bus


def _drain(
    publishers: list[outbox.Publisher], now: dt.datetime, rng: random.Random, p_death: float, forced: int | None
) -> int:
    """Poll once a second until the outbox is empty; return how many publishers died."""
    deaths = 0
    for round_number in range(1, MAX_ROUNDS + 1):
        now += dt.timedelta(seconds=outbox.POLL_SECONDS)
        batches = [publisher.claim_batch() for publisher in publishers]  # every lock held at once
        if not any(batches):
            for publisher in publishers:
                publisher.conn.rollback()
            return deaths
        for index, (publisher, rows) in enumerate(zip(publishers, batches, strict=True)):
            dies = rng.random() < p_death or (index == 0 and round_number == forced)
            try:
                publisher.finish(rows, now, _dies_when(dies and bool(rows)))
            except outbox.Crash:
                deaths += 1  # rolled back: the rows are still unpublished and will go out again
    raise RuntimeError(_("the outbox was not empty after {rounds} rounds").format(rounds=MAX_ROUNDS))


def monthly_losses(
    crash_probability: float = MARTA_RATE, orders_per_month: int = ORDERS_PER_MONTH, months: int = 12, seed: int = 1
) -> list[int]:
    """Events lost in each of `months` simulated months (one seeded death draw per order, no database)."""
    rng = random.Random(seed)
    losses = []
    for _month in range(months):
        lost, position = 0, 0
        while True:  # jump from one death to the next: geometric gaps, same law as one draw per order
            position += 1 + int(math.log(1.0 - rng.random()) / math.log(1.0 - crash_probability))
            if position > orders_per_month:
                break
            lost += 1
        losses.append(lost)
    return losses
