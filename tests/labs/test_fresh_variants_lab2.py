"""Lab 2's checks against the wrong answers of a session that had not read them (tests/labs/fresh/lab2.json, issue 47).

Every fresh variant is caught by the hidden checks (`benchmarks/fresh_variants.py lab2`, 6 December: 33 of 33, the
public checks 29, missing only answers chosen from a list); `NOT_YET_CAUGHT_LAB2` would name any they pass. Here
the properties run in this process on the variants whose mistake one of them finds, with the public checks'
budget and seed."""

from __future__ import annotations

import contextlib
import io

from tests.labs import fresh_variants
import pytest

from mercadofresco import world
from mercadofresco.clock import VirtualClock
from mercadofresco.lessons.exercises import dlq_content, dlq_properties, dlq_redrive, dlq_runbook
from mercadofresco.lessons.exercises.dlq_bench import NotebookDlqBench

PROPERTIES = {
    holds.__name__: holds
    for holds in (
        dlq_properties.inspection_keeps_the_dlq,
        dlq_properties.contain_tells_a_live_incident,
        dlq_content.classify_by_what_the_messages_say,
        dlq_redrive.redrive_moves_every_message,
        dlq_redrive.redrive_keeps_its_rate,
        dlq_runbook.runbook_acts_only_on_what_it_understood,
    )
}
NOT_YET_CAUGHT_LAB2: set[str] = set()
# What each fresh variant fails when graded (benchmarks/fresh_variants.py lab2, 6 December: 33 of 33 caught).
CAUGHT_BY_LAB2 = {
    "alarm_gte_zero": {"safeguard"},
    "alarm_on_source_queue": {"safeguard"},
    "alarm_period_one_minute": {"safeguard"},
    "alarm_threshold_one": {"safeguard"},
    "classify_by_receive_count": {"classify_by_content"},
    "classify_by_time_window": {"classify_by_content", "redrive_idempotent", "runbook_end_to_end"},
    "classify_version_field_only": {"classify_by_content"},
    "contain_age_boundary_inclusive": {"contain_measures"},
    "contain_bleeding_needs_both": {"contain_measures", "runbook_end_to_end"},
    "contain_no_wait_for_growth": {"contain_measures"},
    "contain_receives_live_queue": {"contain_measures"},
    "fix_choice_swapped": {"answers_b_c"},
    "fixed_handler_accepts_future_versions": {"fixed_consumer"},
    "fixed_handler_message_id_key": {"redrive_idempotent"},
    "fixed_handler_v2_in_cents": {"v2_amount"},
    "inspect_deletes_and_resends": {"inspection_deletes_nothing", "inspection_keeps_evidence"},
    "inspect_long_poll": {"inspection_keeps_evidence"},
    "inspect_long_visibility": {"inspection_deletes_nothing", "inspection_keeps_evidence", "runbook_end_to_end"},
    "inspect_not_sorted": {"inspection_keeps_evidence"},
    "inspect_sent_from_first_receive": {"inspection_keeps_evidence"},
    "inspect_sent_in_utc": {"inspection_keeps_evidence"},
    "inspect_single_receive": {"inspection_keeps_evidence"},
    "misleading_sunday_quiet": {"answers_b_c"},
    "redrive_deletes_before_send": {"redrive_loses_nothing"},
    "redrive_paces_every_n_messages": {"redrive_rate_limited"},
    "redrive_stops_on_empty_receive": {"redrive_idempotent", "redrive_loses_nothing", "runbook_end_to_end"},
    "runbook_ignores_bleeding": {"runbook_end_to_end"},
    "runbook_redrive_too_fast": {"runbook_end_to_end"},
    "runbook_redrives_before_deploying_fix": {"runbook_end_to_end"},
    "runbook_redrives_data": {"runbook_end_to_end"},
    "runbook_verifies_before_consuming": {"runbook_end_to_end"},
    "safeguard_bigger_max_receive_count": {"safeguard"},
    "why_rate_limit_sqs_quota": {"rate_answers"},
}
# Through the real grader with the checks that catch it, twice (tests/labs/test_lab2.py, in lab 2's one grading): a
# property's smallest world, found again.
GRADED_TWICE = "redrive_deletes_before_send"
FOUND_BY_PROPERTY = {
    "inspect_deletes_and_resends": "inspection_keeps_the_dlq",
    "inspect_long_poll": "inspection_keeps_the_dlq",
    "inspect_long_visibility": "inspection_keeps_the_dlq",
    "inspect_not_sorted": "inspection_keeps_the_dlq",
    "inspect_sent_from_first_receive": "inspection_keeps_the_dlq",
    "inspect_sent_in_utc": "inspection_keeps_the_dlq",
    "inspect_single_receive": "inspection_keeps_the_dlq",
    "contain_age_boundary_inclusive": "contain_tells_a_live_incident",
    "contain_bleeding_needs_both": "contain_tells_a_live_incident",
    "contain_receives_live_queue": "contain_tells_a_live_incident",
    "runbook_ignores_bleeding": "runbook_acts_only_on_what_it_understood",
    "runbook_redrive_too_fast": "runbook_acts_only_on_what_it_understood",
    "runbook_redrives_data": "runbook_acts_only_on_what_it_understood",
    "runbook_verifies_before_consuming": "runbook_acts_only_on_what_it_understood",
    "runbook_redrives_before_deploying_fix": "runbook_acts_only_on_what_it_understood",
    "contain_no_wait_for_growth": "contain_tells_a_live_incident",
    "classify_by_receive_count": "classify_by_what_the_messages_say",
    "classify_version_field_only": "classify_by_what_the_messages_say",
    "redrive_deletes_before_send": "redrive_moves_every_message",
    "redrive_paces_every_n_messages": "redrive_keeps_its_rate",
}


def _functions_of(variant: dict) -> dict:
    """The variant's functions, made in this process: the lab's imports, the cells the learner writes, and the
    notebook's model of the queue-age metric."""
    notebook = fresh_variants.notebook("lab2", variant)
    code = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    namespace: dict = {}
    exec(
        compile("\n".join(line for line in code[0].splitlines() if line.startswith(("import ", "from "))), "i", "exec"),
        namespace,
    )
    for source in code:
        if "### BEGIN SOLUTION" in source or "def source_queue_age" in source:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(NameError, KeyError):
                exec(compile(source, "answer", "exec"), namespace)  # a cell's last lines may use the notebook's world
    return namespace


@pytest.fixture(scope="module")
def bench_world():
    clock = VirtualClock().start()
    aws = world.build()
    yield aws, clock
    aws.close()
    clock.stop()


def test_every_variant_the_properties_find_is_a_fresh_one_and_each_property_finds_some():
    names = {variant["name"] for variant in fresh_variants.variants("lab2")}
    assert set(FOUND_BY_PROPERTY) <= names and set(FOUND_BY_PROPERTY.values()) == set(PROPERTIES)
    assert names >= NOT_YET_CAUGHT_LAB2 and not NOT_YET_CAUGHT_LAB2 & set(FOUND_BY_PROPERTY)


@pytest.mark.parametrize("name", sorted(FOUND_BY_PROPERTY))
def test_the_properties_find_a_smallest_world_breaking_each_fresh_runbook_and_the_same_one_twice(name, bench_world):
    aws, clock = bench_world
    variant = next(v for v in fresh_variants.variants("lab2") if v["name"] == name)
    bench = NotebookDlqBench(aws, clock, _functions_of(variant))
    holds = PROPERTIES[FOUND_BY_PROPERTY[name]]
    found = holds(bench, examples=6, seed=1)
    assert found is not None, f"{name}: {holds.__name__} found no world that breaks it"
    assert found.story and len(found.story) <= 30
    assert holds(bench, examples=6, seed=1).story == found.story


def test_the_solution_holds_every_property_in_this_process(bench_world):
    aws, clock = bench_world
    bench = NotebookDlqBench(aws, clock, _functions_of({"name": "solution", "edits": []}))
    assert {name: holds(bench, examples=6, seed=7) for name, holds in PROPERTIES.items()} == dict.fromkeys(PROPERTIES)


def test_every_fresh_variant_of_lab2_is_listed_with_what_catches_it():
    assert {variant["name"] for variant in fresh_variants.variants("lab2")} == set(CAUGHT_BY_LAB2)
    assert all(CAUGHT_BY_LAB2.values()) and len(CAUGHT_BY_LAB2) >= 15
