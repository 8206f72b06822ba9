"""Section 15's decision table: which service for which need, from five questions (notebook 15).

The lesson's table was lost; this is its rebuild. `choose` asks, in this order:
does the caller need the answer now (a synchronous call), is it a long process
with steps, waits and compensation (Step Functions, started by an EventBridge
rule when a fact starts it, through a queue and a starter when the execution
must be named after the order), do consumers choose by content (EventBridge, a
queue per consumer), do several consumers care (SNS fanned out to SQS), or just
one (SQS). Order turns SQS and SNS into their FIFO kinds, and adds a caveat
where the service cannot keep it (EventBridge).

It lives in `lessons/`, not `patterns/`: a team copies the reasoning into a
design review, not the function into production code.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, fields
from typing import Any

from mercadofresco.i18n import N_

QUESTIONS = {  # shown where a learner answers them: `_(QUESTIONS[name])`
    "answer_now": N_("Does the caller need the result before it can go on?"),
    "long_process": N_("Is it a process of several steps, with waits or a compensation path?"),
    "route_by_content": N_("Do consumers pick events by their content (type, amount, shipping)?"),
    "many_consumers": N_("Does more than one consumer care about it?"),
    "ordered": N_("Must the messages be applied in order?"),
}


@dataclass(frozen=True)
class Need:
    """The five answers."""

    answer_now: bool = False
    long_process: bool = False
    route_by_content: bool = False
    many_consumers: bool = False
    ordered: bool = False


@dataclass(frozen=True)
class Choice:
    """A service (or combination), the reason, and what to watch."""

    service: str
    why: str
    caveat: str = ""


def choose(need: Need) -> Choice:
    """The service for `need`, with the reason and a caveat."""
    if need.answer_now:
        rest = need.many_consumers or need.route_by_content or need.long_process
        return Choice(
            "synchronous call",
            "the caller waits for the result; a queue would only hide the wait",
            "with a timeout, a circuit breaker and an idempotency key"
            + ("; publish what happens after the answer as an event" if rest else ""),
        )
    if need.long_process:
        started_by_fact = need.many_consumers or need.route_by_content
        caveat = (
            "a rule's own target names no execution, so a duplicate event starts a second one: "
            "to name it after the pedido_id put a queue and a starter between (rule -> SQS -> StartExecution)"
            if started_by_fact
            else "start it named after the pedido_id: a repeated start returns the open execution"
        )
        return Choice(
            "EventBridge -> Step Functions" if started_by_fact else "Step Functions",
            "steps, waits and a compensation path are a workflow's job"
            + ("; a fact on the bus starts it" if started_by_fact else ""),
            caveat
            + ("; executions run side by side, so order holds inside one, not between them" if need.ordered else ""),
        )
    if need.route_by_content:
        return Choice(
            "EventBridge -> SQS -> consumer",
            "rules pick consumers by content; each consumer's queue buffers, retries and keeps a DLQ",
            "EventBridge keeps no order: target an SQS FIFO queue and make consumers version-aware"
            if need.ordered
            else "",
        )
    if need.many_consumers:
        return Choice(
            "SNS FIFO -> SQS FIFO" if need.ordered else "SNS -> SQS",
            "fan-out with durability: every consumer gets its own queue and its own pace",
            "order holds per MessageGroupId; choose the group as fine as the order allows" if need.ordered else "",
        )
    return Choice(
        "SQS FIFO" if need.ordered else "SQS",
        "one consumer, its own pace: a queue decouples and buffers",
        "one MessageGroupId per thing that must stay in order (the sku), never one for all" if need.ordered else "",
    )


# MercadoFresco's flows, answered.
FLOWS = {
    "checkout: accept the order, answer its pedido_id": Need(answer_now=True),
    "cola-mercadofresco-pedidos -> consumer that charges": Need(),
    "PedidoConfirmado -> email and ERP": Need(many_consumers=True),
    "PedidoConfirmado -> warehouse, only home deliveries": Need(route_by_content=True),
    "mercadofresco-procesar-pedido: prepare, ship, compensate": Need(long_process=True, many_consumers=True),
    "stock movements per sku": Need(ordered=True),
}


def flows_table(flows: dict[str, Need] | None = None) -> list[dict[str, Any]]:
    """One row per flow: its answers (y/-) and the choice."""
    return [_row({"flow": name}, need) for name, need in (flows or FLOWS).items()]


def every_combination() -> list[dict[str, Any]]:
    """The whole table: all 32 combinations of answers."""
    names = [f.name for f in fields(Need)]
    return [
        _row({}, Need(**dict(zip(names, answers, strict=True))))
        for answers in itertools.product((False, True), repeat=5)
    ]


def _row(first: dict[str, Any], need: Need) -> dict[str, Any]:
    answers = {name: "y" if value else "-" for name, value in asdict(need).items()}
    return first | answers | {"service": choose(need).service}
