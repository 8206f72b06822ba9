"""What the architecture costs a month, from volumes and unit prices (notebook 16).

The lesson gives the parts (SQS almost free, SNS 2.60, EventBridge 0.95, Step
Functions 54, DynamoDB 0.90 USD) and a total of about 62 USD, but not the
volumes behind them. Here every line is quantity × unit price, with the
volumes derived from MercadoFresco's 240,000 orders a month (the lesson's
exercise 3). Unit prices are this workbook's assumptions, close to AWS's
public list prices in us-east-1 at the time of writing; the data is
fictitious, as the lesson says. Edit `CostLine`s to try your own.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from mercadofresco.errors import check_range

ORDERS_PER_MONTH = 240_000
MONTH_SECONDS = 30 * 86_400
LESSON_TOTAL_USD = 62.0


@dataclass(frozen=True)
class CostLine:
    """One line of the bill: how many units a month, at what price per `per` units, minus a free tier."""

    service: str
    what: str
    quantity: float
    price_usd: float
    per: float = 1_000_000
    free: float = 0.0
    lesson_usd: float | None = None

    def __post_init__(self) -> None:
        check_range(f"{self.service} quantity", self.quantity, 0, 1e12)
        check_range(f"{self.service} price_usd", self.price_usd, 0, 1e6)

    def usd(self) -> float:
        return max(0.0, self.quantity - self.free) / self.per * self.price_usd


def lesson_lines(
    orders: int = ORDERS_PER_MONTH,
    events_per_order: float = 4,
    transitions_per_order: float = 9,
    idempotent_operations: float = 3,
) -> list[CostLine]:
    """The lesson's parts, each computed from a volume; the last three lines are our guess at the rest."""
    check_range("orders", orders, 0, 5_000_000)
    check_range("events_per_order", events_per_order, 0, 20)
    check_range("transitions_per_order", transitions_per_order, 0, 50)
    check_range("idempotent_operations", idempotent_operations, 0, 10)
    queues, sqs_calls_per_message = 4, 3  # pedidos, almacen, correo, erp; send + receive + delete
    empty_polls = queues * 5 * MONTH_SECONDS / 20  # 5 Lambda pollers per queue, one 20 s long poll each
    sqs_requests = orders * queues * sqs_calls_per_message + empty_polls
    return [
        CostLine("SQS", "requests: 3 a message in 4 queues, and empty long polls", sqs_requests, 0.40, free=1e6),
        CostLine("SNS", "publishes (deliveries to SQS are free)", orders, 0.50, free=1e6, lesson_usd=2.60),
        CostLine("EventBridge", "custom events on bus-mercadofresco", orders * events_per_order, 1.00, lesson_usd=0.95),
        CostLine(
            "Step Functions",
            "state transitions of mercadofresco-procesar-pedido",
            orders * transitions_per_order,
            0.025,
            per=1_000,
            lesson_usd=54.0,
        ),
        CostLine(
            "DynamoDB",
            "on-demand writes to mercadofresco-idempotencia, 2 an operation",
            orders * idempotent_operations * 2,
            0.625,
            lesson_usd=0.90,
        ),
        CostLine("CloudWatch", "alarms: 2 per DLQ x 4 (our guess at the rest)", 8, 0.10, per=1),
        CostLine("KMS", "the key behind alias/mercadofresco-datos (our guess)", 1, 1.00, per=1),
    ]


def bill(lines: list[CostLine]) -> list[dict[str, Any]]:
    """One row per line and a total; the lesson's figure beside each part."""
    rows = [
        {
            "service": line.service,
            "what": line.what,
            "quantity": round(line.quantity),
            "usd": round(line.usd(), 2),
            "lesson_usd": "-" if line.lesson_usd is None else line.lesson_usd,
        }
        for line in lines
    ]
    parts = [line.lesson_usd for line in lines if line.lesson_usd is not None]
    rows.append(
        {
            "service": "total",
            "what": f"the lesson's parts add up to {sum(parts):.2f}; it says about {LESSON_TOTAL_USD:g}",
            "quantity": "",
            "usd": round(sum(line.usd() for line in lines), 2),
            "lesson_usd": LESSON_TOTAL_USD,
        }
    )
    return rows


def with_quantity(lines: list[CostLine], service: str, quantity: float) -> list[CostLine]:
    """The same bill with one service's quantity changed."""
    if service not in {line.service for line in lines}:
        raise ValueError(f"service must be one of {', '.join(line.service for line in lines)}; got {service!r}")
    return [dataclasses.replace(line, quantity=quantity) if line.service == service else line for line in lines]


# -- the closing comparison ---------------------------------------------------------------------------
# A shop that did eight things in a row before answering (the lesson's 07-01; the steps and their latencies are
# our assumptions, the lesson lists neither) against the two operations it does now.
EIGHT_IN_A_ROW = (
    ("validate the basket against stock", 0.080),
    ("charge the card (gateway)", 0.240),
    ("write the order in Aurora", 0.030),
    ("reserve stock", 0.060),
    ("tell the warehouse", 0.300),
    ("send the confirmation email", 0.400),
    ("notify the ERP", 0.800),
    ("generate the invoice PDF", 0.600),
)


def confirm_paths(
    charge_seconds: float, write_seconds: float = 0.030, availability: float = 0.999
) -> list[dict[str, Any]]:
    """Latency and availability of answering the customer: every step in the path must answer, in sequence."""
    check_range("availability", availability, 0.5, 1.0)
    two = (("charge the card (gateway)", charge_seconds), ("write the order and its event", write_seconds))
    rows = []
    for name, steps in (("eight things in a row", EIGHT_IN_A_ROW), ("two operations", two)):
        rows.append(
            {
                "shop": name,
                "steps": len(steps),
                "seconds": round(sum(seconds for _, seconds in steps), 2),
                "answers_when_each_dependency_is_up": f"{100 * availability ** len(steps):.2f} %",
            }
        )
    return rows
