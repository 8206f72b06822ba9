"""A rate-limited redrive shaped like SQS's StartMessageMoveTask, and its verification (notebook 11).

moto raises NotImplementedError for start_message_move_task, so this is a
model of it: receive from the DLQ, send to the destination (body and message
attributes kept), delete from the DLQ, in batches of up to 10, pausing on the
virtual clock so that no second ever moves more than
`max_number_of_messages_per_second` (SQS allows at most 500). Only messages
the destination accepted are deleted; a send that fails, or a chosen message
that is not found, leaves the task FAILED with its reason, as
ListMessageMoveTasks reports a FailureReason. Choosing single messages
(`message_ids`) is this workbook's extension: the real StartMessageMoveTask
takes only SourceArn, DestinationArn and MaxNumberOfMessagesPerSecond and
moves everything. `verify` is the runbook's step 6: the DLQ at zero and the
consumer's deletions up by the expected count.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from mercadofresco import queues
from mercadofresco.clock import VirtualClock
from mercadofresco.errors import check_range
from mercadofresco.i18n import ngettext

MAX_RATE = 500  # SQS's limit for MaxNumberOfMessagesPerSecond
MOVE_VISIBILITY_SECONDS = 30


@dataclass
class MoveTask:
    """What StartMessageMoveTask / ListMessageMoveTasks would report, plus when each message moved."""

    task_handle: str
    source_url: str
    destination_url: str
    max_number_of_messages_per_second: int
    approximate_number_of_messages_to_move: int
    started_at: dt.datetime
    status: str = "RUNNING"  # then COMPLETED, or FAILED with a failure_reason
    approximate_number_of_messages_moved: int = 0
    finished_at: dt.datetime | None = None
    failure_reason: str | None = None
    failed_sends: dict[str, str] = field(default_factory=dict)  # MessageId -> SQS's error code; left in the DLQ
    not_found: set[str] = field(default_factory=set)  # chosen MessageIds the DLQ did not hold
    moved_seconds: list[float] = field(default_factory=list)  # since started_at, one per message

    @property
    def duration_seconds(self) -> float:
        """Virtual seconds from start to finish."""
        end = self.finished_at or self.started_at
        return (end - self.started_at).total_seconds()

    def max_moved_in_any_second(self) -> int:
        """The most messages moved inside any one-second window: never above the rate."""
        times = sorted(self.moved_seconds)
        most, left = 0, 0
        for right, t in enumerate(times):
            while t - times[left] >= 1.0:
                left += 1
            most = max(most, right - left + 1)
        return most


def start_message_move_task(
    sqs: Any,
    clock: VirtualClock,
    source_url: str,
    destination_url: str,
    max_number_of_messages_per_second: int = 10,
    message_ids: set[str] | None = None,
) -> MoveTask:
    """Move messages from a DLQ back to `destination_url` at a limited rate; return the finished task.

    `message_ids` (move only these) is this workbook's extension, not part of
    SQS's StartMessageMoveTask, which always moves the whole DLQ. The task ends
    FAILED, with `failure_reason`, if a chosen message was not found or the
    destination refused a send (that message stays in the DLQ).
    """
    rate = max_number_of_messages_per_second
    check_range("max_number_of_messages_per_second", rate, 1, MAX_RATE)
    waiting = queues.queue_counts(sqs, source_url)["visible"]
    task = MoveTask(
        task_handle=f"tarea-{clock.now():%Y%m%d%H%M%S}",
        source_url=source_url,
        destination_url=destination_url,
        max_number_of_messages_per_second=rate,
        approximate_number_of_messages_to_move=len(message_ids) if message_ids is not None else waiting,
        started_at=clock.now(),
    )
    wanted = set(message_ids) if message_ids is not None else None
    while wanted is None or wanted:
        batch = _receive(sqs, source_url, min(10, rate))
        if not batch:
            break
        batch = [m for m in batch if m["MessageId"] not in task.failed_sends]  # one attempt per message
        if wanted is not None:
            batch = _keep_wanted(batch, wanted)
        if batch:
            _move(sqs, task, batch, (clock.now() - task.started_at).total_seconds())
            clock.advance(len(batch) / rate)  # the pace: `rate` messages per second, never more
    task.not_found = wanted or set()
    task.failure_reason = _failure_reason(task)
    task.status = "FAILED" if task.failure_reason else "COMPLETED"
    task.finished_at = clock.now()
    return task


def _failure_reason(task: MoveTask) -> str | None:
    problems = []
    if task.failed_sends:
        said = ngettext(
            "{count} message(s) could not be sent and stay in the DLQ",
            "{count} message(s) could not be sent and stay in the DLQ",
            len(task.failed_sends),
        )
        problems.append(said.format(count=len(task.failed_sends)))
    if task.not_found:
        said = ngettext(
            "{count} chosen message(s) not found in the DLQ",
            "{count} chosen message(s) not found in the DLQ",
            len(task.not_found),
        )
        problems.append(said.format(count=len(task.not_found)))
    return "; ".join(problems) or None


def pacing_seconds(count: int, max_number_of_messages_per_second: int) -> float:
    """How long `start_message_move_task` takes to move `count` messages at that rate (its own pacing rule)."""
    rate = max_number_of_messages_per_second
    check_range("max_number_of_messages_per_second", rate, 1, MAX_RATE)
    batch = min(10, rate)
    full, rest = divmod(count, batch)
    return full * batch / rate + rest / rate


def _receive(sqs: Any, url: str, how_many: int) -> list[dict[str, Any]]:
    return sqs.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=how_many,
        VisibilityTimeout=MOVE_VISIBILITY_SECONDS,
        WaitTimeSeconds=0,
        MessageAttributeNames=["All"],
    ).get("Messages", [])


def _keep_wanted(batch: list[dict[str, Any]], wanted: set[str]) -> list[dict[str, Any]]:
    """The chosen messages of a batch; the others are back in the DLQ when their 30 s visibility ends.

    (Handing them back at once with ChangeMessageVisibility(0) fails in moto for messages first
    received more than 12 hours ago: it counts the 12-hour limit from the first receive.)
    """
    keep = [m for m in batch if m["MessageId"] in wanted]
    wanted.difference_update(m["MessageId"] for m in keep)
    return keep


def _move(sqs: Any, task: MoveTask, batch: list[dict[str, Any]], second: float) -> None:
    entries = []
    for i, message in enumerate(batch):
        entry = {"Id": str(i), "MessageBody": message["Body"]}
        if message.get("MessageAttributes"):
            entry["MessageAttributes"] = message["MessageAttributes"]
        entries.append(entry)
    answer = sqs.send_message_batch(QueueUrl=task.destination_url, Entries=entries)
    for failed in answer.get("Failed", []):  # not sent: it must stay in the DLQ, so it is not deleted
        task.failed_sends[batch[int(failed["Id"])]["MessageId"]] = failed.get("Code", "unknown")
    sent = [(i, m) for i, m in enumerate(batch) if m["MessageId"] not in task.failed_sends]
    if sent:
        receipts = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in sent]
        sqs.delete_message_batch(QueueUrl=task.source_url, Entries=receipts)
    task.approximate_number_of_messages_moved += len(sent)
    task.moved_seconds += [second] * len(sent)


def verify(sqs: Any, dlq_url: str, task: MoveTask, deleted_by_consumer: int) -> dict[str, Any]:
    """Step 6: the DLQ is at zero and the consumer deleted as many messages as were moved."""
    left = sum(queues.queue_counts(sqs, dlq_url).values())
    moved = task.approximate_number_of_messages_moved
    return {
        "moved": moved,
        "deleted_by_consumer": deleted_by_consumer,
        "left_in_dlq": left,
        "ok": left == 0 and deleted_by_consumer == moved,
    }
