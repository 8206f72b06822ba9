"""Lab 2 notebooks that attacked the grader, written by a session playing a hostile student (issue 47, 6 December).

Each is the solution with a cell appended that defines one or two of its functions again. `AIMED` names the
hidden checks each must fail; tests/labs/test_lab2.py grades them with the other variants. Before the fixes the first
two scored 13 of 13, the third 11 (two checks it did not deserve), and the fourth held the checker in moto's long
poll until the notebook's whole time limit (515 s at a 3 s cell limit).
"""

from __future__ import annotations

import copy

from tests.labs import lab2_variants
import nbformat

# The runbook with a redrive that is not paced, sending by the queue's name: moto takes `cola-...` for the URL,
# and the grader's log of calls, which compared URLs, never saw those sends.
SENDS_BY_NAME = '''
def runbook(aws, clock, client):
    """WRONG on purpose: no rate limit, the sends named by the queue's last part so a URL comparison misses them."""
    alive, kind = contain(aws, clock), classify_dlq(aws.sqs, aws.orders.dlq_url)
    if alive["still_bleeding"] or kind != "poison":
        raise RuntimeError("stop")
    config = lambda_poller.PollerConfig(max_concurrency=5, max_idle_poll_seconds=20)
    poller = lambda_poller.Poller(aws.sqs, aws.orders.url, build_fixed_handler(client), clock, config)
    name, moved = aws.orders.url.rsplit("/", 1)[-1], 0
    while True:
        batch = aws.sqs.receive_message(
            QueueUrl=aws.orders.dlq_url, MaxNumberOfMessages=10, VisibilityTimeout=30, WaitTimeSeconds=0
        ).get("Messages", [])
        if not batch:
            if not queues.queue_counts(aws.sqs, aws.orders.dlq_url)["in_flight"]:
                break
            clock.advance(1)
            continue
        entries = [{"Id": str(i), "MessageBody": m["Body"]} for i, m in enumerate(batch)]
        aws.sqs.send_message_batch(QueueUrl=name, Entries=entries)
        handles = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)]
        aws.sqs.delete_message_batch(QueueUrl=aws.orders.dlq_url, Entries=handles)
        moved += len(batch)
    poller.run_until_idle(3_600)
    deleted = sum(row["event"] == "deleted" for row in poller.timeline)
    dlq_after = queues.queue_counts(aws.sqs, aws.orders.dlq_url)["visible"]
    return {"moved": moved, "dlq_after": dlq_after, "deleted": deleted, "cause": "v2", "change": "v1+v2",
            "earlier_warning": "alarm"}
'''

# No redrive, no consumer: every message read from the DLQ and charged at once, straight at the gateway.
CHARGES_AROUND_THE_QUEUE = '''
import json as _json


def _charge_all_now(aws, client, url):
    while batch := aws.sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=600, WaitTimeSeconds=0
    ).get("Messages", []):
        for m in batch:
            order = _json.loads(m["Body"])
            client.charge(order["pedido_id"], Decimal(str(order["importe"])), f"cobro:{order['pedido_id']}")
            aws.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])


def runbook(aws, clock, client):
    """WRONG on purpose: the orders charged from the DLQ itself, around the queue and its fixed consumer."""
    alive, kind = contain(aws, clock), classify_dlq(aws.sqs, aws.orders.dlq_url)
    if alive["still_bleeding"] or kind != "poison":
        raise RuntimeError("stop")
    n = queues.queue_counts(aws.sqs, aws.orders.dlq_url)
    moved = n["visible"] + n["in_flight"]
    clock.advance(6)
    _charge_all_now(aws, client, aws.orders.dlq_url)
    _charge_all_now(aws, client, aws.orders.url)
    clock.advance(601)
    dlq_after = queues.queue_counts(aws.sqs, aws.orders.dlq_url)["visible"]
    return {"moved": moved, "dlq_after": dlq_after, "deleted": moved, "cause": "v2", "change": "v1+v2",
            "earlier_warning": "alarm"}
'''

# Rows made up without reading the queue, and a classification by the queue's name.
MADE_UP_ROWS = '''
def inspect_dlq(sqs, queue_url, max_messages=10):
    """WRONG on purpose: never reads the queue."""
    start = dt.datetime(2026, 1, 1, tzinfo=MADRID)
    return [{"sent": start + dt.timedelta(seconds=i), "receive_count": 0, "body": ""} for i in range(max_messages)]


def classify_dlq(sqs, dlq_url):
    """WRONG on purpose: the lesson's DLQ is poison, any other queue transient."""
    return "poison" if dlq_url.endswith(world.ORDERS_DLQ) else "transient"
'''

# A long poll in a form-encoded body under a JSON header: moto read the body's Action and waited on a frozen clock.
FORM_BODY_LONG_POLL = '''
from botocore.compat import quote as _quote

_inspect = inspect_dlq


def inspect_dlq(sqs, queue_url, max_messages=10):
    """The solution's, after a long poll smuggled in a form body (only under the grader)."""
    if "checker.invalid" in (sqs.meta.endpoint_url or ""):
        empty = sqs.create_queue(QueueName="nobody-sends-here")["QueueUrl"]
        form = ("Action=ReceiveMessage&Version=2012-11-05&WaitTimeSeconds=20&QueueUrl=" + _quote(empty)).encode()

        def as_form(request, **_):
            request.data = form
            request.headers["Content-Type"] = "application/x-www-form-urlencoded"

        sqs.meta.events.register_first("before-sign.sqs.ReceiveMessage", as_form)
        try:
            sqs.receive_message(QueueUrl=empty, WaitTimeSeconds=0)
        except Exception:
            pass  # refused: go on as if nothing happened
        finally:
            sqs.meta.events.unregister("before-sign.sqs.ReceiveMessage", as_form)
    return _inspect(sqs, queue_url, max_messages)
'''

ATTACKS = {
    "attack_sends_by_queue_name": SENDS_BY_NAME,
    "attack_charges_around_the_queue": CHARGES_AROUND_THE_QUEUE,
    "attack_made_up_rows": MADE_UP_ROWS,
    "attack_form_body_long_poll": FORM_BODY_LONG_POLL,
}
AIMED = {
    "attack_sends_by_queue_name": {"runbook_end_to_end"},
    "attack_charges_around_the_queue": {"runbook_end_to_end"},
    "attack_made_up_rows": {"inspection_deletes_nothing", "inspection_keeps_evidence", "classify_by_content"},
    # Refused at once, and the solution's inspection goes on: it passes, instead of being cut off by the time limit.
    "attack_form_body_long_poll": {"inspection_keeps_evidence"},
}


def attack(name: str) -> nbformat.NotebookNode:
    """The solution with the attack `name` appended as a cell of its own, before the self-check cell."""
    notebook = copy.deepcopy(lab2_variants.solution())
    notebook.cells.insert(len(notebook.cells) - 1, nbformat.v4.new_code_cell(ATTACKS[name].strip() + "\n"))
    return notebook
