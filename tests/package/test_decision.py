"""Section 15: the decision table's rules, and the combinations on moto (real where moto can, modelled where not)."""

import pytest

from mercadofresco.lessons.decision import combinations, workflow_start
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


def test_a_rule_target_without_a_name_starts_two_executions_and_the_named_starter_one(aws):
    result = workflow_start.eventbridge_to_step_functions(aws)
    unnamed, duplicate, closed, changed = result["steps"]
    assert unnamed["executions"] == 2  # the classic target names nothing: a duplicate is a second process
    assert duplicate["executions"] == closed["executions"] == changed["executions"] == 1
    assert duplicate["StartExecution"] == "open (RUNNING), open (RUNNING)"
    assert closed["StartExecution"] == "closed (ABORTED)"
    assert changed["StartExecution"].startswith("refused: another input")
    assert "NotImplementedError" in result["moto, rule with a state machine target"]
    # the demo left the bus as it found it: the warehouse rule works and nothing stray waits
    from mercadofresco import queues

    assert queues.queue_counts(aws.sqs, aws.warehouse_queue_url)["visible"] == 0


def test_start_for_event_tells_a_closed_execution_from_a_different_input(aws):
    sfn = aws.client("stepfunctions")
    machine = workflow_start.create_process_machine(aws)
    detail = {"pedido_id": "PED-2026-084417", "importe": "48.20"}
    first = workflow_start.start_for_event(sfn, machine, detail)
    again = workflow_start.start_for_event(sfn, machine, dict(reversed(detail.items())))  # same detail, other key order
    assert (first.outcome, again.outcome, again.execution_arn) == ("open", "open", first.execution_arn)
    with pytest.raises(workflow_start.ExecutionConflictError, match="RUNNING"):
        workflow_start.start_for_event(sfn, machine, detail | {"importe": "52.10"})
    sfn.stop_execution(executionArn=first.execution_arn)
    closed = workflow_start.start_for_event(sfn, machine, detail)
    assert (closed.outcome, closed.status, closed.execution_arn) == ("closed", "ABORTED", first.execution_arn)
    with pytest.raises(workflow_start.ExecutionConflictError, match="ABORTED"):
        workflow_start.start_for_event(sfn, machine, detail | {"importe": "52.10"})
    assert len(sfn.list_executions(stateMachineArn=machine)["executions"]) == 1


def test_the_classic_rule_target_has_no_field_that_names_an_execution():
    fields = workflow_start.target_fields()
    assert "Arn" in fields and "RoleArn" in fields
    assert not any("Name" in field or "StepFunctions" in field for field in fields)


def test_sns_straight_to_a_function_loses_what_an_outage_outlasts_unless_it_has_a_dlq():
    direct, with_dlq, queued = combinations.direct_vs_queued()
    assert direct["lost"] == 27 and queued["lost"] == with_dlq["lost"] == 0
    assert with_dlq["in_a_dlq"] == direct["lost"]  # its own DLQ keeps them; retries are the same 3 minutes
    assert (direct["retried_for_min"], queued["retried_for_min"]) == (3, 15)
    for row in (direct, with_dlq, queued):
        assert row["first_try"] + row["after_retries"] + row["lost"] + row["in_a_dlq"] == row["orders"]
    short = combinations.direct_vs_queued(combinations.Outage(down_seconds=0))
    assert all(row["first_try"] == row["orders"] for row in short)


def test_throttle_knobs_are_set_where_they_apply_on_moto(aws):
    knobs = combinations.throttle_knobs(aws, 15)
    assert knobs["EventBridge API destination: InvocationRateLimitPerSecond"] == 15
    assert knobs["SNS HTTPS subscription: throttlePolicy.maxReceivesPerSecond"] == 15
    assert knobs["Step Functions Map: MaxConcurrency"] == 3  # 15 calls/s at 0.2 s a call is 3 in flight
    subscriptions = aws.client("sns").list_subscriptions_by_topic(TopicArn=aws.topic_arn)["Subscriptions"]
    assert {s["Protocol"] for s in subscriptions} == {"sqs"}  # the HTTPS subscription is gone again


def test_the_charge_happens_in_the_consumer_of_the_orders_queue_not_at_checkout():
    answers = {flow: decision.choose(need).service for flow, need in decision.FLOWS.items()}
    charging = [flow for flow in answers if "charge" in flow]
    assert charging == ["cola-mercadofresco-pedidos -> consumer that charges"]
    assert answers[charging[0]] == "SQS"


def test_a_fact_that_starts_a_process_warns_that_the_rule_names_no_execution():
    caveat = decision.choose(decision.Need(long_process=True, many_consumers=True)).caveat
    assert "names no execution" in caveat and "SQS" in caveat
