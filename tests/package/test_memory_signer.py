"""Memory mode signs nothing: moto gets the header it reads (account, region, service), no SigV4 arithmetic."""

from __future__ import annotations

import json

from mercadofresco import queues
from mercadofresco.runtime import endpoints


def test_memory_clients_send_the_header_moto_reads_without_a_signature(aws, clock):
    seen: list[str] = []
    aws.sqs.meta.events.register("before-send", lambda request, **_: seen.append(request.headers["Authorization"]))
    aws.sqs.list_queues()
    assert aws.sqs.meta.config.signature_version == endpoints.MOTO_SIGNATURE
    header = seen[0].decode() if isinstance(seen[0], bytes) else seen[0]
    assert f"/{aws.config.endpoint.region}/sqs/aws4_request" in header
    assert header.endswith("Signature=not-signed")


def test_moto_still_puts_every_service_in_the_world_s_region(aws, clock):
    url = aws.sqs.create_queue(QueueName="cola-prueba-firma")["QueueUrl"]
    arn = queues.queue_arn(aws.sqs, url)
    assert f":{aws.config.endpoint.region}:" in arn  # moto took the region from the header, as with SigV4
    events = aws.client("events")
    events.put_rule(Name="firma", EventBusName=aws.bus_name, EventPattern=json.dumps({"source": ["firma"]}))
    events.put_targets(Rule="firma", EventBusName=aws.bus_name, Targets=[{"Id": "cola", "Arn": arn}])
    events.put_events(Entries=[{"Source": "firma", "DetailType": "x", "Detail": "{}", "EventBusName": aws.bus_name}])
    assert len(aws.sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0)["Messages"]) == 1
