"""The retry storm: the eight steps happen without defences, and the defences change the outcome."""

import random

import pytest
import simpy

from mercadofresco.patterns import backoff, breaker, retry
from mercadofresco.sims import storm

CONFIG = storm.StormConfig()


@pytest.fixture(scope="module")
def undefended():
    return storm.run_storm(CONFIG, storm.Defences(), seed=0)


def test_without_defences_the_storm_happens(undefended):
    assert max(row.pollers for row in undefended.rows) == 60  # step 3: Lambda scales out
    assert len(undefended.collapses) >= 2  # step 6, then step 8: knocked over again on the way back
    assert undefended.in_dlq > 500  # step 7: legitimate orders in the DLQ
    assert undefended.gateway_calls > 2 * undefended.orders  # step 5: retries multiply the load


def test_all_four_defences_keep_orders_out_of_the_dlq(undefended):
    defended = storm.run_storm(CONFIG, storm.ALL_DEFENCES, seed=0)
    assert defended.in_dlq < undefended.in_dlq
    assert defended.in_dlq == 0
    assert defended.collapses == []


def test_jitter_alone_flattens_the_recovery_peak():
    seeds = range(5)
    synchronised = [storm.run_storm(CONFIG, storm.Defences(), seed=seed).recovery_peak for seed in seeds]
    jittered = [storm.run_storm(CONFIG, storm.Defences(jitter=True), seed=seed).recovery_peak for seed in seeds]
    assert all(j < s for j, s in zip(jittered, synchronised, strict=True))
    # Jitter spreads the SDK's retries; the pollers' first attempts and the redeliveries still arrive together.
    assert sum(jittered) < 0.8 * sum(synchronised)


def test_budget_alone_cuts_the_retries(undefended):
    budgeted = storm.run_storm(CONFIG, storm.Defences(retry_budget=True), seed=0)
    assert budgeted.gateway_calls < 0.6 * undefended.gateway_calls


def test_breaker_alone_keeps_messages_in_the_queue_instead_of_the_dlq(undefended):
    guarded = storm.run_storm(CONFIG, storm.Defences(circuit_breaker=True), seed=0)
    assert guarded.in_dlq < undefended.in_dlq / 10


def test_same_seed_same_storm(undefended):
    assert storm.run_storm(CONFIG, storm.Defences(), seed=0).summary() == undefended.summary()


def test_labels_and_settings():
    assert storm.Defences().label() == "none"
    assert storm.Defences(jitter=True, circuit_breaker=True).label() == "jitter+breaker"
    with pytest.raises(ValueError, match=r"start_pollers must be between 1 and 60 \(at most max_pollers\); got 80"):
        storm.StormConfig(start_pollers=80)
    with pytest.raises(ValueError, match="sdk_policy must back off exponentially"):
        storm.StormConfig(sdk_policy=retry.RetryPolicy(backoff.FullJitter(), 3))


def test_every_defence_sees_the_same_orders():
    runs = [storm.run_storm(CONFIG, defences, seed=0) for defences in (storm.Defences(), storm.Defences(jitter=True))]
    assert runs[0].orders == runs[1].orders


def test_jitter_only_changes_the_sdk_backoff_not_the_redelivery():
    sdk = CONFIG.sdk_policy
    jittered = retry.RetryPolicy(backoff.FullJitter(sdk.backoff.base, sdk.backoff.cap), sdk.max_attempts)
    assert storm.retry_policy(CONFIG, storm.Defences(jitter=True)) == jittered
    assert storm.retry_policy(CONFIG, storm.Defences()) is CONFIG.sdk_policy
    env = simpy.Environment()
    shared = _shared(env, guard=None)
    message = storm.Message(1, receive_count=1)
    env.process(storm._reappear(shared, message))
    env.run(until=CONFIG.visibility_timeout_seconds - 0.001)
    assert not shared.ready
    env.run(until=CONFIG.visibility_timeout_seconds + 0.001)  # exactly 30 s later, for every message
    assert list(shared.ready) == [message]


def test_a_poller_never_claims_a_half_open_trial_for_a_message_bound_for_the_dlq():
    env = simpy.Environment()
    guard = breaker.CircuitBreaker(breaker.BreakerPolicy(failure_threshold=1, open_seconds=30))
    guard.record_failure(0)
    shared = _shared(env, guard)
    shared.ready.extend([storm.Message(1, receive_count=CONFIG.max_receive_count), storm.Message(2)])
    env.process(storm._poller(shared))
    env.run(until=40)
    assert [m.pedido for m in shared.dlq] == [1]  # moved by the receive, without a trial
    assert shared.charged == 1 and sum(shared.gateway.calls.values()) == 1  # the trial was the charge of order 2
    assert guard.state_at(40) is breaker.State.CLOSED


def test_the_breaker_alone_lets_the_gateway_serve_again_after_the_slow_period(undefended):
    guarded = storm.run_storm(CONFIG, storm.Defences(circuit_breaker=True), seed=0)
    after = [row for row in guarded.rows if row.seconds > CONFIG.degrade_until + 60]
    assert all(row.calls_per_second > 5 for row in after)
    assert guarded.charged > 0.99 * guarded.orders


def _shared(env, guard):
    policy = storm.retry_policy(CONFIG, storm.Defences())
    retrier = retry.Retrier(policy, random.Random(0))
    return storm.StormState(env, CONFIG, storm.StormGateway(env, CONFIG), retrier, guard)
