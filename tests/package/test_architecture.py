"""Section 16: the whole flow on moto; with a fault at any hop every order is charged, written and fulfilled once."""

from dataclasses import fields

import pytest

from mercadofresco.lessons.architecture import cost, report
from mercadofresco.lessons.architecture import flow as architecture
from mercadofresco.patterns import breaker

FAULTS = [f.name for f in fields(architecture.Faults)]


def _exactly_once(run):
    rows = report.tally(run)
    for row in rows:
        assert row["charges"] == 1, row
        assert row["written"] == 1, row
        assert row["events_published"] >= 1, row
        for operation in architecture.CONSUMER_QUEUES:
            assert row[operation] == 1, row
    assert len(run.flow.gateway.ledger) == len(run.pedido_ids)
    assert not any(report.left_in_queues(run.flow).values())  # nothing pending, nothing in a DLQ
    return rows


def test_one_order_through_every_hop(aws, clock):
    run = architecture.run_flow(aws, clock, 1)
    _exactly_once(run)
    hops = {row["hop"] for row in report.trace(run, "PED-2026-084417")}
    assert hops == {"cobro", "outbox", "preparacion", "correo", "erp"}


@pytest.mark.parametrize("fault", FAULTS)
def test_a_fault_at_one_hop_loses_nothing_and_repeats_nothing(aws, clock, fault):
    run = architecture.run_flow(aws, clock, 2, architecture.Faults(**{fault: True}))
    _exactly_once(run)


def test_every_fault_at_once(aws, clock):
    run = architecture.run_flow(aws, clock, 5, architecture.EVERY_FAULT)
    rows = _exactly_once(run)
    assert sum(row["events_published"] for row in rows) == 6  # the publisher's death published one event twice
    assert any("breaker" in alert for alert in run.flow.alarms_seen)
    assert any("mercadofresco-erp-fallidos" in alert for alert in run.flow.alarms_seen)
    assert run.flow.redriven[architecture.CONSUMER_QUEUES["erp"]] > 0 and run.flow.client.refused > 0
    gained = report.gained(run)
    assert [row["hop"] for row in gained] == list(report.BEFORE)
    assert gained[0]["effects (5 orders)"] == "5 charges" and gained[3]["this run: copies"].startswith("6 events for 5")
    assert gained[-1]["effects (5 orders)"] == "5 ERP"


def test_the_resource_list_is_what_the_run_built(aws, clock):
    run = architecture.run_flow(aws, clock, 1)
    rows = report.resources(run.flow)
    assert not [row for row in rows if row["in_this_run"] == "missing"]
    alarms = aws.client("cloudwatch").describe_alarms()["MetricAlarms"]
    assert f"{len(alarms)} alarms" in next(row["name"] for row in rows if row["service"] == "CloudWatch")
    assert len(alarms) == next(line.quantity for line in cost.lesson_lines() if line.service == "CloudWatch")


def test_the_lessons_breaker_never_opens_before_a_small_runs_orders_reach_the_dlq(aws, clock):
    policies = {
        "lesson": architecture.LESSON_BREAKER,
        "short": breaker.BreakerPolicy(3, 30),
        "this run": architecture.BREAKER_POLICY,
    }
    rows = {row["breaker"]: row for row in report.breaker_outcomes(architecture.compare_breakers(aws, clock, policies))}
    assert rows["lesson"]["through_the_DLQ"] == 3 and rows["lesson"]["gateway_calls"] == 43
    assert rows["short"]["refused_without_calling"] == 0 and rows["short"]["receives_of_the_orders"] == 6
    assert rows["this run"]["refused_without_calling"] == 3 and rows["this run"]["receives_of_the_orders"] == 9
    assert {row["charges_per_order"] for row in rows.values()} == {1}


def test_a_provider_that_ignores_the_key_repeats_the_effect_after_a_crash(aws, clock):
    run = architecture.run_flow(aws, clock, 2, architecture.Faults(crash_after_effect=True), honours_key=False)
    rows = report.tally(run)
    assert max(row["preparacion"] for row in rows) == 2  # the gap between the effect and COMPLETADO


def test_the_bill_applies_every_free_tier_or_none():
    lines = cost.lesson_lines()
    free = {line.service: round(line.usd(free_tiers=True), 2) for line in lines}
    none = {line.service: round(line.usd(free_tiers=False), 2) for line in lines}
    assert free["Step Functions"] == 53.9 and none["Step Functions"] == 54.0  # 4,000 free transitions
    assert free["SNS"] == 0 and none["SNS"] == 0.12
    assert free["CloudWatch"] == 0 and none["CloudWatch"] == 0.9  # 10 free alarm metrics, 9 alarms
    assert free["SQS"] == 1.79 and none["SQS"] == 2.19
    assert free["DynamoDB"] == none["DynamoDB"] == 0.9 and free["KMS"] == none["KMS"] == 1.0
    assert abs(free["EventBridge"] - 0.95) <= 0.02
    assert all(line.price is cost.PRICES[line.service] for line in lines)  # one free tier per service, no exceptions
    total = cost.bill(lines)[-1]
    assert (total["usd_free_tiers"], total["usd_no_free_tier"]) == (58.55, 60.07)
    with pytest.raises(ValueError, match="service must be one of"):
        cost.with_quantity(lines, "Lambda", 1)


def test_the_reconciliation_from_the_lessons_parts_to_its_62():
    rows = cost.reconciliation(cost.lesson_lines())
    assert rows[0]["free_tiers"] == 58.45
    assert (rows[-2]["free_tiers"], rows[-2]["no_free_tier"]) == (61.24, 62.54)
    assert rows[-1]["free_tiers"] == 62.0


def test_the_lessons_sns_figure_needs_twenty_publishes_an_order():
    rows = cost.sns_explanations()
    publishes = [row for row in rows if row["billed"] == "publishes"]
    assert [row["volume_for_2_60"] for row in publishes] == [6_200_000, 5_200_000]
    assert min(row["per_order"] for row in publishes) > 20  # the flow publishes one event an order
    assert next(row for row in rows if row["billed"] == "email deliveries")["volume_for_2_60"] == 130_000
    line = cost.CostLine("SNS", "check", cost.volume_for(cost.PRICES["SNS"], 2.60), cost.PRICES["SNS"])
    assert round(line.usd(), 2) == 2.60


def test_two_operations_answer_faster_and_more_often_than_eight():
    eight, two = cost.confirm_paths(0.24)
    assert two["seconds"] < eight["seconds"] / 5
    assert two["succeeds_when_each_dependency_is_up"] > eight["succeeds_when_each_dependency_is_up"]
