import pytest

from mercadofresco.patterns import breaker
from mercadofresco.patterns.breaker import State

POLICY = breaker.BreakerPolicy(failure_threshold=3, open_seconds=30, half_open_max_calls=2)


def fail(b, now, times):
    for _ in range(times):
        assert b.allow(now)
        b.record_failure(now)


def test_opens_after_threshold_consecutive_failures():
    b = breaker.CircuitBreaker(POLICY)
    fail(b, 0, 2)
    assert b.state_at(0) is State.CLOSED
    fail(b, 1, 1)
    assert b.state_at(1) is State.OPEN
    assert not b.allow(10)
    with pytest.raises(breaker.CircuitOpenError) as info:
        b.check(10)
    assert info.value.retry_after_seconds == pytest.approx(21)


def test_a_success_resets_the_count():
    b = breaker.CircuitBreaker(POLICY)
    fail(b, 0, 2)
    b.record_success(0)
    fail(b, 0, 2)
    assert b.state_at(0) is State.CLOSED


def test_half_open_lets_only_its_trial_calls_through():
    b = breaker.CircuitBreaker(POLICY)
    fail(b, 0, 3)
    assert b.state_at(29.9) is State.OPEN
    assert b.state_at(30) is State.HALF_OPEN
    allowed = [b.allow(30) for _ in range(5)]
    assert allowed == [True, True, False, False, False]


def test_trial_success_closes_trial_failure_reopens():
    b = breaker.CircuitBreaker(POLICY)
    fail(b, 0, 3)
    assert b.allow(30)
    b.record_failure(31)
    assert b.state_at(31) is State.OPEN and b.state_at(60) is State.OPEN and b.state_at(61) is State.HALF_OPEN
    assert b.allow(61)
    b.record_success(62)
    assert b.state_at(62) is State.CLOSED
    assert [(frm, to) for _, frm, to in b.transitions] == [
        (State.CLOSED, State.OPEN),
        (State.OPEN, State.HALF_OPEN),
        (State.HALF_OPEN, State.OPEN),
        (State.OPEN, State.HALF_OPEN),
        (State.HALF_OPEN, State.CLOSED),
    ]


def test_an_unanswered_trial_expires_after_open_seconds():
    b = breaker.CircuitBreaker(breaker.BreakerPolicy(failure_threshold=3, open_seconds=30))
    fail(b, 0, 3)
    assert b.allow(30)  # the trial is claimed, and its holder never reports (it crashed)
    assert not b.allow(59.9)
    assert b.state_at(59.9) is State.HALF_OPEN
    assert b.allow(60)  # 30 s without an answer: the trial is given up, another goes through
    assert not b.allow(61)
    b.record_success(62)
    assert b.state_at(62) is State.CLOSED


def test_a_trial_that_fails_late_still_reopens():
    b = breaker.CircuitBreaker(breaker.BreakerPolicy(failure_threshold=3, open_seconds=30))
    fail(b, 0, 3)
    assert b.allow(30)
    b.record_failure(70)  # answered after its expiry: still a failed trial
    assert b.state_at(70) is State.OPEN and not b.allow(99)


def test_late_success_while_open_does_not_close():
    b = breaker.CircuitBreaker(POLICY)
    fail(b, 0, 3)
    b.record_success(5)
    assert b.state_at(5) is State.OPEN


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"failure_threshold": 0}, "failure_threshold must be between 1 and 10000; got 0"),
        ({"open_seconds": 0}, "open_seconds must be between 0 and 86400"),
        ({"half_open_max_calls": 0}, "half_open_max_calls must be between 1 and 1000"),
    ],
)
def test_policy_is_checked(settings, message):
    with pytest.raises(ValueError, match=message):
        breaker.BreakerPolicy(**settings)
