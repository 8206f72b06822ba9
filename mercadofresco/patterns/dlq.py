"""Dead-letter queues: keep the reason, inspect without deleting, classify, alarm, discard (notebooks 10-11).

A message in `mercadofresco-pedidos-fallidos` is a question nobody has answered
yet. The tools here answer it without destroying the evidence:

- `give_up`: a consumer that stops trying copies the message to the DLQ with
  why (error class, message, consumer version, attempts) as message
  attributes, then deletes the original. A message moved by the RedrivePolicy
  carries no reason: the content has to speak for it.
- `inspect`: read up to 10 messages with a 5 s visibility timeout and never
  delete; if the script dies they are back in 5 s. Each read is a receive:
  on a live source queue it spends one of the message's maxReceiveCount.
- `classify`: poison, transient or data (`FailureKind`). The time distribution
  (`TimeShape`: a burst or a trickle) and the receive counts are clues; the
  content is the proof. The verdict carries its evidence as data; the lesson's
  display (`lessons.dlq.figures`) words it.
- `alarm_rules` / `define_alarms`: messages visible > 0 over 5 minutes, and the
  oldest message older than 1 hour (`models.alarm_evaluation.check_dlq_alarms`
  evaluates them, since moto publishes no SQS metrics and evaluates no alarm).
- `discard`: remove messages on purpose and return the record of who, when, why.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass
from enum import Enum
from typing import Any

from mercadofresco import alarms, names, orders
from mercadofresco.errors import MercadoFrescoError, check_range
from mercadofresco.i18n import T_, _, ngettext

INSPECT_VISIBILITY_SECONDS = 5
BURST_WINDOW_SECONDS = 3 * 3_600  # a burst: nine in ten messages inside three hours
BURST_SHARE = 0.9
REASON_PREFIX = "motivo-"


class FailureKind(Enum):
    """What a DLQ's messages have in common: the runbook's verdict."""

    POISON = T_("poison")  # the message itself cannot be read: fix the consumer, then redrive
    TRANSIENT = T_("transient")  # a valid message whose dependency failed: redrive
    DATA = T_("data")  # a readable message with an impossible value: discard with a record


class TimeShape(Enum):
    """How a DLQ's messages are spread in time: a clue to the verdict, never the proof."""

    BURST = T_("burst")  # nine in ten messages inside three hours
    TRICKLE = T_("trickle")


class DiscardRefusedError(MercadoFrescoError):
    """A discard without who and why, or of messages the DLQ does not hold."""


@dataclass(frozen=True)
class FailureReason:
    """Why a consumer gave up on a message; travels as message attributes motivo-*."""

    error_class: str
    error: str
    consumer_version: str
    attempts: int
    source_queue: str

    def attributes(self) -> dict[str, dict[str, str]]:
        values = {
            "clase": self.error_class,
            "error": self.error[:500],
            "version-consumidor": self.consumer_version,
            "intentos": str(self.attempts),
            "cola-origen": self.source_queue,
        }
        return {REASON_PREFIX + name: {"DataType": "String", "StringValue": v} for name, v in values.items()}

    @classmethod
    def from_attributes(cls, attributes: dict[str, Any]) -> FailureReason | None:
        """The reason a message carries, or None if it was moved by the RedrivePolicy."""
        if REASON_PREFIX + "clase" not in attributes:
            return None
        value = {name[len(REASON_PREFIX) :]: a["StringValue"] for name, a in attributes.items()}
        return cls(
            value["clase"], value["error"], value["version-consumidor"], int(value["intentos"]), value["cola-origen"]
        )


@dataclass(frozen=True)
class Sample:
    """One inspected DLQ message, as the runbook's step 2 reads it."""

    message_id: str
    body: str
    sent_at: dt.datetime
    receive_count: int
    reason: FailureReason | None
    problem: str | None  # what parse_order says is wrong with the body, or None
    problem_kind: str | None  # "schema" (the shape is wrong), "value" (a value is impossible) or None


@dataclass(frozen=True)
class Classification:
    """The verdict and the evidence behind it, as counts: (value, messages) pairs, most common first."""

    kind: FailureKind
    time_shape: TimeShape
    messages: int
    first_sent: dt.datetime
    last_sent: dt.datetime
    receive_counts: tuple[tuple[int, int], ...]  # by receive count, ascending
    problems: tuple[tuple[str, int], ...]  # what the consumer's parser says about the bodies
    kept_reasons: tuple[tuple[str, int], ...]  # the error classes the consumers kept


def give_up(sqs: Any, message: dict[str, Any], source_url: str, dlq_url: str, reason: FailureReason) -> None:
    """Copy `message` to the DLQ with its reason and original send time, then delete it from the source."""
    dead_letter_copy(sqs, dlq_url, message["Body"], reason, int(message["Attributes"]["SentTimestamp"]))
    sqs.delete_message(QueueUrl=source_url, ReceiptHandle=message["ReceiptHandle"])


def dead_letter_copy(sqs: Any, dlq_url: str, body: str, reason: FailureReason, sent_ms: int) -> None:
    """Put `body` in the DLQ with its reason and the time it was first sent (epoch milliseconds)."""
    extra = {"enviado-en": {"DataType": "Number", "StringValue": str(sent_ms)}}
    sqs.send_message(QueueUrl=dlq_url, MessageBody=body, MessageAttributes={**reason.attributes(), **extra})


def content_problem(body: str, expected_version: int = orders.SCHEMA_VERSION) -> str | None:
    """What the consumer's own parser says is wrong with `body` (None if it is a valid order)."""
    error = _malformed(body, expected_version)
    return error.reason if error else None


def _malformed(body: str, expected_version: int) -> orders.MalformedOrderError | None:
    try:
        orders.parse_order(body, expected_version)
    except orders.MalformedOrderError as exc:
        return exc
    return None


def _sample(message: dict[str, Any], expected_version: int) -> Sample:
    attributes = message.get("MessageAttributes", {})
    sent_ms = attributes.get("enviado-en", {}).get("StringValue") or message["Attributes"]["SentTimestamp"]
    reason = FailureReason.from_attributes(attributes)
    error = _malformed(message["Body"], expected_version)
    return Sample(
        message_id=message["MessageId"],
        body=message["Body"],
        sent_at=dt.datetime.fromtimestamp(int(sent_ms) / 1000, dt.UTC),
        # a kept reason counts the consumer's attempts; the copy's own count only counts inspections
        receive_count=reason.attempts if reason else int(message["Attributes"]["ApproximateReceiveCount"]),
        reason=reason,
        problem=error.reason if error else None,
        problem_kind=error.kind if error else None,
    )


def inspect(
    sqs: Any, dlq_url: str, max_messages: int = 10, expected_version: int = orders.SCHEMA_VERSION
) -> list[Sample]:
    """Read up to `max_messages` with a 5 s visibility timeout. Deletes nothing: they come back in 5 s."""
    check_range("max_messages", max_messages, 1, 1_000)
    seen: dict[str, Sample] = {}
    while len(seen) < max_messages:
        batch = sqs.receive_message(
            QueueUrl=dlq_url,
            MaxNumberOfMessages=min(10, max_messages - len(seen)),
            VisibilityTimeout=INSPECT_VISIBILITY_SECONDS,
            WaitTimeSeconds=0,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not batch:
            break
        for message in batch:
            seen[message["MessageId"]] = _sample(message, expected_version)
    return sorted(seen.values(), key=lambda s: s.sent_at)


def time_shape(samples: list[Sample]) -> TimeShape:
    """A burst if nine in ten messages fall inside three hours, else a trickle."""
    if not samples:
        raise ValueError(_("samples must not be empty: inspect the DLQ first"))
    times = sorted(s.sent_at.timestamp() for s in samples)
    needed = max(1, int(BURST_SHARE * len(times) + 0.999))
    tightest = min(times[i + needed - 1] - times[i] for i in range(len(times) - needed + 1))
    return TimeShape.BURST if tightest <= BURST_WINDOW_SECONDS else TimeShape.TRICKLE


def classify(samples: list[Sample]) -> Classification:
    """Poison, transient or data: the time shape is a clue, the content (and a kept reason) the proof."""
    if not samples:
        raise ValueError(_("samples must not be empty: inspect the DLQ first"))
    kinds = Counter(s.problem_kind for s in samples if s.problem_kind)
    if kinds["schema"] >= kinds["value"] and kinds["schema"]:
        kind = FailureKind.POISON
    elif kinds["value"]:
        kind = FailureKind.DATA
    else:
        kind = FailureKind.TRANSIENT  # every body is a valid order: the dependency failed, not the message
    return Classification(
        kind=kind,
        time_shape=time_shape(samples),
        messages=len(samples),
        first_sent=min(s.sent_at for s in samples),
        last_sent=max(s.sent_at for s in samples),
        receive_counts=tuple(sorted(Counter(s.receive_count for s in samples).items())),
        problems=tuple(Counter(s.problem for s in samples if s.problem).most_common()),
        kept_reasons=tuple(Counter(s.reason.error_class for s in samples if s.reason).most_common()),
    )


# -- alarms, computed from the queue ------------------------------------------------------
def alarm_rules(dlq_name: str = names.ORDERS_DLQ) -> tuple[alarms.AlarmRule, alarms.AlarmRule]:
    """The two DLQ alarms: any message visible over 5 minutes, and the oldest older than 1 hour."""
    dimensions = (("QueueName", dlq_name),)
    count = alarms.AlarmRule(
        f"{dlq_name}-mensajes", "AWS/SQS", "ApproximateNumberOfMessagesVisible", 0, 300, dimensions=dimensions
    )
    age = alarms.AlarmRule(
        f"{dlq_name}-antiguedad", "AWS/SQS", "ApproximateAgeOfOldestMessage", 3_600, 300, dimensions=dimensions
    )
    return count, age


def define_alarms(cloudwatch: Any, alerts_topic_arn: str, dlq_name: str = names.ORDERS_DLQ) -> None:
    """Create both DLQ alarms in CloudWatch, notifying the topic `alerts_topic_arn` (alertas-mercadofresco)."""
    for rule in alarm_rules(dlq_name):
        alarms.define(cloudwatch, rule, alerts_topic_arn)


# -- discard with a record ---------------------------------------------------------------
def discard(
    sqs: Any, dlq_url: str, message_ids: set[str], who: str, why: str, now: dt.datetime
) -> list[dict[str, Any]]:
    """Delete the given messages from the DLQ on purpose; return one record per message (who, when, why, body)."""
    if not who.strip() or len(why.strip()) < 10:
        raise DiscardRefusedError(_("a discard needs who and a reason of at least {count} characters").format(count=10))
    records, wanted = [], set(message_ids)
    while wanted:
        batch = sqs.receive_message(
            QueueUrl=dlq_url, MaxNumberOfMessages=10, VisibilityTimeout=INSPECT_VISIBILITY_SECONDS, WaitTimeSeconds=0
        ).get("Messages", [])
        if not batch:
            break
        for message in batch:
            if message["MessageId"] in wanted:
                sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"])
                wanted.discard(message["MessageId"])
                records.append(
                    {"message_id": message["MessageId"], "quien": who, "cuando": now.isoformat(), "por_que": why}
                    | {"cuerpo": message["Body"]}
                )
    if wanted:
        said = ngettext(
            "{count} message(s) not found in the DLQ; {discarded} discarded",
            "{count} message(s) not found in the DLQ; {discarded} discarded",
            len(wanted),
        )
        raise DiscardRefusedError(said.format(count=len(wanted), discarded=len(records)))
    return records
