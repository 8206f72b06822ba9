"""What EventBridge's PutEvents does that moto does not: a request over 1 MB refused, some entries failed.

Measured on this machine (moto 5.2.5): moto refuses more than 10 entries in one
call (ValidationException), as EventBridge does, and reports a malformed
Detail as a failed entry (`MalformedDetail`). It accepts a 1.1 MB request that
EventBridge would refuse, and it never fails part of a call, which EventBridge may do: the
answer then has `FailedEntryCount` > 0, and each failed entry an `ErrorCode`
instead of an `EventId`. A publisher that reads the answer as all-or-nothing
marks events published that never reached the bus.

This is a model of those two behaviours, in front of moto: `refusal` says why
a whole call is refused, `PartialFailures` decides which entries fail,
`split`/`merged` cut a request and join the two answers, and `FaultyEvents`
wraps an events client with all of it (notebook 13).
A moto in another process can apply the same functions to the requests it serves.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from mercadofresco.errors import check_range

MAX_ENTRIES = 10  # entries in one PutEvents call (moto refuses more too; checked here before any entry fails)
# EventBridge's limit for one PutEvents request, every entry together (as `request_bytes` counts). Since January
# 2026, 1 MB: "AWS has raised the maximum payload size from 256 KB to 1 MB for asynchronous AWS Lambda function
# invocations, Amazon Simple Queue Service (Amazon SQS), and Amazon EventBridge" (AWS Compute Blog,
# https://aws.amazon.com/blogs/compute/more-room-to-build-serverless-services-now-support-payloads-up-to-1-mb);
# the PutEvents reference now says "the total entry size must be less than 1MB"
# (https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html). 1 MiB here, as AWS spells the
# SQS half of the same change ("1 MiB or 1,048,576 bytes"). Older copies of AWS's pages, and botocore's PutEvents
# documentation as late as 1.43, still say 256KB (262,144 bytes): the limit before the change.
MAX_REQUEST_BYTES = 1024 * 1024
FAILED = {"ErrorCode": "InternalFailure", "ErrorMessage": "Internal failure"}  # what EventBridge says, per entry


def request_bytes(entries: list[dict[str, Any]]) -> int:
    """The size EventBridge counts: each entry's Source, DetailType, Detail and Resources (UTF-8), 14 for a Time."""
    size = 0
    for entry in entries:
        size += 14 if entry.get("Time") is not None else 0
        for name in ("Source", "DetailType", "Detail"):
            size += len(str(entry.get(name, "")).encode())
        size += sum(len(str(resource).encode()) for resource in entry.get("Resources", []))
    return size


def refusal(entries: list[dict[str, Any]]) -> str:
    """Why EventBridge refuses this whole call (too many entries, too many bytes), in its words; "" if it does not."""
    if not 1 <= len(entries) <= MAX_ENTRIES:
        return f"Value at 'entries' failed to satisfy constraint: Member must have length between 1 and {MAX_ENTRIES}"
    size = request_bytes(entries)
    if size > MAX_REQUEST_BYTES:
        return f"Total size of the entries in the request is over the limit ({size:,} of {MAX_REQUEST_BYTES:,} bytes)"
    return ""


@dataclass
class PartialFailures:
    """Which entries of each PutEvents call fail: each with `probability`, seeded; `calls` counts the calls."""

    probability: float = 0.0
    seed: int = 0
    calls: int = 0
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        check_range("probability", self.probability, 0, 1)
        self.rng = random.Random(self.seed)

    def failed(self, count: int) -> set[int]:
        """The positions that fail in the next call of `count` entries."""
        self.calls += 1
        return {index for index in range(count) if self.rng.random() < self.probability}


@dataclass
class ScriptedFailures:
    """Which entries of each PutEvents call fail, as a script: `script[n]` the positions failing in call n + 1."""

    script: tuple[frozenset[int], ...] = ()
    calls: int = 0

    def failed(self, count: int) -> set[int]:
        """The positions that fail in the next call of `count` entries."""
        self.calls += 1
        positions = self.script[self.calls - 1] if self.calls <= len(self.script) else frozenset()
        return {index for index in positions if index < count}


def split(entries: list[dict[str, Any]], failed: set[int]) -> list[dict[str, Any]]:
    """The entries that go on to the bus."""
    return [entry for index, entry in enumerate(entries) if index not in failed]


def merged(answer: dict[str, Any], failed: set[int], count: int) -> dict[str, Any]:
    """The answer to the whole call: the bus's answer for the entries sent, FAILED at the failed positions."""
    sent = iter(answer.get("Entries", []))
    entries = [dict(FAILED) if index in failed else next(sent) for index in range(count)]
    failures = sum("ErrorCode" in entry for entry in entries)
    return {key: value for key, value in answer.items() if key != "Entries"} | {
        "FailedEntryCount": failures,
        "Entries": entries,
    }


class FaultyEvents:
    """An events client whose PutEvents behaves like EventBridge's where moto's does not (see the module)."""

    def __init__(self, events: Any, failures: PartialFailures | ScriptedFailures | None = None) -> None:
        self.events = events
        self.failures = failures or PartialFailures()
        self.accepted: list[dict[str, Any]] = []  # the Detail of every entry the bus took
        self.taken: list[dict[str, Any]] = []  # every entry the bus took, whole
        self.on_taken: Callable[[list[dict[str, Any]]], None] | None = None  # told of each call's taken entries
        self.first_call: Callable[[], None] | None = None  # run once, as the next call starts (another publisher)

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:  # boto3's argument name
        if self.first_call is not None:
            hook, self.first_call = self.first_call, None
            hook()
        why = refusal(Entries)
        if why:
            raise ClientError({"Error": {"Code": "ValidationException", "Message": why}}, "PutEvents")
        failed = self.failures.failed(len(Entries))
        going = split(Entries, failed)
        answer = self.events.put_events(Entries=going) if going else {"FailedEntryCount": 0, "Entries": []}
        whole = merged(answer, failed, len(Entries))
        taken = [entry for entry, result in zip(Entries, whole["Entries"], strict=True) if "EventId" in result]
        self.accepted += [json.loads(entry["Detail"]) for entry in taken]
        self.taken += taken
        if self.on_taken is not None:
            self.on_taken(taken)
        return whole
