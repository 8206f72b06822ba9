"""What a run of the whole flow shows (notebook 16): effects per order, each fault's evidence, one order's trace.

Everything here reads a finished `architecture.FlowRun` and counts at the
systems themselves: the gateway's ledger, the orders written, each provider's
record of what it did, the queues and DLQs. Nothing here changes the run.
"""

from __future__ import annotations

from typing import Any

from mercadofresco import queues, world
from mercadofresco.i18n import T_, _, number
from mercadofresco.lessons.architecture.flow import CONSUMER_QUEUES, DLQS, Flow, FlowRun
from mercadofresco.patterns import breaker

# A hop's name is a key of BEFORE too: T_() leaves it English in the rows, and a table shows it translated.
HOPS = {
    "response_lost": (T_("charge"), T_("the gateway charges and the answer is lost")),
    "gateway_down": (T_("charge"), T_("the gateway answers 503")),
    "crash_after_charge": (T_("charge"), T_("the consumer dies right after the charge")),
    "crash_before_write": (T_("confirm"), T_("the consumer dies after COMPLETADO, before the write")),
    "publisher_dies": (T_("outbox"), T_("the publisher dies after put_events, before marking")),
    "crash_before_delete": (T_("consumers"), T_("each consumer dies after its effect, before DeleteMessage")),
    "crash_after_effect": (T_("consumers"), T_("each consumer dies after the provider acted, before COMPLETADO")),
    "erp_down": ("ERP", T_("the ERP is down for the whole stage")),
}


def evidence(run: FlowRun) -> list[dict[str, Any]]:
    """One row per injected fault: where it hit and what the run shows happened to it."""
    flow = run.flow
    crashes = {
        hop: [row for row in poller.timeline if row["event"] == "crashed"] for hop, poller in run.pollers.items()
    }
    opened = sum(1 for _, _, new in flow.breaker.transitions if new is breaker.State.OPEN)
    seen = {
        "response_lost": _("{calls} gateway calls, {charges} charges").format(
            calls=number(flow.gateway.calls), charges=number(len(flow.gateway.ledger))
        ),
        "gateway_down": _("breaker opened {opened}x, {refused} charges refused without calling").format(
            opened=number(opened), refused=number(flow.client.refused)
        ),
        "crash_after_charge": _("{count} crash(es) in the charge consumer; redelivered").format(
            count=number(len(crashes["cobro"]))
        ),
        "crash_before_write": _("{written} orders written for {orders}").format(
            written=number(len(flow.book.pedidos)), orders=number(len(run.pedido_ids))
        ),
        "publisher_dies": _("{events} events published for {rows} outbox rows").format(
            events=number(flow.published), rows=number(len(flow.book.outbox))
        ),
        "crash_before_delete": _("{count} consumer crashes in all").format(
            count=number(sum(len(crashes[op]) for op in CONSUMER_QUEUES))
        ),
        "crash_after_effect": T_("providers honour the key")
        if all(p.honours_key for p in flow.providers.values())
        else T_("providers ignore the key"),
        "erp_down": _("{count} messages redriven from its DLQ").format(
            count=number(flow.redriven.get(CONSUMER_QUEUES["erp"], 0))
        ),
    }
    rows = [
        {"fault": name, "hop": HOPS[name][0], "what": HOPS[name][1], "seen": seen[name]} for name in run.faults.names()
    ]
    if flow.redriven.get(world.ORDERS_QUEUE):
        moved = _("{count} redriven from {dlq} after the fix").format(
            count=number(flow.redriven[world.ORDERS_QUEUE]), dlq=world.ORDERS_DLQ
        )
        what = T_("the faults spent orders' 4 receives")
        rows.append({"fault": T_("(stacked)"), "hop": T_("charge"), "what": what, "seen": moved})
    return rows


def tally(run: FlowRun) -> list[dict[str, Any]]:
    """Per order: charges at the gateway, orders written, events published, and each consumer's effects."""
    flow = run.flow
    charges = flow.gateway.charges_per_order()
    published = [row["pedido_id"] for row in flow.timeline if row["event"] == "published"]
    effects = {name: provider.effects_per_order() for name, provider in flow.providers.items()}
    return [
        {
            "pedido_id": pedido_id,
            "charges": charges[pedido_id],
            "written": int(pedido_id in flow.book.pedidos),
            "events_published": published.count(pedido_id),
            **{name: effects[name][pedido_id] for name in CONSUMER_QUEUES},
        }
        for pedido_id in run.pedido_ids
    ]


def left_in_queues(flow: Flow) -> dict[str, int]:
    """Messages still anywhere: every queue and every DLQ of the flow (0 everywhere means nothing is pending)."""
    counts = {}
    for name, pair in flow.pairs.items():
        counts[name] = sum(queues.queue_counts(flow.aws.sqs, pair.url).values())
        counts[name.replace("cola-", "") + " DLQ"] = sum(queues.queue_counts(flow.aws.sqs, pair.dlq_url).values())
    return counts


def trace(run: FlowRun, pedido_id: str) -> list[dict[str, Any]]:
    """One order through every hop, in time order."""
    rows = [row for row in run.flow.timeline if row["pedido_id"] == pedido_id]
    for hop, poller in run.pollers.items():
        rows += [
            {
                "seconds": row["seconds"],
                "hop": hop,
                "event": row["event"],
                "pedido_id": pedido_id,
                "detail": row["detail"],
            }
            for row in poller.timeline
            if row["pedido_id"] == pedido_id
        ]
    return sorted(rows, key=lambda row: row["seconds"])


# -- section 16's lost tables, reconstructed -----------------------------------------------------------
# "What has been gained, measured" lost its table; the "before" column quotes the lesson's own figures from the
# sections that measured each hop, the two counted columns come from a finished run.
BEFORE = {
    "charge": T_("a lost answer or a redelivery charges 48.20 EUR again (section 1, exercise 1)"),
    "gateway down": T_("a 30 s outage: 80 calls per order, 36,000 for 450 orders in flight (section 7)"),
    "confirm": T_(
        "a redelivery after the charge needs the same referencia_cobro back, or the order breaks (section 3)"
    ),
    "outbox": T_("1 event in 900 lost, 266 orders a month nobody prepares (section 13, exercise 3)"),
    "consumers": T_("a redelivered event sends a second email without correo-confirmacion:<pedido_id> (section 2)"),
    "ERP": T_(
        "no figure for the ERP's own queue; the nearest is exercise 2's 340 orders in the orders' DLQ"
        " (mercadofresco-pedidos-fallidos), found 11 hours later, on Monday at 09:00"
    ),
}


def gained(run: FlowRun) -> list[dict[str, Any]]:
    """Per hop: the lesson's "before", how many copies of the work reached the hop in `run`, and the effects."""
    flow, orders = run.flow, len(run.pedido_ids)
    received = {
        hop: sum(1 for row in poller.timeline if row["event"] == "received") for hop, poller in run.pollers.items()
    }
    opened = sum(1 for _, _, new in flow.breaker.transitions if new is breaker.State.OPEN)
    written = len(flow.book.pedidos)
    published = len({row["pedido_id"] for row in flow.timeline if row["event"] == "published"})
    gateway = flow.gateway
    effects = {name: sum(provider.effects_per_order().values()) for name, provider in flow.providers.items()}
    erp_copies = received.get("erp", 0) + received.get("erp_after_redrive", 0)
    charge_copies = received.get("cobro", 0) + received.get("cobro_after_redrive", 0)
    receives, charges = _("{count} receives"), _("{count} charges")
    rows = [
        (
            T_("charge"),
            _("{receives} receives, {calls} gateway calls").format(
                receives=number(charge_copies), calls=number(gateway.calls)
            ),
            charges.format(count=number(len(gateway.ledger))),
        ),
        (
            T_("gateway down"),
            _("{count} charges refused without calling").format(count=number(flow.client.refused)),
            _("breaker opened {opened}x").format(opened=number(opened)),
        ),
        (
            T_("confirm"),
            receives.format(count=number(charge_copies)),
            _("{count} orders written").format(count=number(written)),
        ),
        (
            T_("outbox"),
            _("{events} events for {rows} outbox rows").format(
                events=number(flow.published), rows=number(len(flow.book.outbox))
            ),
            _("{count} orders published").format(count=number(published)),
        ),
        (
            T_("consumers"),
            _("{per_consumer} receives").format(
                per_consumer=", ".join(f"{name} {number(received.get(name, 0))}" for name in ("preparacion", "correo"))
            ),
            ", ".join(f"{number(effects[name])} {name}" for name in ("preparacion", "correo")),
        ),
        (
            "ERP",
            _("{receives} receives, {redriven} redriven").format(
                receives=number(erp_copies), redriven=number(flow.redriven.get(CONSUMER_QUEUES["erp"], 0))
            ),
            f"{number(effects['erp'])} ERP",
        ),
    ]
    return [
        {"hop": hop, "before (the lesson)": BEFORE[hop], "this run: copies": copies, f"effects ({orders} orders)": done}
        for hop, copies, done in rows
    ]


def resources(flow: Flow) -> list[dict[str, Any]]:
    """The lesson's resources (its list was lost) and the workbook's, each with where the run has it."""
    sqs, sns = flow.aws.sqs, flow.aws.client("sns")
    queues_found = {url.rsplit("/", 1)[-1] for url in sqs.list_queues().get("QueueUrls", [])}
    topics = {arn.rsplit(":", 1)[-1] for arn in (t["TopicArn"] for t in sns.list_topics()["Topics"])}
    buses = {bus["Name"] for bus in flow.aws.client("events").list_event_buses()["EventBuses"]}
    rules = {rule["Name"] for rule in flow.aws.client("events").list_rules(EventBusName=world.BUS)["Rules"]}
    tables = set(flow.aws.dynamodb.list_tables()["TableNames"])
    aliases = {alias["AliasName"] for alias in flow.aws.client("kms").list_aliases()["Aliases"]}
    alarms_found = flow.aws.client("cloudwatch").describe_alarms()["MetricAlarms"]
    found = queues_found | topics | buses | rules | tables | aliases

    def on_moto(name: str) -> str:
        return T_("on moto") if name in found else T_("missing")

    lesson, workbook = T_("lesson"), T_("workbook")

    alarms_said = _("{namespace} and {count} alarms").format(
        namespace=world.METRICS_NAMESPACE, count=number(len(alarms_found))
    )
    rows = [
        ("SQS", world.ORDERS_QUEUE, lesson, on_moto(world.ORDERS_QUEUE)),
        ("SQS", world.ORDERS_DLQ, lesson, on_moto(world.ORDERS_DLQ)),
        *[("SQS", name, workbook, on_moto(name)) for name in (*CONSUMER_QUEUES.values(), *DLQS.values())],
        ("SNS", world.TOPIC, lesson, on_moto(world.TOPIC)),
        ("SNS", world.ALERTS_TOPIC, lesson, on_moto(world.ALERTS_TOPIC)),
        ("EventBridge", world.BUS, lesson, on_moto(world.BUS)),
        *[("EventBridge", name, workbook, on_moto(name)) for name in sorted(rules)],
        ("DynamoDB", world.IDEMPOTENCY_TABLE, lesson, on_moto(world.IDEMPOTENCY_TABLE)),
        ("KMS", world.KMS_ALIAS, lesson, on_moto(world.KMS_ALIAS)),
        ("CloudWatch", alarms_said, lesson, T_("on moto")),
        ("ElastiCache/Valkey", T_("mercadofresco-catalogo (the shared breaker)"), lesson, T_("fakeredis stand-in")),
        ("Aurora", "aurora-mf-escritor (pedidos + outbox)", lesson, T_("stand-in (notebook 13: PostgreSQL)")),
        ("Step Functions", "mercadofresco-procesar-pedido", lesson, T_("not run (notebook 15)")),
        (
            "EventBridge Pipes",
            T_("pipe-mf-... over mercadofresco-carritos"),
            lesson,
            T_("not run (moto moves nothing)"),
        ),
        ("CloudTrail", "trail-mercadofresco", lesson, T_("not run")),
    ]
    return [{"service": s, "name": n, "named_by": by, "in_this_run": where} for s, n, by, where in rows]


def breaker_outcomes(runs: dict[str, FlowRun]) -> list[dict[str, Any]]:
    """One row per policy of `flow.compare_breakers`: what the outage cost the gateway, the queue and the orders."""
    rows = []
    for name, run in runs.items():
        flow = run.flow
        charge_hops = [poller for hop, poller in run.pollers.items() if hop.startswith("cobro")]
        rows.append(
            {
                "breaker": name,
                "gateway_calls": flow.gateway.calls,
                "refused_without_calling": flow.client.refused,
                "receives_of_the_orders": sum(row["event"] == "received" for p in charge_hops for row in p.timeline),
                "through_the_DLQ": flow.redriven.get(world.ORDERS_QUEUE, 0),
                "charges_per_order": max(flow.gateway.charges_per_order().values(), default=0),
            }
        )
    return rows
