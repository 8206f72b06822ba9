"""Section 17's tip on moto (notebook 17): an archive replay and a double deploy against three consumer keys."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest

from mercadofresco import orders, world
from mercadofresco.lessons import replay


def _runs(aws, clock, order_count=3):
    return {kind: replay.replay_and_double_deploy(aws, clock, kind, order_count) for kind in replay.CONSUMERS}


def test_the_domain_key_charges_each_order_once_through_a_replay_and_a_double_deploy(aws, clock):
    row = replay.replay_and_double_deploy(aws, clock, "cobro:{pedido_id}", order_count=3)
    assert row["messages_delivered"] == 12  # 3 published + 3 replayed + 3 orders through two rules
    assert row["charges"] == row["orders"] == 6
    assert row["charges_per_replayed_order"] == row["charges_per_order_after_double_deploy"] == 1


def test_the_event_id_key_charges_again_after_a_replay_but_not_after_a_double_deploy(aws, clock):
    row = replay.replay_and_double_deploy(aws, clock, "the event's id", order_count=3)
    assert row["charges_per_replayed_order"] == 2  # moto's replayed event has a new id
    assert row["charges_per_order_after_double_deploy"] == 1  # one event through two rules keeps its id
    assert row["charges"] == 9


def test_without_a_key_every_delivery_is_a_charge(aws, clock):
    row = replay.replay_and_double_deploy(aws, clock, "no key", order_count=2)
    assert row["charges"] == row["messages_delivered"] == 8
    assert row["charges_per_replayed_order"] == row["charges_per_order_after_double_deploy"] == 2


def test_the_world_is_left_as_it_was_and_the_experiment_runs_again(aws, clock):
    first, again = _runs(aws, clock, 1), _runs(aws, clock, 1)
    assert first == again
    events = aws.client("events")
    assert [rule["Name"] for rule in events.list_rules(EventBusName=world.BUS)["Rules"]] == [world.BUS_RULE]
    assert events.list_archives()["Archives"] == []
    assert len(events.list_replays(NamePrefix=replay.REPLAY_PREFIX)["Replays"]) == 6  # a name per run


def test_the_consumer_must_be_one_of_the_three(aws, clock):
    with pytest.raises(ValueError, match="consumer must be one of"):
        replay.replay_and_double_deploy(aws, clock, "MessageId")
    with pytest.raises(ValueError, match="order_count must be between 1 and 20"):
        replay.replay_and_double_deploy(aws, clock, "no key", order_count=0)


def test_what_notebook_17_says_of_moto_replay(aws, clock):
    """moto 5.2.5: a new id and a replay-name; not archived again; every archived event, whatever the window."""
    events, sqs = aws.client("events"), aws.sqs
    url = sqs.create_queue(QueueName="cola-prueba-repeticion")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    bus_arn = events.describe_event_bus(Name=world.BUS)["Arn"]
    archive = events.create_archive(ArchiveName="archivo-prueba", EventSourceArn=bus_arn)["ArchiveArn"]
    events.put_rule(Name="todo", EventBusName=world.BUS, EventPattern=json.dumps({"source": [world.ORDER_SOURCE]}))
    events.put_targets(Rule="todo", EventBusName=world.BUS, Targets=[{"Id": "cola", "Arn": arn}])
    detail = orders.order_body(orders.Order("PED-2026-084417", Decimal("48.20")))
    entry = {"Source": world.ORDER_SOURCE, "DetailType": "PedidoCreado", "Detail": detail, "EventBusName": world.BUS}
    event_id = events.put_events(Entries=[entry])["Entries"][0]["EventId"]
    sqs.purge_queue(QueueUrl=url)
    long_before = clock.now() - dt.timedelta(days=2)  # a window that holds no event at all
    events.start_replay(
        ReplayName="repeticion-prueba",
        EventSourceArn=archive,
        EventStartTime=long_before,
        EventEndTime=long_before + dt.timedelta(minutes=1),
        Destination={"Arn": bus_arn},
    )
    assert events.describe_replay(ReplayName="repeticion-prueba")["State"] == "COMPLETED"  # done on return
    (message,) = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    replayed = json.loads(message["Body"])
    assert replayed["replay-name"] == "repeticion-prueba"
    assert replayed["id"] != event_id and replayed["detail"] == json.loads(detail)
    assert events.describe_archive(ArchiveName="archivo-prueba")["EventCount"] == 1  # not archived again
