"""What the grader's EventBridge does that moto does not, and that moto does: each behaviour can fail."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from mercadofresco import world
from mercadofresco.models import event_faults


def _entries(count, size=20):
    detail = json.dumps({"pedido_id": "PED-2026-084417", "relleno": "x" * size})
    entry = {"Source": world.ORDER_SOURCE, "DetailType": "PedidoCreado", "Detail": detail, "EventBusName": world.BUS}
    return [entry] * count


def test_moto_itself_refuses_eleven_entries_as_eventbridge_does(events):
    with pytest.raises(ClientError, match="ValidationException"):
        events.put_events(Entries=_entries(11))
    assert event_faults.refusal(_entries(11)).startswith("Value at 'entries' failed")
    assert event_faults.refusal(_entries(10)) == ""


def test_the_model_refuses_a_request_over_1_mb_which_moto_takes(events):
    big = _entries(1, size=event_faults.MAX_REQUEST_BYTES + 50_000)
    assert event_faults.MAX_REQUEST_BYTES == 1_048_576  # AWS's 1 MB since January 2026 (the module says where)
    assert events.put_events(Entries=big)["FailedEntryCount"] == 0  # moto takes it: the model is needed
    with pytest.raises(ClientError, match="over the limit"):
        event_faults.FaultyEvents(events).put_events(Entries=big)


def test_a_request_over_the_old_256_kb_and_under_1_mb_is_taken():
    assert event_faults.refusal(_entries(1, size=300_000)) == ""
    assert event_faults.refusal(_entries(4, size=250_000)) == ""  # 1,000,000 bytes and more, every entry together
    assert "over the limit" in event_faults.refusal(_entries(5, size=250_000))


def test_a_partly_failed_call_answers_an_error_code_where_an_entry_failed_and_sends_only_the_others(events):
    faulty = event_faults.FaultyEvents(events, event_faults.PartialFailures(0.5, seed=3))
    entries = [dict(entry, Detail=json.dumps({"n": n})) for n, entry in enumerate(_entries(10))]
    answer = faulty.put_events(Entries=entries)
    failed = [n for n, result in enumerate(answer["Entries"]) if "ErrorCode" in result]
    assert 0 < answer["FailedEntryCount"] == len(failed) < 10
    assert all(answer["Entries"][n]["ErrorCode"] == "InternalFailure" for n in failed)
    assert [detail["n"] for detail in faulty.accepted] == [n for n in range(10) if n not in failed]


def test_no_failure_asked_means_the_bus_takes_every_entry(events):
    faulty = event_faults.FaultyEvents(events)
    assert faulty.put_events(Entries=_entries(3))["FailedEntryCount"] == 0
    assert len(faulty.accepted) == 3


def test_a_scripted_bus_fails_the_positions_it_is_told_in_each_call_and_keeps_what_it_took_whole(events):
    faulty = event_faults.FaultyEvents(events, event_faults.ScriptedFailures((frozenset({0, 2}), frozenset({5}))))
    entries = [dict(entry, Detail=json.dumps({"n": n})) for n, entry in enumerate(_entries(3))]
    told = []
    faulty.on_taken = told.append  # what each call took, as it took it (a rival publisher listens here)
    faulty.first_call = lambda: told.append([])  # once, before the first call reaches the bus
    first = faulty.put_events(Entries=entries)
    second = faulty.put_events(Entries=entries)  # position 5 is beyond 3 entries: nothing fails
    third = faulty.put_events(Entries=entries[:1])  # past the script: nothing fails
    assert [first["FailedEntryCount"], second["FailedEntryCount"], third["FailedEntryCount"]] == [2, 0, 0]
    assert [json.loads(entry["Detail"])["n"] for entry in faulty.taken] == [1, 0, 1, 2, 0]
    assert faulty.failures.calls == 3 and [len(taken) for taken in told] == [0, 1, 3, 1]


def test_the_graders_bus_refuses_what_eventbridge_refuses_and_fails_part_of_a_call():
    from types import SimpleNamespace

    from mercadofresco.course import checker
    from mercadofresco.course.handout import labs

    bus_class = checker.load_checks(labs.SOLUTIONS_DIR / "checks" / "lab3.py").Bus
    lab = SimpleNamespace(aws_hooks={}, database=SimpleNamespace(dead=False))
    served = []

    def serve(request):
        served.append(len(request["Entries"]))
        return 200, {"FailedEntryCount": 0, "Entries": [{"EventId": str(n)} for n in range(len(request["Entries"]))]}

    bus = bus_class(lab)
    assert bus({"Entries": _entries(11)}, serve)[0] == 400  # refused before moto is asked
    assert bus({"Entries": _entries(1, size=event_faults.MAX_REQUEST_BYTES)}, serve)[0] == 400
    assert served == [] and len(bus.refused) == 2
    bus = bus_class(lab, seed=3, partial=0.5)
    status, answer = bus({"Entries": _entries(10)}, serve)
    assert status == 200 and 0 < answer["FailedEntryCount"] < 10 and served == [10 - answer["FailedEntryCount"]]
