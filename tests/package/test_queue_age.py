"""The model of ApproximateAgeOfOldestMessage: the age of the oldest message, read without a receive."""

from __future__ import annotations

import pytest

from mercadofresco import orders
from mercadofresco.models import queue_age


def test_an_empty_queue_is_zero_seconds_old(aws, clock):
    assert queue_age.age_of_oldest_message(aws.sqs, aws.orders.url, clock.now()) == 0.0


def test_the_age_is_the_oldest_send_and_reading_it_receives_nothing(aws, clock):
    orders.send_order(aws.sqs, aws.orders.url, orders.Order("PED-2026-084417", 10))
    clock.advance(30)
    orders.send_order(aws.sqs, aws.orders.url, orders.Order("PED-2026-084418", 10))
    clock.advance(12)
    assert queue_age.age_of_oldest_message(aws.sqs, aws.orders.url, clock.now()) == pytest.approx(42, abs=0.01)
    first = aws.sqs.receive_message(
        QueueUrl=aws.orders.url, MaxNumberOfMessages=10, WaitTimeSeconds=0, MessageSystemAttributeNames=["All"]
    )["Messages"]
    assert [int(m["Attributes"]["ApproximateReceiveCount"]) for m in first] == [1, 1]  # the model took no receive
    assert queue_age.age_of_oldest_message(aws.sqs, aws.orders.url, clock.now()) == pytest.approx(42, abs=0.01)


def test_a_queue_outside_this_processs_moto_is_refused_naming_memory_mode(aws, clock):
    elsewhere = aws.orders.url.replace("cola-mercadofresco-pedidos", "cola-que-no-existe")
    with pytest.raises(queue_age.QueueAgeError, match='mode "memory"'):
        queue_age.age_of_oldest_message(aws.sqs, elsewhere, clock.now())


def test_a_queue_behind_another_endpoint_is_read_by_the_process_that_keeps_it(clock):
    import boto3

    from mercadofresco.runtime import endpoints

    url = "https://sqs.eu-south-2.elsewhere.invalid"
    sqs = boto3.client("sqs", region_name="eu-south-2", endpoint_url=url)
    asked = []
    endpoints.keep_moto_elsewhere(sqs, lambda model, *args: asked.append((model, *args)) or 12)
    queue = "https://sqs.eu-south-2.amazonaws.com/123456789012/cola-mercadofresco-pedidos"
    assert queue_age.age_of_oldest_message(sqs, queue, clock.now()) == 12.0
    assert asked == [("queue_age", queue, clock.now())]  # the other process was asked, nothing was sent
    other = boto3.client("sqs", region_name="eu-south-2", endpoint_url=url)
    assert endpoints.moto_elsewhere(other) is None  # another client of the same URL asks nobody: no registry
