"""Stock movements through `cola-mercadofresco-stock`: the messages, the consumers, and what a run did.

Each message is one operation on one sku ("−1 unit" or "stock = N") with the
sku's own sequence number (`version`). The queue is moto's SQS, FIFO or
standard, so which message each receive gets is moto's answer. The consumers
are a model: simpy processes on the virtual clock that receive one message
(WaitTimeSeconds=0; an empty receive waits `IDLE_POLL_SECONDS`, standing in
for a long poll), spend the processing time, apply it and delete it.
`run_ordering(config, seed)` returns an `OrderingRun` with every message, who
processed it and when. Notebook 12 uses it through `ordering.experiments`.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mercadofresco import i18n, world
from mercadofresco.clock import ClockedEnvironment, VirtualClock
from mercadofresco.errors import check_range
from mercadofresco.i18n import T_, _, ngettext, pgettext
from mercadofresco.patterns import ordering

STOCK_QUEUE = "cola-mercadofresco-stock"
QUEUE_KINDS = ("fifo", "standard")
IDLE_POLL_SECONDS = 20.0  # an empty receive waits this long before trying again, as a 20 s long poll can
VISIBILITY_SECONDS = 300  # far above any processing time here: nothing is redelivered by a timeout
START_STOCK = 100
MAX_MESSAGES = 100  # moto rescans the whole queue on every call: keep it in the hundreds
_GROUPS = re.compile(r"FIFO, (\d+) groups")  # a label of several groups, as `OrderingConfig.label` writes it


@dataclass(frozen=True)
class OrderingConfig:
    """One run: which queue, how many groups and consumers, which messages."""

    queue: str = "fifo"
    groups: int = 1  # FIFO: MessageGroupIds; equal to `skus` means one group per sku
    consumers: int = 10
    skus: int = 12
    messages: int = 60
    absolute_share: float = 0.5  # share of "stock = N" messages; the rest are "−1 unit"
    process_seconds: float = 1.0
    jitter: float = 0.0  # processing time varies by ± this share (seeded)

    def __post_init__(self) -> None:
        if self.queue not in QUEUE_KINDS:
            said = _("queue must be one of {kinds}; got {queue}")
            raise ValueError(said.format(kinds=", ".join(QUEUE_KINDS), queue=repr(self.queue)))
        check_range("skus", self.skus, 1, ordering.SKU_GROUPS)
        check_range("groups", self.groups, 1, self.skus)
        check_range("consumers", self.consumers, 1, 50)
        check_range("messages", self.messages, 1, MAX_MESSAGES)
        check_range("absolute_share", self.absolute_share, 0.0, 1.0)
        check_range("process_seconds", self.process_seconds, 0.1, 60.0)
        check_range("jitter", self.jitter, 0.0, 0.9)

    def group_of(self, sku_index: int) -> str:
        """The MessageGroupId of a sku: the sku itself when every sku has its own group."""
        if self.groups == self.skus:
            return sku_name(sku_index)
        return f"grupo-{sku_index % self.groups:04d}"

    def label(self) -> str:
        """A short name for tables: "standard queue", "FIFO, 1 group", "FIFO, group = sku" (the row keeps the
        English: a table shows it translated, a figure through `said_setup`)."""
        if self.queue == "standard":
            return T_("standard queue")
        if self.groups == self.skus:
            return T_("FIFO, group = sku")
        return T_("FIFO, 1 group") if self.groups == 1 else f"FIFO, {self.groups} groups"


def said_setup(label: str) -> str:
    """A setup's label (`OrderingConfig.label`) in the learner's language."""
    if many := _GROUPS.fullmatch(label):
        count = int(many.group(1))
        return ngettext("FIFO, {count} group", "FIFO, {count} groups", count).format(count=i18n.number(count))
    return pgettext("table cell", label)


def sku_name(index: int) -> str:
    """SKU-0042 style identifiers."""
    return f"SKU-{index:04d}"


def stock_messages(config: OrderingConfig, rng: random.Random) -> list[dict[str, Any]]:
    """The bodies to send, in send order: each one an operation on a sku with the sku's next version."""
    versions: Counter[str] = Counter()
    bodies = []
    for _message in range(config.messages):
        index = rng.randrange(config.skus)
        sku = sku_name(index)
        versions[sku] += 1
        if rng.random() < config.absolute_share:
            operation = ordering.recounted(sku, rng.randint(0, 50))
        else:
            operation = ordering.sold(sku)
        bodies.append(
            {
                "sku": sku,
                "grupo": config.group_of(index),
                "tipo": "StockRecontado" if operation.kind is ordering.Kind.ABSOLUTE else "StockVendido",
                "cantidad": operation.amount,
                "version": versions[sku],
            }
        )
    return bodies


def operation_of(body: dict[str, Any]) -> ordering.Operation:
    """The operation a message body describes."""
    kind = ordering.Kind.ABSOLUTE if body["tipo"] == "StockRecontado" else ordering.Kind.RELATIVE
    return ordering.Operation(body["sku"], kind, body["cantidad"])


@dataclass
class OrderingRun:
    """What one run did: every message with who processed it and when, in the order they were applied."""

    config: OrderingConfig
    sent: list[dict[str, Any]]
    applied: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    max_in_flight: Counter[str] = field(default_factory=Counter)
    handed_out: int = 0
    empty_receives: int = 0

    @property
    def per_minute(self) -> float:
        """Messages processed per virtual minute."""
        return round(60 * len(self.applied) / self.seconds, 1) if self.seconds else 0.0

    @property
    def most_in_flight_per_group(self) -> int:
        """The most messages of one group (or one sku, on a standard queue) ever processed at once."""
        return max(self.max_in_flight.values(), default=0)

    @property
    def most_in_flight(self) -> int:
        """The most messages processed at once, across all groups: the parallelism actually reached."""
        edges = sorted([(row["started"], 1) for row in self.applied] + [(row["ended"], -1) for row in self.applied])
        level = peak = 0
        for _instant, step in edges:  # at equal instants an end (-1) sorts before a start (+1)
            level += step
            peak = max(peak, level)
        return peak

    @property
    def out_of_order(self) -> int:
        """Messages applied after a newer message of the same sku."""
        newest: Counter[str] = Counter()
        late = 0
        for row in self.applied:
            late += row["version"] < newest[row["sku"]]
            newest[row["sku"]] = max(newest[row["sku"]], row["version"])
        return late

    def final_stock(self, rows: list[dict[str, Any]]) -> dict[str, int]:
        """Each sku's stock after applying `rows` in their order, from START_STOCK."""
        stock: dict[str, int] = defaultdict(lambda: START_STOCK)
        for row in rows:
            stock[row["sku"]] = operation_of(row).apply(stock[row["sku"]])
        return dict(stock)

    @property
    def wrong_skus(self) -> int:
        """Skus whose final stock differs from what applying the messages in send order gives."""
        right, got = self.final_stock(self.sent), self.final_stock(self.applied)
        return sum(got.get(sku) != value for sku, value in right.items())

    def summary(self) -> dict[str, Any]:
        """One row for a table."""
        return {
            "setup": self.config.label(),
            "consumers": self.config.consumers,
            "messages": len(self.applied),
            "seconds": round(self.seconds, 1),
            "per_minute": self.per_minute,
            "max_in_flight": self.most_in_flight,
            "max_in_flight_per_group": self.most_in_flight_per_group,
            "out_of_order": self.out_of_order,
            "wrong_skus": self.wrong_skus,
        }


Apply = Callable[[dict[str, Any]], None]


def run_ordering(
    aws: world.World, clock: VirtualClock, config: OrderingConfig, seed: int = 0, apply: Apply | None = None
) -> OrderingRun:
    """Send the messages to a fresh stock queue, run `config.consumers` consumers until all are processed."""
    rng = random.Random(seed)
    run = OrderingRun(config=config, sent=stock_messages(config, rng))
    url = fresh_queue(aws.sqs, config.queue)
    for body in run.sent:
        send(aws.sqs, url, body, config.queue)
    env = ClockedEnvironment(clock)
    done = env.event()
    in_flight: Counter[str] = Counter()
    for number in range(config.consumers):
        env.process(_consumer(env, aws.sqs, url, run, in_flight, rng, done, apply or (lambda body: None), number))
    env.run(until=done)
    run.seconds = env.now
    aws.sqs.delete_queue(QueueUrl=url)
    return run


def _consumer(env, sqs, url, run, in_flight, rng, done, apply, number):
    """Receive one message, process it, apply it, delete it; wait a while when there is nothing.

    The experiment (not the consumer, which could not know) stops polling once every message was handed out.
    """
    while run.handed_out < len(run.sent):
        received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=0).get("Messages", [])
        if not received:
            run.empty_receives += 1
            yield env.timeout(IDLE_POLL_SECONDS)
            continue
        run.handed_out += 1
        body = json.loads(received[0]["Body"])
        group = body["grupo"] if run.config.queue == "fifo" else body["sku"]
        in_flight[group] += 1
        run.max_in_flight[group] = max(run.max_in_flight[group], in_flight[group])
        started = env.now
        yield env.timeout(run.config.process_seconds * (1 + rng.uniform(-run.config.jitter, run.config.jitter)))
        apply(body)
        sqs.delete_message(QueueUrl=url, ReceiptHandle=received[0]["ReceiptHandle"])
        in_flight[group] -= 1
        run.applied.append({**body, "consumer": number, "started": started, "ended": env.now})
        if len(run.applied) == len(run.sent):
            done.succeed()


def fresh_queue(sqs: Any, kind: str) -> str:
    name = f"{STOCK_QUEUE}.fifo" if kind == "fifo" else STOCK_QUEUE
    attributes = {"VisibilityTimeout": str(VISIBILITY_SECONDS)}
    if kind == "fifo":
        attributes["FifoQueue"] = "true"
    return sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]


def send(sqs: Any, url: str, body: dict[str, Any], kind: str) -> None:
    request: dict[str, Any] = {"QueueUrl": url, "MessageBody": json.dumps(body, sort_keys=True)}
    if kind == "fifo":
        request["MessageGroupId"] = body["grupo"]
        request["MessageDeduplicationId"] = f"{body['sku']}:{body['version']}"
    sqs.send_message(**request)
