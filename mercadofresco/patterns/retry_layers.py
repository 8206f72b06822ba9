"""Where to retry: the attempts of stacked layers multiply (SDK × queue × workflow, notebook 7)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from mercadofresco.errors import check_range
from mercadofresco.i18n import _

WORST_CASE_LIMIT = 15  # the lesson: more attempts than this on one dependency means something is wrong


@dataclass(frozen=True)
class Layer:
    """One place that retries, and how many attempts it makes in all."""

    name: str
    attempts: int

    def __post_init__(self) -> None:
        check_range(_("attempts of layer {name}").format(name=repr(self.name)), self.attempts, 1, 100)


LESSON_LAYERS = (Layer("SDK max_attempts", 5), Layer("SQS maxReceiveCount", 4), Layer("Step Functions Retry", 4))


def worst_case(layers: Sequence[Layer], orders: int = 1) -> dict[str, object]:
    """Calls one dependency can receive when every attempt of every layer fails, for `orders` orders."""
    check_range("orders", orders, 1, 10_000_000)
    per_order = math.prod(layer.attempts for layer in layers)
    formula = " × ".join(str(layer.attempts) for layer in layers)
    warning = (
        _("{calls} > {limit}: one layer should be in charge").format(calls=per_order, limit=WORST_CASE_LIMIT)
        if per_order > WORST_CASE_LIMIT
        else ""
    )
    return {
        "formula": formula,
        "per_order": per_order,
        "orders": orders,
        "calls": per_order * orders,
        "warning": warning,
    }
