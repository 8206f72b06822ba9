"""The other answer of section 13 (notebook 13): change data capture with DynamoDB Streams.

If the write store is DynamoDB there is only one write: the item. The table's
stream records every change, and something reads the stream and publishes. The
lesson uses EventBridge Pipes over the stream of `mercadofresco-carritos` to publish
`CarritoAbandonado`; moto creates Pipes but moves nothing, so `pipe_once` is **a
model** of the pipe: read the shards from the start, keep the INSERTs whose state is
ABANDONADO, put them on `bus-mercadofresco`. The stream's SequenceNumber travels
as the event's id, for the same idempotent consumer as the outbox.

botocore sends stream calls to an account-based endpoint that moto does not serve:
the streams client is made with `account_id_endpoint_mode="disabled"`.
"""

from __future__ import annotations

import json
import random
from typing import Any

from botocore.config import Config

from mercadofresco import bus, world
from mercadofresco.errors import check_range

CARTS_TABLE = "mercadofresco-carritos"
CART_ABANDONED = "CarritoAbandonado"


def create_carts_table(dynamodb: Any) -> str:
    """Create `mercadofresco-carritos` with a NEW_IMAGE stream (afresh if it exists); return the stream's ARN."""
    if CARTS_TABLE in dynamodb.list_tables()["TableNames"]:
        dynamodb.delete_table(TableName=CARTS_TABLE)  # a new table, a new stream: each run starts empty
    dynamodb.create_table(
        TableName=CARTS_TABLE,
        KeySchema=[{"AttributeName": "carrito_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "carrito_id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    )
    return dynamodb.describe_table(TableName=CARTS_TABLE)["Table"]["LatestStreamArn"]


def streams_client(aws: world.World) -> Any:
    """A DynamoDB Streams client for this world, kept off the account endpoint moto does not serve."""
    memory = aws.config.endpoint.mode == "memory"
    return aws.session.client(
        "dynamodbstreams",
        endpoint_url=None if memory else aws.config.endpoint.endpoint_url,
        config=Config(ignore_configured_endpoint_urls=memory, account_id_endpoint_mode="disabled"),
    )


def pipe_once(streams: Any, stream_arn: str, events: Any) -> int:
    """A model of the Pipe: every ABANDONADO insert in the stream becomes a CarritoAbandonado on the bus."""
    published = 0
    for shard in streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=stream_arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        records = streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]
        published += bus.put_events(events, [_entry(record) for record in records if _is_abandoned(record)])
    return published


def _is_abandoned(record: dict[str, Any]) -> bool:
    image = record["dynamodb"].get("NewImage", {})
    return record["eventName"] == "INSERT" and image.get("estado", {}).get("S") == "ABANDONADO"


def _entry(record: dict[str, Any]) -> dict[str, Any]:
    image = record["dynamodb"]["NewImage"]
    detail = {"carrito_id": image["carrito_id"]["S"], "evento_id": record["dynamodb"]["SequenceNumber"]}
    return {
        "Source": world.ORDER_SOURCE,
        "DetailType": CART_ABANDONED,
        "Detail": json.dumps(detail),
        "EventBusName": world.BUS,
    }


def run_streams(aws: world.World, carts: int = 40, crash_probability: float = 0.1, seed: int = 5) -> dict[str, Any]:
    """Write abandoned carts (the writer may die right after each write), then run the pipe; count what is lost."""
    check_range("carts", carts, 1, 1_000)
    check_range("crash_probability", crash_probability, 0.0, 0.5)
    rng = random.Random(seed)
    stream_arn = create_carts_table(aws.dynamodb)
    deaths = 0
    for n in range(carts):
        item = {"carrito_id": {"S": f"CAR-2026-{n + 1:06d}"}, "estado": {"S": "ABANDONADO"}}
        aws.dynamodb.put_item(TableName=CARTS_TABLE, Item=item)  # the only write
        deaths += rng.random() < crash_probability  # a death here leaves nothing half done
    published = pipe_once(streams_client(aws), stream_arn, aws.client("events"))
    return {"carts written": carts, "writer deaths": deaths, "events published": published, "lost": carts - published}
