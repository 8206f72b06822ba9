"""The shared breaker: one counter for every consumer, atomic, observable, never silent about its store."""

import threading
import time
from decimal import Decimal

import fakeredis
import pytest
import redis

from mercadofresco import alarms, orders
from mercadofresco.lessons.breaker import outage
from mercadofresco.models import alarm_evaluation, gateway
from mercadofresco.patterns import breaker, breaker_store
from mercadofresco.patterns.breaker import State

POLICY = breaker.BreakerPolicy(failure_threshold=3, open_seconds=30, half_open_max_calls=2)


def shared(server=None, policy=POLICY, **options):
    return breaker_store.SharedBreaker(breaker_store.embedded_store(server), policy, **options)


def test_consumers_on_one_server_share_the_count():
    server = fakeredis.FakeServer()
    a, b, c = (shared(server) for _ in range(3))
    for one in (a, b, c):
        assert one.allow(0)
        one.record_failure(0)
    assert a.state_at(0) is State.OPEN and c.state_at(1) is State.OPEN
    assert not b.allow(1)
    assert a.key == "mercadofresco:breaker:pasarela-pagos"


def test_half_open_lets_only_its_trial_calls_through_across_consumers():
    server = fakeredis.FakeServer()
    consumers = [shared(server) for _ in range(5)]
    for one in consumers[:3]:
        one.record_failure(0)
    assert [one.allow(29) for one in consumers] == [False] * 5
    assert [one.allow(30) for one in consumers] == [True, True, False, False, False]
    consumers[0].record_success(31)
    assert all(one.allow(31) for one in consumers)


def test_a_crashed_trial_holder_does_not_keep_the_shared_breaker_half_open():
    server = fakeredis.FakeServer()
    policy = breaker.BreakerPolicy(failure_threshold=1, open_seconds=30)
    crashed, survivor = shared(server, policy), shared(server, policy)
    crashed.record_failure(0)
    assert crashed.allow(30)  # claims the trial, then dies without reporting
    assert not survivor.allow(45)
    assert survivor.load().trial_started_at == 30
    assert survivor.allow(60)  # the record is far from expiring (an hour): the trial's own expiry frees it
    survivor.record_success(61)
    assert survivor.state_at(61) is State.CLOSED


def test_the_record_round_trips_through_the_store():
    record = breaker.BreakerState(State.HALF_OPEN, 4, 10.5, trial_calls=1, trial_started_at=40.25)
    assert breaker_store.decode(breaker_store.encode(record)) == record


def test_transitions_are_atomic_under_threads():
    server = fakeredis.FakeServer()
    policy = breaker.BreakerPolicy(failure_threshold=10_000)

    def work():
        one = shared(server, policy)
        for _ in range(50):
            one.record_failure(0)

    threads = [threading.Thread(target=work) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert shared(server, policy).load().consecutive_failures == 16 * 50


def test_store_errors_are_raised_unless_a_degraded_mode_is_chosen():
    dead = breaker_store.connect("redis://127.0.0.1:1/0")  # nothing listens there
    started = time.perf_counter()
    with pytest.raises(breaker_store.BreakerStoreError):
        breaker_store.SharedBreaker(dead, POLICY).allow(0)
    lenient = breaker_store.SharedBreaker(dead, POLICY, if_store_fails="allow")
    assert lenient.allow(0) and lenient.store_errors == 1
    assert not breaker_store.SharedBreaker(dead, POLICY, if_store_fails="deny").allow(0)
    with pytest.raises(ValueError, match="if_store_fails"):
        breaker_store.SharedBreaker(dead, POLICY, if_store_fails="ignore")
    assert time.perf_counter() - started < 2  # a dead store fails fast (redis-py's default retries take 4.6 s a call)


def test_an_idle_record_expires_on_the_virtual_clock(clock):
    one = shared(forget_after_seconds=600)
    one.record_failure(clock.timestamp())
    assert one.load().consecutive_failures == 1
    clock.advance(601)
    assert one.load() == breaker.BreakerState()


def test_opening_publishes_a_metric_and_raises_the_alarm(aws, clock):
    inbox = alarms.subscribe_inbox(aws.client("sns"), aws.sqs, aws.alerts_topic_arn)
    alarm = alarm_evaluation.OpenAlarm(
        aws.client("cloudwatch"), aws.client("sns"), aws.alerts_topic_arn, "pasarela-pagos"
    )
    one = shared(alarm=alarm)
    assert alarms.state_of(aws.client("cloudwatch"), alarm.rule.name) == "OK"  # moto starts alarms at OK
    for _ in range(3):
        one.record_failure(clock.timestamp())
    assert alarm.openings(clock.now()) == 1
    assert alarms.state_of(aws.client("cloudwatch"), alarm.rule.name) == "ALARM"
    notes = alarms.read_inbox(aws.sqs, inbox)
    assert len(notes) == 1 and notes[0].startswith("ALARM: mercadofresco-breaker-pasarela-pagos-abierto")
    clock.advance(120)
    assert alarm.evaluate(clock.now()).state == "OK"


def test_shared_breaker_stops_the_gateway_after_threshold_failures_per_process_after_threshold_times_consumers(clock):
    config = outage.OutageConfig(20, breaker.BreakerPolicy(20, open_seconds=60), down_seconds=60, run_seconds=60)
    per_process = outage.run_outage(clock, "per_process", config)
    shared_run = outage.run_outage(clock, "shared", config)
    # the lesson: 20 concurrent consumers, each with its own counter, take 20 failures each
    assert per_process.calls_while_down() == 20 * 20
    assert shared_run.calls_while_down() == 20
    assert shared_run.transitions[0][1:] == (State.CLOSED, State.OPEN)


def test_the_outage_holds_a_breaker_policy_and_the_panel_builds_it_from_the_widgets():
    assert outage.OutageConfig().breaker == breaker.BreakerPolicy()  # the lesson's 20 failures, 30 s open
    assert outage.panel_config(5, 60, 10) == outage.OutageConfig(10, breaker.BreakerPolicy(5, 60))


def test_erp_notice_is_deferred_instead_of_spending_a_receive_per_visibility_timeout(aws, clock):
    naive = outage.erp_notice_during_outage(aws, clock, defer=False)
    deferred = outage.erp_notice_during_outage(aws, clock, defer=True)
    assert naive["delivered"] and deferred["delivered"]
    assert deferred["erp_calls"] == 1 and naive["erp_calls"] > 10
    assert deferred["receives"] <= 4 < naive["receives"]


def test_a_failure_rate_opens_what_consecutive_failures_never_would():
    rate = breaker.BreakerPolicy(failure_threshold=20, failure_rate=0.5, window_calls=10)
    for guard in (breaker.CircuitBreaker(rate), shared(policy=rate)):
        for call in range(9):  # fail, succeed, fail, ...: never two failures in a row
            assert guard.allow(call)
            (guard.record_failure if call % 2 == 0 else guard.record_success)(call)
        assert guard.state_at(9) is State.CLOSED
        guard.allow(9)
        guard.record_success(9)  # the tenth call completes a window with 5 failures out of 10
        assert guard.state_at(9) is State.OPEN
    healthy = breaker.CircuitBreaker(rate)
    for call in range(30):  # one failure in five: each window is judged and restarted
        healthy.record_failure(call) if call % 5 == 0 else healthy.record_success(call)
    assert healthy.state_at(30) is State.CLOSED and healthy.state.window_calls == 0
    with pytest.raises(ValueError, match="failure_rate"):
        breaker.BreakerPolicy(failure_rate=0)


def test_charge_or_refuse_does_not_count_a_declined_card_against_the_gateway(clock):
    provider = gateway.PaymentGateway(clock, declined_orders={f"PED-2026-{n:06d}" for n in range(5)})
    client = gateway.GatewayClient(provider)
    guard = breaker.CircuitBreaker(breaker.BreakerPolicy(failure_threshold=3))
    answers = [
        outage.charge_or_refuse(guard, client, orders.Order(f"PED-2026-{n:06d}", Decimal("48.20")), clock.timestamp())
        for n in range(5)
    ]
    assert [a["mensaje"] for a in answers] == ["CardDeclinedError"] * 5  # five 402s, every one reached the gateway
    assert guard.state_at(clock.timestamp()) is State.CLOSED and provider.calls == 5


def test_charge_or_refuse_counts_an_unavailable_gateway_and_then_refuses(clock):
    provider = gateway.PaymentGateway(clock)
    provider.fail_next(gateway.Fault.UNAVAILABLE, times=3)
    client = gateway.GatewayClient(provider)
    guard = breaker.CircuitBreaker(breaker.BreakerPolicy(failure_threshold=3))
    order = orders.Order("PED-2026-084417", Decimal("48.20"))
    answers = [outage.charge_or_refuse(guard, client, order, clock.timestamp())["mensaje"] for _ in range(4)]
    assert answers[:3] == ["GatewayUnavailableError"] * 3
    assert answers[3] == outage.CUSTOMER_MESSAGE and provider.calls == 3
    assert provider.ledger == []


def test_a_write_that_never_commits_gives_up_with_a_contention_error(monkeypatch):
    """The guard against livelock can fire: every transaction loses to another consumer's write."""

    def always_loses(self, *args, **kwargs):
        raise redis.WatchError("another consumer committed first")

    monkeypatch.setattr(breaker_store, "MAX_WRITE_ATTEMPTS", 5)
    monkeypatch.setattr(redis.client.Pipeline, "execute", always_loses)
    one = shared(fakeredis.FakeServer(), breaker.BreakerPolicy(failure_threshold=3))
    with pytest.raises(breaker_store.BreakerContentionError, match="5 times in a row"):
        one.record_failure(0)
