import json
import time

import pytest

from mercadofresco import queues, world
from mercadofresco.runtime import settings
from mercadofresco.runtime.settings import EndpointConfig

pytestmark = pytest.mark.usefixtures("clock")


def _receive(sqs, url):
    return sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0, MessageSystemAttributeNames=["All"]).get("Messages", [])


def test_world_has_the_lessons_resources(aws):
    names = sorted(url.rsplit("/", 1)[1] for url in aws.sqs.list_queues()["QueueUrls"])
    assert {"cola-mercadofresco-pedidos", "mercadofresco-pedidos-fallidos"} <= set(names)
    table = aws.dynamodb.describe_table(TableName="mercadofresco-idempotencia")["Table"]
    assert table["KeySchema"] == [{"AttributeName": "clave", "KeyType": "HASH"}]
    assert table["SSEDescription"]["SSEType"] == "KMS"
    ttl = aws.dynamodb.describe_time_to_live(TableName="mercadofresco-idempotencia")["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expira_en"}
    aliases = [a["AliasName"] for a in aws.client("kms").list_aliases()["Aliases"]]
    assert "alias/mercadofresco-datos" in aliases
    attributes = aws.sqs.get_queue_attributes(QueueUrl=aws.orders.url, AttributeNames=["All"])["Attributes"]
    assert attributes["VisibilityTimeout"] == "120"
    assert attributes["MessageRetentionPeriod"] == str(4 * 86_400)
    redrive = json.loads(attributes["RedrivePolicy"])
    assert redrive["deadLetterTargetArn"] == aws.orders.dlq_arn and int(redrive["maxReceiveCount"]) == 4
    dlq = aws.sqs.get_queue_attributes(QueueUrl=aws.orders.dlq_url, AttributeNames=["MessageRetentionPeriod"])
    assert dlq["Attributes"]["MessageRetentionPeriod"] == str(14 * 86_400)


def test_visibility_timeout_and_redrive_follow_the_virtual_clock(aws, clock):
    real_start = time.perf_counter()
    aws.sqs.send_message(QueueUrl=aws.orders.url, MessageBody="{}")
    assert len(_receive(aws.sqs, aws.orders.url)) == 1
    clock.advance(119)
    assert _receive(aws.sqs, aws.orders.url) == []  # still hidden at +119 s
    clock.advance(2)
    again = _receive(aws.sqs, aws.orders.url)  # back at +121 s
    assert [m["Attributes"]["ApproximateReceiveCount"] for m in again] == ["2"]
    for expected in ("3", "4"):
        clock.advance(121)
        assert [m["Attributes"]["ApproximateReceiveCount"] for m in _receive(aws.sqs, aws.orders.url)] == [expected]
    clock.advance(121)
    assert _receive(aws.sqs, aws.orders.url) == []  # the 5th receive moves it to the DLQ instead
    assert len(_receive(aws.sqs, aws.orders.dlq_url)) == 1
    assert time.perf_counter() - real_start < 1.0


def test_topic_fans_out_and_bus_rule_routes(aws):
    aws.client("sns").publish(TopicArn=aws.topic_arn, Message='{"pedido_id": "PED-2026-084417"}')
    for url in aws.fanout_queue_urls.values():
        assert [m["Body"] for m in _receive(aws.sqs, url)] == ['{"pedido_id": "PED-2026-084417"}']
    aws.client("events").put_events(
        Entries=[
            {
                "EventBusName": world.BUS,
                "Source": world.ORDER_SOURCE,
                "DetailType": "PedidoConfirmado",
                "Detail": '{"pedido_id": "PED-2026-084417"}',
            }
        ]
    )
    routed = _receive(aws.sqs, aws.warehouse_queue_url)
    assert json.loads(routed[0]["Body"])["detail"] == {"pedido_id": "PED-2026-084417"}


def test_reset_orders_queue_changes_visibility_and_empties(aws):
    aws.sqs.send_message(QueueUrl=aws.orders.url, MessageBody="{}")
    pair = aws.reset_orders_queue(visibility_timeout_seconds=400)
    assert queues.queue_counts(aws.sqs, pair.url) == {"visible": 0, "in_flight": 0, "delayed": 0}
    attributes = aws.sqs.get_queue_attributes(QueueUrl=pair.url, AttributeNames=["VisibilityTimeout"])
    assert attributes["Attributes"]["VisibilityTimeout"] == "400"


@pytest.mark.parametrize(
    ("make", "settings", "message"),
    [
        (
            world.WorldConfig,
            {"visibility_timeout_seconds": -1},
            "visibility_timeout_seconds must be between 0 and 43200; got -1",
        ),
        (
            world.WorldConfig,
            {"visibility_timeout_seconds": 43_201},
            "visibility_timeout_seconds must be between 0 and 43200",
        ),
        (world.WorldConfig, {"max_receive_count": 0}, "max_receive_count must be between 1 and 1000; got 0"),
        (world.WorldConfig, {"retention_seconds": 30}, "retention_seconds must be between 60 and 1209600"),
        (EndpointConfig, {"mode": "cloud"}, "mode must be one of memory, endpoint, aws; got 'cloud'"),
        (EndpointConfig, {"mode": "endpoint"}, 'mode "endpoint" needs endpoint_url'),
        (EndpointConfig, {"endpoint_url": "http://127.0.0.1:5000"}, 'mode "memory" takes no endpoint_url'),
    ],
)
def test_bad_configuration_names_the_parameter_and_range(make, settings, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make(**settings)


@pytest.mark.parametrize(
    "url",
    [
        "https://sqs.eu-south-2.amazonaws.com",
        "https://dynamodb.us-east-1.api.aws",
        "https://sqs.cn-north-1.amazonaws.com.cn",
    ],
)
def test_mock_modes_refuse_a_real_aws_endpoint(url):
    with pytest.raises(settings.RealAwsRefusedError, match="allow_real_aws"):
        world.WorldConfig(endpoint=EndpointConfig(mode="endpoint", endpoint_url=url))


def test_real_aws_needs_the_explicit_opt_in(monkeypatch):
    with pytest.raises(settings.RealAwsRefusedError):
        world.WorldConfig(endpoint=EndpointConfig(mode="aws"))
    monkeypatch.setenv("MERCADOFRESCO_MODE", "aws")
    with pytest.raises(settings.RealAwsRefusedError):
        world.WorldConfig.from_env()
    monkeypatch.setenv("MERCADOFRESCO_ALLOW_REAL_AWS", "yes")
    assert world.WorldConfig.from_env().endpoint.allow_real_aws  # only now would build() touch AWS


def test_memory_mode_ignores_an_endpoint_from_the_environment(monkeypatch, clock):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://sqs.eu-south-2.amazonaws.com")
    with world.build(world.WorldConfig()) as built:
        assert built.sqs.list_queues()["QueueUrls"]  # answered by moto, nothing left the process
        credentials = built.session.get_credentials()
        assert credentials.access_key == "testing"


def test_local_endpoints_are_not_aws():
    assert not settings.is_real_aws_endpoint("http://127.0.0.1:5000")
    assert not settings.is_real_aws_endpoint("http://localhost:4566")
    assert not settings.is_real_aws_endpoint("http://notamazonaws.com")


def test_only_a_notebooks_world_freezes_the_collector(clock) -> None:
    import gc

    from mercadofresco import world

    gc.unfreeze()
    with world.build(world.WorldConfig()):
        assert gc.get_freeze_count() == 0  # a test's own world leaves the collector alone
    try:
        with world.build():  # as every notebook builds it, from the environment
            assert gc.get_freeze_count() > 1000
    finally:
        gc.unfreeze()
