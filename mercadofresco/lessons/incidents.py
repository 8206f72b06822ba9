"""Seeded DLQ incidents: the three kinds of notebook 10 and exercise 2's 340 messages (notebooks 10-11, lab 2).

Every incident is generated from a seed and played in time order on the
virtual clock, so each message's SentTimestamp is the instant it was sent.

- `seed_exercise2_incident`: the lesson's Monday. 340 orders with "version": 2,
  sent between Sunday 22:04 and 23:51 to `cola-mercadofresco-pedidos`, each
  received four times by a consumer that expects version 1 and moved by the
  RedrivePolicy (so the first inspection reads ApproximateReceiveCount 5 and
  no kept reason); the clock ends at Monday 09:00, with a healthy order 12 s old
  in the source queue.
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
from mercadofresco.errors import check_range
from mercadofresco.models import alarm_evaluation
from mercadofresco.patterns import dlq

SUNDAY_2204 = dt.datetime(2026, 10, 18, 22, 4, tzinfo=MADRID)
SUNDAY_2351 = dt.datetime(2026, 10, 18, 23, 51, tzinfo=MADRID)
MONDAY_0900 = dt.datetime(2026, 10, 19, 9, 0, tzinfo=MADRID)
EXERCISE2_MESSAGES = 340
SOURCE_OLDEST_SECONDS = 12
ALARM_STEP_SECONDS = 300  # how often the alarm model evaluates (the alarms' period)
CHUNK_SECONDS = 60  # the failing consumer works through what arrived in the last minute


class SeedError(dlq.MercadoFrescoError):
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
    expected_kind: str
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
    mf: world.World, reloj: VirtualClock, seed: int = 0, count: int = EXERCISE2_MESSAGES
) -> Incident:
    """Exercise 2's world: 340 version-2 orders in mercadofresco-pedidos-fallidos; the clock at Monday 09:00.

    A smaller `count` keeps the same shape for quick experiments (moto slows down as a queue grows).
    """
    check_range("count", count, 2, 1_000)
    if reloj.now() > SUNDAY_2204:
        raise SeedError(f"the clock is at {reloj.now():%a %d %H:%M}; the incident starts Sunday 18 22:04")
    rng = random.Random(seed)
    pair = mf.reset_orders_queue(visibility_timeout_seconds=120, max_receive_count=4)
    sqs = mf.sqs
    ids = [orders.order_id(200_000 + i) for i in range(count)]
    chunk_start: dt.datetime | None = None
    pending = 0
    for pedido_id, at in zip(ids, spread(rng, SUNDAY_2204, SUNDAY_2351, count), strict=True):
        if chunk_start is not None and (pending == 10 or (at - chunk_start).total_seconds() >= CHUNK_SECONDS):
            _fail_until_dead_lettered(sqs, reloj, pair)
            chunk_start, pending = None, 0
        reloj.advance_to(at)
        chunk_start = chunk_start or reloj.now()
        importe = Decimal(rng.randint(900, 12_000)) / 100
        sqs.send_message(QueueUrl=pair.url, MessageBody=version2_body(pedido_id, importe))
        pending += 1
    _fail_until_dead_lettered(sqs, reloj, pair)
    reloj.advance_to(MONDAY_0900 - dt.timedelta(seconds=SOURCE_OLDEST_SECONDS))
    orders.send_order(sqs, pair.url, orders.Order(orders.order_id(210_001), Decimal("31.75")))
    reloj.advance_to(MONDAY_0900)
    return Incident("version-2", pair.dlq_url, pair.url, count, SUNDAY_2204, SUNDAY_2351, "poison", tuple(ids))


def _fail_until_dead_lettered(sqs: Any, reloj: VirtualClock, pair: queues.QueuePair) -> None:
    """The old consumer receives each waiting message, rejects version 2, lets it return; the 5th receive moves it."""
    for _ in range(5):
        messages = sqs.receive_message(QueueUrl=pair.url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages", [])
        if messages:  # parse_order raised: nothing deleted; the message is handed back at once
            entries = [
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
                for i, m in enumerate(messages)
            ]
            sqs.change_message_visibility_batch(QueueUrl=pair.url, Entries=entries)
        reloj.advance(0.01)  # under a frozen clock a message shows again only once time moves


# -- the three kinds, as a reason-keeping consumer leaves them -------------------------------------
def _kinds(rng: random.Random) -> list[tuple[str, str, dt.datetime, dt.datetime, int]]:
    """(name, expected kind, first, last, count) of each seeded DLQ."""
    saturday = dt.datetime(2026, 10, 17, tzinfo=MADRID)
    return [
        (
            "rafaga-transitoria",
            "transient",
            saturday.replace(hour=18, minute=12),
            saturday.replace(hour=18, minute=41),
            40,
        ),
        ("goteo-veneno", "poison", saturday, saturday + dt.timedelta(days=3), 30),
        ("goteo-datos", "data", saturday + dt.timedelta(hours=2), saturday + dt.timedelta(days=3, hours=1), 20),
        ("rafaga-version-2", "poison", SUNDAY_2204, SUNDAY_2351, 40),
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
    mf: world.World, reloj: VirtualClock, seed: int = 0, watch: str | None = None, watch_hours: float = 1.25
) -> Seeded:
    """Four DLQs, one per incident, filled in time order; the clock ends after the last message.

    With `watch` (an incident's name), both DLQ alarms of that incident's DLQ are
    evaluated every 5 minutes from its first message for `watch_hours`.
    """
    rng = random.Random(seed)
    plan, incidents = [], {}
    for index, (name, kind, first, last, count) in enumerate(_kinds(rng)):
        if reloj.now() > first:
            raise SeedError(f"the clock is at {reloj.now():%a %d %H:%M}; incident {name} starts {first:%a %d %H:%M}")
        pair = queues.create_queue_pair(
            mf.sqs,
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
        dlq.define_alarms(mf, f"{world.ORDERS_DLQ}-{watch}")
    for at, name, dlq_url, number in sorted(plan):
        while checks and checks[0] < at:
            seeded.alarm_rows.append(_check(mf, reloj, incidents[watch], checks.pop(0)))
        reloj.advance_to(at)
        body, reason = _failure(name, number, rng)
        dlq.dead_letter_copy(mf.sqs, dlq_url, body, reason, int(reloj.timestamp() * 1000))
    return seeded


def _alarm_instants(incident: Incident, hours: float) -> list[dt.datetime]:
    steps = int(hours * 3_600 // ALARM_STEP_SECONDS)
    # CloudWatch judges a period once it has ended: the first verdict comes 5 minutes after the first message.
    return [incident.first_sent + dt.timedelta(seconds=ALARM_STEP_SECONDS * i) for i in range(1, steps + 1)]


def _check(mf: world.World, reloj: VirtualClock, incident: Incident, at: dt.datetime) -> dict[str, Any]:
    """Both alarms of `incident`'s DLQ, evaluated at `at` from what the queue holds."""
    reloj.advance_to(at)
    return {
        "at": reloj.now(),
        **alarm_evaluation.check_dlq_alarms(mf, incident.dlq_url, at, f"{world.ORDERS_DLQ}-{incident.name}"),
    }


def first_alarm_at(rule: alarms.AlarmRule, arrivals: list[dt.datetime], until: dt.datetime) -> dt.datetime | None:
    """When `rule` would first go to ALARM on a DLQ that received messages at `arrivals` (nobody removes them).

    Pure replay for checking an alarm configuration against a seeded incident
    (lab 2): the DLQ count metric is the arrivals so far, the age metric the
    time since the first one; verdicts come at the end of each period from the
    first arrival, as in `seed_kinds`.
    """
    if rule.metric_name not in ("ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage"):
        raise ValueError(f"rule.metric_name must be a DLQ count or age metric; got {rule.metric_name!r}")
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
