from decimal import Decimal

import pytest

from mercadofresco import orders, queues
from mercadofresco.models import gateway, lambda_poller
from mercadofresco.shop import handlers

ORDER = orders.Order("PED-2026-084417", Decimal("48.20"))


def make_poller(aws, clock, crashes=None, latency=0.24, config=None, provider=None):
    provider = provider or gateway.PaymentGateway(clock, latency=gateway.LatencyProfile(baseline_seconds=latency))
    client = gateway.GatewayClient(provider, read_timeout_seconds=180, send_idempotency_key=False)
    poller = lambda_poller.Poller(
        aws.sqs,
        aws.orders.url,
        handlers.ChargeOrders(client),
        clock,
        config=config or lambda_poller.PollerConfig(),
        crashes=crashes or lambda_poller.CrashPlan(),
    )
    return poller, provider


def counts(aws, url=None):
    return queues.queue_counts(aws.sqs, url or aws.orders.url)


@pytest.mark.parametrize("step", ["received", "after_charge", "before_delete"])
def test_a_crash_at_a_named_step_leaves_the_message_to_be_redelivered(aws, clock, step):
    poller, provider = make_poller(aws, clock, crashes=lambda_poller.CrashPlan({step: 1}))
    orders.send_order(aws.sqs, aws.orders.url, ORDER)
    poller.run(10)
    assert counts(aws)["in_flight"] == 1  # not deleted: hidden until the visibility timeout
    assert [row["detail"] for row in poller.timeline if row["event"] == "crashed"] == [step]
    poller.run(130)  # the message comes back and the (non-idempotent) consumer finishes it
    assert counts(aws) == {"visible": 0, "in_flight": 0, "delayed": 0}
    receives = [row["detail"] for row in poller.timeline if row["event"] == "received"]
    assert receives == ["receive #1", "receive #2"]
    expected_charges = 1 if step == "received" else 2  # died after charging: charged twice
    assert provider.charges_per_order()["PED-2026-084417"] == expected_charges


def test_a_handler_error_fails_the_whole_batch(aws, clock):
    def broken(event, context):
        raise RuntimeError("bug")

    poller = lambda_poller.Poller(aws.sqs, aws.orders.url, broken, clock)
    for number in range(3):
        orders.send_order(aws.sqs, aws.orders.url, orders.Order(orders.order_id(number), Decimal(1)))
    poller.run(5)
    assert counts(aws)["in_flight"] == 3
    assert [row["event"] for row in poller.timeline].count("handler_error") == 1


def test_partial_batch_response_keeps_only_the_failed_message_and_the_dlq_gets_it(aws, clock):
    poller, provider = make_poller(aws, clock)
    aws.sqs.send_message(QueueUrl=aws.orders.url, MessageBody='{"pedido_id": "PED-2026-000001"}')
    for number in (2, 3):
        orders.send_order(aws.sqs, aws.orders.url, orders.Order(orders.order_id(number), Decimal(1)))
    poller.run_until_idle(3_600)
    assert provider.charges_per_order() == {"PED-2026-000002": 1, "PED-2026-000003": 1}
    dlq = aws.sqs.receive_message(QueueUrl=aws.orders.dlq_url, WaitTimeSeconds=0)["Messages"]
    assert [m["Body"] for m in dlq] == ['{"pedido_id": "PED-2026-000001"}']
    failed = [row["detail"] for row in poller.timeline if row["event"] == "failed"]
    assert len(failed) == 4 and "missing field(s): importe, version" in failed[0]


def test_without_report_batch_item_failures_the_reported_bad_message_is_deleted_with_the_batch(aws, clock):
    config = lambda_poller.PollerConfig(report_batch_item_failures=False)
    poller, provider = make_poller(aws, clock, config=config)
    aws.sqs.send_message(QueueUrl=aws.orders.url, MessageBody="not json")
    orders.send_order(aws.sqs, aws.orders.url, ORDER)
    poller.run_until_idle(3_600)
    assert provider.charges_per_order()["PED-2026-084417"] == 1  # the invocation succeeded: charged once
    assert counts(aws)["visible"] == counts(aws)["in_flight"] == 0  # "not json" is gone…
    assert counts(aws, aws.orders.dlq_url)["visible"] == 0  # …and not in the DLQ


def test_function_timeout_deletes_nothing(aws, clock):
    config = lambda_poller.PollerConfig(function_timeout_seconds=60)
    poller, _ = make_poller(aws, clock, latency=90, config=config)
    orders.send_order(aws.sqs, aws.orders.url, ORDER)
    poller.run(100)
    assert "timed_out" in [row["event"] for row in poller.timeline]
    assert counts(aws)["in_flight"] == 1


def test_max_concurrency_bounds_the_invocations_in_flight(aws, clock):
    provider = gateway.PaymentGateway(clock, latency=gateway.LatencyProfile(baseline_seconds=10))
    config = lambda_poller.PollerConfig(batch_size=1, max_concurrency=3)
    poller, _ = make_poller(aws, clock, config=config, provider=provider)
    for number in range(9):
        orders.send_order(aws.sqs, aws.orders.url, orders.Order(orders.order_id(number), Decimal(1)))
    poller.run_until_idle(600)
    starts = sorted(row["seconds"] for row in poller.timeline if row["event"] == "received")
    assert starts == [0, 0, 0, 10, 10, 10, 20, 20, 20]
    assert len(provider.ledger) == 9


def test_two_consumers_overlap_in_virtual_time(aws, clock):
    poller, provider = make_poller(aws, clock, latency=150)
    orders.send_order(aws.sqs, aws.orders.url, ORDER)
    poller.run_until_idle(3_600)
    received = [(row["seconds"], row["consumer"]) for row in poller.timeline if row["event"] == "received"]
    assert received == [(0, "consumidor-1"), (121, "consumidor-2")]  # the second came while the first waited
    assert len(provider.ledger) == 2


def test_crash_plan_is_seeded_and_checks_its_steps():
    import random

    plans = [lambda_poller.CrashPlan(probability=0.3, rng=random.Random(7)) for _ in range(2)]
    outcomes = []
    for plan in plans:
        died = []
        for _ in range(50):
            try:
                plan.reached("after_charge")
                died.append(False)
            except lambda_poller.ConsumerCrash:
                died.append(True)
        outcomes.append(died)
    assert outcomes[0] == outcomes[1] and 5 < sum(outcomes[0]) < 25
    with pytest.raises(ValueError, match="unknown step"):
        lambda_poller.CrashPlan({"after_lunch": 1})


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"batch_size": 11}, "batch_size must be between 1 and 10"),
        ({"max_concurrency": 1}, r"max_concurrency must be between 2 and 1000 \(Lambda's range\); got 1"),
        ({"function_timeout_seconds": 901}, "function_timeout_seconds must be between 1 and 900"),
        ({"idle_poll_seconds": 0}, "idle_poll_seconds"),
    ],
)
def test_poller_settings_are_checked(settings, message):
    with pytest.raises(ValueError, match=message):
        lambda_poller.PollerConfig(**settings)


def test_the_function_timeout_cuts_the_invocation_where_it_waits(aws, clock):
    """Past the timeout nothing more happens: no later write, no delete, and the message comes back."""
    provider = gateway.PaymentGateway(clock, latency=gateway.LatencyProfile(baseline_seconds=90))
    config = lambda_poller.PollerConfig(function_timeout_seconds=60)
    poller, _ = make_poller(aws, clock, config=config, provider=provider)
    orders.send_order(aws.sqs, aws.orders.url, ORDER)
    poller.run(100)
    events = [(row["seconds"], row["event"]) for row in poller.timeline]
    assert (60, "timed_out") in events and "charged" not in [event for _, event in events]
    assert counts(aws)["in_flight"] == 1


def test_stopping_the_poller_mid_invocation_kills_it_and_the_next_run_starts_clean(aws, clock):
    poller, provider = make_poller(aws, clock, latency=60)
    orders.send_order(aws.sqs, aws.orders.url, ORDER)
    poller.run(30)  # stops while the first call is waiting for the gateway
    assert poller.running == 0 and not poller.in_flight
    assert [row["detail"] for row in poller.timeline if row["event"] == "crashed"] == ["poller_stopped"]
    poller.run_until_idle(3_600)
    assert counts(aws) == {"visible": 0, "in_flight": 0, "delayed": 0}
    assert len(provider.ledger) == 2  # the killed call had already charged: at least once, as always


def test_the_deploy_gate_refuses_a_producer_the_deployed_consumer_cannot_read() -> None:
    from decimal import Decimal

    from mercadofresco.lessons.dlq import incidents
    from mercadofresco.shop import handlers

    sample = incidents.version2_body("PED-2026-084417", Decimal("48.20"))
    assert handlers.producer_deploy_gate(sample, (1,)).startswith("refuse: ")
    assert handlers.producer_deploy_gate(sample, (1, 2)) == "deploy"
