"""The deployed consumer around a redrive (notebook 11, lab 2).

`consume` runs the deployed consumer (`handlers.ChargeOrders`) with the schema
versions it reads: before exercise 2's fix only version 1; the fix adds 2.
`redrive_after_lost_responses` shows why a redrive needs an idempotent consumer.
`ramp_rows` asks whether class 210's 2,800 executions in 40 s fit the ramp AWS
documents for an SQS event source mapping (`lambda_scaling.MODES`).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from mercadofresco import orders, queues, world
from mercadofresco.clock import VirtualClock
from mercadofresco.errors import check_range
from mercadofresco.i18n import T_
from mercadofresco.models import gateway as gw
from mercadofresco.models import lambda_poller, move_task
from mercadofresco.shop import handlers
from mercadofresco.sims import lambda_scaling

MODE_WORDS = {"standard": T_("standard mode"), "provisioned": T_("provisioned mode")}  # a ramp row's name, by mode


def consume(
    sqs: Any, queue_url: str, clock: VirtualClock, client: gw.GatewayClient, versions: tuple[int, ...]
) -> lambda_poller.Poller:
    """Run the deployed consumer (reading `versions`) on the queue until it is empty; return its poller."""
    config = lambda_poller.PollerConfig(max_idle_poll_seconds=20)
    poller = lambda_poller.Poller(sqs, queue_url, handlers.ChargeOrders(client, versions), clock, config)
    poller.run_until_idle(3_600)
    return poller


def deleted_count(poller: lambda_poller.Poller) -> int:
    """Messages the poller deleted (the source queue's NumberOfMessagesDeleted, which moto does not publish)."""
    return sum(1 for row in poller.timeline if row["event"] == "deleted")


def redrive_after_lost_responses(
    aws: world.World, clock: VirtualClock, count: int = 10, send_idempotency_key: bool = False
) -> dict[str, Any]:
    """Orders whose charge went through but whose answer was lost end in the DLQ; redrive them into ChargeOrders.

    The naive consumer charges again: the redrive duplicates the effect, unless the
    gateway gets an Idempotency-Key (`cobro:{pedido_id}`) and returns the first charge.
    """
    check_range("count", count, 1, 100)
    pair = aws.reset_orders_queue(visibility_timeout_seconds=120, max_receive_count=1)
    provider = gw.PaymentGateway(clock)
    provider.fail_next(gw.Fault.RESPONSE_LOST, times=count)  # charged, then the connection dropped
    client = gw.GatewayClient(provider, read_timeout_seconds=30, send_idempotency_key=send_idempotency_key)
    orders.send_orders(
        aws.sqs, pair.url, [orders.Order(orders.order_id(400_000 + n), Decimal("48.20")) for n in range(count)]
    )
    config = lambda_poller.PollerConfig(max_idle_poll_seconds=20)
    lambda_poller.Poller(aws.sqs, pair.url, handlers.ChargeOrders(client), clock, config).run_until_idle(3_600)
    in_dlq = queues.queue_counts(aws.sqs, pair.dlq_url)["visible"]
    move_task.start_message_move_task(aws.sqs, clock, pair.dlq_url, pair.url, 10)
    lambda_poller.Poller(aws.sqs, pair.url, handlers.ChargeOrders(client), clock, config).run_until_idle(3_600)
    per_order = provider.charges_per_order()
    return {
        "idempotency_key": send_idempotency_key,
        "orders": count,
        "in_dlq_before_redrive": in_dlq,
        "charges": len(provider.ledger),
        "orders_charged_twice": sum(1 for n in per_order.values() if n > 1),
    }


def ramp_rows(concurrency: int = 2_800, seconds: float = 40.0) -> list[dict[str, Any]]:
    """Class 210's ramp beside the two modes of an SQS event source mapping: where each is after `seconds`."""
    check_range("concurrency", concurrency, 1, 20_000)
    check_range("seconds", seconds, 1, 3_600)
    rows = [
        {
            "ramp": T_("class 210 (as stated)"),
            "start": "-",
            "per_minute": round(lambda_scaling.per_minute_needed(concurrency, seconds)),
            "ceiling": "-",
            f"after_{seconds:g}_s": concurrency,
            f"seconds_to_{concurrency}": seconds,
        }
    ]
    for mode, scaling in lambda_scaling.MODES.items():
        reach = scaling.seconds_to_reach(concurrency)
        rows.append(
            {
                "ramp": MODE_WORDS.get(mode, f"{mode} mode"),
                "start": scaling.start,
                "per_minute": scaling.per_minute,
                "ceiling": scaling.ceiling,
                f"after_{seconds:g}_s": scaling.concurrency_after(seconds),
                f"seconds_to_{concurrency}": T_("never (ceiling)") if reach is None else round(reach),
            }
        )
    return rows
