"""PutEvents for any number of events: 10 entries a call, and an entry the bus refuses is an error, not a loss."""

from __future__ import annotations

import json

import pytest

from mercadofresco import bus, world
from mercadofresco.models import event_faults


def _entries(count):
    return [
        {
            "Source": world.ORDER_SOURCE,
            "DetailType": "PedidoCreado",
            "Detail": json.dumps({"pedido_id": f"PED-2026-{400_000 + n}"}),
            "EventBusName": world.BUS,
        }
        for n in range(count)
    ]


def test_twenty_three_events_take_three_calls(events):
    calls = []

    def count(params, **_):
        calls.append(len(params["Entries"]))

    events.meta.events.register("before-parameter-build.events.PutEvents", count)
    assert bus.put_events(events, _entries(23)) == 23
    assert calls == [10, 10, 3]  # moto refuses 11 in one call, as EventBridge does


def test_an_entry_the_bus_refuses_raises_instead_of_vanishing(events):
    faulty = event_faults.FaultyEvents(events, event_faults.PartialFailures(probability=0.5, seed=1))
    with pytest.raises(bus.EventsNotPublishedError, match=r"refused \d+ event\(s\)") as raised:
        bus.put_events(faulty, _entries(10))
    assert raised.value.failed == 10 - len(faulty.accepted) > 0
