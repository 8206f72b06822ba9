"""The contention model and the outage recovery: jitter cuts calls and spreads the recovery."""

import pytest

from mercadofresco.patterns import backoff, retry
from mercadofresco.sims import contention, recovery


def test_contention_every_client_writes_once_in_the_end():
    config = contention.ContentionConfig(clients=20)
    result = contention.contention(backoff.FullJitter(5, 2000), config, seed=1)
    assert result["won"] == 20  # every client's write landed exactly once
    assert result["calls"] > 20  # plus the refused ones: 20 clients racing one version do conflict
    assert result["time_ms"] > 0


def test_contention_ranking_matches_brooker():
    rows = contention.contention_table(contention.brooker_backoffs(), [50], runs=10)
    calls = {row["strategy"]: row["calls"] for row in rows}
    time_ms = {row["strategy"]: row["time_ms"] for row in rows}
    assert calls["full"] < calls["exponential"] < calls["none"]
    assert calls["equal"] < calls["exponential"]
    assert time_ms["full"] < time_ms["exponential"] / 4  # exponential without jitter waits in lockstep


def test_contention_is_deterministic_for_a_seed():
    config = contention.ContentionConfig(clients=30)
    assert contention.contention(backoff.FullJitter(5, 2000), config, 4) == contention.contention(
        backoff.FullJitter(5, 2000), config, 4
    )


def test_contention_settings_are_checked():
    with pytest.raises(ValueError, match="clients must be between 1 and 1000"):
        contention.ContentionConfig(clients=0)


def _outage(name: str) -> recovery.OutageRun:
    policy = retry.RetryPolicy(backoff.strategy(name, base=1.0, cap=60.0), max_attempts=10)
    return recovery.outage(policy, recovery.OutageConfig(), seed=0)


def test_exponential_without_jitter_arrives_all_at_once_after_the_outage():
    run = _outage("exponential")
    assert run.peak_after_outage == 450  # every execution retries in the same second
    assert sum(run.arrivals[:30]) == 450 * 4  # four synchronised waves during the outage


def test_full_jitter_flattens_the_recovery_peak():
    jittered, synchronised = _outage("full"), _outage("exponential")
    assert jittered.peak_after_outage < synchronised.peak_after_outage / 5
    assert jittered.succeeded == synchronised.succeeded == 450


def test_no_backoff_spends_every_attempt_during_the_outage():
    run = _outage("none")
    assert run.calls == 450 * 10
    assert run.succeeded == 0


def test_budget_caps_the_retries_in_the_outage():
    policy = retry.RetryPolicy(backoff.FullJitter(1.0, 60.0), max_attempts=10)
    run = recovery.outage(policy, recovery.OutageConfig(), seed=0, budget_ratio=0.1)
    assert run.calls <= 450 + 10 + 45  # first calls + a full bucket + 10 % of the first calls
    assert run.gave_up > 0  # the rest fail fast and are left to the next layer (the queue)
