"""Narrow fixes that keep moto's SQS as fast with 5,000 messages as with 100, and every moto call cheaper.

What moto 5.2.5 does (`moto/sqs/models.py`): `Queue.attributes` builds every queue
attribute at once, and three of them (ApproximateNumberOfMessages, …NotVisible,
…Delayed) scan the whole queue, reading the clock for every message. SendMessage
builds it once per message to read ContentBasedDeduplication; ReceiveMessage
builds it three times per message received, to read MessageRetentionPeriod
(the retention check goes through GetQueueAttributes); ReceiveMessage also
filters the whole queue before taking the first ten, and DeleteMessage rebuilds
the queue's list. Each call is linear in the queue's depth, so filling or draining
a queue one call at a time is quadratic: one receive of 10 + delete costs about
55 ms at depth 100, 575 ms at 1,000 and 2.8 s at 5,000 (`benchmarks/moto_depth_bench.py`).

What the fix changes, and only this:

- `Queue.attributes` returns a read-only view with the same names and values,
  each computed when it is read: reading ContentBasedDeduplication no longer
  counts the messages. `GetQueueAttributes` turns it into a dict as before.
- `Queue.messages` filters visible messages as receive reads them, so a receive
  stops after the messages it returns (`len()` still counts them all).
- `Queue.delete_message` stops at the message that holds the receipt handle.
- `Queue.messages` reads the clock once per receive instead of twice per message, and an attribute's
  Python name is worked out once per name instead of once per read.
- A receipt handle (185 random lowercase letters) is drawn as 185 random bytes mapped to letters
  (one `randbytes` call instead of 185 `choice` calls), from moto's own seeded generator.
- A received message is copied field by field, not deeply: moto copies it only to give the copy
  the message attributes the receive asked for, a new dict (a tenth of a receive).
- The retention check of each message received reads the queue's MessageRetentionPeriod directly
  instead of through GetQueueAttributes' name checks.
- Every moto response class lists its methods once (moto ran `inspect.getmembers` on every request,
  to see whether it implements the action): a tenth of an in-process call, any service.
- moto reads the service models it parses requests with through one loader, not a new one per
  service (each new loader lists botocore's 400-odd service folders again).
- A KMS key's RSA pair, which moto makes for every key, symmetric ones included, is made when first
  used (sign, verify, its public key): 20-200 ms of prime search per key otherwise, in every
  world (its `alias/mercadofresco-datos` key is symmetric, and nothing here signs with it).

One more function, for the Lambda poller model: `nothing_to_receive` tells,
without an API call, that a ReceiveMessage here would return nothing and change
nothing. Lambda long-polls; under a frozen clock the poller receives once a
virtual second instead, and most of those receives (1.2 ms of boto3 and moto
each) find an empty queue. It answers True only for a queue of this process's
moto with no visible message; anywhere else (a moto server, real AWS) False,
and the poller receives as before, with the same results. `is_empty` tells
`queues.is_empty` (the poller's drain check) the same way that the queue holds
nothing at all, instead of a GetQueueAttributes each virtual minute (None where
it cannot be sure: then SQS is asked). Both answer for this process's moto only;
`queues.nothing_to_receive` and `queues.is_empty` ask the process that keeps a
client's moto when it is another one (`endpoints.moto_elsewhere`).

Same messages, same order, same counts, same errors (tests/package/test_moto_speedups.py
runs one scenario with and without the fix). `apply()` patches moto's classes,
and only a moto version it was written for; `Speedups.undo()` puts moto's own
code back. `world.build` applies it in memory mode and undoes it on close.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import moto
from moto.core import responses as moto_responses
from moto.core import utils as moto_utils
from moto.core.models import botocore_stubber
from moto.core.utils import camelcase_to_underscores, unix_time, unix_time_millis
from moto.kms import models as kms_models
from moto.kms import utils as kms_utils
from moto.moto_api._internal import mock_random
from moto.sqs import models as sqs_models
from moto.sqs.exceptions import ReceiptHandleIsInvalid

from mercadofresco.i18n import _

ABSENT = object()  # what moto's class had where the fix adds a method it lacks
TESTED_MOTO_VERSIONS = ("5.2.5",)  # the pin in constraints.txt; a test keeps the two equal


class MotoSpeedupWarning(UserWarning):
    """moto is a version the fix was not written for: it runs unpatched (correct, but slow on deep queues)."""


class QueueAttributes(Mapping):
    """moto's `Queue.attributes`, computed name by name when read instead of all at once."""

    def __init__(self, queue: Any) -> None:
        self._queue = queue
        names = list(queue.BASE_ATTRIBUTES)
        names += queue.FIFO_ATTRIBUTES if queue.fifo_queue else []
        names += queue.KMS_ATTRIBUTES if queue.kms_master_key_id else []
        self._names = names

    def __getitem__(self, name: str) -> Any:
        if name not in self._names:
            raise KeyError(name)
        queue = self._queue
        value = getattr(queue, _python_name(name))
        if name == "RedrivePolicy" and value:
            value = json.dumps(value)  # as moto's property does
        return str(value).lower() if isinstance(value, bool) else value

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class VisibleMessages:
    """moto's `Queue.messages` (visible, not delayed), filtered as it is iterated."""

    def __init__(self, messages: list[Any]) -> None:
        self._snapshot = list(messages)  # moto iterates a copy too: a receive may move messages to the DLQ

    def __iter__(self) -> Iterator[Any]:
        now = unix_time_millis()  # moto's Message.visible and .delayed, with the clock read once
        return (message for message in self._snapshot if now > message.visible_at and not now < message.delayed_until)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __bool__(self) -> bool:
        return any(True for _ in self)


_python_name = functools.cache(camelcase_to_underscores)


LETTER_OF_BYTE = bytes(ord("a") + byte % 26 for byte in range(256))  # a receipt handle's letters, from random bytes


def _receipt_handle() -> str:
    return mock_random.randbytes(185).translate(LETTER_OF_BYTE).decode()


def _copy_message(message: Any, memo: dict[int, Any]) -> Any:
    """`deepcopy` of a moto SQS Message as receive uses it: the copy only gets its own message_attributes."""
    return copy.copy(message)


def _attributes(queue: Any) -> QueueAttributes:
    return QueueAttributes(queue)


def _messages(queue: Any) -> VisibleMessages:
    return VisibleMessages(queue._messages)


def _within_retention(backend: Any, queue_name: str, message: Any) -> bool:
    """moto's `is_message_valid_based_on_retention_period`, reading the queue's own attribute."""
    queue = backend.get_queue(queue_name)
    return queue.message_retention_period + message.sent_timestamp / 1000 > unix_time()


@functools.cache
def _method_names(clazz: type) -> list[str]:
    """moto's `method_names_from_class`, once per response class (they do not change after import)."""
    return [name for name, _ in inspect.getmembers(clazz, predicate=inspect.isfunction)]


class DeferredKeyPair:
    """moto's private key of a KMS key, generated by moto's own function when first used."""

    def __init__(self, generate: Any, key_spec: str) -> None:
        self._generate = generate
        self.key_spec = key_spec
        self._key: Any = None

    def _pair(self) -> Any:
        if self._key is None:
            self._key = self._generate(self.key_spec)
        return self._key

    def sign(self, message: bytes, signing_algorithm: str) -> bytes:
        return self._pair().sign(message, signing_algorithm)

    def verify(self, message: bytes, signature: bytes, signing_algorithm: str) -> bool:
        return self._pair().verify(message, signature, signing_algorithm)

    def public_key(self) -> bytes:
        return self._pair().public_key()


def _deferred_private_key(key_spec: str) -> DeferredKeyPair:
    return DeferredKeyPair(kms_utils.generate_private_key, key_spec)


def _get_queue_attributes(original: Any) -> Any:
    def get_queue_attributes(backend: Any, queue_name: str, attribute_names: list[str]) -> dict[str, Any]:
        return dict(original(backend, queue_name, attribute_names))  # "All" returns the view itself: copy it

    return get_queue_attributes


def _delete_message(queue: Any, receipt_handle: str) -> None:
    if receipt_handle in queue.deleted_messages:
        return  # already deleted: moto answers success again
    message = next((m for m in queue._messages if m.had_receipt_handle(receipt_handle)), None)
    if message is None:
        raise ReceiptHandleIsInvalid()
    queue.pending_messages.discard(message)
    queue.deleted_messages.update(message.all_receipt_handles)
    queue._messages.remove(message)  # Message has no __eq__: removes this very object


def nothing_to_receive(sqs: Any, queue_url: str) -> bool:
    """True if a receive on `queue_url` would return no message and change nothing (this process's moto only).

    That is when no message is visible: moto's receive touches visible messages only (it marks them
    received, or moves them to the DLQ). False whenever the answer is not certain: moto not active, the
    fix not applied, a client pointed at another endpoint, a queue moto does not hold.
    """
    if not (is_applied() and botocore_stubber.enabled) or not sqs.meta.endpoint_url.endswith(".amazonaws.com"):
        return False
    queue = moto_queue(sqs, queue_url)
    return queue is not None and not queue.messages


def is_empty(sqs: Any, queue_url: str) -> bool | None:
    """Whether `queue_url` holds no message at all, visible, in flight or delayed (this process's moto only).

    What GetQueueAttributes' three counts summed would say, without the call. None whenever the answer is
    not certain (moto not active, the fix not applied, another endpoint, a queue moto does not hold): ask SQS.
    """
    if not (is_applied() and botocore_stubber.enabled) or not sqs.meta.endpoint_url.endswith(".amazonaws.com"):
        return None
    queue = moto_queue(sqs, queue_url)
    return None if queue is None else not queue._messages  # each message counts in at least one of the three


def moto_queue(sqs: Any, queue_url: str) -> Any | None:
    """The queue object this process's moto keeps for `queue_url` (account from the URL, region from the client).

    None if moto holds no such queue. For models of what SQS does not tell through its API.
    """
    account, name = urlparse(queue_url).path.rstrip("/").split("/")[-2:]
    if account not in sqs_models.sqs_backends:
        return None
    return sqs_models.sqs_backends[account][sqs.meta.region_name].queues.get(name)


@dataclass
class Speedups:
    """The patch as applied: what was replaced, to put back on `undo()`."""

    originals: dict[tuple[Any, str], Any] = field(default_factory=dict)

    @property
    def applied(self) -> bool:
        return bool(self.originals)

    def undo(self) -> None:
        """Put moto's own methods back (a no-op if this handle did not patch)."""
        for (owner, name), original in self.originals.items():
            if original is ABSENT:
                delattr(owner, name)  # moto had none: its own behaviour is back
            else:
                setattr(owner, name, original)
        self.originals.clear()


def is_applied() -> bool:
    """True while moto's SQS runs with the fix."""
    return sqs_models.Queue.__dict__["attributes"].fget is _attributes


def apply() -> Speedups:
    """Patch moto's SQS (see the module docstring); undo with the returned handle.

    If the fix is already in place (another world is open), the handle owns
    nothing and its `undo()` does nothing. On a moto version not in
    TESTED_MOTO_VERSIONS it warns and patches nothing.
    """
    if moto.__version__ not in TESTED_MOTO_VERSIONS:
        said = _(
            "mercadofresco.runtime.moto_speedups was written for moto {tested}, not {installed}: SQS runs unpatched "
            "(correct, but slow when a queue holds thousands of messages)"
        )
        tested, installed = ", ".join(TESTED_MOTO_VERSIONS), moto.__version__
        warnings.warn(said.format(tested=tested, installed=installed), MotoSpeedupWarning, stacklevel=2)
        return Speedups()
    if is_applied():
        return Speedups()
    queue, backend = sqs_models.Queue, sqs_models.SQSBackend
    replacements = {
        (queue, "attributes"): property(_attributes),
        (queue, "messages"): property(_messages),
        (queue, "delete_message"): _delete_message,
        (backend, "get_queue_attributes"): _get_queue_attributes(backend.get_queue_attributes),
        (sqs_models, "generate_receipt_handle"): _receipt_handle,
        (sqs_models.Message, "__deepcopy__"): _copy_message,
        (backend, "is_message_valid_based_on_retention_period"): _within_retention,
        (moto_responses, "method_names_from_class"): _method_names,
        (moto_utils, "create_loader"): functools.cache(moto_utils.create_loader),
        (kms_models, "generate_private_key"): _deferred_private_key,
    }
    speedups = Speedups()
    for (owner, name), replacement in replacements.items():
        speedups.originals[(owner, name)] = owner.__dict__.get(name, ABSENT)
        setattr(owner, name, replacement)
    return speedups
