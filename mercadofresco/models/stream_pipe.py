"""A model of an EventBridge pipe reading a DynamoDB stream: what moto stores but never runs.

moto creates the pipe (`pipes.create_pipe`, its source parameters and its
RUNNING/STOPPED state come back from `describe_pipe`) and keeps the table's stream,
but moves nothing, and its stream keeps every record forever (measured: a record
25 hours old is still returned from TRIM_HORIZON, and shard iterators never expire).
AWS keeps stream records for 24 hours. `StreamPipe` is the labelled model of the
rest, on the virtual clock:

- it reads the records after its checkpoint (the last sequence number it delivered);
- records older than `RETENTION_SECONDS` are trimmed: an unread one is an event lost;
- a batch is published with put_events, then the checkpoint moves; a pipe that dies
  in between publishes that batch again on the next poll (at least once);
- a batch the bus refuses, as a call or entry by entry (`FailedEntryCount`: Pipes
  retries the entries that failed, AWS's "partial batch failure"), is retried
  `MaximumRetryAttempts` times (read from the pipe's configuration; the backoff
  between attempts is not modelled), then the sequence numbers of the whole batch
  go to the pipe's DeadLetterConfig queue and the pipe moves on;
  with the default of -1 it is tried again at every poll until its records expire,
  and everything behind it in the shard waits;
- `iterator_age_seconds` is the age of the oldest record not yet delivered, the
  number an alarm on the pipe's lag watches.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from mercadofresco.i18n import _

RETENTION_SECONDS = 24 * 3600  # DynamoDB Streams keeps a record for 24 hours
BUS_BATCH = 10  # an event bus target takes at most 10 events a call


class PipeDied(Exception):
    """Injected: the pipe's poller dies after publishing a batch, before moving its checkpoint."""


@dataclass
class StreamPipe:
    """One pipe from a DynamoDB stream to a bus; `to_entry` turns a record into a put_events entry (or None)."""

    pipes: Any
    streams: Any
    events: Any
    sqs: Any
    name: str
    stream_arn: str
    to_entry: Callable[[dict[str, Any]], dict[str, Any] | None]
    checkpoint: int = 0  # sequence number of the last record delivered (or dead-lettered)
    expired: set[int] = field(default_factory=set)  # unread records the stream trimmed: lost
    dead_lettered: int = 0
    failed_attempts: int = 0  # put_events calls the bus refused
    shards: list[str] = field(default_factory=list)  # read once: the model's stream never splits a shard
    behind: list[dict[str, Any]] = field(default_factory=list)  # not delivered at the last poll, oldest first
    read: list[dict[str, Any]] = field(default_factory=list, repr=False)  # read past the checkpoint, kept in memory

    def describe(self) -> dict[str, Any]:
        """The pipe as moto stores it: its DesiredState and its DynamoDB stream parameters."""
        return self.pipes.describe_pipe(Name=self.name)

    def unread(self, now: dt.datetime) -> list[dict[str, Any]]:
        """The records after the checkpoint still in the stream; the trimmed ones are counted as expired."""
        trim_point = now - dt.timedelta(seconds=RETENTION_SECONDS)
        retained = []
        for record in self._records():
            sequence = int(record["dynamodb"]["SequenceNumber"])
            if sequence <= self.checkpoint:
                continue
            if record["dynamodb"]["ApproximateCreationDateTime"] < trim_point:
                self.expired.add(sequence)  # the stream deleted it before the pipe read it
            else:
                retained.append(record)
        return retained

    def iterator_age_seconds(self, now: dt.datetime) -> float:
        """Age of the oldest record not delivered at the last poll; 0 when the pipe was up to date."""
        if not self.behind:
            return 0.0
        return (now - self.behind[0]["dynamodb"]["ApproximateCreationDateTime"]).total_seconds()

    def poll(self, now: dt.datetime, die_after_publish: bool = False) -> int:
        """One poll: read the stream; if the pipe's DesiredState is RUNNING, deliver batch by batch.

        Returns the events published. moto's CurrentState steps through STOPPING and
        STARTING one describe call at a time, so the model reads DesiredState; AWS stops
        a stream pipe within about two minutes, less than a period of these runs.
        """
        pipe = self.describe()
        parameters = pipe["SourceParameters"]["DynamoDBStreamParameters"]
        records, published = self.unread(now), 0
        self.behind = records
        if pipe["DesiredState"] != "RUNNING":
            return 0
        size = min(int(parameters.get("BatchSize", BUS_BATCH)), BUS_BATCH)
        limit = int(parameters.get("MaximumRetryAttempts", -1))  # -1, the default: until the record expires
        for start in range(0, len(records), size):
            batch = records[start : start + size]
            entries = [entry for entry in map(self.to_entry, batch) if entry is not None]
            if entries and not self._deliver(entries, limit):
                if limit < 0:
                    return published  # the head of the shard blocks everything behind it
                self._dead_letter(batch, parameters)
            else:
                published += len(entries)
                if die_after_publish:
                    self.read = []  # a poller that dies forgets what it read: the next one starts at the checkpoint
                    raise PipeDied(_("published, checkpoint not moved"))  # the next poll sends this batch again
            self.checkpoint = int(batch[-1]["dynamodb"]["SequenceNumber"])
            self.behind = records[start + size :]
        return published

    def _deliver(self, entries: list[dict[str, Any]], limit: int) -> bool:
        """put_events, retried up to `limit` times at once (no backoff modelled); a retry sends the refused entries."""
        for _attempt in range(1 + max(limit, 0)):
            try:
                answer = self.events.put_events(Entries=entries)
            except ClientError:
                self.failed_attempts += 1
                continue
            results = answer.get("Entries", [])
            entries = [entry for entry, result in zip(entries, results, strict=True) if "ErrorCode" in result]
            if not entries:
                return True
            self.failed_attempts += 1
        return False

    def _dead_letter(self, batch: list[dict[str, Any]], parameters: dict[str, Any]) -> None:
        """Send the batch's sequence numbers to the pipe's DeadLetterConfig queue (if it has one)."""
        dlq_arn = parameters.get("DeadLetterConfig", {}).get("Arn")
        if dlq_arn:
            queue_url = self.sqs.get_queue_url(QueueName=dlq_arn.rsplit(":", 1)[1])["QueueUrl"]
            body = {"pipe": self.name, "secuencias": [record["dynamodb"]["SequenceNumber"] for record in batch]}
            self.sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(body))
            self.dead_lettered += len(batch)

    def _records(self) -> list[dict[str, Any]]:
        """The records after the checkpoint, oldest first: those already read (a record never changes), then the
        stream's newer ones (AFTER_SEQUENCE_NUMBER of the last one read, or TRIM_HORIZON at the start)."""
        if not self.shards:
            description = self.streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]
            self.shards = [shard["ShardId"] for shard in description["Shards"]]
        self.read = [record for record in self.read if int(record["dynamodb"]["SequenceNumber"]) > self.checkpoint]
        last = int(self.read[-1]["dynamodb"]["SequenceNumber"]) if self.read else self.checkpoint
        position: dict[str, Any] = {"ShardIteratorType": "TRIM_HORIZON"}
        if last:
            position = {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": str(last)}
        found = []
        for shard_id in self.shards:
            iterator = self.streams.get_shard_iterator(StreamArn=self.stream_arn, ShardId=shard_id, **position)
            found += self.streams.get_records(ShardIterator=iterator["ShardIterator"], Limit=1000)["Records"]
        self.read += sorted(found, key=lambda record: int(record["dynamodb"]["SequenceNumber"]))
        return list(self.read)
