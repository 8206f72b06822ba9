"""One of the processes of the two-process parallel test: 25 threads charge the same order via a moto server.

Usage: python parallel_child.py ENDPOINT_URL THREADS. Prints {"charges": n, "answers": [...]} as JSON.
"""

import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

from mercadofresco import world
from mercadofresco.clock import Stopwatch, VirtualClock
from mercadofresco.models import gateway
from mercadofresco.patterns import idempotency
from mercadofresco.runtime.settings import EndpointConfig


def main(endpoint_url: str, threads: int) -> None:
    clock = VirtualClock().start()  # the same frozen instant as the parent: locks do not expire
    aws = world.build(world.WorldConfig(endpoint=EndpointConfig(mode="endpoint", endpoint_url=endpoint_url)))
    provider = gateway.PaymentGateway(clock)  # this process's view of the gateway: counts its own charges
    store = idempotency.IdempotencyStore(aws.dynamodb, clock)
    start = threading.Barrier(threads)

    def charge() -> dict:
        made = provider.charge("PED-2026-084417", Decimal("48.20"), waiter=Stopwatch(clock))
        return {"referencia_cobro": f"{made.referencia_cobro}@pid{os.getpid()}"}  # unique across processes

    def attempt(_: int) -> dict:
        start.wait()
        for _ in range(5_000):  # back off and come again, like a redelivery, until the result is there
            try:
                return idempotency.run_once(store, "cobro:PED-2026-084417", charge, gateway.is_permanent_failure)
            except idempotency.AlreadyInProgressError:
                continue
        raise RuntimeError("never got the result")

    with ThreadPoolExecutor(threads) as pool:
        answers = list(pool.map(attempt, range(threads)))
    print(json.dumps({"charges": len(provider.ledger), "answers": [a["referencia_cobro"] for a in answers]}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
