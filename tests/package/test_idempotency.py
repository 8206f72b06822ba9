import random
from collections import Counter
from decimal import Decimal

import pytest

from mercadofresco import orders, queues
from mercadofresco.lessons import keys_and_table
from mercadofresco.models import gateway, lambda_poller
from mercadofresco.patterns import idempotency
from mercadofresco.patterns.idempotency import Estado, IdempotencyStore
from mercadofresco.shop import handlers

CLAVE = "cobro:PED-2026-084417"


@pytest.fixture
def store(aws, clock):
    return IdempotencyStore(aws.dynamodb, clock)


def test_keys_name_the_operation_and_the_thing():
    assert idempotency.charge_key("PED-2026-084417") == "cobro:PED-2026-084417"
    assert idempotency.email_key("PED-2026-084417") == "correo-confirmacion:PED-2026-084417"
    assert idempotency.reservation_key("PED-2026-084417", "3401") == "reserva:PED-2026-084417:3401"
    a = idempotency.content_key("cobro", {"pedido_id": "X", "importe": "48.20"})
    b = idempotency.content_key("cobro", {"importe": "48.20", "pedido_id": "X"})
    assert a == b and a.startswith("cobro:") and a != idempotency.content_key("cobro", {"pedido_id": "Y"})


def test_item_shape_and_states(aws, store, clock):
    assert store.acquire(CLAVE) is None
    item = aws.dynamodb.get_item(TableName="mercadofresco-idempotencia", Key={"clave": {"S": CLAVE}})["Item"]
    now = int(clock.timestamp())
    assert item["estado"] == {"S": "EN_CURSO"}
    assert int(item["expira_en"]["N"]) == now + 24 * 3600
    assert int(item["caduca_bloqueo"]["N"]) == now + 60
    store.complete(CLAVE, {"referencia_cobro": "ch_00001"})
    record = store.get(CLAVE)
    assert record.estado is Estado.COMPLETADO and record.resultado == {"referencia_cobro": "ch_00001"}


def test_acquire_returns_whoever_stopped_us(store, clock):
    assert store.acquire(CLAVE) is None
    held = store.acquire(CLAVE)
    assert held.estado is Estado.EN_CURSO
    clock.advance(61)  # the lock ran out: a new consumer may take over
    assert store.acquire(CLAVE) is None
    store.complete(CLAVE, {"referencia_cobro": "ch_00001"})
    assert store.acquire(CLAVE).estado is Estado.COMPLETADO


def test_expired_record_is_free_even_though_ttl_never_deleted_it(store, clock):
    store.acquire(CLAVE)
    store.complete(CLAVE, {"referencia_cobro": "ch_00001"})
    clock.advance(24 * 3600 + 1)
    assert store.get(CLAVE) is not None  # moto (like DynamoDB, for a while) still has it
    assert store.acquire(CLAVE) is None  # but the code treats it as gone


def test_run_once_returns_the_stored_result(store, clock):
    provider = gateway.PaymentGateway(clock)

    def charge():
        return {"referencia_cobro": provider.charge("PED-2026-084417", Decimal("48.20")).referencia_cobro}

    first = idempotency.run_once(store, CLAVE, charge, gateway.is_permanent_failure)
    second = idempotency.run_once(store, CLAVE, charge, gateway.is_permanent_failure)
    assert first == second == {"referencia_cobro": "ch_00001"}
    assert len(provider.ledger) == 1


def test_declined_card_is_kept_fallido_and_not_retried_but_503_is(store, clock):
    provider = gateway.PaymentGateway(clock, declined_orders={"PED-2026-084417"})
    attempts = []

    def charge():
        attempts.append(1)
        return {"referencia_cobro": provider.charge("PED-2026-084417", Decimal("48.20")).referencia_cobro}

    with pytest.raises(gateway.CardDeclinedError):
        idempotency.run_once(store, CLAVE, charge, gateway.is_permanent_failure)
    with pytest.raises(idempotency.AlreadyFailedError) as info:
        idempotency.run_once(store, CLAVE, charge, gateway.is_permanent_failure)
    assert len(attempts) == 1 and info.value.resultado["error"] == "CardDeclinedError"
    assert store.get(CLAVE).estado is Estado.FALLIDO

    other = "cobro:PED-2026-084418"
    provider.fail_next(gateway.Fault.UNAVAILABLE)
    with pytest.raises(gateway.GatewayUnavailableError):
        idempotency.run_once(
            store,
            other,
            lambda: {"ok": provider.charge("PED-2026-084418", Decimal(1)).pedido_id},
            gateway.is_permanent_failure,
        )
    assert store.get(other) is None  # released: the retry may run at once
    assert idempotency.run_once(
        store,
        other,
        lambda: {"ok": provider.charge("PED-2026-084418", Decimal(1)).pedido_id},
        gateway.is_permanent_failure,
    ) == {"ok": "PED-2026-084418"}


def test_store_errors_are_wrapped_once(aws, clock):
    broken = IdempotencyStore(aws.dynamodb, clock, table_name="no-such-table")
    with pytest.raises(idempotency.StoreError, match="acquire cobro:PED") as info:
        broken.acquire(CLAVE)
    assert info.value.__cause__ is not None


def test_lock_must_fit_inside_the_ttl(aws, clock):
    with pytest.raises(ValueError, match="lock_seconds must be at least 1 and below ttl_seconds"):
        IdempotencyStore(aws.dynamodb, clock, ttl_seconds=60, lock_seconds=60)


# -- the race and the lesson's parallel test ------------------------------------------------------
def test_fifty_parallel_duplicates_one_charge_fifty_identical_answers(aws, clock):
    result = keys_and_table.parallel_duplicates(aws, clock, copies=50)
    assert result == {"copies": 50, "charges": 1, "backed_off_in_round_1": 49, "answers": 50, "distinct_answers": 1}


def test_the_same_race_double_charges_with_two_states(aws, clock):
    """Proof the race test can fail: the wrong design loses it."""
    assert keys_and_table.race(aws, clock, "two states")["charges"] == 2
    three = keys_and_table.race(aws, clock, "three states")
    assert three["charges"] == 1 and three["outcomes"] == ["backed off (EN_CURSO)", "charged ch_00001"]


def test_lock_without_expiry_leaves_the_order_uncharged(aws, clock):
    stuck = keys_and_table.consumer_dies_holding_the_lock(aws, clock, lock_expires=False)
    assert stuck["charges"] == 0 and stuck["estado"] == "EN_CURSO" and stuck["in_dlq"] == 1
    fine = keys_and_table.consumer_dies_holding_the_lock(aws, clock, lock_expires=True)
    assert fine["charges"] == 1 and fine["estado"] == "COMPLETADO" and fine["in_dlq"] == 0


@pytest.mark.parametrize("key", ["MessageId", "consumer UUID", "cobro:{pedido_id}", "content hash"])
def test_only_domain_keys_survive_a_producer_resend(aws, clock, key):
    expected = {"MessageId": 2, "consumer UUID": 3, "cobro:{pedido_id}": 1, "content hash": 1}
    assert keys_and_table.charges_by_key(aws, clock, key)["charges"] == expected[key]


@pytest.mark.parametrize("step", ["received", "after_lock", "after_charge", "after_complete", "before_delete"])
def test_crash_at_each_step_ends_with_one_charge(aws, clock, step):
    result = keys_and_table.crash_at_step(aws, clock, step, gateway_key=True)
    assert (result["charges"], result["estado"], result["left_in_queue"]) == (1, "COMPLETADO", 0)
    # only a death between charging and recording makes the redelivery call the gateway again
    assert result["gateway calls"] == (2 if step == "after_charge" else 1)


def test_without_the_gateway_key_the_gap_after_charging_double_charges(aws, clock):
    assert keys_and_table.crash_at_step(aws, clock, "after_charge", gateway_key=False)["charges"] == 2


def test_a_lock_shorter_than_a_slow_call_lets_a_second_consumer_charge(aws, clock):
    """The poller runs each write at its own virtual instant: a 60 s lock expires under a 150 s call."""
    results = {}
    for lock in (60, 300):
        keys_and_table.empty_table(aws)
        aws.reset_orders_queue(visibility_timeout_seconds=120)
        provider = gateway.PaymentGateway(clock, latency=gateway.LatencyProfile(baseline_seconds=150))
        client = gateway.GatewayClient(provider, read_timeout_seconds=180, send_idempotency_key=False)
        handler = handlers.IdempotentChargeOrders(client, IdempotencyStore(aws.dynamodb, clock, lock_seconds=lock))
        poller = lambda_poller.Poller(aws.sqs, aws.orders.url, handler, clock)
        orders.send_order(aws.sqs, aws.orders.url, orders.Order("PED-2026-084417", Decimal("48.20")))
        poller.run_until_idle(3_600)
        results[lock] = len(provider.ledger)
    assert results == {60: 2, 300: 1}


def _deliver_until_done(handler, message, clock, crashes, visibility_seconds=120, max_receives=50):
    """The queue's job, played by the test: deliver the same message until the consumer deletes it."""
    for count in range(1, max_receives + 1):
        poller = lambda_poller.Poller(None, "", handler, clock, crashes=crashes)
        invocation = lambda_poller.Invocation(poller, "consumidor-1", count)
        record = {
            "messageId": message["MessageId"],
            "receiptHandle": "",
            "body": message["Body"],
            "attributes": {"ApproximateReceiveCount": str(count)},
        }
        try:
            crashes.reached("received")
            response = handler({"Records": [record]}, invocation)
            done = not response["batchItemFailures"]
            if done:
                crashes.reached("before_delete")
                return count
        except lambda_poller.ConsumerCrash:
            pass
        clock.advance(visibility_seconds)
    raise AssertionError(f"{message['Body']} not done after {max_receives} receives")


def test_a_thousand_orders_with_seeded_crashes_each_charged_exactly_once(aws, clock):
    provider = gateway.PaymentGateway(clock)
    handler = handlers.IdempotentChargeOrders(gateway.GatewayClient(provider), IdempotencyStore(aws.dynamodb, clock))
    crashes = lambda_poller.CrashPlan(probability=0.1, rng=random.Random(2026))
    for number in range(1_000):
        body = orders.order_body(orders.Order(orders.order_id(number), Decimal("10.00")))
        _deliver_until_done(handler, {"MessageId": f"m-{number}", "Body": body}, clock, crashes)
    assert Counter(provider.charges_per_order().values()) == {1: 1_000}
    assert set(crashes.crashed_at) == set(lambda_poller.STEPS)  # every step was hit
    assert len(crashes.crashed_at) > 300
    # The table, not only the gateway's key, did the work: a redelivery calls the gateway again only when the
    # consumer died between charging and recording COMPLETADO (the one gap the key covers).
    assert provider.calls == 1_000 + crashes.crashed_at.count("after_charge")


def test_crashes_through_the_real_queue(aws, clock):
    aws.reset_orders_queue(max_receive_count=10)
    provider = gateway.PaymentGateway(clock)
    handler = handlers.IdempotentChargeOrders(gateway.GatewayClient(provider), IdempotencyStore(aws.dynamodb, clock))
    crashes = lambda_poller.CrashPlan(probability=0.08, rng=random.Random(7))
    config = lambda_poller.PollerConfig(max_concurrency=4, max_idle_poll_seconds=20)
    poller = lambda_poller.Poller(aws.sqs, aws.orders.url, handler, clock, config, crashes)
    for number in range(100):
        orders.send_order(aws.sqs, aws.orders.url, orders.Order(orders.order_id(number), Decimal("10.00")))
    poller.run_until_idle(24 * 3600)
    assert Counter(provider.charges_per_order().values()) == {1: 100}
    assert queues.queue_counts(aws.sqs, aws.orders.dlq_url)["visible"] == 0
    assert len(crashes.crashed_at) > 10
    assert provider.calls == 100 + crashes.crashed_at.count("after_charge")
