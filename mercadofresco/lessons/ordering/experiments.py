"""Section 12's experiments: one FIFO group is serial, sku groups are parallel, versions make order irrelevant.

(a) `group_hold_probe` checks first that moto holds a FIFO group while one of
its messages is in flight; (b) `throughput` measures one group against sku
groups with 1, 10 and 50 consumers; (c) `compare_setups` and `mix_matters`
send the same stock messages through a standard queue, one group and sku
groups (the widget calls `compare_setups`); (d) `versioned_updates` writes
reordered recounts to `mercadofresco-stock` plainly (`put_without_version_check`,
the wrong write) and version-conditionally (`ordering.StockTable.put_if_newer`).
The runs themselves are `stock_queue.run_ordering`. Notebook 12 calls these.
"""

from __future__ import annotations

import json
from typing import Any

from mercadofresco import world
from mercadofresco.clock import VirtualClock
from mercadofresco.i18n import T_
from mercadofresco.lessons.ordering import stock_queue
from mercadofresco.patterns import ordering

# -- the three questions, on class 210's examples -------------------------------------------------
CLASS_210_PAIRS = {
    "two sales of one sku": (ordering.sold("SKU-0042"), ordering.sold("SKU-0042")),
    "two recounts of one sku": (ordering.recounted("SKU-0042", 7), ordering.recounted("SKU-0042", 4)),
    "a sale and a recount": (ordering.sold("SKU-0042"), ordering.recounted("SKU-0042", 4)),
    "recounts of two skus": (ordering.recounted("SKU-0042", 7), ordering.recounted("SKU-0043", 4)),
}
# The "kinds" a question row can show, marked for the catalog: the row keeps the English, a table shows it translated
KIND_PAIRS = (
    T_("relative + relative"), T_("relative + absolute"), T_("absolute + relative"), T_("absolute + absolute"),
)  # fmt: skip


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
                "same data": T_("yes") if answer.same_data else T_("no"),
                "kinds": " + ".join(kind.value for kind in answer.kinds),
                "order changes result": T_("yes") if answer.order_changes_result else T_("no"),
                "needs order": T_("YES") if answer.needs_order else T_("no"),
                "why": answer.reason,
            }
        )
    return rows


# -- (a) does moto hold a group while one of its messages is in flight? -------------------
def group_hold_probe(aws: world.World, clock: VirtualClock) -> list[dict[str, Any]]:
    """Receive from a FIFO queue without deleting and see what the next receives get; rows of what happened."""
    sqs = aws.sqs
    url = stock_queue.fresh_queue(sqs, "fifo")
    for sku, version in [("SKU-0042", 1), ("SKU-0042", 2), ("SKU-0042", 3), ("SKU-0043", 1)]:
        stock_queue.send(sqs, url, {"sku": sku, "grupo": sku, "version": version}, "fifo")

    def receive(count: int = 1) -> list[dict[str, Any]]:
        return sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=count, WaitTimeSeconds=0).get("Messages", [])

    def names(messages: list[dict[str, Any]]) -> str:
        bodies = [json.loads(m["Body"]) for m in messages]
        return ", ".join(f"{b['sku']} v{b['version']}" for b in bodies) or T_("nothing")

    rows = []
    first = receive()
    rows.append({"step": T_("receive 1 (not deleted)"), "moto gives": names(first), "AWS gives": "SKU-0042 v1"})
    rows.append({"step": T_("receive again"), "moto gives": names(receive()), "AWS gives": "SKU-0043 v1"})
    rows.append({"step": T_("and again"), "moto gives": names(receive()), "AWS gives": T_("nothing")})
    sqs.delete_message(QueueUrl=url, ReceiptHandle=first[0]["ReceiptHandle"])
    batch = receive(10)
    rows.append(
        {"step": T_("delete v1, receive 10"), "moto gives": names(batch), "AWS gives": "SKU-0042 v2, SKU-0042 v3"}
    )
    clock.advance(stock_queue.VISIBILITY_SECONDS + 1)
    rows.append(
        {"step": T_("let both time out, receive 1"), "moto gives": names(receive()), "AWS gives": "SKU-0042 v2"}
    )
    sqs.delete_queue(QueueUrl=url)
    return rows


# -- (b) throughput: one group against sku groups -----------------------------------------
def throughput(
    aws: world.World, clock: VirtualClock, consumer_counts: tuple[int, ...] = (1, 10, 50)
) -> list[stock_queue.OrderingRun]:
    """For each number of consumers, a FIFO queue with ONE group and one grouped by sku (3,400 skus)."""
    runs = []
    for consumers in consumer_counts:
        one = stock_queue.OrderingConfig(groups=1, skus=ordering.SKU_GROUPS, consumers=consumers, messages=10)
        by_sku = stock_queue.OrderingConfig(
            groups=ordering.SKU_GROUPS, skus=ordering.SKU_GROUPS, consumers=consumers, messages=max(10, consumers)
        )
        runs += [stock_queue.run_ordering(aws, clock, one), stock_queue.run_ordering(aws, clock, by_sku)]
    return runs


# -- (c) and (e): order where it matters, parallelism where it does not --------------------
def compare_setups(
    aws: world.World,
    clock: VirtualClock,
    groups: int = 1,
    consumers: int = 8,
    skus: int = 8,
    messages: int = 20,
    absolute_share: float = 0.5,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """The same messages through a standard queue, a FIFO queue with `groups` groups, and one grouped by sku.

    Processing times vary by ±50 % (seeded), so parallel consumers can finish out of order.
    """
    base = {"consumers": consumers, "skus": skus, "messages": messages, "absolute_share": absolute_share}
    setups = [
        stock_queue.OrderingConfig(queue="standard", jitter=0.5, **base),
        stock_queue.OrderingConfig(queue="fifo", groups=groups, jitter=0.5, **base),
        stock_queue.OrderingConfig(queue="fifo", groups=skus, jitter=0.5, **base),
    ]
    return [stock_queue.run_ordering(aws, clock, config, seed).summary() for config in setups]


def mix_matters(
    aws: world.World, clock: VirtualClock, shares: tuple[float, ...] = (0.0, 1.0), seed: int = 0
) -> list[dict[str, Any]]:
    """A standard queue (no order at all) for each share of "stock = N" messages: when does reordering hurt?"""
    rows = []
    for share in shares:
        config = stock_queue.OrderingConfig(
            queue="standard", consumers=8, skus=8, messages=20, absolute_share=share, jitter=0.5
        )
        rows.append({"absolute_share": share, **stock_queue.run_ordering(aws, clock, config, seed).summary()})
    return rows


# -- (d) making order irrelevant: the version-conditional write ------------------------------
WRITES = ("put", "put_if_newer")


def versioned_updates(
    aws: world.World, clock: VirtualClock, skus: int = 4, messages: int = 20, consumers: int = 4, seed: int = 0
) -> list[dict[str, Any]]:
    """Recounts ("stock = N", versioned) through a standard queue, written plainly and version-conditionally.

    Both runs use the same seed, so the queue and the consumers reorder the updates in exactly the same way;
    only the write differs.
    """
    ordering.create_stock_table(aws.dynamodb)
    table = ordering.StockTable(aws.dynamodb)
    config = stock_queue.OrderingConfig(
        queue="standard", skus=skus, messages=messages, consumers=consumers, absolute_share=1.0, jitter=0.8
    )
    rows = []
    for write in WRITES:
        for item in table.items():  # start from an empty table
            aws.dynamodb.delete_item(TableName=table.table_name, Key={"sku": {"S": item.sku}})
        discarded: list[dict[str, Any]] = []
        run = stock_queue.run_ordering(aws, clock, config, seed, apply=_writer(table, write, discarded))
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


def put_without_version_check(table: ordering.StockTable, sku: str, stock: int, version: int) -> None:
    """The wrong write: unconditional, so whatever arrives last wins, old or new."""
    item = {"sku": {"S": sku}, "stock": {"N": str(stock)}, "version": {"N": str(version)}}
    table.dynamodb.put_item(TableName=table.table_name, Item=item)


def _writer(table: ordering.StockTable, write: str, discarded: list[dict[str, Any]]) -> stock_queue.Apply:
    """What a consumer does with a recount: `put` it unconditionally, or `put_if_newer` and note the stale ones."""

    def apply(body: dict[str, Any]) -> None:
        if write == "put":
            put_without_version_check(table, body["sku"], body["cantidad"], body["version"])
        elif not table.put_if_newer(body["sku"], body["cantidad"], body["version"]):
            discarded.append(body)

    return apply
