"""MercadoFresco's orders as they travel in `cola-mercadofresco-pedidos`.

A message body is JSON: {"pedido_id": "PED-2026-084417", "importe": "48.20", "version": 1}.
`parse_order` turns it back into an `Order` or says clearly what is wrong with it,
so a malformed message can go to the DLQ with its reason instead of a bare KeyError.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from mercadofresco.errors import MercadoFrescoError
from mercadofresco.i18n import _, ngettext

SCHEMA_VERSION = 1
PEDIDO_ID = re.compile(r"^PED-\d{4}-\d{6}$")
MALFORMED_KINDS = ("schema", "value")


class OrdersNotSentError(MercadoFrescoError):
    """SQS answered a SendMessageBatch with some orders refused; `failed` is its list of them."""

    def __init__(self, failed: list[dict[str, Any]]) -> None:
        said = ngettext(
            "SQS refused {count} order(s) of a batch: {error}",
            "SQS refused {count} order(s) of a batch: {error}",
            len(failed),
        )
        super().__init__(said.format(count=len(failed), error=failed[0].get("Message", failed[0])))
        self.failed = failed


class MalformedOrderError(MercadoFrescoError, ValueError):
    """A message body is not a valid order; `reason` says why, `kind` whether its shape or a value is wrong.

    `kind` is "schema" (not JSON, not an object, a field missing, another version,
    a malformed pedido_id) or "value" (the shape is fine, the importe is impossible).
    """

    def __init__(self, reason: str, body: str, kind: str) -> None:
        if kind not in MALFORMED_KINDS:
            said = _("{name} must be one of {choices}; got {value}")
            raise ValueError(said.format(name="kind", choices=", ".join(MALFORMED_KINDS), value=repr(kind)))
        super().__init__(_("malformed order: {reason}").format(reason=reason))
        self.reason = reason
        self.body = body
        self.kind = kind


@dataclass(frozen=True)
class Order:
    """One order to charge."""

    pedido_id: str
    importe: Decimal
    version: int = SCHEMA_VERSION


def order_id(number: int, year: int = 2026) -> str:
    """PED-2026-084417 style identifiers."""
    return f"PED-{year}-{number:06d}"


def order_body(order: Order) -> str:
    """The JSON body a producer sends (keys sorted, so equal orders give equal bodies)."""
    return json.dumps(
        {"pedido_id": order.pedido_id, "importe": str(order.importe), "version": order.version}, sort_keys=True
    )


def parse_order(body: str, expected_version: int = SCHEMA_VERSION) -> Order:
    """Read an order from a message body, or raise MalformedOrderError with the reason."""
    try:
        data: Any = json.loads(body)
    except json.JSONDecodeError as exc:
        raise MalformedOrderError(_("body is not JSON ({error})").format(error=exc.msg), body, "schema") from exc
    if not isinstance(data, dict):
        raise MalformedOrderError(_("body is not a JSON object"), body, "schema")
    missing = [name for name in ("pedido_id", "importe", "version") if name not in data]
    if missing:
        said = ngettext("missing field(s): {fields}", "missing field(s): {fields}", len(missing))
        raise MalformedOrderError(said.format(fields=", ".join(missing)), body, "schema")
    if data["version"] != expected_version:
        said = _("version {version}, this consumer expects {expected}")
        raise MalformedOrderError(said.format(version=repr(data["version"]), expected=expected_version), body, "schema")
    if not isinstance(data["pedido_id"], str) or not PEDIDO_ID.match(data["pedido_id"]):
        said = _("pedido_id {value} is not like PED-2026-084417").format(value=repr(data["pedido_id"]))
        raise MalformedOrderError(said, body, "schema")
    try:
        importe = Decimal(str(data["importe"]))
    except InvalidOperation as exc:
        said = _("importe {value} is not a number").format(value=repr(data["importe"]))
        raise MalformedOrderError(said, body, "value") from exc
    if not importe.is_finite() or importe <= 0:
        said = _("importe {value} must be a positive amount").format(value=repr(data["importe"]))
        raise MalformedOrderError(said, body, "value")
    return Order(pedido_id=data["pedido_id"], importe=importe, version=data["version"])


def send_order(
    sqs: Any, queue_url: str, order: Order, group_id: str | None = None, deduplication_id: str | None = None
) -> str:
    """Send `order` to a queue and return the MessageId SQS gave it.

    A FIFO queue needs `group_id`, and `deduplication_id` unless it has
    content-based deduplication.
    """
    request: dict[str, Any] = {"QueueUrl": queue_url, "MessageBody": order_body(order)}
    if group_id is not None:
        request["MessageGroupId"] = group_id
    if deduplication_id is not None:
        request["MessageDeduplicationId"] = deduplication_id
    return sqs.send_message(**request)["MessageId"]


def send_orders(sqs: Any, queue_url: str, batch: list[Order]) -> list[str]:
    """Send `batch` to a standard queue, 10 to a SendMessageBatch call; return their MessageIds in order."""
    return send_entries(sqs, queue_url, [{"MessageBody": order_body(order)} for order in batch])


def send_entries(sqs: Any, queue_url: str, entries: list[dict[str, Any]]) -> list[str]:
    """Send messages, 10 to a SendMessageBatch call; return their MessageIds in order.

    Each entry is a SendMessageBatch entry without its `Id` (a `MessageBody`, and a
    `MessageGroupId` on a FIFO queue). On a FIFO queue a group keeps the entries' order.
    """
    message_ids = []
    for start in range(0, len(entries), 10):
        numbered = [{"Id": str(i), **entry} for i, entry in enumerate(entries[start : start + 10])]
        answer = sqs.send_message_batch(QueueUrl=queue_url, Entries=numbered)
        if answer.get("Failed"):
            raise OrdersNotSentError(answer["Failed"])
        message_ids += [sent["MessageId"] for sent in sorted(answer["Successful"], key=lambda sent: int(sent["Id"]))]
    return message_ids
