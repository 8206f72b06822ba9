"""Confirming an order: the charge behind the shared breaker, then the order and its event in one write (notebook 16).

Two operations, the lesson's closing claim: charge and write. `ConfirmOrders`
wraps section 4's `IdempotentChargeOrders` (the key `cobro:{pedido_id}` in the
table and at the gateway) and, for each order it charged, writes the order and
its `PedidoConfirmado` event together in `OrderBook`. A crash between the two
leaves the message in the queue; the redelivery finds the charge COMPLETADO,
gets the same reference back, and writes.

`OrderBook` is a **stand-in** for Aurora's `pedidos` and `outbox` tables: one
call writes both, as one transaction would. Notebook 13 builds the real outbox
on PostgreSQL. `BreakerGuardedClient` puts the gateway client behind a breaker
(`patterns.breaker_store.SharedBreaker`): while it is open the gateway is not
called and the charge fails like a 503, so the message waits for a later receive.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from mercadofresco import orders
from mercadofresco.clock import VirtualClock, Waiter
from mercadofresco.i18n import _
from mercadofresco.models import gateway as gw
from mercadofresco.models.lambda_poller import Invocation
from mercadofresco.patterns import idempotency
from mercadofresco.shop.handlers import IdempotentChargeOrders

EVENT_TYPE = "PedidoConfirmado"


class ChargeRefusedError(gw.GatewayError):
    """The breaker is open: the gateway was not called; the message waits for a later receive."""

    status = 503


@dataclass
class BreakerGuardedClient:
    """A gateway client behind a breaker (anything with allow / record_success / record_failure)."""

    client: gw.GatewayClient
    breaker: Any
    clock: VirtualClock
    refused: int = 0

    def charge(
        self, pedido_id: str, importe: Decimal, clave: str | None = None, waiter: Waiter | None = None
    ) -> gw.Charge:
        """Charge through the client if the breaker allows; a declined card is the gateway working."""
        if not self.breaker.allow(self.clock.timestamp()):
            self.refused += 1
            said = _("circuit {name} open: not called")
            raise ChargeRefusedError(said.format(name=getattr(self.breaker, "name", "pasarela-pagos")))
        try:
            charge = self.client.charge(pedido_id, importe, clave, waiter)
        except gw.GatewayError as exc:
            if gw.is_permanent_failure(exc):
                self.breaker.record_success(self.clock.timestamp())
            else:
                self.breaker.record_failure(self.clock.timestamp())
            raise
        self.breaker.record_success(self.clock.timestamp())
        return charge


@dataclass
class OrderBook:
    """Stand-in for Aurora: `pedidos` and `outbox` written together; a second write of an order changes nothing."""

    pedidos: dict[str, dict[str, Any]] = field(default_factory=dict)
    outbox: list[dict[str, Any]] = field(default_factory=list)

    def confirm(self, order: orders.Order, referencia_cobro: str, at: dt.datetime) -> bool:
        """Write the order CONFIRMADO and its event; False if it was already written (a redelivery)."""
        if order.pedido_id in self.pedidos:
            return False
        self.pedidos[order.pedido_id] = {
            "pedido_id": order.pedido_id,
            "importe": str(order.importe),
            "estado": "CONFIRMADO",
            "referencia_cobro": referencia_cobro,
        }
        payload = {"pedido_id": order.pedido_id, "importe": str(order.importe), "version": 1}
        self.outbox.append(
            {
                "id": len(self.outbox) + 1,
                "tipo": EVENT_TYPE,
                "payload": json.dumps(payload, sort_keys=True),
                "creado_en": at.isoformat(),
                "publicado": False,
            }
        )
        return True

    def pending(self) -> list[dict[str, Any]]:
        """Outbox rows not yet published, oldest first."""
        return [row for row in self.outbox if not row["publicado"]]


@dataclass
class ConfirmOrders:
    """The consumer of cola-mercadofresco-pedidos: charge (section 4's handler), then write the order and its event."""

    charge: IdempotentChargeOrders
    book: OrderBook

    def __call__(self, event: dict[str, Any], context: Invocation) -> dict[str, Any]:
        response = self.charge(event, context)
        failed = {item["itemIdentifier"] for item in response["batchItemFailures"]}
        for record in event["Records"]:
            if record["messageId"] in failed:
                continue
            order = orders.parse_order(record["body"])
            saved = self.charge.store.get(idempotency.charge_key(order.pedido_id))
            if saved is None or saved.estado is not idempotency.Estado.COMPLETADO:
                continue  # declined: FALLIDO, nothing to confirm
            if self.book.confirm(order, saved.resultado["referencia_cobro"], context.now()):
                context.record("written", order.pedido_id, "pedidos + outbox")
        return response
