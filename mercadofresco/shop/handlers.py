"""MercadoFresco's charge handlers: the functions the Lambda poller invokes (notebooks 01, 04, 11).

`ChargeOrders` is section 1's consumer, the one that charges twice when a
message comes back; `IdempotentChargeOrders` is section 4's, made idempotent by
the table (`patterns.idempotency`) and the gateway's Idempotency-Key. Both take
a Lambda-shaped event and answer with a partial batch response.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mercadofresco import orders
from mercadofresco.models import gateway as gw
from mercadofresco.models.lambda_poller import Invocation
from mercadofresco.patterns import idempotency


def read_order(body: str, versions: tuple[int, ...]) -> orders.Order:
    """The order in `body` if its schema version is one of `versions`; otherwise the parser's error for the last."""
    for version in versions[:-1]:
        try:
            return orders.parse_order(body, expected_version=version)
        except orders.MalformedOrderError:
            continue
    return orders.parse_order(body, expected_version=versions[-1])


def producer_deploy_gate(sample: str, consumer_versions: tuple[int, ...]) -> str:
    """A release check: "deploy" if the deployed consumer reads the new producer's `sample`, else why not.

    Exercise 2's Sunday in one line: a version-2 producer went out before the consumer that reads it.
    """
    try:
        read_order(sample, consumer_versions)
    except orders.MalformedOrderError as refused:
        return f"refuse: {refused}"
    return "deploy"


@dataclass
class ChargeOrders:
    """Section 1's consumer: charge each order. No idempotency: this is the one that double-charges."""

    client: gw.GatewayClient
    versions: tuple[int, ...] = (orders.SCHEMA_VERSION,)  # the order schema versions this deployment reads

    def __call__(self, event: dict[str, Any], context: Invocation) -> dict[str, Any]:
        failures = []
        for record in event["Records"]:
            try:
                order = read_order(record["body"], self.versions)
                charge = self.client.charge(order.pedido_id, order.importe, f"cobro:{order.pedido_id}", context)
                context.record("charged", order.pedido_id, charge.referencia_cobro)
                context.crashes.reached("after_charge")
            except (orders.MalformedOrderError, gw.GatewayError) as exc:
                context.record("failed", "", f"{type(exc).__name__}: {exc}")
                failures.append({"itemIdentifier": record["messageId"]})
        return {"batchItemFailures": failures}


KeyOf = Callable[[dict[str, Any], orders.Order], str]


def key_from_order(record: dict[str, Any], order: orders.Order) -> str:
    """The lesson's key: derived from the domain, `cobro:{pedido_id}`."""
    return idempotency.charge_key(order.pedido_id)


@dataclass
class IdempotentChargeOrders:
    """Section 4's consumer: the same charge, made idempotent by the table and the gateway's key.

    Per message: parse, take the key EN_CURSO with one conditional write, charge
    (sending the key as Idempotency-Key), record COMPLETADO with the charge
    reference. A duplicate gets the stored reference back. A key held by
    another consumer, or a transient gateway error, leaves the message for a
    later receive; a declined card is recorded FALLIDO and the message is done.
    """

    client: gw.GatewayClient
    store: idempotency.IdempotencyStore
    key_of: KeyOf = key_from_order
    answers: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, event: dict[str, Any], context: Invocation) -> dict[str, Any]:
        failures = []
        for record in event["Records"]:
            try:
                order = orders.parse_order(record["body"])
                clave = self.key_of(record, order)
                charge = functools.partial(self._charge, order, clave, context)
                resultado = idempotency.run_once(
                    self.store, clave, charge, gw.is_permanent_failure, context.crashes.reached
                )
                self.answers.append(resultado)
                context.record("answered", order.pedido_id, resultado["referencia_cobro"])
            except (gw.CardDeclinedError, idempotency.AlreadyFailedError) as exc:
                context.record("declined", "", str(exc))  # permanent: the message is done, nothing to retry
            except (orders.MalformedOrderError, gw.GatewayError, idempotency.IdempotencyError) as exc:
                context.record("failed", "", f"{type(exc).__name__}: {exc}")
                failures.append({"itemIdentifier": record["messageId"]})
        return {"batchItemFailures": failures}

    def _charge(self, order: orders.Order, clave: str, context: Invocation) -> dict[str, Any]:
        charge = self.client.charge(order.pedido_id, order.importe, clave, context)
        context.record("charged", order.pedido_id, charge.referencia_cobro)
        context.crashes.reached("after_charge")
        return {"referencia_cobro": charge.referencia_cobro, "importe": str(charge.importe)}
