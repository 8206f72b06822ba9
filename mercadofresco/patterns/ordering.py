"""Ordering: ask before you order, group as finely as the order allows, or make order irrelevant (notebook 12).

Three questions come before any demand for order: do the messages touch the
same data? is the operation relative (add, subtract) or absolute (set)? does
the result change if they are applied the other way round? Class 210's
example: "−1 unit" twice gives the same stock in either order, so it needs no
order; "stock = 4" after "stock = 7" does. `three_questions` answers them for
two described operations, the third by actually applying them both ways.

When order is needed, the FIFO `MessageGroupId` is the data that needs it, as
granular as that allows: the sku for stock movements (3,400 groups at
MercadoFresco), the pedido_id for an order's life cycle. `message_group_id`
picks it for an event.

Or make order irrelevant: every update carries a version and the write is
conditional (`if version > version_actual`), so a late, older update is
discarded and the table ends in the newest state whatever the arrival order.
`StockTable.put_if_newer` does it on `mercadofresco-stock`. (The unconditional
write it replaces is section 12's counter-example: `lessons.ordering.experiments`.)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from botocore.exceptions import ClientError

from mercadofresco.errors import MercadoFrescoError
from mercadofresco.i18n import _, ngettext

STOCK_TABLE = "mercadofresco-stock"
SKU_GROUPS = 3_400  # MercadoFresco's skus, so its stock queue's message groups
LIFE_CYCLE = ("PedidoCreado", "PedidoPagado", "PedidoPreparado", "PedidoEnviado")
STOCK_EVENTS = ("StockVendido", "StockRecontado")
# Which field of an event is its MessageGroupId: the data whose updates must not be reordered.
GROUP_KEYS = {**dict.fromkeys(STOCK_EVENTS, "sku"), **dict.fromkeys(LIFE_CYCLE, "pedido_id")}


class Kind(Enum):
    """How an operation changes a value."""

    RELATIVE = "relative"  # add or subtract: "−1 unit"
    ABSOLUTE = "absolute"  # set: "stock = 4"


@dataclass(frozen=True)
class Operation:
    """One described update: which data it touches (`target`), how, and by how much."""

    target: str
    kind: Kind
    amount: int

    @property
    def label(self) -> str:
        """How the lesson writes it: "−1 unit", "stock = 4"."""
        if self.kind is Kind.ABSOLUTE:
            return f"stock = {self.amount}"
        sign = "+" if self.amount >= 0 else "−"
        units = abs(self.amount)
        return ngettext("{sign}{count} unit", "{sign}{count} units", units).format(sign=sign, count=units)

    def apply(self, value: int) -> int:
        """The value after this operation."""
        return value + self.amount if self.kind is Kind.RELATIVE else self.amount


def sold(sku: str, units: int = 1) -> Operation:
    """A sale takes `units` off the stock: relative."""
    return Operation(sku, Kind.RELATIVE, -units)


def recounted(sku: str, stock: int) -> Operation:
    """A recount sets the stock: absolute."""
    return Operation(sku, Kind.ABSOLUTE, stock)


@dataclass(frozen=True)
class Answer:
    """The three questions, answered for two operations, and what follows."""

    same_data: bool
    kinds: tuple[Kind, Kind]
    order_changes_result: bool
    needs_order: bool
    reason: str


def three_questions(first: Operation, second: Operation, value: int = 10) -> Answer:
    """Does applying `first` and `second` need an order? Question 3 is answered by applying both orders to `value`."""
    same_data = first.target == second.target
    kinds = (first.kind, second.kind)
    forwards = second.apply(first.apply(value))
    backwards = first.apply(second.apply(value))
    changes = same_data and forwards != backwards
    if not same_data:
        reason = _("different data: nothing to order between them")
    elif not changes and kinds == (Kind.RELATIVE, Kind.RELATIVE):
        reason = _("relative on the same data: {result} either way, they commute").format(result=forwards)
    elif not changes:
        reason = _("{result} either way: the same value set twice").format(result=forwards)
    else:
        said = _("one order gives {forwards}, the other {backwards}: order it, or version it")
        reason = said.format(forwards=forwards, backwards=backwards)
    return Answer(same_data, kinds, changes, needs_order=changes, reason=reason)


# -- choosing the group -------------------------------------------------------------------
class OrderingError(MercadoFrescoError):
    """Base of the ordering errors."""


class UnknownEventError(OrderingError, ValueError):
    """An event type with no group key: say which data it must stay in order with."""


def message_group_id(event: dict[str, Any]) -> str:
    """The MessageGroupId for an event: its sku for stock, its pedido_id for an order's life cycle."""
    kind = event.get("tipo")
    if kind not in GROUP_KEYS:
        said = _("{name} must be one of {choices}; got {value}")
        raise UnknownEventError(said.format(name="tipo", choices=", ".join(GROUP_KEYS), value=repr(kind)))
    field = GROUP_KEYS[kind]
    if not event.get(field):
        said = _("a {kind} event needs {field} for its MessageGroupId")
        raise UnknownEventError(said.format(kind=kind, field=repr(field)))
    return str(event[field])


# -- making order irrelevant: the version-conditional write --------------------------------
class StoreError(OrderingError):
    """DynamoDB refused or failed a call that was not a condition check."""


@dataclass(frozen=True)
class StockItem:
    """One item of mercadofresco-stock, with the item's own names."""

    sku: str
    stock: int
    version: int


def create_stock_table(dynamodb: Any, table_name: str = STOCK_TABLE) -> None:
    """Create `mercadofresco-stock` (key `sku`); fine if it already exists."""
    try:
        dynamodb.create_table(
            TableName=table_name,
            KeySchema=[{"AttributeName": "sku", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "sku", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ResourceInUseException":
            raise StoreError(f"create {table_name}: {exc}") from exc
    dynamodb.get_waiter("table_exists").wait(TableName=table_name)


class StockTable:
    """The stock of each sku and the version of the update that set it, through boto3."""

    def __init__(self, dynamodb: Any, table_name: str = STOCK_TABLE) -> None:
        self.dynamodb = dynamodb
        self.table_name = table_name

    def put_if_newer(self, sku: str, stock: int, version: int) -> bool:
        """Write `stock` only if `version` is newer than the item's; False if the update was stale and discarded."""
        # newer = first update ever seen for this sku | a higher version than the one stored
        newer = "attribute_not_exists(sku) OR version < :version"
        try:
            self.dynamodb.put_item(
                TableName=self.table_name,
                Item=_item(sku, stock, version),
                ConditionExpression=newer,
                ExpressionAttributeValues={":version": {"N": str(version)}},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise StoreError(f"put_if_newer {sku} v{version}: {exc}") from exc
            return False  # not an error: the answer. A newer update got here first.
        return True

    def get(self, sku: str) -> StockItem | None:
        """The item for `sku`, or None."""
        try:
            item = self.dynamodb.get_item(TableName=self.table_name, Key={"sku": {"S": sku}}, ConsistentRead=True)
        except ClientError as exc:
            raise StoreError(f"get {sku}: {exc}") from exc
        return _stock_item(item["Item"]) if "Item" in item else None

    def items(self) -> list[StockItem]:
        """Every item, by sku."""
        try:
            pages = self.dynamodb.get_paginator("scan").paginate(TableName=self.table_name, ConsistentRead=True)
            found = [_stock_item(item) for page in pages for item in page["Items"]]
        except ClientError as exc:
            raise StoreError(f"scan {self.table_name}: {exc}") from exc
        return sorted(found, key=lambda item: item.sku)


def _item(sku: str, stock: int, version: int) -> dict[str, Any]:
    return {"sku": {"S": sku}, "stock": {"N": str(stock)}, "version": {"N": str(version)}}


def _stock_item(item: dict[str, Any]) -> StockItem:
    return StockItem(sku=item["sku"]["S"], stock=int(item["stock"]["N"]), version=int(item["version"]["N"]))
