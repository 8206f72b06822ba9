"""What the architecture costs a month, from volumes and unit prices (notebook 16).

The lesson gives the parts (SQS almost free, SNS 2.60, EventBridge 0.95, Step
Functions 54, DynamoDB 0.90 USD) and a total of about 62 USD, but not the
volumes behind them. Here every line is quantity × unit price, with the
volumes derived from MercadoFresco's 240,000 orders a month (the lesson's
exercise 3). `PRICES` holds the unit prices and free tiers: dated assumptions
for us-east-1 (`PRICES_AS_OF`), each with the AWS pricing page it comes from.
The EventBridge, Step Functions, DynamoDB free tier, CloudWatch and KMS figures
were read on those pages; the SQS, SNS and DynamoDB on-demand unit prices on
secondary sources that quote them. A bill applies every service's free tier or
none (`free_tiers`).
Edit `CostLine`s to try your own.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from mercadofresco.errors import check_range
from mercadofresco.i18n import T_, _, number, pgettext

ORDERS_PER_MONTH = 240_000
MONTH_SECONDS = 30 * 86_400
LESSON_TOTAL_USD = 62.0
LESSON_PARTS_USD = {"SNS": 2.60, "EventBridge": 0.95, "Step Functions": 54.0, "DynamoDB": 0.90}  # SQS: "almost free"
PRICES_AS_OF = "2026-12"


@dataclass(frozen=True)
class Price:
    """A unit price: `usd` per `per` units, the first `free` units of each month free (the always-free tier)."""

    usd: float
    per: float
    free: float
    unit: str
    page: str


PRICES = {
    "SQS": Price(0.40, 1e6, 1e6, "standard-queue request", "https://aws.amazon.com/sqs/pricing/"),
    "SNS": Price(
        0.50, 1e6, 1e6, "standard-topic publish (deliveries to SQS: free)", "https://aws.amazon.com/sns/pricing/"
    ),
    # The free tier covers AWS management events only: custom events are billed from the first.
    "EventBridge": Price(1.00, 1e6, 0, "custom event", "https://aws.amazon.com/eventbridge/pricing/"),
    "Step Functions": Price(
        0.025, 1_000, 4_000, "standard state transition", "https://aws.amazon.com/step-functions/pricing/"
    ),
    # The free tier's 25 WCU/RCU are provisioned capacity: on-demand requests are billed from the first.
    "DynamoDB": Price(
        0.625, 1e6, 0, "on-demand write request unit", "https://aws.amazon.com/dynamodb/pricing/on-demand/"
    ),
    "CloudWatch": Price(0.10, 1, 10, "standard-resolution alarm metric", "https://aws.amazon.com/cloudwatch/pricing/"),
    # The 20,000 free requests are requests; a customer managed key costs from the first month.
    "KMS": Price(1.00, 1, 0, "customer managed key", "https://aws.amazon.com/kms/pricing/"),
}
# What SNS bills besides publishes, for the 2.60 the lesson gives it (their free tiers would only raise the volume).
SNS_DELIVERIES = {
    T_("HTTP/S deliveries"): Price(0.60, 1e6, 0, "HTTP/S delivery", "https://aws.amazon.com/sns/pricing/"),
    T_("email deliveries"): Price(2.00, 100_000, 0, "email delivery", "https://aws.amazon.com/sns/pricing/"),
}


@dataclass(frozen=True)
class CostLine:
    """One line of the bill: how many units a month, at what price, and the lesson's figure if it gives one."""

    service: str
    what: str
    quantity: float
    price: Price
    lesson_usd: float | None = None

    def __post_init__(self) -> None:
        check_range(f"{self.service} quantity", self.quantity, 0, 1e12)

    def usd(self, free_tiers: bool = True) -> float:
        free = self.price.free if free_tiers else 0.0
        return max(0.0, self.quantity - free) / self.price.per * self.price.usd


def lesson_lines(
    orders: int = ORDERS_PER_MONTH,
    events_per_order: float = 4,
    transitions_per_order: float = 9,
    idempotent_operations: float = 3,
    alarms: int = 9,
) -> list[CostLine]:
    """The lesson's parts, each computed from a volume; the last three lines are our guess at the rest.

    `alarms` defaults to what notebook 16's flow defines: two per DLQ on four DLQs and the breaker's.
    """
    check_range("orders", orders, 0, 5_000_000)
    check_range("events_per_order", events_per_order, 0, 20)
    check_range("transitions_per_order", transitions_per_order, 0, 50)
    check_range("idempotent_operations", idempotent_operations, 0, 10)
    check_range("alarms", alarms, 0, 1_000)
    queues, sqs_calls_per_message = 4, 3  # pedidos, almacen, correo, erp; send + receive + delete
    empty_polls = queues * 5 * MONTH_SECONDS / 20  # 5 Lambda pollers per queue, one 20 s long poll each
    sqs_requests = orders * queues * sqs_calls_per_message + empty_polls
    parts = LESSON_PARTS_USD
    return [
        CostLine("SQS", T_("requests: 3 a message in 4 queues, and empty long polls"), sqs_requests, PRICES["SQS"]),
        CostLine("SNS", T_("publishes to mercadofresco-pedido-confirmado"), orders, PRICES["SNS"], parts["SNS"]),
        CostLine(
            "EventBridge",
            T_("custom events on bus-mercadofresco"),
            orders * events_per_order,
            PRICES["EventBridge"],
            parts["EventBridge"],
        ),
        CostLine(
            "Step Functions",
            T_("state transitions of mercadofresco-procesar-pedido"),
            orders * transitions_per_order,
            PRICES["Step Functions"],
            parts["Step Functions"],
        ),
        CostLine(
            "DynamoDB",
            T_("on-demand writes to mercadofresco-idempotencia, 2 an operation"),
            orders * idempotent_operations * 2,
            PRICES["DynamoDB"],
            parts["DynamoDB"],
        ),
        CostLine("CloudWatch", T_("alarms: 2 per DLQ x 4 and the breaker's (our guess)"), alarms, PRICES["CloudWatch"]),
        CostLine("KMS", T_("the key behind alias/mercadofresco-datos (our guess)"), 1, PRICES["KMS"]),
    ]


def bill(lines: list[CostLine]) -> list[dict[str, Any]]:
    """One row per line, priced with every free tier and with none, the lesson's figure beside; then the totals."""
    rows = [
        {
            "service": line.service,
            "what": line.what,
            "quantity": round(line.quantity),
            "usd_free_tiers": round(line.usd(free_tiers=True), 2),
            "usd_no_free_tier": round(line.usd(free_tiers=False), 2),
            "lesson_usd": "-" if line.lesson_usd is None else line.lesson_usd,
        }
        for line in lines
    ]
    rows.append(
        {
            "service": "total",
            "what": "",
            "quantity": "",
            "usd_free_tiers": round(sum(line.usd(True) for line in lines), 2),
            "usd_no_free_tier": round(sum(line.usd(False) for line in lines), 2),
            "lesson_usd": LESSON_TOTAL_USD,
        }
    )
    return rows


def reconciliation(lines: list[CostLine]) -> list[dict[str, Any]]:
    """From the lesson's parts to its "about 62": what our lines the lesson does not price add, either way."""
    parts = sum(line.lesson_usd for line in lines if line.lesson_usd is not None)
    unpriced = [line for line in lines if line.lesson_usd is None]
    choices = (("free_tiers", True), ("no_free_tier", False))
    rows = [{"step": T_("the lesson's parts (its SNS 2.60 included)"), "free_tiers": parts, "no_free_tier": parts}]
    rows += [  # a line's `what` is a table cell's words (T_): said here in the learner's language
        {"step": f"+ {line.service}: {pgettext('table cell', line.what)}"}
        | {label: line.usd(free) for label, free in choices}
        for line in unpriced
    ]
    rows.append(
        {"step": T_("= the lesson's parts and our guess at the rest")}
        | {label: parts + sum(line.usd(free) for line in unpriced) for label, free in choices}
    )
    rows.append({"step": T_("the lesson's total"), "free_tiers": LESSON_TOTAL_USD, "no_free_tier": LESSON_TOTAL_USD})
    return [row | {label: round(row[label], 2) for label, _ in choices} for row in rows]


def volume_for(price: Price, usd: float, free_tiers: bool = True) -> float:
    """How many units a month cost `usd` at `price` (the inverse of `CostLine.usd`)."""
    check_range("usd", usd, 0, 1e6)
    return usd / price.usd * price.per + (price.free if free_tiers else 0.0)


def sns_explanations(usd: float = LESSON_PARTS_USD["SNS"], orders: int = ORDERS_PER_MONTH) -> list[dict[str, Any]]:
    """What SNS volume would cost the lesson's 2.60: per charge SNS makes, with and without the free tier."""
    check_range("orders", orders, 1, 5_000_000)
    candidates = [(T_("publishes"), PRICES["SNS"], True), (T_("publishes"), PRICES["SNS"], False)]
    candidates += [(name, price, False) for name, price in SNS_DELIVERIES.items()]
    rows = []
    for name, price, free_tiers in candidates:
        volume = volume_for(price, usd, free_tiers)
        rows.append(
            {
                "billed": name,
                "price": _("{usd} USD per {units}").format(usd=number(price.usd, "g"), units=number(price.per, ",.0f")),
                "free_tier": number(price.free, ",.0f") if free_tiers else pgettext("free tier", "none"),
                "volume_for_2_60": round(volume),
                "per_order": round(volume / orders, 2),
            }
        )
    return rows


def with_quantity(lines: list[CostLine], service: str, quantity: float) -> list[CostLine]:
    """The same bill with one service's quantity changed."""
    if service not in {line.service for line in lines}:
        said = _("service must be one of {services}; got {service}")
        raise ValueError(said.format(services=", ".join(line.service for line in lines), service=repr(service)))
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
    """Latency and availability of confirming an order: every step in the path must answer, in sequence."""
    check_range("availability", availability, 0.5, 1.0)
    two = (("charge the card (gateway)", charge_seconds), ("write the order and its event", write_seconds))
    rows = []
    for name, steps in ((T_("eight things in a row"), EIGHT_IN_A_ROW), (T_("two operations"), two)):
        rows.append(
            {
                "shop": name,
                "steps": len(steps),
                "seconds": round(sum(seconds for _, seconds in steps), 2),
                "succeeds_when_each_dependency_is_up": f"{number(100 * availability ** len(steps), '.2f')} %",
            }
        )
    return rows
