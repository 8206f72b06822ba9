"""Section 16: the whole flow on moto; with a fault at any hop every order is charged, written and fulfilled once."""

from dataclasses import fields

import pytest

from mercadofresco.lessons.architecture import cost, report
from mercadofresco.lessons.architecture import flow as architecture

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


def test_a_provider_that_ignores_the_key_repeats_the_effect_after_a_crash(aws, clock):
    run = architecture.run_flow(aws, clock, 2, architecture.Faults(crash_after_effect=True), honours_key=False)
    rows = report.tally(run)
    assert max(row["preparacion"] for row in rows) == 2  # the gap between the effect and COMPLETADO


def test_the_bill():
    lines = cost.lesson_lines()
    by_service = {line.service: round(line.usd(), 2) for line in lines}
    assert by_service["Step Functions"] == 54.0
    assert by_service["DynamoDB"] == 0.9
    assert abs(by_service["EventBridge"] - 0.95) <= 0.02
    total = cost.bill(lines)[-1]
    assert "58.45" in total["what"]
    with pytest.raises(ValueError, match="service must be one of"):
        cost.with_quantity(lines, "Lambda", 1)


def test_two_operations_answer_faster_and_more_often_than_eight():
    eight, two = cost.confirm_paths(0.24)
    assert two["seconds"] < eight["seconds"] / 5
    assert two["answers_when_each_dependency_is_up"] > eight["answers_when_each_dependency_is_up"]
