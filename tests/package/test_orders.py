import json
from decimal import Decimal

import pytest

from mercadofresco import orders


def test_round_trip():
    order = orders.Order("PED-2026-084417", Decimal("48.20"))
    assert orders.parse_order(orders.order_body(order)) == order


@pytest.mark.parametrize(
    ("body", "reason", "kind"),
    [
        ("not json", "body is not JSON", "schema"),
        ("[1, 2]", "not a JSON object", "schema"),
        ('{"pedido_id": "PED-2026-084417", "version": 1}', "missing field(s): importe", "schema"),
        (
            '{"pedido_id": "PED-2026-084417", "importe": "48.20", "version": 2}',
            "version 2, this consumer expects 1",
            "schema",
        ),
        ('{"pedido_id": "84417", "importe": "48.20", "version": 1}', "is not like PED-2026-084417", "schema"),
        ('{"pedido_id": "PED-2026-084417", "importe": "cuarenta", "version": 1}', "is not a number", "value"),
        ('{"pedido_id": "PED-2026-084417", "importe": "-1", "version": 1}', "must be a positive amount", "value"),
        ('{"pedido_id": "PED-2026-084417", "importe": "NaN", "version": 1}', "must be a positive amount", "value"),
    ],
)
def test_malformed_bodies_say_why_and_which_kind(body, reason, kind):
    with pytest.raises(orders.MalformedOrderError) as info:
        orders.parse_order(body)
    assert reason in info.value.reason
    assert info.value.body == body
    assert info.value.kind == kind


def test_a_malformed_order_needs_a_known_kind():
    with pytest.raises(ValueError, match="kind must be one of schema, value"):
        orders.MalformedOrderError("x", "{}", "other")


def test_equal_orders_give_equal_bodies():
    body = orders.order_body(orders.Order("PED-2026-084417", Decimal("48.20")))
    assert json.loads(body) == {"importe": "48.20", "pedido_id": "PED-2026-084417", "version": 1}
    assert orders.order_id(84417) == "PED-2026-084417"


def test_orders_go_out_ten_to_a_batch_in_their_order(aws):
    batch = [orders.Order(orders.order_id(400_000 + n), Decimal("48.20")) for n in range(23)]
    calls = []
    aws.sqs.meta.events.register("before-call.sqs.SendMessageBatch", lambda **_: calls.append(1))
    message_ids = orders.send_orders(aws.sqs, aws.orders.url, batch)
    assert len(calls) == 3 and len(set(message_ids)) == 23
    received = []
    while len(received) < 23:
        answer = aws.sqs.receive_message(QueueUrl=aws.orders.url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        received += answer["Messages"]
    assert [m["MessageId"] for m in received] == message_ids
    assert [orders.parse_order(m["Body"]) for m in received] == batch


def test_fifo_entries_keep_their_group_order_across_batches(aws):
    url = aws.sqs.create_queue(
        QueueName="cola-mercadofresco-pedidos-prueba.fifo",
        Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"},
    )["QueueUrl"]
    batch = [orders.Order(orders.order_id(410_000 + n), Decimal("48.20")) for n in range(12)]
    entries = [{"MessageBody": orders.order_body(order), "MessageGroupId": "todos"} for order in batch]
    message_ids = orders.send_entries(aws.sqs, url, entries)
    received = []
    while len(received) < 12:
        answer = aws.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        for message in answer["Messages"]:
            aws.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        received += answer["Messages"]
    assert [m["MessageId"] for m in received] == message_ids
    assert [orders.parse_order(m["Body"]) for m in received] == batch


def test_a_refused_entry_raises_with_what_sqs_said():
    class Refusing:  # SQS answers 200 and lists the entries it refused under Failed
        def send_message_batch(self, QueueUrl, Entries):
            ok = [{"Id": e["Id"], "MessageId": f"m{e['Id']}"} for e in Entries[1:]]
            failed = [{"Id": Entries[0]["Id"], "Code": "InvalidMessageContents", "Message": "Invalid binary character"}]
            return {"Successful": ok, "Failed": failed}

    with pytest.raises(orders.OrdersNotSentError, match=r"refused 1 order.*Invalid binary character"):
        orders.send_entries(Refusing(), "cola", [{"MessageBody": "\x00"}, {"MessageBody": "{}"}])
