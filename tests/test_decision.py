"""Section 15: the decision table's rules, and the combinations on moto (real where moto can, modelled where not)."""

import pytest

from mercadofresco.lessons.decision import combinations
from mercadofresco.lessons.decision import rules as decision


@pytest.mark.parametrize(
    ("need", "service"),
    [
        (decision.Need(answer_now=True, many_consumers=True, long_process=True), "synchronous call"),
        (decision.Need(long_process=True), "Step Functions"),
        (decision.Need(long_process=True, route_by_content=True), "EventBridge -> Step Functions"),
        (decision.Need(route_by_content=True, many_consumers=True), "EventBridge -> SQS -> consumer"),
        (decision.Need(many_consumers=True), "SNS -> SQS"),
        (decision.Need(many_consumers=True, ordered=True), "SNS FIFO -> SQS FIFO"),
        (decision.Need(), "SQS"),
        (decision.Need(ordered=True), "SQS FIFO"),
    ],
)
def test_choose(need, service):
    assert decision.choose(need).service == service


def test_ordered_routing_by_content_warns_that_eventbridge_keeps_no_order():
    assert "keeps no order" in decision.choose(decision.Need(route_by_content=True, ordered=True)).caveat


def test_every_combination_is_answered_and_never_sns_straight_to_a_function():
    rows = decision.every_combination()
    assert len(rows) == 32
    assert all("function" not in row["service"] for row in rows)


def test_sns_fan_out_keeps_the_copy_of_a_consumer_that_is_down(aws, clock):
    rows = combinations.sns_to_sqs(aws, clock)
    assert rows[2]["cola-mercadofresco-correo"] == 1 and rows[2]["cola-mercadofresco-erp"] == 0
    assert rows[3]["cola-mercadofresco-correo"] == 0


def test_eventbridge_routes_by_content(aws):
    warehouse, delivery = combinations.eventbridge_to_sqs(aws)
    assert len(warehouse["received"]) == 2
    assert delivery["received"] == ["PedidoConfirmado PED-2026-084417"]


def test_a_duplicate_event_starts_one_execution_and_moto_still_lacks_the_target(aws):
    result = combinations.eventbridge_to_step_functions(aws)
    assert result["distinct executions"] == 1
    assert "NotImplementedError" in result["moto, rule with a state machine target"]
    # the demo left the bus as it found it: the warehouse rule works and nothing stray waits
    from mercadofresco import queues

    assert queues.queue_counts(aws.sqs, aws.warehouse_queue_url)["visible"] == 0


def test_sns_straight_to_a_function_loses_what_an_outage_outlasts_and_a_queue_loses_nothing():
    direct, queued = combinations.direct_vs_queued()
    assert direct["lost"] > 0 and queued["lost"] == 0
    assert direct["first_try"] + direct["after_retries"] + direct["lost"] == direct["orders"]
    assert queued["first_try"] + queued["after_retries"] + queued["dlq_then_redriven"] == queued["orders"]
    short = combinations.direct_vs_queued(combinations.Outage(down_seconds=0))
    assert all(row["first_try"] == row["orders"] for row in short)


def test_throttle_knobs_are_stored_on_moto(aws):
    assert set(combinations.throttle_knobs(aws, 15).values()) == {15}
