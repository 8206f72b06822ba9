"""What `world.build()` will create in real AWS, and what that costs at list prices, said before it creates it.

The prices are AWS's public list prices for us-east-1 as published on each
service's pricing page (aws.amazon.com/<service>/pricing), as known when this
module was written (2025); eu-south-2 (Spain), the workbook's region, lists
some of them a little higher. They are a guide, not a quote: check the pages.
Every resource here bills per request except the KMS key, which bills by the
hour while it exists; the free tier covers a notebook's requests in most accounts.
"""

from __future__ import annotations

PRICES_AS_OF = "2025, us-east-1 list prices"

# (resource, how many world.build creates, what it costs, what one notebook run costs)
PLAN: tuple[tuple[str, str, str, str], ...] = (
    ("SQS queues (pedidos + DLQ, correo, erp, almacen)", "5", "$0.40 per million requests", "< $0.01"),
    ("DynamoDB table mercadofresco-idempotencia", "1", "on demand: $0.625 / million writes", "< $0.01"),
    ("SNS topics (pedido-confirmado, alertas)", "2", "$0.50 per million publishes", "< $0.01"),
    ("EventBridge bus + rule", "1 + 1", "$1.00 per million events", "< $0.01"),
    ("KMS key alias/mercadofresco-datos", "1", "$1 per month, prorated by the hour", "~ $0.002 per hour"),
    ("CloudWatch alarms and metrics (notebooks 9-11)", "a few", "$0.10 per alarm-month", "< $0.01"),
)


def plan_text(region: str, run_id: str) -> str:
    """The table `world.build()` prints in aws mode before it creates anything."""
    widths = [max(len(row[i]) for row in (*PLAN, _HEADER)) for i in range(4)]
    lines = [
        f"[mercadofresco] mode 'aws': about to create these resources in {region}, "
        f"tagged mercadofresco-workbook={run_id}:",
        *("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in _ROWS),
        f"  Prices: {PRICES_AS_OF} from each service's pricing page; check them for your region.",
        "  They are deleted when the notebook's kernel ends (World.close()); if a run is cut off,",
        "  `python -m mercadofresco.runtime.cleanup_cli --mode aws --yes` deletes whatever carries the tag.",
    ]
    return "\n".join(lines) + "\n"


_HEADER = ("resource", "count", "list price", "one notebook run")
_ROWS = (_HEADER, *PLAN)
