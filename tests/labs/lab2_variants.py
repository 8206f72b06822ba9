"""Lab 2 as learners might hand it in: the solution with one of the runbook's classic mistakes.

Each variant changes one idea of the solution (the lesson's section 17 and class 210). `EXPECTED_FAILURES`
names the hidden checks each must fail (at least).
"""

from __future__ import annotations

from pathlib import Path

from tests.labs import lab_variants
import nbformat

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "solutions" / "lab2_dlq_runbook.ipynb"

INSPECT, CONTAIN, CLASSIFY, FIX, REDRIVE, RUNBOOK, SAFEGUARD = "m03", "m05", "m13", "m22", "m26", "m28", "m31"
FIXED_HANDLER = "    return handlers.ChargeOrders(client, versions=(1, 2))\n"
# A fixed consumer of the learner's own: reads version 1 and 2 itself, then charges with `charge(...)`.
OWN_HANDLER = """    import json as _json
    from decimal import Decimal as _Decimal

    def handler(event, context):
        failures = []
        for record in event["Records"]:
            data = _json.loads(record["body"])
            if data.get("version") not in (1, 2):
                failures.append({{"itemIdentifier": record["messageId"]}})
                continue
            importe = _Decimal(data["importe"])
            {charge}
        return {{"batchItemFailures": failures}}

    return handler
"""
CLASSIFY_BODY = """    kinds = []
    for row in inspect_dlq(sqs, dlq_url, max_messages=10):"""

EDITS: dict[str, list[tuple[str, str, str]]] = {
    # "Never inspect a DLQ by deleting messages."
    "inspect_by_deleting": [
        (
            INSPECT,
            '                "body": message["Body"],\n            }\n',
            '                "body": message["Body"],\n            }\n'
            '            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])\n',
        )
    ],
    # "The distribution is a clue, the content the proof": a classifier that only looks at the clock.
    "classify_by_time": [
        (
            CLASSIFY,
            CLASSIFY_BODY,
            "    rows = inspect_dlq(sqs, dlq_url, max_messages=10)\n"
            "    window = (rows[-1]['sent'] - rows[0]['sent']).total_seconds()\n"
            "    return 'transient' if window <= 3 * 3600 else 'poison'\n" + CLASSIFY_BODY,
        )
    ],
    # A classifier that answers poison whatever it reads.
    "always_poison": [(CLASSIFY, CLASSIFY_BODY, "    return 'poison'\n" + CLASSIFY_BODY)],
    # "Reprocess. With a rate limit, always": a redrive that moves everything at once.
    "redrive_without_rate_limit": [
        (REDRIVE, "MaxNumberOfMessages=min(10, max_per_second),", "MaxNumberOfMessages=10,"),
        (REDRIVE, "        clock.advance(len(batch) / max_per_second)\n", ""),
    ],
    # "There is no redrive without a fix first": the messages meet the old consumer again.
    "redrive_before_fix": [
        (
            RUNBOOK,
            "    moved = redrive_dlq(aws, clock, max_per_second=10)  # 5\n",
            "    moved = redrive_dlq(aws, clock, max_per_second=10)  # 5\n"
            "    old = lambda_poller.Poller(aws.sqs, aws.orders.url, handlers.ChargeOrders(client), clock, config)\n"
            "    old.run_until_idle(3_600)  # the consumer still deployed expects version 1\n",
        )
    ],
    # The four mistakes the first version of the hidden checks missed (issue 13):
    # a version-2 amount read as cents: a 48.20 order charged 0.482.
    "v2_amount_as_cents": [
        (
            FIX,
            FIXED_HANDLER,
            OWN_HANDLER.format(
                charge="importe = importe / 100 if data['version'] == 2 else importe\n"
                "            client.charge(data['pedido_id'], importe, f\"cobro:{data['pedido_id']}\", context)"
            ),
        )
    ],
    # a consumer that charges without the order's key: orders charged before the DLQ are charged again.
    "redrive_not_idempotent": [
        (FIX, FIXED_HANDLER, OWN_HANDLER.format(charge="client.charge(data['pedido_id'], importe, None, context)"))
    ],
    # a redrive that drops what it cannot read: the messages disappear instead of being moved.
    "redrive_drops_unreadable": [
        (
            REDRIVE,
            '        entries = [{"Id": str(i), "MessageBody": message["Body"]} for i, message in enumerate(batch)]\n',
            "        readable = []\n"
            "        for message in batch:\n"
            "            try:\n"
            "                handlers.read_order(message['Body'], (1, 2))\n"
            "                readable.append(message)\n"
            "            except orders.MalformedOrderError:\n"
            "                pass\n"
            '        entries = [{"Id": str(i), "MessageBody": m["Body"]} for i, m in enumerate(readable)] or [\n'
            '            {"Id": "0", "MessageBody": batch[0]["Body"]}\n'
            "        ]\n",
        )
    ],
    # an inspection by delete-and-resend: every message comes back, without its receive count or send time.
    "inspect_by_resending": [
        (
            INSPECT,
            '                "body": message["Body"],\n            }\n',
            '                "body": message["Body"],\n            }\n'
            '            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])\n'
            '            sqs.send_message(QueueUrl=queue_url, MessageBody=message["Body"])\n',
        )
    ],
    # An alarm that looks once an hour: it would have woken Marta at 23:04, not 22:09.
    "hourly_alarm": [(SAFEGUARD, "period_seconds=300,", "period_seconds=3600,")],
    # Issue 22's four more, as a learner who half-read the runbook would write them.
    # The age of the live queue measured by receiving from it: every look spends a receive of a real order.
    "contain_receives_source": [
        (
            CONTAIN,
            "    oldest = source_queue_age(aws.sqs, aws.orders.url, clock)",
            "    peek = aws.sqs.receive_message(QueueUrl=aws.orders.url, WaitTimeSeconds=0, VisibilityTimeout=1,"
            ' MessageSystemAttributeNames=["All"]).get("Messages", [])\n'
            '    oldest = clock.timestamp() - int(peek[0]["Attributes"]["SentTimestamp"]) / 1000 if peek else 0.0',
        )
    ],
    # Paced per batch, but a batch is always 10: at 5 a second, ten arrive within one second.
    "batch_of_ten_at_any_rate": [(REDRIVE, "MaxNumberOfMessages=min(10, max_per_second),", "MaxNumberOfMessages=10,")],
    # An empty receive taken for an empty DLQ: the messages an inspection hid for 5 s stay behind.
    "stops_at_first_empty_receive": [
        (
            REDRIVE,
            '            if not queues.queue_counts(aws.sqs, aws.orders.dlq_url)["in_flight"]:\n'
            "                return moved\n"
            "            clock.advance(1)  # some are still hidden by an inspection: wait for them\n"
            "            continue\n",
            "            return moved\n",
        )
    ],
    # The alarm on the source queue, whose 12 s looked normal all night: it never fires.
    "alarm_on_source_queue": [
        (SAFEGUARD, '(("QueueName", world.ORDERS_DLQ),)', '(("QueueName", world.ORDERS_QUEUE),)')
    ],
}

EXPECTED_FAILURES = {
    "inspect_by_deleting": {"inspection_deletes_nothing"},
    "classify_by_time": {"classify_by_content", "runbook_end_to_end"},
    "always_poison": {"classify_by_content"},
    "redrive_without_rate_limit": {"redrive_rate_limited"},
    "redrive_before_fix": {"runbook_end_to_end"},
    "hourly_alarm": {"safeguard"},
    "v2_amount_as_cents": {"v2_amount"},
    "redrive_not_idempotent": {"redrive_idempotent"},
    "redrive_drops_unreadable": {"redrive_loses_nothing"},
    "inspect_by_resending": {"inspection_keeps_evidence"},
    "contain_receives_source": {"contain_measures"},
    "batch_of_ten_at_any_rate": {"redrive_rate_limited"},
    "stops_at_first_empty_receive": {"runbook_end_to_end"},
    "alarm_on_source_queue": {"safeguard"},
}


def solution() -> nbformat.NotebookNode:
    """Lab 2's solution notebook, as the instructor has it."""
    return nbformat.read(SOLUTION, as_version=4)


def variant(name: str) -> nbformat.NotebookNode:
    """The solution with the mistake `name`, without its hidden cells."""
    return lab_variants.edited(EDITS[name], name, solution())
