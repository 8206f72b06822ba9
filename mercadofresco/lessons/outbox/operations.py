"""Operating the outbox (notebook 13): the publisher stops, the backlog grows, the two alarms fire.

A stopped publisher is a silent, global failure: every order is saved and no event
leaves. Orders arrive at Friday's 900 an hour; the publisher is down for 40
minutes, then comes back. Every two minutes the alarms look at the table: pending
rows (> 500) and the age of the oldest (> 60 s). moto never evaluates alarms, so
`models.alarm_evaluation` does (a model), setting each alarm's state in moto and
notifying `alertas-mercadofresco` on a change.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from mercadofresco import alarms, orders, world
from mercadofresco.clock import VirtualClock
from mercadofresco.errors import check_range
from mercadofresco.lessons.outbox.experiments import fresh_tables
from mercadofresco.models import alarm_evaluation
from mercadofresco.patterns import outbox
from mercadofresco.runtime.database import Database


@dataclass(frozen=True)
class OutageConfig:
    """Orders per hour, how long the publisher is down, how long we watch, how often the alarms look."""

    orders_per_hour: int = 900
    down_minutes: int = 40
    watch_minutes: int = 45
    period_seconds: int = 120

    def __post_init__(self) -> None:
        check_range("orders_per_hour", self.orders_per_hour, 60, 3_600)
        check_range("down_minutes", self.down_minutes, 1, 120)
        check_range("watch_minutes", self.watch_minutes, self.down_minutes, 180)
        check_range("period_seconds", self.period_seconds, 10, 300)


def stopped_publisher(
    db: Database, aws: world.World, clock: VirtualClock, config: OutageConfig = OutageConfig()
) -> list[dict[str, Any]]:
    """One row per alarm period: pending rows, oldest age, each alarm's state (virtual time moves)."""
    rules = outbox.alarm_rules(config.period_seconds)
    cloudwatch, sns = aws.client("cloudwatch"), aws.client("sns")
    for rule in rules:
        alarms.define(cloudwatch, rule, aws.alerts_topic_arn)
    spacing = 3_600 / config.orders_per_hour
    start, placed, rows = clock.now(), 0, []
    with db.connect() as conn, db.connect() as link:
        fresh_tables(conn)
        publisher = outbox.Publisher(link, outbox.EventBusSink(aws.client("events")))
        for minute in range(1, config.watch_minutes * 60 // config.period_seconds + 1):
            until = start + dt.timedelta(seconds=minute * config.period_seconds)
            arrived = []  # the period's orders, each at its own instant
            while start + dt.timedelta(seconds=placed * spacing) < until:
                at = start + dt.timedelta(seconds=placed * spacing)
                arrived.append((orders.Order(orders.order_id(600_001 + placed), Decimal("48.20")), at))
                placed += 1
            # One transaction for the period (10x faster than one each): the publisher only looks after it, so
            # what it and the alarms see is the same.
            outbox.place_orders(conn, arrived)
            clock.advance_to(until)
            if (clock.now() - start).total_seconds() > config.down_minutes * 60:
                while publisher.run_once(clock.now()):
                    pass  # back up: drain the backlog
            seen = outbox.backlog(conn, clock.now())
            states = [
                alarm_evaluation.evaluate(cloudwatch, sns, rule, value, clock.now()).state
                for rule, value in zip(rules, (seen.pending, seen.oldest_seconds), strict=True)
            ]
            rows.append(
                {
                    "minute": round((clock.now() - start).total_seconds() / 60, 1),
                    "pending": seen.pending,
                    "oldest_seconds": round(seen.oldest_seconds),
                    "pending_alarm": states[0],
                    "age_alarm": states[1],
                }
            )
    return rows


def first_alarm_minutes(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    """The minute at which each alarm first went to ALARM (None if it never did)."""
    return {
        name: next((row["minute"] for row in rows if row[name] == "ALARM"), None)
        for name in ("pending_alarm", "age_alarm")
    }
