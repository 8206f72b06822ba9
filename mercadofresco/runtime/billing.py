"""What `world.build()` will create in real AWS, and what that costs at list prices, said before it creates it.

The prices are AWS's public list prices for us-east-1 as published on each
service's pricing page (aws.amazon.com/<service>/pricing), as known when this
module was written (2025); eu-south-2 (Spain), the workbook's region, lists
some of them a little higher. They are a guide, not a quote: check the pages.
Every resource here bills per request except the KMS key, which bills by the
hour while it exists; the free tier covers a notebook's requests in most accounts.
"""

from __future__ import annotations

from mercadofresco.i18n import N_, _

PRICES_AS_OF = N_("2025, us-east-1 list prices")

# (resource, how many world.build creates, what it costs, what one notebook run costs); said through _() when shown
PLAN: tuple[tuple[str, str, str, str], ...] = (
    (N_("SQS queues (pedidos + DLQ, correo, erp, almacen)"), "5", N_("$0.40 per million requests"), N_("< $0.01")),
    (N_("DynamoDB table mercadofresco-idempotencia"), "1", N_("on demand: $0.625 / million writes"), N_("< $0.01")),
    (N_("SNS topics (pedido-confirmado, alertas)"), "2", N_("$0.50 per million publishes"), N_("< $0.01")),
    (N_("EventBridge bus + rule"), "1 + 1", N_("$1.00 per million events"), N_("< $0.01")),
    (N_("KMS key alias/mercadofresco-datos"), "1", N_("$1 per month, prorated by the hour"), N_("~ $0.002 per hour")),
    (N_("CloudWatch alarms and metrics (notebooks 9-11)"), N_("a few"), N_("$0.10 per alarm-month"), N_("< $0.01")),
)


def plan_text(region: str, run_id: str) -> str:
    """The table `world.build()` prints in aws mode before it creates anything."""
    rows = [tuple(_(cell) for cell in row) for row in _ROWS]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        "[mercadofresco] "
        + _("mode {mode}: about to create these resources in {region}, tagged {tag}:").format(
            mode="'aws'", region=region, tag=f"mercadofresco-workbook={run_id}"
        ),
        *("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows),
        "  "
        + _("Prices: {prices} from each service's pricing page; check them for your region.").format(
            prices=_(PRICES_AS_OF)
        ),
        "  "
        + _(
            "They are deleted when the notebook's kernel ends ({close}); if a run is cut off,\n"
            "  `{command}` deletes whatever carries the tag."
        ).format(close="World.close()", command="python -m mercadofresco.runtime.cleanup_cli --mode aws --yes"),
    ]
    return "\n".join(lines) + "\n"


_HEADER = (N_("resource"), N_("count"), N_("list price"), N_("one notebook run"))
_ROWS = (_HEADER, *PLAN)
