"""An SQS poller with the semantics of Lambda's event-source mapping, as a model.

moto stores queues but runs no Lambda, so nothing would ever poll
`cola-mercadofresco-pedidos`. `Poller` does what the event-source mapping does:
up to `max_concurrency` pollers receive batches (WaitTimeSeconds=0, since a
long poll never returns under a frozen clock; receives that would find nothing
are skipped, see `queues.nothing_to_receive`), call a handler with a
Lambda-shaped event, and delete the messages that succeeded. A handler that
raises, times out or crashes deletes nothing: the visibility timeout brings the
messages back, and the queue's own RedrivePolicy moves them to the DLQ after
maxReceiveCount receives. A handler that returns `batchItemFailures` keeps only
those if the mapping has ReportBatchItemFailures; if not, Lambda reads no
response and deletes the whole batch (AWS: services-sqs-errorhandling.html).

The poller runs in virtual time (a `ClockedEnvironment`). Each invocation's
handler runs as a `clock.Task`: it runs alone until it waits (for the gateway,
say), then other consumers run while its wait passes. So every DynamoDB write,
every charge and every delete happens at the virtual instant it belongs to, two
consumers really do overlap, and the interleaving is the same on every run.
Lambda's function timeout cuts an invocation off where it is.

A model, not Lambda: real Lambda refuses an event-source mapping whose function
timeout exceeds the queue's visibility timeout. The poller allows it, so it can
also stand for a worker that polls the queue itself (exercise 1's consumer waits
up to 180 s on a 120 s queue).

Creating a `Poller` deploys the consumer on its queue: like an event-source
mapping it reads the queue's ARN then (GetQueueAttributes), which tells a check
when a consumer was attached (lab 2: the fix before the redrive).

`CrashPlan` kills a consumer at a named step ("after_charge", "before_delete"…),
the way a process dies between two lines of code. Notebooks 01 and 04 use it.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mercadofresco import orders, queues
from mercadofresco.clock import ClockedEnvironment, Stopwatch, Task, VirtualClock
from mercadofresco.errors import check_range
from mercadofresco.i18n import T_, _

TIMED_OUT, STOPPED = "function_timeout", "poller_stopped"  # how an invocation can be cut off
DRAIN_CHECK_SECONDS = 60.0  # how often run_until_idle looks at the queue (an API call, unless moto is in this process)
STEPS = (T_("received"), T_("after_lock"), T_("after_charge"), T_("after_complete"), T_("before_delete"))


class ConsumerCrash(BaseException):
    """The consumer process died at `step` (injected by a CrashPlan).

    A BaseException, like SystemExit: a dying process runs no `except Exception`
    handler, so no code gets the chance to release a lock or delete a message.
    """

    def __init__(self, step: str) -> None:
        super().__init__(_("consumer died at step {step}").format(step=repr(step)))
        self.step = step


@dataclass(frozen=True)
class PollerConfig:
    """The event-source mapping's settings."""

    batch_size: int = 10
    max_concurrency: int = 2
    function_timeout_seconds: float = 300.0
    # An empty receive waits idle_poll_seconds before trying again, doubling up to
    # max_idle_poll_seconds while the queue stays empty (Lambda long-polls up to 20 s).
    idle_poll_seconds: float = 1.0
    max_idle_poll_seconds: float = 1.0
    report_batch_item_failures: bool = True

    def __post_init__(self) -> None:
        check_range("batch_size", self.batch_size, 1, 10, why=_("SQS's limit"))
        check_range("max_concurrency", self.max_concurrency, 2, 1000, why=_("Lambda's range"))
        check_range("function_timeout_seconds", self.function_timeout_seconds, 1, 900)
        if not 0 < self.idle_poll_seconds <= self.max_idle_poll_seconds <= 20:
            said = _("need 0 < idle_poll_seconds <= max_idle_poll_seconds <= 20; got {first} and {second}")
            raise ValueError(said.format(first=self.idle_poll_seconds, second=self.max_idle_poll_seconds))


class CrashPlan:
    """Decides where a consumer dies: by step, a number of times, or at random (seeded)."""

    def __init__(
        self, crashes: dict[str, int] | None = None, probability: float = 0.0, rng: random.Random | None = None
    ) -> None:
        unknown = set(crashes or {}) - set(STEPS)
        if unknown:
            said = _("unknown step(s) {steps}; steps are {choices}")
            raise ValueError(said.format(steps=sorted(unknown), choices=", ".join(STEPS)))
        check_range("probability", probability, 0.0, 1.0)
        self.crashes_left = dict(crashes or {})
        self.probability = probability
        self.rng = rng or random.Random(0)
        self.crashed_at: list[str] = []

    def reached(self, step: str) -> None:
        """Called by the consumer at `step`; raises ConsumerCrash if it dies here."""
        if self.crashes_left.get(step, 0) > 0:
            self.crashes_left[step] -= 1
        elif not (self.probability and self.rng.random() < self.probability):
            return
        self.crashed_at.append(step)
        raise ConsumerCrash(step)


class Invocation:
    """The context of one invocation: Lambda's `context`, plus virtual time and a log.

    Inside a running Poller its waits belong to a `clock.Task` (others run
    meanwhile). Built by hand, e.g. by a test that calls a handler directly,
    it just adds its waits up on a Stopwatch.
    """

    def __init__(self, poller: Poller, consumer: str, number: int) -> None:
        self.poller = poller
        self.consumer = consumer
        self.aws_request_id = f"{consumer}-{number}"
        self.crashes = poller.crashes
        self.task: Task | None = None
        self.stopwatch = Stopwatch(poller.clock)

    @property
    def elapsed_seconds(self) -> float:
        """Virtual seconds this invocation has spent waiting so far."""
        return self.task.elapsed_seconds if self.task else self.stopwatch.elapsed_seconds

    def now(self) -> dt.datetime:
        """The instant this invocation has reached."""
        return self.task.now() if self.task else self.stopwatch.now()

    def wait(self, seconds: float) -> None:
        """Spend `seconds` inside this invocation (e.g. waiting for the gateway)."""
        (self.task or self.stopwatch).wait(seconds)

    def get_remaining_time_in_millis(self) -> int:
        """What Lambda's context says: time left before the function timeout."""
        return int(max(0.0, self.poller.config.function_timeout_seconds - self.elapsed_seconds) * 1000)

    def record(self, event: str, pedido_id: str = "", detail: str = "") -> None:
        """Add a line to the poller's timeline, at this invocation's instant."""
        self.poller.record(self.now(), self.consumer, event, pedido_id, detail)


Handler = Callable[[dict[str, Any], Invocation], dict[str, Any] | None]


@dataclass
class Poller:
    """Polls a queue like Lambda's event-source mapping and calls `handler` with each batch."""

    sqs: Any
    queue_url: str
    handler: Handler
    clock: VirtualClock
    config: PollerConfig = field(default_factory=PollerConfig)
    crashes: CrashPlan = field(default_factory=CrashPlan)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    invocations: int = 0
    running: int = 0
    origin: dt.datetime | None = None
    in_flight: set[Task] = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        self.origin = self.origin or self.clock.now()
        if self.sqs is not None and self.queue_url:  # attached: the mapping names its queue by ARN
            self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])

    def record(self, at: dt.datetime, consumer: str, event: str, pedido_id: str = "", detail: str = "") -> None:
        """One timeline row; `seconds` counts from the poller's creation."""
        seconds = round((at - self.origin).total_seconds(), 3)
        self.timeline.append(
            {"seconds": seconds, "consumer": consumer, "event": event, "pedido_id": pedido_id, "detail": detail}
        )

    def run(self, seconds: float) -> list[dict[str, Any]]:
        """Poll for `seconds` of virtual time and return the timeline so far, in time order."""
        return self._run(seconds, stop_when_idle=False)

    def run_until_idle(self, max_seconds: float) -> list[dict[str, Any]]:
        """Poll until the queue is empty and no invocation is running, or `max_seconds` pass."""
        return self._run(max_seconds, stop_when_idle=True)

    def _run(self, seconds: float, stop_when_idle: bool) -> list[dict[str, Any]]:
        env = ClockedEnvironment(self.clock)
        for slot in range(self.config.max_concurrency):
            env.process(self._poll_loop(env, f"consumidor-{slot + 1}"))
        until = [env.timeout(seconds)]
        if stop_when_idle:
            until.append(env.process(self._watch_until_drained(env)))
        env.run(until=env.any_of(until))
        # Stopping the poller kills what is still running, as stopping the consumers would.
        for task in list(self.in_flight):
            task.stop(ConsumerCrash(STOPPED))
        self.in_flight.clear()
        self.running = 0
        self.timeline.sort(key=lambda row: row["seconds"])
        return self.timeline

    def _poll_loop(self, env: ClockedEnvironment, consumer: str):
        idle_wait = self.config.idle_poll_seconds
        while True:
            messages = self._receive()
            if not messages:
                yield env.timeout(idle_wait)
                idle_wait = min(2 * idle_wait, self.config.max_idle_poll_seconds)
                continue
            idle_wait = self.config.idle_poll_seconds
            self.invocations += 1
            invocation = Invocation(self, consumer, self.invocations)
            invocation.task = Task(self.clock, functools.partial(self._invoke, invocation, messages))
            self.running += 1
            self.in_flight.add(invocation.task)
            yield from self._within_function_timeout(env, invocation)
            self.in_flight.discard(invocation.task)
            self._delete(invocation, invocation.task.result or [])
            self.running -= 1

    def _receive(self) -> list[dict[str, Any]]:
        if queues.nothing_to_receive(self.sqs, self.queue_url):
            return []  # moto (here, or the process that keeps it) has no visible message: the receive would find none
        return self.sqs.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=self.config.batch_size,
            WaitTimeSeconds=0,
            MessageSystemAttributeNames=["All"],
        ).get("Messages", [])

    def _within_function_timeout(self, env: ClockedEnvironment, invocation: Invocation):
        """Run the invocation's task; past the function timeout, cut it off where it waits."""
        task, limit = invocation.task, self.config.function_timeout_seconds
        seconds = task.step()
        while seconds is not None:
            if task.elapsed_seconds > limit:
                yield env.timeout(seconds - (task.elapsed_seconds - limit))
                task.stop(ConsumerCrash(TIMED_OUT))
                return
            yield env.timeout(seconds)
            seconds = task.step()

    def _watch_until_drained(self, env: ClockedEnvironment):
        """Ends when the queue is empty and no invocation is running."""
        while True:
            yield env.timeout(DRAIN_CHECK_SECONDS)
            if self.running == 0 and queues.is_empty(self.sqs, self.queue_url):
                return

    def _invoke(self, invocation: Invocation, messages: list[dict[str, Any]], task: Task) -> list[dict[str, Any]]:
        """The invocation's task: run the handler on one batch; return the messages it is safe to delete."""
        for message in messages:
            count = message["Attributes"]["ApproximateReceiveCount"]
            invocation.record(T_("received"), _pedido_of(message), f"receive #{count}")
        event = {"Records": [_lambda_record(message, self.queue_url) for message in messages]}
        try:
            self.crashes.reached("received")
            response = self.handler(event, invocation) or {}
        except ConsumerCrash as crash:
            if crash.step == TIMED_OUT:
                invocation.record("timed_out", "", f"after {self.config.function_timeout_seconds:g} s")
            else:
                invocation.record("crashed", "", crash.step)
            return []
        except Exception as exc:  # a handler error fails the whole batch, as in Lambda
            invocation.record("handler_error", "", f"{type(exc).__name__}: {exc}")
            return []
        if not self.config.report_batch_item_failures:
            return messages  # Lambda reads no response it was not told to: a success deletes the whole batch
        failed = {item["itemIdentifier"] for item in response.get("batchItemFailures", [])}
        return [m for m in messages if m["MessageId"] not in failed]

    def _delete(self, invocation: Invocation, messages: list[dict[str, Any]]) -> None:
        if not messages:
            return
        try:
            self.crashes.reached("before_delete")
        except ConsumerCrash as crash:
            invocation.record("crashed", "", crash.step)
            return
        entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
        response = self.sqs.delete_message_batch(QueueUrl=self.queue_url, Entries=entries)
        failed = {entry["Id"] for entry in response.get("Failed", [])}
        for i, message in enumerate(messages):
            invocation.record(T_("delete_failed") if str(i) in failed else T_("deleted"), _pedido_of(message))


def _lambda_record(message: dict[str, Any], queue_url: str) -> dict[str, Any]:
    """The shape Lambda gives one SQS message in event["Records"]."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": message.get("Attributes", {}),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_url,
    }


def _pedido_of(message: dict[str, Any]) -> str:
    """The pedido_id of a message, or "" if its body is not an order (for the timeline only)."""
    try:
        return orders.parse_order(message["Body"]).pedido_id
    except orders.MalformedOrderError:
        return ""
