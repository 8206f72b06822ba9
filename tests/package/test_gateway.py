from decimal import Decimal

import pytest

from mercadofresco.clock import Stopwatch
from mercadofresco.models import gateway

AMOUNT = Decimal("48.20")


@pytest.fixture
def provider(clock):
    return gateway.PaymentGateway(clock)


def test_same_idempotency_key_returns_the_same_charge(provider):
    first = provider.charge("PED-2026-084417", AMOUNT, idempotency_key="cobro:PED-2026-084417")
    second = provider.charge("PED-2026-084417", AMOUNT, idempotency_key="cobro:PED-2026-084417")
    assert second == first
    assert len(provider.ledger) == 1


def test_without_a_key_every_call_charges_again(provider):
    first = provider.charge("PED-2026-084417", AMOUNT)
    second = provider.charge("PED-2026-084417", AMOUNT)
    assert first.referencia_cobro != second.referencia_cobro
    assert provider.charges_per_order() == {"PED-2026-084417": 2}


def test_different_keys_are_different_charges(provider):
    provider.charge("PED-2026-084417", AMOUNT, idempotency_key="cobro:PED-2026-084417")
    provider.charge("PED-2026-084418", AMOUNT, idempotency_key="cobro:PED-2026-084418")
    assert len(provider.ledger) == 2


def test_latency_follows_the_virtual_clock(clock):
    provider = gateway.PaymentGateway(clock, latency=gateway.spike_at(clock.now(), minutes=10, latency_seconds=150))
    provider.charge("PED-2026-084417", AMOUNT, read_timeout_seconds=180)
    assert clock.seconds_since_start() == 150  # the caller waited 150 s of virtual time
    clock.advance(600)
    provider.charge("PED-2026-084418", AMOUNT)
    assert clock.seconds_since_start() == pytest.approx(750.24)  # spike over: 240 ms again


def test_read_timeout_leaves_a_charge_the_caller_never_saw(clock):
    provider = gateway.PaymentGateway(clock, latency=gateway.LatencyProfile(baseline_seconds=150))
    with pytest.raises(gateway.GatewayTimeoutError) as info:
        provider.charge("PED-2026-084417", AMOUNT, read_timeout_seconds=30)
    assert info.value.waited_seconds == 30
    assert clock.seconds_since_start() == 30
    assert len(provider.ledger) == 1


def test_lost_response_after_the_charge(provider):
    provider.fail_next(gateway.Fault.RESPONSE_LOST)
    with pytest.raises(gateway.ResponseLostError):
        provider.charge("PED-2026-084417", AMOUNT)
    assert len(provider.ledger) == 1


def test_503_and_429_charge_nothing(provider):
    provider.fail_next(gateway.Fault.UNAVAILABLE)
    provider.fail_next(gateway.Fault.THROTTLED, retry_after_seconds=7)
    with pytest.raises(gateway.GatewayUnavailableError) as unavailable:
        provider.charge("PED-2026-084417", AMOUNT)
    with pytest.raises(gateway.ThrottledError) as throttled:
        provider.charge("PED-2026-084417", AMOUNT)
    assert (unavailable.value.status, throttled.value.status) == (503, 429)
    assert throttled.value.retry_after_seconds == 7
    assert provider.ledger == []
    assert provider.charge("PED-2026-084417", AMOUNT).pedido_id == "PED-2026-084417"


def test_an_outage_fails_every_call_past_any_plan_of_faults_until_it_ends(provider):
    provider.fail_next(gateway.Fault.THROTTLED)
    provider.fail_every_call(gateway.Fault.UNAVAILABLE)
    with pytest.raises(gateway.ThrottledError):
        provider.charge("PED-2026-084417", AMOUNT)
    for _ in range(gateway.MAX_FAULTS + 1):  # more calls than fail_next may plan
        with pytest.raises(gateway.GatewayUnavailableError):
            provider.charge("PED-2026-084417", AMOUNT)
    provider.recover()
    provider.charge("PED-2026-084417", AMOUNT)
    assert len(provider.ledger) == 1


def test_declined_card_is_402_and_charges_nothing(clock):
    provider = gateway.PaymentGateway(clock, declined_orders={"PED-2026-084417"})
    with pytest.raises(gateway.CardDeclinedError) as info:
        provider.charge("PED-2026-084417", AMOUNT)
    assert info.value.status == 402
    assert provider.ledger == []


def test_stopwatch_waits_without_moving_the_shared_clock(clock):
    provider = gateway.PaymentGateway(clock, latency=gateway.LatencyProfile(baseline_seconds=150))
    watch = Stopwatch(clock)
    provider.charge("PED-2026-084417", AMOUNT, read_timeout_seconds=180, waiter=watch)
    assert watch.elapsed_seconds == 150
    assert clock.seconds_since_start() == 0


def test_sdk_retries_a_timeout_and_charges_each_time_without_the_key(clock):
    provider = gateway.PaymentGateway(clock, latency=gateway.LatencyProfile(baseline_seconds=200))
    client = gateway.GatewayClient(provider, read_timeout_seconds=180, max_attempts=5, send_idempotency_key=False)
    with pytest.raises(gateway.GatewayTimeoutError):
        client.charge("PED-2026-084417", AMOUNT, "cobro:PED-2026-084417")
    assert client.attempts == 5
    assert provider.charges_per_order() == {"PED-2026-084417": 5}


def test_sdk_retries_with_the_key_charge_once(clock):
    provider = gateway.PaymentGateway(clock)
    provider.fail_next(gateway.Fault.RESPONSE_LOST, times=4)
    client = gateway.GatewayClient(provider, max_attempts=5, send_idempotency_key=True)
    charge = client.charge("PED-2026-084417", AMOUNT, "cobro:PED-2026-084417")
    assert client.attempts == 5
    assert provider.ledger == [charge]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"read_timeout_seconds": 0}, "read_timeout_seconds must be positive"),
        ({"max_attempts": 0}, "max_attempts must be between 1 and 20; got 0"),
    ],
)
def test_client_settings_are_checked(provider, settings, message):
    with pytest.raises(ValueError, match=message):
        gateway.GatewayClient(provider, **settings)


def test_a_number_for_latency_is_refused_when_the_gateway_is_built(clock):
    """latency=150 used to pass silently and fail later inside the consumer, sending the order to the DLQ."""
    with pytest.raises(TypeError, match=r"latency must be a LatencyProfile, not int 150: use gateway.spike_at"):
        gateway.PaymentGateway(clock, latency=150)
