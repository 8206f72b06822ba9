"""Cost of one SQS call on moto as the queue gets deeper, with and without `moto_speedups`.

    python benchmarks/moto_depth_bench.py [depth ...]     # default: 100 1000 5000

For each depth: fill `cola-mercadofresco-pedidos` (with the fix, so filling is quick),
then time one ReceiveMessage of 10 + DeleteMessageBatch of the 10, and one SendMessage,
with moto's own code ("before") and with the fix ("after"). Median of a few repeats,
under the virtual clock as the notebooks run. A measurement, not a test.
"""

from __future__ import annotations

import statistics
import sys
import time

from mercadofresco import clock, world
from mercadofresco.runtime import moto_speedups

REPEATS = 5


def fill(aws: world.World, depth: int) -> None:
    """Send `depth` orders in batches of 10."""
    for start in range(0, depth, 10):
        entries = [{"Id": str(i), "MessageBody": f'{{"pedido_id": "PED-{start + i}"}}'} for i in range(10)]
        aws.sqs.send_message_batch(QueueUrl=aws.orders.url, Entries=entries[: depth - start])


def receive_and_delete(aws: world.World) -> float:
    """Seconds for one receive of 10 and the batch delete of what it returned."""
    started = time.perf_counter()
    messages = aws.sqs.receive_message(QueueUrl=aws.orders.url, MaxNumberOfMessages=10, WaitTimeSeconds=0)["Messages"]
    entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
    aws.sqs.delete_message_batch(QueueUrl=aws.orders.url, Entries=entries)
    return time.perf_counter() - started


def send_one(aws: world.World) -> float:
    started = time.perf_counter()
    aws.sqs.send_message(QueueUrl=aws.orders.url, MessageBody='{"pedido_id": "PED-extra"}')
    return time.perf_counter() - started


def measure(aws: world.World, repeats: int) -> tuple[float, float]:
    """Median seconds of receive(10)+delete and of one send."""
    cycles = [receive_and_delete(aws) for _ in range(repeats)]
    sends = [send_one(aws) for _ in range(repeats)]
    return statistics.median(cycles), statistics.median(sends)


def main(depths: list[int]) -> int:
    print(f"{'depth':>6} {'receive(10)+delete ms':>28} {'send ms':>22}")
    print(f"{'':>6} {'before':>13} {'after':>14} {'before':>10} {'after':>11}")
    with clock.VirtualClock():
        for depth in depths:
            with world.build(world.WorldConfig()) as aws:
                fill(aws, depth)
                aws.sqs.receive_message(QueueUrl=aws.orders.url, WaitTimeSeconds=0)  # warm up
                after = measure(aws, REPEATS)
                aws.moto_speedups.undo()
                before = measure(aws, max(2, REPEATS if depth <= 1000 else 2))
                aws.moto_speedups = moto_speedups.apply()
            print(
                f"{depth:6d} {before[0] * 1000:13.1f} {after[0] * 1000:14.1f} "
                f"{before[1] * 1000:10.1f} {after[1] * 1000:11.1f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main([int(arg) for arg in sys.argv[1:]] or [100, 1000, 5000]))
