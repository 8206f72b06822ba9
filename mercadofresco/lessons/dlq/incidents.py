"""Seeded DLQ incidents: the three kinds of notebook 10 and exercise 2's 340 messages (notebooks 10-11, lab 2).

Every incident is generated from a seed and played in time order on the
virtual clock, so each message's SentTimestamp is the instant it was sent.

- `seed_exercise2_incident`: the lesson's Monday. 340 orders with "version": 2,
  sent between Sunday 22:04 and 23:51 to `cola-mercadofresco-pedidos`, each
  received four times by a consumer that expects version 1 (it fails, and the
  message returns when its 120 s visibility runs out) and moved by the
  RedrivePolicy on the fifth receive, about 8 minutes after it was sent (so the
  first inspection reads ApproximateReceiveCount 5 and no kept reason); the
  clock ends at Monday 09:00, with a healthy order 12 s old in the source queue.
- `time_to_dead_letter`: how long one failing message takes to reach the DLQ.
- `seed_kinds`: four DLQs as a reason-keeping consumer leaves them: a transient
  burst (503s, 18:12-18:41), a poison trickle and a data trickle over three
  days, and a version-2 burst that looks transient and is poison.
- `first_alarm_at`: when an alarm configuration would first fire on an
  incident's arrivals (a pure replay, for checking a safeguard).
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from mercadofresco import alarms, orders, queues, world
from mercadofresco.clock import MADRID, VirtualClock
from mercadofresco.errors import MercadoFrescoError, check_range
from mercadofresco.i18n import _, moment
from mercadofresco.models import alarm_evaluation
from mercadofresco.patterns import dlq

SUNDAY_2204 = dt.datetime(2026, 10, 18, 22, 4, tzinfo=MADRID)
SUNDAY_2351 = dt.datetime(2026, 10, 18, 23, 51, tzinfo=MADRID)
MONDAY_0900 = dt.datetime(2026, 10, 19, 9, 0, tzinfo=MADRID)
EXERCISE2_MESSAGES = 340
SOURCE_OLDEST_SECONDS = 12
ALARM_STEP_SECONDS = 300  # how often the alarm model evaluates (the alarms' period)
POLL_SECONDS = 60  # the failing consumer sweeps the queue once a minute (Lambda polls continuously)


class SeedError(MercadoFrescoError):
    """An incident cannot be seeded from where the clock stands."""


@dataclass(frozen=True)
class Incident:
    """Where an incident's messages are and what they are."""

    name: str
    dlq_url: str
    source_url: str
    count: int
    first_sent: dt.datetime
    last_sent: dt.datetime
    expected_kind: dlq.FailureKind
    pedido_ids: tuple[str, ...]


def spread(rng: random.Random, start: dt.datetime, end: dt.datetime, count: int) -> list[dt.datetime]:
    """`count` sorted instants from `start` to `end`, both ends included (whole seconds)."""
    span = int((end - start).total_seconds())
    inner = sorted(rng.randint(1, span - 1) for _ in range(count - 2))
    return [start + dt.timedelta(seconds=s) for s in [0, *inner, span]]


def version2_body(pedido_id: str, importe: Decimal) -> str:
    """The new producer's body: version 2 (here it also carries a field the old consumer never saw)."""
    return f'{{"canal": "app", "importe": "{importe}", "pedido_id": "{pedido_id}", "version": 2}}'


def seed_exercise2_incident(
    aws: world.World, clock: VirtualClock, seed: int = 0, count: int = EXERCISE2_MESSAGES
) -> Incident:
    """Exercise 2's world: 340 version-2 orders in mercadofresco-pedidos-fallidos; the clock at Monday 09:00.

    Each order is sent at its own instant; a consumer that reads version 1 only
    sweeps the queue once a minute, fails every version-2 order and lets it come
    back after the queue's 120 s visibility, so the RedrivePolicy moves it on its
    fifth receive, 8-9 minutes after it was sent. A smaller `count` keeps the shape.
    """
    check_range("count", count, 2, 1_000)
    if clock.now() > SUNDAY_2204:
        said = _("the clock is at {now}; the incident starts Sunday 18 22:04")
        raise SeedError(said.format(now=moment(clock.now(), "%a %d %H:%M")))
    rng = random.Random(seed)
    pair = aws.reset_orders_queue(visibility_timeout_seconds=120, max_receive_count=4)
    sqs = aws.sqs
    ids = [orders.order_id(200_000 + i) for i in range(count)]
    sweep_at = SUNDAY_2204
    for pedido_id, at in zip(ids, spread(rng, SUNDAY_2204, SUNDAY_2351, count), strict=True):
        while sweep_at < at:
            sweep_at = _sweep(sqs, clock, pair, sweep_at)
        clock.advance_to(at)
        importe = Decimal(rng.randint(900, 12_000)) / 100
        sqs.send_message(QueueUrl=pair.url, MessageBody=version2_body(pedido_id, importe))
    while queues.queue_counts(sqs, pair.url) != {"visible": 0, "in_flight": 0, "delayed": 0}:
        for _sweep_round in range(10):  # ten sweeps between checks: every message gets its next receive
            sweep_at = _sweep(sqs, clock, pair, sweep_at)
    clock.advance_to(MONDAY_0900 - dt.timedelta(seconds=SOURCE_OLDEST_SECONDS))
    orders.send_order(sqs, pair.url, orders.Order(orders.order_id(210_001), Decimal("31.75")))
    clock.advance_to(MONDAY_0900)
    return Incident(
        "version-2", pair.dlq_url, pair.url, count, SUNDAY_2204, SUNDAY_2351, dlq.FailureKind.POISON, tuple(ids)
    )


def _sweep(sqs: Any, clock: VirtualClock, pair: queues.QueuePair, at: dt.datetime) -> dt.datetime:
    """The old consumer receives everything visible at `at` and fails it (nothing deleted); the next sweep's instant.

    Under a frozen clock a message shows again only after its visibility has passed
    (moto tests now > visible_at), hence the hundredth of a second on each minute.
    """
    clock.advance_to(at)
    received = 0 if queues.nothing_to_receive(sqs, pair.url) else 10  # a minute with nothing to fail
    while received == 10:  # fewer than 10: nothing else was visible (moto scans every visible message)
        answer = sqs.receive_message(QueueUrl=pair.url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        received = len(answer.get("Messages", []))  # parse_order raised on each: back after 120 s
    return at + dt.timedelta(seconds=POLL_SECONDS + 0.01)


def time_to_dead_letter(aws: world.World, clock: VirtualClock, visibility_timeout_seconds: int = 120) -> float:
    """Seconds from sending one order that always fails to its arrival in the DLQ, on moto.

    A fresh copy of the orders queue (`maxReceiveCount` from the world's config)
    and a consumer that receives the message as soon as it is visible and fails.
    """
    pair = aws.reset_orders_queue(visibility_timeout_seconds=visibility_timeout_seconds)
    sent = clock.timestamp()
    orders.send_order(aws.sqs, pair.url, orders.Order(orders.order_id(299_999), Decimal("48.20")))
    for _receive in range(aws.config.max_receive_count + 1):  # the receive after the last allowed one moves it
        aws.sqs.receive_message(QueueUrl=pair.url, WaitTimeSeconds=0)  # the consumer fails; nothing deleted
        if queues.queue_counts(aws.sqs, pair.dlq_url)["visible"]:
            return clock.timestamp() - sent
        clock.advance(visibility_timeout_seconds + 0.01)
    raise SeedError(_("the message never reached the DLQ; is the RedrivePolicy in place?"))


# -- the three kinds, as a reason-keeping consumer leaves them -------------------------------------
def _kinds(rng: random.Random) -> list[tuple[str, dlq.FailureKind, dt.datetime, dt.datetime, int]]:
    """(name, expected kind, first, last, count) of each seeded DLQ."""
    saturday = dt.datetime(2026, 10, 17, tzinfo=MADRID)
    return [
        (
            "rafaga-transitoria",
            dlq.FailureKind.TRANSIENT,
            saturday.replace(hour=18, minute=12),
            saturday.replace(hour=18, minute=41),
            40,
        ),
        ("goteo-veneno", dlq.FailureKind.POISON, saturday, saturday + dt.timedelta(days=3), 30),
        (
            "goteo-datos",
            dlq.FailureKind.DATA,
            saturday + dt.timedelta(hours=2),
            saturday + dt.timedelta(days=3, hours=1),
            20,
        ),
        ("rafaga-version-2", dlq.FailureKind.POISON, SUNDAY_2204, SUNDAY_2351, 40),
    ]


def _failure(name: str, number: int, rng: random.Random) -> tuple[str, dlq.FailureReason]:
    """The body and the reason a consumer kept for one message of incident `name`."""
    pedido_id, importe = orders.order_id(number), Decimal(rng.randint(900, 12_000)) / 100
    valid = orders.order_body(orders.Order(pedido_id, importe))
    source = world.ORDERS_QUEUE
    if name == "rafaga-transitoria":
        return valid, dlq.FailureReason("GatewayUnavailableError", "503 Service Unavailable", "1.4.0", 4, source)
    if name == "goteo-veneno":
        body = f'{{"pedido_id": "{pedido_id}", "version": 1}}'  # a producer path that forgets importe
        return body, dlq.FailureReason("MalformedOrderError", "missing field(s): importe", "1.4.0", 4, source)
    if name == "goteo-datos":
        body = orders.order_body(orders.Order(pedido_id, -importe))  # an integrator's negative amounts
        reason = f"importe '{-importe}' must be a positive amount"
        return body, dlq.FailureReason("MalformedOrderError", reason, "1.4.0", 4, source)
    body = version2_body(pedido_id, importe)
    return body, dlq.FailureReason("MalformedOrderError", "version 2, this consumer expects 1", "1.4.0", 4, source)


@dataclass
class Seeded:
    """The incidents of `seed_kinds`, and the alarm evaluations made while one of them played."""

    incidents: dict[str, Incident]
    alarm_rows: list[dict[str, Any]] = field(default_factory=list)


def seed_kinds(
    aws: world.World, clock: VirtualClock, seed: int = 0, watch: str | None = None, watch_hours: float = 1.25
) -> Seeded:
    """Four DLQs, one per incident, filled in time order; the clock ends after the last message.

    With `watch` (an incident's name), both DLQ alarms of that incident's DLQ are
    evaluated every 5 minutes from its first message for `watch_hours`.
    """
    rng = random.Random(seed)
    plan, incidents = [], {}
    for index, (name, kind, first, last, count) in enumerate(_kinds(rng)):
        if clock.now() > first:
            said = _("the clock is at {now}; incident {name} starts {start}")
            now, start = moment(clock.now(), "%a %d %H:%M"), moment(first, "%a %d %H:%M")
            raise SeedError(said.format(now=now, name=name, start=start))
        pair = queues.create_queue_pair(
            aws.sqs,
            f"{world.ORDERS_QUEUE}-{name}",
            f"{world.ORDERS_DLQ}-{name}",
            visibility_timeout_seconds=120,
            max_receive_count=4,
        )
        numbers = [300_000 + 1_000 * index + i for i in range(count)]
        plan += [(at, name, pair.dlq_url, n) for at, n in zip(spread(rng, first, last, count), numbers, strict=True)]
        ids = tuple(map(orders.order_id, numbers))
        incidents[name] = Incident(name, pair.dlq_url, pair.url, count, first, last, kind, ids)
    seeded = Seeded(incidents)
    checks = _alarm_instants(incidents[watch], watch_hours) if watch else []
    if watch:
        dlq.define_alarms(aws.client("cloudwatch"), aws.alerts_topic_arn, f"{world.ORDERS_DLQ}-{watch}")
    for at, name, dlq_url, number in sorted(plan):
        while checks and checks[0] < at:
            seeded.alarm_rows.append(_check(aws, clock, incidents[watch], checks.pop(0)))
        clock.advance_to(at)
        body, reason = _failure(name, number, rng)
        dlq.dead_letter_copy(aws.sqs, dlq_url, body, reason, int(clock.timestamp() * 1000))
    return seeded


def _alarm_instants(incident: Incident, hours: float) -> list[dt.datetime]:
    steps = int(hours * 3_600 // ALARM_STEP_SECONDS)
    # CloudWatch judges a period once it has ended: the first verdict comes 5 minutes after the first message.
    return [incident.first_sent + dt.timedelta(seconds=ALARM_STEP_SECONDS * i) for i in range(1, steps + 1)]


def _check(aws: world.World, clock: VirtualClock, incident: Incident, at: dt.datetime) -> dict[str, Any]:
    """Both alarms of `incident`'s DLQ, evaluated at `at` from what the queue holds."""
    clock.advance_to(at)
    return {
        "at": clock.now(),
        **alarm_evaluation.check_dlq_alarms(aws, incident.dlq_url, at, f"{world.ORDERS_DLQ}-{incident.name}"),
    }


def first_alarm_at(rule: alarms.AlarmRule, arrivals: list[dt.datetime], until: dt.datetime) -> dt.datetime | None:
    """When `rule` would first go to ALARM on a DLQ that received messages at `arrivals` (nobody removes them).

    Pure replay for checking an alarm configuration against a seeded incident
    (lab 2): the DLQ count metric is the arrivals so far, the age metric the
    time since the first one; verdicts come at the end of each period from the
    first arrival, as in `seed_kinds`.
    """
    if rule.metric_name not in ("ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage"):
        said = _("rule.metric_name must be a DLQ count or age metric; got {metric_name}")
        raise ValueError(said.format(metric_name=repr(rule.metric_name)))
    if not arrivals:
        return None
    first = min(arrivals)
    at = first + dt.timedelta(seconds=rule.period_seconds)
    while at <= until:
        if rule.metric_name == "ApproximateNumberOfMessagesVisible":
            value = float(sum(1 for arrival in arrivals if arrival <= at))
        else:
            value = (at - first).total_seconds()
        if rule.breached_by(value):
            return at
        at += dt.timedelta(seconds=rule.period_seconds)
    return None
