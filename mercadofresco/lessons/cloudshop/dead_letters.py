"""Class 210's problem 3: billing's DLQ with 41,200 messages nobody looked at (notebook 18).

The DLQ is generated from a seed as plain data (moto slows down long before
41,200 messages), with class 210's composition:

- 38,900 valid orders from a 4-hour billing outage, 13 days before anyone looked;
- 2,180 orders from a producer that added a field, which the old function rejects
  (here `"version": 2` plus a new field, as in exercise 2);
- 120 orders with a negative amount from an integrator's bug.

Each carries the reason its consumer kept (class 210: store the reason with the
message). The functions classify all of it with the consumer's own parser,
count what the 14-day retention is about to delete, replay when each alarm
would have fired, and show on moto that a small sample really disappears when
its retention runs out.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from mercadofresco import alarms, orders, world
from mercadofresco.clock import MADRID, VirtualClock
from mercadofresco.errors import check_range
from mercadofresco.i18n import T_, _, moment, number
from mercadofresco.lessons import keys_and_table, show
from mercadofresco.lessons.dlq import incidents
from mercadofresco.patterns import dlq, idempotency
from mercadofresco.sims import lambda_scaling
from mercadofresco.sims.mass_redrive import MassRedriveResult

DAY = 86_400
RETENTION_SECONDS = 14 * DAY
CLASS_210 = {"transient": 38_900, "poison": 2_180, "data": 120}  # class 210's counts, by this package's kinds
OUTAGE_START = dt.datetime(2026, 11, 2, 10, 0, tzinfo=MADRID)  # billing goes down (our date; class 210 gives none)
OUTAGE_HOURS = 4
DISCOVERED_AFTER = dt.timedelta(days=13, hours=1)  # "the oldest: 13 days"
SCHEMA_FROM_DAY = 6  # the producer with the new field was deployed on day 6 (our assumption)
BILLING_QUEUE = "cola-cloudshop-facturacion"


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One message of billing's DLQ: when it was first sent, its body, and the reason its consumer kept.

    `kind` is not given: it is what the consumer's own parser says about the body
    (slots, and reasons shared between letters: 41,200 letters are few enough
    objects that Python's garbage collector does not stop the notebook to scan them).
    """

    sent_at: dt.datetime
    body: str
    reason: dlq.FailureReason
    kind: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", classify(self.body))


def classify(body: str) -> str:
    """Transient, poison or data: what the consumer's parser says about a body."""
    try:
        orders.parse_order(body)
    except orders.MalformedOrderError as exc:
        return "poison" if exc.kind == "schema" else "data"
    return "transient"


def billing_dlq(
    first_sent: dt.datetime = OUTAGE_START, seed: int = 0, counts: dict[str, int] | None = None
) -> list[DeadLetter]:
    """The 41,200 messages (or `counts` of each kind), in the order they arrived, from `first_sent` on."""
    counts = counts or CLASS_210
    for kind, how_many in counts.items():
        check_range(f"counts[{kind!r}]", how_many, 0, 100_000)
    rng = random.Random(seed)
    outage_end = first_sent + dt.timedelta(hours=OUTAGE_HOURS)
    discovered = first_sent + DISCOVERED_AFTER
    schema_from = first_sent + dt.timedelta(days=SCHEMA_FROM_DAY)
    letters = []
    spans = {
        "transient": (first_sent, outage_end),
        "poison": (schema_from, discovered),
        "data": (first_sent, discovered),
    }
    number = 800_000
    reasons = {kind: _reason(kind, Decimal(0)) for kind in ("transient", "poison")}  # the same for every letter
    for kind, (start, end) in spans.items():
        for at in _instants(rng, start, end, counts.get(kind, 0)):
            number += 1
            letters.append(_letter(kind, at, orders.order_id(number), Decimal(rng.randint(900, 12_000)) / 100, reasons))
    return sorted(letters, key=lambda letter: letter.sent_at)


def _instants(rng: random.Random, start: dt.datetime, end: dt.datetime, count: int) -> list[dt.datetime]:
    if count == 0:
        return []
    if count == 1:
        return [start]
    return incidents.spread(rng, start, end, count)


def order_body(pedido_id: str, importe: Decimal) -> str:
    """The same text as `orders.order_body` (sorted keys), written directly: json.dumps 41,200 times is slow."""
    return f'{{"importe": "{importe}", "pedido_id": "{pedido_id}", "version": 1}}'


def _letter(
    kind: str, at: dt.datetime, pedido_id: str, importe: Decimal, reasons: dict[str, dlq.FailureReason]
) -> DeadLetter:
    if kind == "transient":
        body = order_body(pedido_id, importe)
    elif kind == "poison":
        body = incidents.version2_body(pedido_id, importe)
    else:
        body = order_body(pedido_id, -importe)
    return DeadLetter(at, body, reasons.get(kind) or _reason(kind, importe))  # a data letter's reason names its importe


def _reason(kind: str, importe: Decimal) -> dlq.FailureReason:
    if kind == "transient":
        why = ("BillingUnavailableError", "503 from facturacion")
    elif kind == "poison":
        why = ("MalformedOrderError", "version 2, this consumer expects 1")
    else:
        why = ("MalformedOrderError", f"importe '{-importe}' must be a positive amount")
    return dlq.FailureReason(*why, "2.3.1", 5, BILLING_QUEUE)


def kind_of(letter: DeadLetter) -> str:
    """Transient, poison or data: the content is the proof, not the time it arrived."""
    return letter.kind


def breakdown(letters: list[DeadLetter]) -> list[dict[str, Any]]:
    """Every message classified, next to class 210's count and what to do with each kind."""
    counted = Counter(kind_of(letter) for letter in letters)
    action = {
        "transient": T_("redrive (billing is back), paced"),
        "poison": T_("update the function to read the new field, then redrive"),
        "data": T_("discard with a record; tell the integrator"),
    }
    return [  # a kind is compared by its English (`checklist.Measured`); T_() leaves it so, and a table shows it
        {"kind": kind, "messages": counted[kind], "class_210": CLASS_210[kind], "action": action[kind]}
        for kind in (T_("transient"), T_("poison"), T_("data"))
    ]


def miss_probability(population: int, of_kind: int, sample: int = 10) -> float:
    """Chance that a random sample of `sample` messages contains none of `of_kind` (hypergeometric)."""
    check_range("sample", sample, 1, population)
    return math.comb(population - of_kind, sample) / math.comb(population, sample)


def expiring(letters: list[DeadLetter], now: dt.datetime, days: int = 3) -> list[dict[str, Any]]:
    """How many messages SQS deletes in each of the next `days` days (retention counts from the first send)."""
    rows = []
    retention = dt.timedelta(seconds=RETENTION_SECONDS)
    for day in range(days):
        # deleted that day = sent_at + retention falls in it; the bounds move back instead of every letter forward
        start, end = now + dt.timedelta(days=day) - retention, now + dt.timedelta(days=day + 1) - retention
        gone = [x for x in letters if start <= x.sent_at < end]
        rows.append(
            {"day": f"+{day}", "expire": len(gone), "of_them_transient": sum(kind_of(x) == "transient" for x in gone)}
        )
    return rows


def alarm_rules() -> list[tuple[str, alarms.AlarmRule]]:
    """The DLQ alarms: the one CloudShop had (count > 0, to a channel nobody read) and class 210's two by age."""

    def rule(name: str, metric: str, threshold: float) -> alarms.AlarmRule:
        return alarms.AlarmRule(name, "AWS/SQS", metric, threshold, 300, dimensions=(("QueueName", BILLING_QUEUE),))

    return [
        (
            T_("count > 0 (existed; nobody subscribed)"),
            rule("fallidos-mensajes", "ApproximateNumberOfMessagesVisible", 0),
        ),
        (T_("oldest > 1 h (to on-call)"), rule("fallidos-antiguedad-1h", "ApproximateAgeOfOldestMessage", 3_600)),
        (T_("oldest > 7 days (escalate)"), rule("fallidos-antiguedad-7d", "ApproximateAgeOfOldestMessage", 7 * DAY)),
    ]


def alarm_instants(letters: list[DeadLetter], discovered: dt.datetime) -> dict[str, dt.datetime | None]:
    """When each alarm would first have gone to ALARM (None: not before `discovered`)."""
    arrivals = [letter.sent_at for letter in letters]
    return {label: incidents.first_alarm_at(rule, arrivals, discovered) for label, rule in alarm_rules()}


def alarm_times(letters: list[DeadLetter], discovered: dt.datetime) -> list[dict[str, Any]]:
    """When each alarm would first have fired, and how long before the first message expires."""
    first = min(letter.sent_at for letter in letters)
    first_expiry = first + dt.timedelta(seconds=RETENTION_SECONDS)
    return [
        {
            "alarm": label,
            "fires_after_first_message": show.duration(fired - first) if fired else T_("never"),
            "time_left_before_expiry": show.duration(first_expiry - fired) if fired else "-",
        }
        for label, fired in alarm_instants(letters, discovered).items()
    ]


def retention_on_moto(
    aws: world.World, clock: VirtualClock, letters: list[DeadLetter], sample: int = 20, seed: int = 0
) -> list[dict[str, Any]]:
    """A seeded sample of the outage's valid orders in a moto queue with 14 days of retention, read twice.

    The clock moves to each message's send time, so moto's own retention clock
    decides. Read on discovery day and two days later, when every message of
    the 4-hour outage has passed 14 days. (moto 5.2.5 never deletes an expired
    message; it stops delivering it, and a receive that meets one returns what
    it found before it, so the sample holds only messages that all expire.)
    """
    check_range("sample", sample, 1, 100)
    if clock.now() > letters[0].sent_at:
        said = _("the clock must be at or before the first message ({sent_at})")
        raise ValueError(said.format(sent_at=moment(letters[0].sent_at, "%Y-%m-%d %H:%M")))
    valid = [letter for letter in letters if kind_of(letter) == "transient"]
    chosen = sorted(random.Random(seed).sample(valid, sample), key=lambda letter: letter.sent_at)
    url = aws.sqs.create_queue(
        QueueName="cloudshop-facturacion-fallidos", Attributes={"MessageRetentionPeriod": str(RETENTION_SECONDS)}
    )["QueueUrl"]
    for letter in chosen:
        clock.advance_to(letter.sent_at)
        aws.sqs.send_message(QueueUrl=url, MessageBody=letter.body, MessageAttributes=letter.reason.attributes())
    rows = []
    discovered = letters[0].sent_at + DISCOVERED_AFTER
    for label, at in (
        (T_("discovered (day 13)"), discovered),
        (T_("two days later"), discovered + dt.timedelta(days=2)),
    ):
        clock.advance_to(at)
        found = dlq.inspect(aws.sqs, url, max_messages=sample)
        clock.advance(dlq.INSPECT_VISIBILITY_SECONDS + 1)
        rows.append({"read": label, "valid_orders_sent": sample, "still_in_the_dlq": len(found)})
    aws.sqs.delete_queue(QueueUrl=url)
    return rows


# -- the redrive, against class 210's figures ------------------------------------------------------
def redrive_rows(results: dict[str, MassRedriveResult]) -> list[dict[str, Any]]:
    """The simpy model's redrives, by label, next to what class 210 reports for the attempt of the same release.

    `concurrency` is the most the run's consumers could reach: the mapping's ceiling caps a documented ramp.
    """
    reported = {  # 9,400 a number, which a table writes in the edition's way; the rest as class 210 writes it
        "all_at_once": {"back_in_dlq": 9_400, "minutes": T_("38 (the incident)"), "rate": "-"},
        "paced": {"back_in_dlq": "0", "minutes": "6", "rate": "~120"},
    }
    rows = []
    for label, result in results.items():
        summary, config = result.summary(), result.config
        said = reported[config.release]
        mode = lambda_scaling.MODES.get(config.scaling)
        ceiling = mode.ceiling if mode else config.max_concurrency
        peak = max(row.db_connections for row in result.timeline)
        rows.append(
            {
                "run": label,
                "concurrency": min(config.max_concurrency, ceiling),
                "peak_db_connections": f"{number(peak)}/{number(config.db_connections)}",
                "back_in_dlq": summary["back_in_dlq"],
                "class_210_back": said["back_in_dlq"],
                "minutes": summary["minutes"],
                "class_210_minutes": said["minutes"],
                "msg_per_s": round(summary["processed"] / result.finished_seconds),
                "class_210_rate": said["rate"],
                "throttled": result.throttled_batches,
            }
        )
    return rows


# -- how long the key must live ---------------------------------------------------------------------
def key_after(aws: world.World, clock: VirtualClock, ttl_days: float, days_later: float) -> dict[str, Any]:
    """A confirmation email is sent; `days_later` the same event comes back (a DLQ redrive). Is it sent again?"""
    check_range("ttl_days", ttl_days, 0.01, 366)
    check_range("days_later", days_later, 0, 14)
    keys_and_table.empty_table(aws)
    store = idempotency.IdempotencyStore(aws.dynamodb, clock, ttl_seconds=int(ttl_days * DAY), lock_seconds=60)
    clave = idempotency.email_key("PED-2026-800001")
    sent: list[int] = []
    for wait in (0.0, days_later * DAY):
        clock.advance(wait)
        idempotency.run_once(store, clave, lambda: {"mensaje": sent.append(1) or len(sent)}, lambda exc: False)
    return {"key_ttl_days": ttl_days, "back_after_days": days_later, "emails_sent": len(sent)}
