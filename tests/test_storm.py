"""The retry storm: the eight steps happen without defences, and the defences change the outcome."""

import pytest

from mercadofresco import storm

CONFIG = storm.StormConfig()


@pytest.fixture(scope="module")
def undefended():
    return storm.run_storm(CONFIG, storm.Defences(), seed=0)


def test_without_defences_the_storm_happens(undefended):
    assert max(row["pollers"] for row in undefended.rows) == 60  # step 3: Lambda scales out
    assert len(undefended.collapses) >= 2  # step 6, then step 8: knocked over again on the way back
    assert undefended.in_dlq > 500  # step 7: legitimate orders in the DLQ
    assert undefended.gateway_calls > 2 * undefended.orders  # step 5: retries multiply the load


def test_all_four_defences_keep_orders_out_of_the_dlq(undefended):
    defended = storm.run_storm(CONFIG, storm.ALL_DEFENCES, seed=0)
    assert defended.in_dlq < undefended.in_dlq
    assert defended.in_dlq == 0
    assert defended.collapses == []


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_jitter_alone_flattens_the_recovery_peak(seed):
    synchronised = storm.run_storm(CONFIG, storm.Defences(), seed=seed)
    jittered = storm.run_storm(CONFIG, storm.Defences(jitter=True), seed=seed)
    assert jittered.recovery_peak < 0.8 * synchronised.recovery_peak


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
    with pytest.raises(ValueError, match="start_pollers <= max_pollers"):
        storm.StormConfig(start_pollers=80)
