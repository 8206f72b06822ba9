"""What a run of the whole flow shows (notebook 16): effects per order, each fault's evidence, one order's trace.

Everything here reads a finished `architecture.FlowRun` and counts at the
systems themselves: the gateway's ledger, the orders written, each provider's
record of what it did, the queues and DLQs. Nothing here changes the run.
"""

from __future__ import annotations

from typing import Any

from mercadofresco import queues, world
from mercadofresco.lessons.architecture.flow import CONSUMER_QUEUES, Flow, FlowRun
from mercadofresco.patterns import breaker

HOPS = {
    "response_lost": ("charge", "the gateway charges and the answer is lost"),
    "gateway_down": ("charge", "the gateway answers 503"),
    "crash_after_charge": ("charge", "the consumer dies right after the charge"),
    "crash_before_write": ("confirm", "the consumer dies after COMPLETADO, before the write"),
    "publisher_dies": ("outbox", "the publisher dies after put_events, before marking"),
    "crash_before_delete": ("consumers", "each consumer dies after its effect, before DeleteMessage"),
    "crash_after_effect": ("consumers", "each consumer dies after the provider acted, before COMPLETADO"),
    "erp_down": ("ERP", "the ERP is down for the whole stage"),
}


def evidence(run: FlowRun) -> list[dict[str, Any]]:
    """One row per injected fault: where it hit and what the run shows happened to it."""
    flow = run.flow
    crashes = {
        hop: [row for row in poller.timeline if row["event"] == "crashed"] for hop, poller in run.pollers.items()
    }
    opened = sum(1 for _, _, new in flow.breaker.transitions if new is breaker.State.OPEN)
    seen = {
        "response_lost": f"{flow.gateway.calls} gateway calls, {len(flow.gateway.ledger)} charges",
        "gateway_down": f"breaker opened {opened}x, {flow.client.refused} charges refused without calling",
        "crash_after_charge": f"{len(crashes['cobro'])} crash(es) in the charge consumer; redelivered",
        "crash_before_write": f"{len(flow.book.pedidos)} orders written for {len(run.pedido_ids)}",
        "publisher_dies": f"{flow.published} events published for {len(flow.book.outbox)} outbox rows",
        "crash_before_delete": f"{sum(len(crashes[op]) for op in CONSUMER_QUEUES)} consumer crashes in all",
        "crash_after_effect": "providers honour the key"
        if all(p.honours_key for p in flow.providers.values())
        else "providers ignore the key",
        "erp_down": f"{flow.redriven.get(CONSUMER_QUEUES['erp'], 0)} messages redriven from its DLQ",
    }
    rows = [
        {"fault": name, "hop": HOPS[name][0], "what": HOPS[name][1], "seen": seen[name]} for name in run.faults.names()
    ]
    if flow.redriven.get(world.ORDERS_QUEUE):
        moved = f"{flow.redriven[world.ORDERS_QUEUE]} redriven from {world.ORDERS_DLQ} after the fix"
        rows.append(
            {"fault": "(stacked)", "hop": "charge", "what": "the faults spent orders' 4 receives", "seen": moved}
        )
    return rows


def tally(run: FlowRun) -> list[dict[str, Any]]:
    """Per order: charges at the gateway, orders written, events published, and each consumer's effects."""
    flow = run.flow
    charges = flow.gateway.charges_per_order()
    published = [row["pedido_id"] for row in flow.timeline if row["event"] == "published"]
    effects = {name: provider.effects_per_order() for name, provider in flow.providers.items()}
    return [
        {
            "pedido_id": pedido_id,
            "charges": charges[pedido_id],
            "written": int(pedido_id in flow.book.pedidos),
            "events_published": published.count(pedido_id),
            **{name: effects[name][pedido_id] for name in CONSUMER_QUEUES},
        }
        for pedido_id in run.pedido_ids
    ]


def left_in_queues(flow: Flow) -> dict[str, int]:
    """Messages still anywhere: every queue and every DLQ of the flow (0 everywhere means nothing is pending)."""
    counts = {}
    for name, pair in flow.pairs.items():
        counts[name] = sum(queues.queue_counts(flow.aws.sqs, pair.url).values())
        counts[name.replace("cola-", "") + " DLQ"] = sum(queues.queue_counts(flow.aws.sqs, pair.dlq_url).values())
    return counts


def trace(run: FlowRun, pedido_id: str) -> list[dict[str, Any]]:
    """One order through every hop, in time order."""
    rows = [row for row in run.flow.timeline if row["pedido_id"] == pedido_id]
    for hop, poller in run.pollers.items():
        rows += [
            {
                "seconds": row["seconds"],
                "hop": hop,
                "event": row["event"],
                "pedido_id": pedido_id,
                "detail": row["detail"],
            }
            for row in poller.timeline
            if row["pedido_id"] == pedido_id
        ]
    return sorted(rows, key=lambda row: row["seconds"])
