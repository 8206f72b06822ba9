import pytest

from mercadofresco.lessons.delivery import experiments


def test_six_steps_charge_twice(aws, clock):
    run = experiments.six_steps(aws, clock)
    assert run.charges_per_order() == {"PED-2026-084417": 2}
    assert run.summary() == {"orders_sent": 1, "charges": 2, "extra_charges": 1, "left_in_queue": 0, "in_dlq": 0}
    events = [(row["event"], row["detail"]) for row in run.timeline]
    assert events[0] == ("received", "receive #1") and ("received", "receive #2") in events


@pytest.mark.parametrize(("latency", "charges", "in_dlq"), [(0.24, 1, 0), (100, 1, 0), (150, 2, 0), (200, 4, 1)])
def test_incident_configuration_by_latency(aws, clock, latency, charges, in_dlq):
    run = experiments.charges_per_order(aws, clock, 120, latency, 180, order_count=1)
    assert (len(run.ledger), run.in_dlq) == (charges, in_dlq)


def test_slow_gateway_mechanism_needs_no_failure(aws, clock):
    run = experiments.slow_gateway(aws, clock)
    assert len(run.ledger) == 2
    assert not [row for row in run.timeline if row["event"] in ("failed", "crashed")]


def test_raising_visibility_alone_is_not_a_fix(aws, clock):
    # Above the read timeout every receive charges again, whatever the visibility.
    run = experiments.charges_per_order(aws, clock, 400, 60, 30, order_count=1)
    assert len(run.ledger) == 4 and run.in_dlq == 1


def test_fifo_drops_the_producers_resend_but_not_the_consumers_redelivery(aws, clock):
    rows = experiments.fifo_dedup(aws, clock)
    assert [row["visible"] for row in rows[:2]] == [1, 1]
    assert "2 charges" in rows[2]["what"]
    assert experiments.fifo_window(aws, clock, 240)["messages_waiting"] == 1
    assert experiments.fifo_window(aws, clock, 360)["messages_waiting"] == 2


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"visibility_timeout_seconds": -5}, "visibility_timeout_seconds must be between 0 and 43200; got -5"),
        ({"read_timeout_seconds": 0}, "read_timeout_seconds must be between 1 and 900"),
        ({"gateway_latency_seconds": 0}, "gateway_latency_seconds must be between 0.001 and 900; got 0"),  # 01's try 4
        ({"order_count": 500}, "order_count must be between 1 and 50"),
        ({"consumers": 1}, "consumers must be between 2 and 20"),
    ],
)
def test_widget_values_out_of_range_say_what_to_do(aws, clock, settings, message):
    with pytest.raises(ValueError, match=message):
        experiments.charges_per_order(aws, clock, **settings)


def test_visibility_probe(aws, clock):
    assert experiments.visibility_probe(aws, clock, 119)["visible_again"] is False
    probe = experiments.visibility_probe(aws, clock, 121)
    assert probe["visible_again"] is True and probe["receive_count"] == 2
