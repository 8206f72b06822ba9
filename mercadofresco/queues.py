"""SQS helpers every notebook uses: a queue with its DLQ, a queue's ARN, a send policy, how many messages it holds."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from mercadofresco.runtime import endpoints, moto_speedups

DAY = 86_400


@dataclass(frozen=True)
class QueuePair:
    """A queue and the DLQ its RedrivePolicy sends messages to."""

    url: str
    arn: str
    dlq_url: str
    dlq_arn: str


def create_queue_pair(
    sqs: Any,
    name: str,
    dlq_name: str,
    *,
    visibility_timeout_seconds: int,
    max_receive_count: int,
    retention_seconds: int = 4 * DAY,
    dlq_retention_seconds: int = 14 * DAY,
    fifo: bool = False,
) -> QueuePair:
    """Create a DLQ, then a queue whose RedrivePolicy sends it there after `max_receive_count` receives."""
    fifo_attributes = {"FifoQueue": "true"} if fifo else {}
    dlq_url = sqs.create_queue(
        QueueName=dlq_name, Attributes={"MessageRetentionPeriod": str(dlq_retention_seconds), **fifo_attributes}
    )["QueueUrl"]
    dlq_arn = queue_arn(sqs, dlq_url)
    redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(max_receive_count)}
    settings = {
        "VisibilityTimeout": str(visibility_timeout_seconds),
        "MessageRetentionPeriod": str(retention_seconds),
        "RedrivePolicy": json.dumps(redrive),
    }
    try:
        url = sqs.create_queue(QueueName=name, Attributes={**settings, **fifo_attributes})["QueueUrl"]
    except ClientError as exc:  # it exists with other settings (a long-lived server): apply ours
        if exc.response["Error"]["Code"] not in ("QueueAlreadyExists", "QueueNameExists"):
            raise
        url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
        sqs.set_queue_attributes(QueueUrl=url, Attributes=settings)
    return QueuePair(url=url, arn=queue_arn(sqs, url), dlq_url=dlq_url, dlq_arn=dlq_arn)


def queue_arn(sqs: Any, queue_url: str) -> str:
    """The ARN of the queue at `queue_url`."""
    return sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def send_policy(arn: str, source_arn: str, service: str) -> str:
    """A queue policy letting `service` send to the queue `arn` for `source_arn` only (real AWS needs it)."""
    statement = {
        "Effect": "Allow",
        "Principal": {"Service": service},
        "Action": "sqs:SendMessage",
        "Resource": arn,
        "Condition": {"ArnEquals": {"aws:SourceArn": source_arn}},
    }
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def queue_counts(sqs: Any, queue_url: str) -> dict[str, int]:
    """Visible, in-flight and delayed message counts of a queue."""
    names = [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    ]
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=names)["Attributes"]
    return {
        "visible": int(attributes["ApproximateNumberOfMessages"]),
        "in_flight": int(attributes["ApproximateNumberOfMessagesNotVisible"]),
        "delayed": int(attributes["ApproximateNumberOfMessagesDelayed"]),
    }


def is_empty(sqs: Any, queue_url: str) -> bool:
    """No message visible, in flight or delayed: moto tells without a call (as in `nothing_to_receive`), or SQS."""
    ask = endpoints.moto_elsewhere(sqs)
    empty = ask("queue_is_empty", queue_url) if ask is not None else moto_speedups.is_empty(sqs, queue_url)
    return not any(queue_counts(sqs, queue_url).values()) if type(empty) is not bool else empty


def nothing_to_receive(sqs: Any, queue_url: str) -> bool:
    """A receive on `queue_url` would return nothing and change nothing, known without one (moto only).

    This process's moto tells directly (`moto_speedups.nothing_to_receive`). A moto that another process keeps
    and answers models for (`endpoints.moto_elsewhere`) is asked there, one round trip instead of a whole
    ReceiveMessage through it. Anything else: False, so receive.
    """
    ask = endpoints.moto_elsewhere(sqs)
    if ask is not None:
        return ask("nothing_to_receive", queue_url) is True
    return moto_speedups.nothing_to_receive(sqs, queue_url)
