"""CloudWatch's ApproximateAgeOfOldestMessage for an SQS queue, as a model (lab 2).

AWS publishes the age of a queue's oldest message as a metric; reading it costs the
queue nothing. moto publishes no AWS/SQS metrics, and no SQS call tells the age
without a receive, which on a live queue spends one of the message's
maxReceiveCount and hides it from the consumer. So this model reads the send
times moto keeps for the queue: the in-process mock only (memory mode). Like the
metric, it counts every message not yet deleted, in flight or not.

A queue kept by another process's moto is read by that process, when it
answers models (`endpoints.moto_elsewhere`): a client whose every request goes
to that process's moto asks it there.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from mercadofresco.errors import MercadoFrescoError
from mercadofresco.i18n import _
from mercadofresco.runtime import endpoints, moto_speedups


class QueueAgeError(MercadoFrescoError, LookupError):
    """The queue is not in this process's moto (another mode, account or region)."""


def age_of_oldest_message(sqs: Any, queue_url: str, now: dt.datetime) -> float:
    """Seconds since the oldest message still in the queue was sent, 0 if it is empty; nothing is received."""
    ask = endpoints.moto_elsewhere(sqs)
    if ask is not None:
        return float(ask("queue_age", queue_url, now))
    queue = moto_speedups.moto_queue(sqs, queue_url)
    if queue is None:
        account, name = queue_url.rstrip("/").split("/")[-2:]
        region = sqs.meta.region_name
        said = _(
            "no queue {name} in this process's moto (account {account}, region {region}): the age model reads "
            'the in-process mock, so it works in mode "memory" only'
        )
        raise QueueAgeError(said.format(name=repr(name), account=account, region=region))
    sent_ms = [message.sent_timestamp for message in queue._messages]
    return max(0.0, now.timestamp() - min(sent_ms) / 1000) if sent_ms else 0.0
