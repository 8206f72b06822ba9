"""The consumers after the confirmation: preparation, email and ERP, each once per order (notebook 16).

Each reads its own queue (`cola-mercadofresco-almacen`, `-correo`, `-erp`),
where a PedidoConfirmado event can arrive more than once (the publisher died
before marking its row, a redelivery, a redrive). `FulfilOrders` makes each
effect happen once per order with the same `run_once` as the charge, under a
key per operation (`preparacion:`, `correo-confirmacion:`, `aviso-erp:`).

`Provider` is a **model** of the system that carries the effect out (the
warehouse, the email provider, the ERP): it records what it did, can be down,
and by default honours an idempotency key, as the payment gateway does. That
last part closes the one gap the table cannot: a consumer that dies after the
effect and before COMPLETADO. With `honours_key=False` that crash repeats the effect.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mercadofresco.errors import MercadoFrescoError
from mercadofresco.i18n import _
from mercadofresco.models.lambda_poller import Invocation
from mercadofresco.patterns import idempotency

OPERATIONS: dict[str, Callable[[str], str]] = {
    "preparacion": lambda pedido_id: f"preparacion:{pedido_id}",
    "correo": idempotency.email_key,
    "erp": lambda pedido_id: f"aviso-erp:{pedido_id}",
}


class ProviderDownError(MercadoFrescoError):
    """The system behind the consumer is down; the message waits for a later receive."""


class BadEventError(MercadoFrescoError, ValueError):
    """A message that is not a PedidoConfirmado event."""


def pedido_of(body: str) -> str:
    """The pedido_id in an EventBridge envelope (from a rule or through SNS raw delivery) or a bare payload."""
    try:
        data = json.loads(body)
        return (data.get("detail") or data)["pedido_id"]
    except (json.JSONDecodeError, TypeError, KeyError, AttributeError) as exc:
        raise BadEventError(_("not a PedidoConfirmado event: {body}").format(body=repr(body[:60]))) from exc


@dataclass
class Provider:
    """The outside system an operation acts on: what it did, whether it is down, whether it honours a key."""

    name: str
    honours_key: bool = True
    down: bool = False
    calls: int = 0
    done: list[str] = field(default_factory=list)  # one entry per effect actually carried out
    _by_key: dict[str, str] = field(default_factory=dict, repr=False)

    def perform(self, pedido_id: str, clave: str) -> str:
        """Carry out the effect for one order; return its reference."""
        self.calls += 1
        if self.down:
            raise ProviderDownError(_("{name} is down").format(name=self.name))
        if self.honours_key and clave in self._by_key:
            return self._by_key[clave]
        self.done.append(pedido_id)
        reference = f"{self.name}-{len(self.done):05d}"
        self._by_key[clave] = reference
        return reference

    def effects_per_order(self) -> Counter[str]:
        return Counter(self.done)


@dataclass
class FulfilOrders:
    """One downstream consumer: its operation's effect once per order, whatever the copies of the event."""

    operation: str
    provider: Provider
    store: idempotency.IdempotencyStore

    def __post_init__(self) -> None:
        if self.operation not in OPERATIONS:
            said = _("{name} must be one of {choices}; got {value}")
            raise ValueError(said.format(name="operation", choices=", ".join(OPERATIONS), value=repr(self.operation)))

    def __call__(self, event: dict[str, Any], context: Invocation) -> dict[str, Any]:
        failures = []
        for record in event["Records"]:
            try:
                pedido_id = pedido_of(record["body"])
                clave = OPERATIONS[self.operation](pedido_id)
                work = functools.partial(self._perform, pedido_id, clave, context)
                resultado = idempotency.run_once(self.store, clave, work, lambda exc: False, context.crashes.reached)
                context.record("answered", pedido_id, resultado["referencia"])  # done now, or done before
            except (BadEventError, ProviderDownError, idempotency.IdempotencyError) as exc:
                context.record("failed", "", f"{type(exc).__name__}: {exc}")
                failures.append({"itemIdentifier": record["messageId"]})
        return {"batchItemFailures": failures}

    def _perform(self, pedido_id: str, clave: str, context: Invocation) -> dict[str, Any]:
        reference = self.provider.perform(pedido_id, clave)
        context.crashes.reached("after_charge")  # the poller's name for "right after the outside effect"
        return {"referencia": reference}
