"""moto_events.cached_jsonpath: the same messages reach the queue, each JSONPath is parsed once, moto's code is back."""

from __future__ import annotations

import json

import jsonpath_ng.ext

from mercadofresco import queues
from mercadofresco.runtime import moto_events


def _received(aws, url: str) -> list[dict]:
    messages = aws.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)["Messages"]
    bodies = [json.loads(m["Body"]) for m in messages]
    return [{key: value for key, value in body.items() if key != "id"} for body in bodies]  # moto invents the id


def test_cached_jsonpath_delivers_the_same_event_and_puts_moto_back(aws, clock):
    events = aws.client("events")
    url = aws.sqs.create_queue(QueueName="cola-prueba-eventos")["QueueUrl"]
    events.create_event_bus(Name="bus-prueba")
    events.put_rule(Name="todo", EventBusName="bus-prueba", EventPattern=json.dumps({"source": ["prueba"]}))
    target = {"Id": "cola", "Arn": queues.queue_arn(aws.sqs, url)}
    events.put_targets(Rule="todo", EventBusName="bus-prueba", Targets=[target])
    detail = json.dumps({"pedido_id": "PED-2026-084417", "importe": "48.20"})
    entry = {"Source": "prueba", "DetailType": "pedido.confirmado", "EventBusName": "bus-prueba", "Detail": detail}

    events.put_events(Entries=[entry])
    plain = _received(aws, url)
    original = jsonpath_ng.ext.parse
    with moto_events.cached_jsonpath():
        events.put_events(Entries=[entry, entry])
        hits = jsonpath_ng.ext.parse.cache_info().hits
    cached = _received(aws, url)

    assert jsonpath_ng.ext.parse is original
    assert hits >= 8  # the second event read every expression from the cache
    assert cached == plain * 2
    assert plain[0]["detail"] == {"pedido_id": "PED-2026-084417", "importe": "48.20"}
