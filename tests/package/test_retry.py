"""Backoff strategies, the classifier, the retry budget, the pure wait and the retrier, and the layer calculator."""

import datetime as dt
import random
import statistics
from decimal import Decimal

import pytest
from botocore.exceptions import ClientError, ConnectTimeoutError, ReadTimeoutError

from mercadofresco.clock import Stopwatch
from mercadofresco.lessons.retry import experiments as rx
from mercadofresco.models import gateway
from mercadofresco.patterns import backoff, retry, retry_budget, retry_layers, retry_rules

AMOUNT = Decimal("48.20")
JITTERED = [backoff.FullJitter, backoff.EqualJitter, backoff.DecorrelatedJitter]


def aws_error(code: str, status: int, retry_after: str | None = None) -> ClientError:
    headers = {"retry-after": retry_after} if retry_after else {}
    response = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": headers}}
    return ClientError(response, "PutItem")


def waits(strategy, attempt: int, n: int = 4000, seed: int = 7) -> list[float]:
    rng = random.Random(seed)
    return [strategy.wait(attempt, rng, previous=strategy.base * 2**attempt) for _ in range(n)]


# -- strategies ----------------------------------------------------------------------
@pytest.mark.parametrize("cls", [backoff.Exponential, *JITTERED])
@pytest.mark.parametrize("attempt", [1, 3, 8, 30])
def test_waits_stay_between_zero_and_the_cap(cls, attempt):
    assert all(0 <= w <= 2.0 for w in waits(cls(base=0.1, cap=2.0), attempt, n=500))


def test_exponential_doubles_until_the_cap_and_has_no_randomness():
    strategy = backoff.Exponential(base=0.1, cap=2.0)
    assert [strategy.wait(a, random.Random(a)) for a in range(1, 7)] == pytest.approx([0.2, 0.4, 0.8, 1.6, 2.0, 2.0])


def uniform_over(sample: list[float], low: float, high: float) -> bool:
    """Mean, spread and range of a uniform(low, high) sample, within sampling error."""
    width = high - low
    return (
        statistics.mean(sample) == pytest.approx((low + high) / 2, rel=0.03)
        and statistics.pstdev(sample) == pytest.approx(width / 12**0.5, rel=0.03)
        and min(sample) < low + 0.02 * width
        and max(sample) > high - 0.02 * width
    )


def test_full_jitter_is_uniform_over_the_whole_window():
    assert uniform_over(waits(backoff.FullJitter(base=0.1, cap=20), attempt=3), 0.0, 0.8)  # window 0.8 s


class HalfJitterPosingAsFull(backoff.FullJitter):
    """A wrong full jitter: random, capped, but never shorter than half the window."""

    def wait(self, attempt, rng, previous=0.0):
        return backoff.EqualJitter(self.base, self.cap).wait(attempt, rng, previous)


def test_the_distribution_check_catches_a_wrong_jitter():
    wrong = waits(HalfJitterPosingAsFull(base=0.1, cap=20), attempt=3)
    assert all(0 <= w <= 20 for w in wrong)  # a range check alone would let it pass
    assert not uniform_over(wrong, 0.0, 0.8)


def test_equal_jitter_never_waits_less_than_half_the_window():
    sample = waits(backoff.EqualJitter(base=0.1, cap=20), attempt=3)
    assert min(sample) >= 0.4
    assert statistics.mean(sample) == pytest.approx(0.6, rel=0.03)
    assert statistics.pstdev(sample) == pytest.approx(0.4 / 12**0.5, rel=0.03)


def test_decorrelated_jitter_grows_from_the_previous_wait():
    strategy = backoff.DecorrelatedJitter(base=0.1, cap=20)
    rng = random.Random(3)
    sample = [strategy.wait(2, rng, previous=1.0) for _ in range(4000)]
    assert min(sample) >= 0.1 and max(sample) <= 3.0
    assert statistics.mean(sample) == pytest.approx(1.55, rel=0.03)
    assert strategy.wait(1, rng, previous=0.0) <= 0.3  # the first wait starts from base


def test_same_seed_same_waits():
    strategy = backoff.FullJitter()
    assert waits(strategy, 4, n=10, seed=1) == waits(strategy, 4, n=10, seed=1)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"base": 0, "cap": 1}, "base must be between"),
        ({"base": 2, "cap": 1}, r"cap must be between 2 and 3600 \(seconds; at least base\); got 1"),
    ],
)
def test_strategy_settings_are_checked(settings, message):
    with pytest.raises(ValueError, match=message):
        backoff.FullJitter(**settings)


def test_strategy_by_name():
    assert backoff.strategy("full", base=0.005, cap=2) == backoff.FullJitter(0.005, 2)
    with pytest.raises(ValueError, match="strategy must be one of"):
        backoff.strategy("fibonacci")


# -- classifier ----------------------------------------------------------------------
V = retry_rules.Verdict
CASES = [
    (gateway.GatewayUnavailableError("503"), False, V.RETRY),
    (gateway.ThrottledError(7), False, V.RETRY_LATER),
    (gateway.CardDeclinedError("402"), True, V.DO_NOT_RETRY),
    (gateway.GatewayTimeoutError(30), False, V.UNSAFE),
    (gateway.GatewayTimeoutError(30), True, V.RETRY),
    (gateway.ResponseLostError("reset"), False, V.UNSAFE),
    (gateway.ResponseLostError("reset"), True, V.RETRY),
    (aws_error("ConditionalCheckFailedException", 400), True, V.ANSWER),
    (aws_error("ProvisionedThroughputExceededException", 400), False, V.RETRY_LATER),
    (aws_error("ThrottlingException", 400, retry_after="3"), False, V.RETRY_LATER),
    (aws_error("InternalServerError", 500), False, V.RETRY),
    (aws_error("ServiceUnavailable", 503), False, V.RETRY),
    (aws_error("ValidationException", 400), True, V.DO_NOT_RETRY),
    (aws_error("ResourceNotFoundException", 404), True, V.DO_NOT_RETRY),
    (aws_error("TransactionConflict", 409), True, V.DO_NOT_RETRY),
    (aws_error("", 429), False, V.RETRY_LATER),
    (aws_error("", 502), False, V.RETRY),
    (ConnectTimeoutError(endpoint_url="http://x"), False, V.RETRY),
    (ReadTimeoutError(endpoint_url="http://x"), False, V.UNSAFE),
    (TimeoutError(), True, V.RETRY),
    (KeyError("pedido_id"), True, V.DO_NOT_RETRY),
]


@pytest.mark.parametrize(("error", "idempotent", "verdict"), CASES, ids=lambda v: getattr(v, "name", None))
def test_classifier_table(error, idempotent, verdict):
    assert retry_rules.classify(error, idempotent).verdict is verdict


def test_429_waits_at_least_retry_after():
    assert retry_rules.classify(gateway.ThrottledError(7), False).not_before_seconds == 7
    assert retry_rules.classify(aws_error("ThrottlingException", 400, "3"), False).not_before_seconds == 3
    retrier = retry.Retrier(retry.RetryPolicy(backoff.FullJitter(0.1, 1), max_attempts=3))
    assert retrier.after_failure(gateway.ThrottledError(7), 1, 0.0, idempotent=False) == 7


def test_conditional_check_failed_is_not_retried():
    retrier = retry.Retrier(retry.RetryPolicy(backoff.FullJitter(), max_attempts=5))
    assert retrier.after_failure(aws_error("ConditionalCheckFailedException", 400), 1, 0.0, idempotent=True) is None


# -- the pure wait -----------------------------------------------------------------------
JITTERED_POLICY = retry.RetryPolicy(backoff.FullJitter(base=0.5, cap=30), max_attempts=4)
UNAVAILABLE = retry_rules.classify(gateway.GatewayUnavailableError("503"), False)


def test_next_wait_gives_the_same_wait_for_the_same_inputs_and_seed():
    first = [retry.next_wait(JITTERED_POLICY, UNAVAILABLE, n, 0.0, random.Random(5)) for n in (1, 2, 3)]
    again = [retry.next_wait(JITTERED_POLICY, UNAVAILABLE, n, 0.0, random.Random(5)) for n in (1, 2, 3)]
    assert first == again
    assert first == [JITTERED_POLICY.backoff.wait(n, random.Random(5)) for n in (1, 2, 3)]  # only the backoff draws


def test_next_wait_counts_nothing():
    budget = retry_budget.RetryBudget(ratio=0.1, max_tokens=1)
    retrier = retry.Retrier(JITTERED_POLICY, random.Random(5), budget)
    for failures in range(1, 4):
        assert retry.next_wait(retrier.policy, UNAVAILABLE, failures, 0.0, random.Random(5)) is not None
    assert (retrier.attempts, retrier.retries, retrier.waits, retrier.decisions) == (0, 0, [], [])
    assert (budget.calls, budget.retries, budget.refused, budget.tokens) == (0, 0, 0, 1)


def test_next_wait_gives_up_past_max_attempts_and_on_an_error_not_worth_retrying():
    assert retry.next_wait(JITTERED_POLICY, UNAVAILABLE, 4, 0.0, random.Random(5)) is None
    declined = retry_rules.classify(gateway.CardDeclinedError("402"), True)
    rng = random.Random(5)
    assert retry.next_wait(JITTERED_POLICY, declined, 1, 0.0, rng) is None
    assert rng.random() == random.Random(5).random()  # giving up draws nothing


def test_next_wait_is_never_shorter_than_retry_after():
    throttled = retry_rules.classify(gateway.ThrottledError(7), False)
    assert retry.next_wait(JITTERED_POLICY, throttled, 1, 0.0, random.Random(5)) == 7  # the backoff drew < 1 s
    slow = retry.RetryPolicy(backoff.Exponential(base=5, cap=60), max_attempts=4)
    assert retry.next_wait(slow, throttled, 1, 0.0, random.Random(5)) == 10  # the backoff's longer wait wins


def test_the_retrier_waits_what_next_wait_says_and_counts_it():
    retrier = retry.Retrier(JITTERED_POLICY, random.Random(5))
    waits = [retrier.after_failure(gateway.GatewayUnavailableError("503"), n, 0.0, idempotent=False) for n in (1, 2, 3)]
    rng = random.Random(5)
    assert waits == [retry.next_wait(JITTERED_POLICY, UNAVAILABLE, n, 0.0, rng) for n in (1, 2, 3)]
    assert (retrier.retries, retrier.waits, len(retrier.decisions)) == (3, waits, 3)
    assert retrier.after_failure(gateway.GatewayUnavailableError("503"), 4, 0.0, idempotent=False) is None
    assert (retrier.retries, len(retrier.decisions)) == (3, 4)


# -- budget ----------------------------------------------------------------------------
def test_budget_stops_retrying_above_its_share():
    budget = retry_budget.RetryBudget(ratio=0.1, max_tokens=10)
    retrier = retry.Retrier(retry.RetryPolicy(backoff.NoBackoff(), max_attempts=5), budget=budget)
    outage = gateway.GatewayUnavailableError("503")
    for _ in range(1000):  # every call fails and wants 4 retries
        retrier.first_attempt()
        failures = 1
        while retrier.after_failure(outage, failures, 0.0, idempotent=False) is not None:
            failures += 1
    assert budget.calls == 1000
    assert budget.retries <= 0.1 * 1000 + 10
    assert budget.retries >= 0.1 * 1000 - 1
    assert budget.refused > 900


def test_without_a_budget_the_same_outage_retries_every_time():
    retrier = retry.Retrier(retry.RetryPolicy(backoff.NoBackoff(), max_attempts=5))
    outage = gateway.GatewayUnavailableError("503")
    for _ in range(100):
        retrier.first_attempt()
        failures = 1
        while retrier.after_failure(outage, failures, 0.0, idempotent=False) is not None:
            failures += 1
    assert retrier.retries == 400


@pytest.mark.parametrize(("settings", "message"), [({"ratio": 0}, "ratio must be"), ({"max_tokens": 0}, "max_tokens")])
def test_budget_settings_are_checked(settings, message):
    with pytest.raises(ValueError, match=message):
        retry_budget.RetryBudget(**settings)


# -- the retrier on the gateway model -----------------------------------------------------
def test_gateway_client_waits_its_backoff_on_the_virtual_clock(clock):
    provider = gateway.PaymentGateway(clock)
    provider.fail_next(gateway.Fault.UNAVAILABLE, times=3)
    policy = retry.RetryPolicy(backoff.Exponential(base=1, cap=60), max_attempts=5)
    client = gateway.GatewayClient(provider, policy=policy)
    client.charge("PED-2026-084417", AMOUNT, "cobro:PED-2026-084417")
    assert client.attempts == 4
    assert client.retrier.waits == [2, 4, 8]
    assert clock.seconds_since_start() == pytest.approx(14 + 4 * 0.24)


def test_disciplined_client_does_not_retry_a_timeout_without_a_key(clock):
    provider = gateway.PaymentGateway(clock, latency=gateway.LatencyProfile(baseline_seconds=200))
    policy = retry.RetryPolicy(backoff.FullJitter(base=1, cap=20), max_attempts=5)
    client = gateway.GatewayClient(provider, read_timeout_seconds=30, policy=policy, send_idempotency_key=False)
    with pytest.raises(gateway.GatewayTimeoutError):
        client.charge("PED-2026-084417", AMOUNT, "cobro:PED-2026-084417")
    assert client.attempts == 1
    assert len(provider.ledger) == 1


def test_stopwatch_spends_the_waits_without_moving_the_shared_clock(clock):
    provider = gateway.PaymentGateway(clock)
    provider.fail_next(gateway.Fault.THROTTLED, times=1, retry_after_seconds=5)
    client = gateway.GatewayClient(provider, policy=retry.RetryPolicy(backoff.FullJitter(0.1, 1), max_attempts=2))
    watch = Stopwatch(clock)
    client.charge("PED-2026-084417", AMOUNT, "cobro:PED-2026-084417", watch)
    assert watch.elapsed_seconds == pytest.approx(0.24 + 5 + 0.24)
    assert clock.seconds_since_start() == 0


def test_two_different_max_attempts_are_refused(clock):
    with pytest.raises(ValueError, match="max_attempts either to the client or to its policy"):
        gateway.GatewayClient(gateway.PaymentGateway(clock), max_attempts=3, policy=retry.RetryPolicy(max_attempts=2))


# -- layers ----------------------------------------------------------------------------
def test_lesson_layers_give_80_per_order_and_36000_for_450():
    report = retry_layers.worst_case(retry_layers.LESSON_LAYERS, orders=450)
    assert (report["per_order"], report["calls"], report["formula"]) == (80, 36_000, "5 × 4 × 4")
    assert "80 > 15" in report["warning"]


def test_disciplined_layers_stay_under_the_limit():
    layers = [
        retry_layers.Layer("SDK", 2),
        retry_layers.Layer("Step Functions Retry", 4),
        retry_layers.Layer("SQS safety net", 1),
    ]
    assert retry_layers.worst_case(layers) == {
        "formula": "2 × 4 × 1",
        "per_order": 8,
        "orders": 1,
        "calls": 8,
        "warning": "",
    }
    assert retry_layers.worst_case([retry_layers.Layer("SDK", 16)])["warning"]
    assert not retry_layers.worst_case([retry_layers.Layer("SDK", 15)])["warning"]


# -- experiments on moto and the gateway model ------------------------------------------------
def test_a_retried_timeout_charges_twice_without_the_key_and_once_with_it(clock):

    assert rx.timeout_retries(clock, send_key=False)["charges"] == 2
    assert rx.timeout_retries(clock, send_key=True)["charges"] == 1
    disciplined = rx.timeout_retries(clock, send_key=False, policy=retry.RetryPolicy(backoff.FullJitter(), 3))
    assert (disciplined["attempts"], disciplined["charges"]) == (1, 1)


def test_layers_counted_on_moto_match_the_calculator(aws, clock):

    lesson = rx.layer_calls(aws, clock, order_count=3)
    assert (lesson["gateway_calls"], lesson["calculator_per_order"], lesson["in_dlq"]) == (240, 80, 3)
    disciplined = rx.layer_calls(aws, clock, order_count=3, sdk_attempts=2, catch_failures=True)
    assert (disciplined["gateway_calls"], disciplined["in_dlq"], disciplined["caught_by_workflow"]) == (24, 0, 3)


def test_botocore_table_reads_the_installed_botocore():

    rows = {row["code or status"]: row for row in rx.botocore_table()}
    assert rows["ThrottlingException"]["legacy"] == rows["ThrottlingException"]["standard"] == "retry"
    assert rows["503"]["ours"] == "RETRY"
    assert "ConditionalCheckFailedException" not in rows  # botocore does not retry it either


def test_retry_after_reads_seconds_and_http_dates_from_the_instant_given(clock):
    now = clock.now()  # Friday 16 October 2026 17:14:00 UTC
    assert retry_rules.retry_after_seconds("7", now) == 7
    assert retry_rules.retry_after_seconds(None, now) == 0
    assert retry_rules.retry_after_seconds("Fri, 16 Oct 2026 17:14:30 GMT", now) == 30
    assert retry_rules.retry_after_seconds("Fri, 16 Oct 2026 17:14:30 GMT", now + dt.timedelta(seconds=10)) == 20
    assert retry_rules.retry_after_seconds("Fri, 16 Oct 2026 17:14:30 GMT", None) == 0  # no instant to count from
    assert retry_rules.retry_after_seconds("not a date", now) == 0


def test_a_retry_after_date_is_counted_from_the_waiters_clock(clock):
    throttled = aws_error("ThrottlingException", 400, "Fri, 16 Oct 2026 17:14:30 GMT")
    assert retry_rules.classify(throttled, False, clock.now()).not_before_seconds == 30
    calls = iter([throttled])

    def operation():
        error = next(calls, None)
        if error is not None:
            raise error
        return "ok"

    retrier = retry.Retrier(retry.RetryPolicy(backoff.NoBackoff(), max_attempts=2))
    watch = Stopwatch(clock)
    assert retrier.call(operation, watch, idempotent=False) == "ok"
    assert retrier.waits == [30] and watch.elapsed_seconds == 30
