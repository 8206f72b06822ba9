"""Section 12's experiments: one FIFO group is serial, sku groups are parallel, versions make order irrelevant.

Stock movements travel in `cola-mercadofresco-stock` (FIFO or standard, on
moto). Each message is one operation on one sku ("−1 unit" or "stock = N")
with the sku's own sequence number. Consumers are simpy processes on the
virtual clock: receive one message (WaitTimeSeconds=0; an empty receive waits
`IDLE_POLL_SECONDS`, standing in for a long poll), spend the processing time,
apply, delete. moto decides which message each receive gets, so whether a
group is held while one of its messages is in flight is moto's answer, and
`group_hold_probe` checks it first. Notebook 12 calls these functions.
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mercadofresco import world
from mercadofresco.clock import ClockedEnvironment, VirtualClock
from mercadofresco.errors import check_range
from mercadofresco.patterns import ordering

STOCK_QUEUE = "cola-mercadofresco-stock"
QUEUE_KINDS = ("fifo", "standard")
IDLE_POLL_SECONDS = 20.0  # an empty receive waits this long before trying again, as a 20 s long poll can
VISIBILITY_SECONDS = 300  # far above any processing time here: nothing is redelivered by a timeout
START_STOCK = 100
MAX_MESSAGES = 100  # moto rescans the whole queue on every call: keep it in the hundreds


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
            raise ValueError(f"queue must be one of {', '.join(QUEUE_KINDS)}; got {self.queue!r}")
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
        """A short name for tables: "FIFO, 1 group", "FIFO, sku groups", "standard"."""
        if self.queue == "standard":
            return "standard queue"
        if self.groups == self.skus:
            return "FIFO, group = sku"
        return f"FIFO, {self.groups} group{'s' if self.groups > 1 else ''}"


def sku_name(index: int) -> str:
    """SKU-0042 style identifiers."""
    return f"SKU-{index:04d}"


def stock_messages(config: OrderingConfig, rng: random.Random) -> list[dict[str, Any]]:
    """The bodies to send, in send order: each one an operation on a sku with the sku's next version."""
    versions: Counter[str] = Counter()
    bodies = []
    for _ in range(config.messages):
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
        for _, step in edges:  # at equal instants an end (-1) sorts before a start (+1)
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
    mf: world.World, reloj: VirtualClock, config: OrderingConfig, seed: int = 0, apply: Apply | None = None
) -> OrderingRun:
    """Send the messages to a fresh stock queue, run `config.consumers` consumers until all are processed."""
    rng = random.Random(seed)
    run = OrderingRun(config=config, sent=stock_messages(config, rng))
    url = _fresh_queue(mf.sqs, config.queue)
    for body in run.sent:
        _send(mf.sqs, url, body, config.queue)
    env = ClockedEnvironment(reloj)
    done = env.event()
    in_flight: Counter[str] = Counter()
    for number in range(config.consumers):
        env.process(_consumer(env, mf.sqs, url, run, in_flight, rng, done, apply or (lambda body: None), number))
    env.run(until=done)
    run.seconds = env.now
    mf.sqs.delete_queue(QueueUrl=url)
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


def _fresh_queue(sqs: Any, kind: str) -> str:
    name = f"{STOCK_QUEUE}.fifo" if kind == "fifo" else STOCK_QUEUE
    attributes = {"VisibilityTimeout": str(VISIBILITY_SECONDS)}
    if kind == "fifo":
        attributes["FifoQueue"] = "true"
    return sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]


def _send(sqs: Any, url: str, body: dict[str, Any], kind: str) -> None:
    request: dict[str, Any] = {"QueueUrl": url, "MessageBody": json.dumps(body, sort_keys=True)}
    if kind == "fifo":
        request["MessageGroupId"] = body["grupo"]
        request["MessageDeduplicationId"] = f"{body['sku']}:{body['version']}"
    sqs.send_message(**request)


# -- the three questions, on class 210's examples -------------------------------------------------
CLASS_210_PAIRS = {
    "two sales of one sku": (ordering.sold("SKU-0042"), ordering.sold("SKU-0042")),
    "two recounts of one sku": (ordering.recounted("SKU-0042", 7), ordering.recounted("SKU-0042", 4)),
    "a sale and a recount": (ordering.sold("SKU-0042"), ordering.recounted("SKU-0042", 4)),
    "recounts of two skus": (ordering.recounted("SKU-0042", 7), ordering.recounted("SKU-0043", 4)),
}


def question_rows(
    pairs: dict[str, tuple[ordering.Operation, ordering.Operation]] = CLASS_210_PAIRS,
) -> list[dict[str, str]]:
    """The three questions answered for each pair of operations, one row each."""
    rows = []
    for first, second in pairs.values():
        answer = ordering.three_questions(first, second)
        rows.append(
            {
                "first": f"{first.target} {first.label}",
                "second": f"{second.target} {second.label}",
                "same data": "yes" if answer.same_data else "no",
                "kinds": " + ".join(kind.value for kind in answer.kinds),
                "order changes result": "yes" if answer.order_changes_result else "no",
                "needs order": "YES" if answer.needs_order else "no",
                "why": answer.reason,
            }
        )
    return rows


# -- (a) does moto hold a group while one of its messages is in flight? -------------------
def group_hold_probe(mf: world.World, reloj: VirtualClock) -> list[dict[str, Any]]:
    """Receive from a FIFO queue without deleting and see what the next receives get; rows of what happened."""
    sqs = mf.sqs
    url = _fresh_queue(sqs, "fifo")
    for sku, version in [("SKU-0042", 1), ("SKU-0042", 2), ("SKU-0042", 3), ("SKU-0043", 1)]:
        _send(sqs, url, {"sku": sku, "grupo": sku, "version": version}, "fifo")

    def receive(count: int = 1) -> list[dict[str, Any]]:
        return sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=count, WaitTimeSeconds=0).get("Messages", [])

    def names(messages: list[dict[str, Any]]) -> str:
        bodies = [json.loads(m["Body"]) for m in messages]
        return ", ".join(f"{b['sku']} v{b['version']}" for b in bodies) or "nothing"

    rows = []
    first = receive()
    rows.append({"step": "receive 1 (not deleted)", "moto gives": names(first), "AWS gives": "SKU-0042 v1"})
    rows.append({"step": "receive again", "moto gives": names(receive()), "AWS gives": "SKU-0043 v1"})
    rows.append({"step": "and again", "moto gives": names(receive()), "AWS gives": "nothing"})
    sqs.delete_message(QueueUrl=url, ReceiptHandle=first[0]["ReceiptHandle"])
    batch = receive(10)
    rows.append({"step": "delete v1, receive 10", "moto gives": names(batch), "AWS gives": "SKU-0042 v2, SKU-0042 v3"})
    reloj.advance(VISIBILITY_SECONDS + 1)
    rows.append({"step": "let both time out, receive 1", "moto gives": names(receive()), "AWS gives": "SKU-0042 v2"})
    sqs.delete_queue(QueueUrl=url)
    return rows


# -- (b) throughput: one group against sku groups -----------------------------------------
def throughput(
    mf: world.World, reloj: VirtualClock, consumer_counts: tuple[int, ...] = (1, 10, 50)
) -> list[OrderingRun]:
    """For each number of consumers, a FIFO queue with ONE group and one grouped by sku (3,400 skus)."""
    runs = []
    for consumers in consumer_counts:
        one = OrderingConfig(groups=1, skus=ordering.SKU_GROUPS, consumers=consumers, messages=10)
        by_sku = OrderingConfig(
            groups=ordering.SKU_GROUPS, skus=ordering.SKU_GROUPS, consumers=consumers, messages=max(10, consumers)
        )
        runs += [run_ordering(mf, reloj, one), run_ordering(mf, reloj, by_sku)]
    return runs


# -- (c) and (e): order where it matters, parallelism where it does not --------------------
def compare_setups(
    mf: world.World,
    reloj: VirtualClock,
    groups: int = 1,
    consumers: int = 8,
    skus: int = 8,
    messages: int = 24,
    absolute_share: float = 0.5,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """The same messages through a standard queue, a FIFO queue with `groups` groups, and one grouped by sku.

    Processing times vary by ±50 % (seeded), so parallel consumers can finish out of order.
    """
    base = {"consumers": consumers, "skus": skus, "messages": messages, "absolute_share": absolute_share}
    setups = [
        OrderingConfig(queue="standard", jitter=0.5, **base),
        OrderingConfig(queue="fifo", groups=groups, jitter=0.5, **base),
        OrderingConfig(queue="fifo", groups=skus, jitter=0.5, **base),
    ]
    return [run_ordering(mf, reloj, config, seed).summary() for config in setups]


def mix_matters(
    mf: world.World, reloj: VirtualClock, shares: tuple[float, ...] = (0.0, 1.0), seed: int = 0
) -> list[dict[str, Any]]:
    """A standard queue (no order at all) for each share of "stock = N" messages: when does reordering hurt?"""
    rows = []
    for share in shares:
        config = OrderingConfig(queue="standard", consumers=8, skus=8, messages=24, absolute_share=share, jitter=0.5)
        rows.append({"absolute_share": share, **run_ordering(mf, reloj, config, seed).summary()})
    return rows


# -- (d) making order irrelevant: the version-conditional write ------------------------------
WRITES = ("put", "put_if_newer")


def versioned_updates(
    mf: world.World, reloj: VirtualClock, skus: int = 5, messages: int = 25, consumers: int = 5, seed: int = 0
) -> list[dict[str, Any]]:
    """Recounts ("stock = N", versioned) through a standard queue, written plainly and version-conditionally.

    Both runs use the same seed, so the queue and the consumers reorder the updates in exactly the same way;
    only the write differs.
    """
    ordering.create_stock_table(mf.dynamodb)
    table = ordering.StockTable(mf.dynamodb)
    config = OrderingConfig(
        queue="standard", skus=skus, messages=messages, consumers=consumers, absolute_share=1.0, jitter=0.8
    )
    rows = []
    for write in WRITES:
        for item in table.items():  # start from an empty table
            mf.dynamodb.delete_item(TableName=table.table_name, Key={"sku": {"S": item.sku}})
        discarded: list[dict[str, Any]] = []
        run = run_ordering(mf, reloj, config, seed, apply=_writer(table, write, discarded))
        newest = {body["sku"]: body for body in run.sent}  # the last one sent carries the sku's highest version
        stored = {item.sku: item for item in table.items()}
        rows.append(
            {
                "write": write,
                "messages": len(run.applied),
                "out_of_order": run.out_of_order,
                "stale_discarded": len(discarded),
                "skus_not_newest": sum(stored[sku].version != body["version"] for sku, body in newest.items()),
                "skus": len(newest),
            }
        )
    return rows


def _writer(table: ordering.StockTable, write: str, discarded: list[dict[str, Any]]) -> Apply:
    """What a consumer does with a recount: `put` it, or `put_if_newer` and note the stale ones it discarded."""

    def apply(body: dict[str, Any]) -> None:
        if write == "put":
            table.put(body["sku"], body["cantidad"], body["version"])
        elif not table.put_if_newer(body["sku"], body["cantidad"], body["version"]):
            discarded.append(body)

    return apply
