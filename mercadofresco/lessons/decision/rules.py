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

from mercadofresco.i18n import N_, T_, _

QUESTIONS = {  # shown where a learner answers them: `questions()`
    "answer_now": N_("Does the caller need the result before it can go on?"),
    "long_process": N_("Is it a process of several steps, with waits or a compensation path?"),
    "route_by_content": N_("Do consumers pick events by their content (type, amount, shipping)?"),
    "many_consumers": N_("Does more than one consumer care about it?"),
    "ordered": N_("Must the messages be applied in order?"),
}


def questions() -> dict[str, str]:
    """The five questions by name, in the learner's language (the keys are `Need`'s fields)."""
    return {name: _(question) for name, question in QUESTIONS.items()}


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
    """The service for `need`, with the reason and a caveat (those two in the learner's language)."""
    if need.answer_now:
        rest = need.many_consumers or need.route_by_content or need.long_process
        return Choice(
            T_("synchronous call"),
            _("the caller waits for the result; a queue would only hide the wait"),
            _clauses(
                _("with a timeout, a circuit breaker and an idempotency key"),
                _("publish what happens after the answer as an event") if rest else "",
            ),
        )
    if need.long_process:
        started_by_fact = need.many_consumers or need.route_by_content
        caveat = (
            _(
                "a rule's own target names no execution, so a duplicate event starts a second one: "
                "to name it after the pedido_id put a queue and a starter between (rule -> SQS -> StartExecution)"
            )
            if started_by_fact
            else _("start it named after the pedido_id: a repeated start returns the open execution")
        )
        return Choice(
            "EventBridge -> Step Functions" if started_by_fact else "Step Functions",
            _clauses(
                _("steps, waits and a compensation path are a workflow's job"),
                _("a fact on the bus starts it") if started_by_fact else "",
            ),
            _clauses(
                caveat,
                _("executions run side by side, so order holds inside one, not between them") if need.ordered else "",
            ),
        )
    if need.route_by_content:
        return Choice(
            T_("EventBridge -> SQS -> consumer"),
            _("rules pick consumers by content; each consumer's queue buffers, retries and keeps a DLQ"),
            _("EventBridge keeps no order: target an SQS FIFO queue and make consumers version-aware")
            if need.ordered
            else "",
        )
    if need.many_consumers:
        return Choice(
            "SNS FIFO -> SQS FIFO" if need.ordered else "SNS -> SQS",
            _("fan-out with durability: every consumer gets its own queue and its own pace"),
            _("order holds per MessageGroupId; choose the group as fine as the order allows") if need.ordered else "",
        )
    return Choice(
        "SQS FIFO" if need.ordered else "SQS",
        _("one consumer, its own pace: a queue decouples and buffers"),
        _("one MessageGroupId per thing that must stay in order (the sku), never one for all") if need.ordered else "",
    )


def _clauses(*said: str) -> str:
    """Clauses of one reason or caveat, each translated on its own, joined as the lesson writes them."""
    return "; ".join(clause for clause in said if clause)


# MercadoFresco's flows, answered.
FLOWS = {  # the keys stay English (a notebook looks a flow up by them); a table shows them translated
    T_("checkout: accept the order, answer its pedido_id"): Need(answer_now=True),
    T_("cola-mercadofresco-pedidos -> consumer that charges"): Need(),
    T_("PedidoConfirmado -> email and ERP"): Need(many_consumers=True),
    T_("PedidoConfirmado -> warehouse, only home deliveries"): Need(route_by_content=True),
    T_("mercadofresco-procesar-pedido: prepare, ship, compensate"): Need(long_process=True, many_consumers=True),
    T_("stock movements per sku"): Need(ordered=True),
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
    answers = {name: T_("y") if value else "-" for name, value in asdict(need).items()}
    return first | answers | {"service": choose(need).service}
