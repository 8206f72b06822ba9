"""The labs' checks against wrong answers written by sessions that had not read them (tests/labs/fresh/, issue 47).

Every fresh variant is graded by `benchmarks/fresh_variants.py` (minutes a lab): the hidden checks catch each
one, the public checks at least 80 %. Here, within the test suite's time: `CAUGHT_BY` says which checks each
variant fails when graded; the properties run in this process on every variant whose mistake is in its consumer
(the public checks' own budget and seed), and a sample of the variants goes through the real grader, twice for
one of them to show a grading is reproducible, counterexample included.
"""

from __future__ import annotations

import textwrap

from tests import scheduling
from tests.labs import fresh_variants
from tests.labs import lab_variants
import pytest

from mercadofresco import world
from mercadofresco.clock import VirtualClock
from mercadofresco.course.run import nbrun
from mercadofresco.lessons.exercises import consumer_properties

PROPERTIES = {holds.__name__: holds for holds in consumer_properties.PROPERTIES}
# What each fresh variant of lab 1 fails when graded (benchmarks/fresh_variants.py lab1, 47 of 47 caught).
CAUGHT_BY_LAB1 = {
    "b_blames_the_sdk": {"more_likely"},
    "b_right_mechanism_wrong_reason": {"more_likely"},
    "c_gateway_key_is_the_root_fix": {"fix_order"},
    "c_more_receives_before_dlq": {"config_relations"},
    "c_visibility_equal_to_two_attempts": {"config_relations"},
    "c_visibility_ranked_above_gateway_key": {"fix_order"},
    "d_after_charge_checkpoint_after_complete": {"exactly_once", "exactly_once_despite_crashes"},
    "d_bare_except_swallows_crash": {"exactly_once", "exactly_once_despite_crashes"},
    "d_batch_failures_by_receipt_handle": {"exactly_once", "exactly_once_despite_crashes"},
    "d_charge_without_context": {"exactly_once", "exactly_once_despite_crashes"},
    "d_claim_ignores_expired_records": {"exactly_once", "exactly_once_despite_crashes"},
    "d_completed_record_without_ttl": {"record_contract"},
    "d_declined_card_is_transient": {"declined_stays_failed"},
    "d_en_curso_acknowledged": {"exactly_once", "exactly_once_despite_crashes"},
    "d_fallido_sent_back_to_the_queue": {"declined_stays_failed"},
    "d_key_is_the_message_id": {"exactly_once", "record_contract"},
    "d_key_not_sent_to_gateway": {"exactly_once_despite_crashes", "incident_replay", "record_contract"},
    "d_key_without_the_operation": {"exactly_once", "record_contract"},
    "d_lock_comparison_inverted": {"exactly_once", "exactly_once_despite_crashes"},
    "d_lock_never_expires": {"exactly_once", "exactly_once_despite_crashes"},
    "d_lock_outlives_visibility": {"exactly_once"},  # a fresh session's, 7 December: it scored 14/14 before
    "d_lock_outlasts_all_incident_attempts": {"exactly_once", "exactly_once_despite_crashes"},
    "d_lock_shorter_than_one_attempt": {"exactly_once"},
    "d_no_crash_hooks": {"exactly_once", "exactly_once_despite_crashes"},  # the same session's: 14/14 before
    "d_now_read_once_per_batch": {"exactly_once_despite_crashes"},  # a second fresh session's: 14/14 before
    "d_whole_batch_reported_failed": {"poison_reaches_the_dlq"},  # the same session's: 14/14 before
    "d_failures_as_bare_message_ids": {"poison_reaches_the_dlq"},  # the same session's: 14/14 before
    "d_poison_message_dropped": {"poison_reaches_the_dlq"},
    "d_resultado_is_the_amount": {"record_contract"},
    "d_return_inside_the_loop": {"exactly_once"},
    "d_throttled_is_permanent": {"exactly_once"},
    "d_timeout_is_permanent": {"exactly_once_despite_crashes"},
    "d_timestamps_from_the_notebook_clock": {"exactly_once", "exactly_once_despite_crashes"},
    "d_transient_keeps_the_claim": {"exactly_once"},
    "d_transient_released_but_acknowledged": {"exactly_once", "exactly_once_despite_crashes"},
    "d_ttl_in_milliseconds": {"record_contract"},
    "d_ttl_one_hour": {"exactly_once", "record_contract"},
    "d_two_states_read_then_write": {"exactly_once", "exactly_once_despite_crashes"},
    "e_counts_orders_not_charges": {"fifo_experiment"},
    "e_fifo_prevents_double_charge": {"fifo_experiment"},
    "e_no_lost_answer_in_fifo_run": {"fifo_experiment"},
    "e_resend_at_the_window_edge": {"fifo_experiment"},
    "mech1_builds_its_own_gateway": {"mechanism_visibility"},
    "mech1_sdk_retries_left_on": {"mechanism_visibility"},
    "mech2_503_instead_of_lost_answer": {"mechanism_sdk_retries"},
    "mech2_queue_visibility_left_at_120": {"mechanism_sdk_retries"},
    "mech2_two_sdk_attempts": {"mechanism_sdk_retries"},
}
# In the learner's own notebook `clock` is the invocations' clock too: only the grader's world tells them apart.
NOTEBOOK_CANNOT_TELL = {"d_timestamps_from_the_notebook_clock"}
# Through the real grader: one variant a check that is not a property, and one property's, graded twice.
GRADED_SAMPLE = (
    "b_blames_the_sdk",
    "c_more_receives_before_dlq",
    "d_ttl_in_milliseconds",
    "e_resend_at_the_window_edge",
    "mech1_sdk_retries_left_on",
    "mech2_two_sdk_attempts",
    "d_two_states_read_then_write",
)


def test_every_fresh_variant_of_lab1_is_listed_with_what_catches_it():
    assert {variant["name"] for variant in fresh_variants.variants("lab1")} == set(CAUGHT_BY_LAB1)
    assert all(caught for caught in CAUGHT_BY_LAB1.values())
    assert len(CAUGHT_BY_LAB1) >= 15


def _handler_of(variant: dict):
    """The variant's build_handler, made in this process (the cell that defines it, with the lab's imports)."""
    notebook = fresh_variants.notebook("lab1", variant)
    cell = next(cell for cell in notebook.cells if cell.cell_type == "code" and "def build_handler" in cell.source)
    namespace: dict = {}
    prelude = "from mercadofresco import orders, world\nfrom mercadofresco.models import gateway, lambda_poller\n"
    exec(compile(prelude + textwrap.dedent(cell.source), "build_handler", "exec"), namespace)
    return namespace["build_handler"]


IN_CONSUMER = sorted(
    name for name, caught in CAUGHT_BY_LAB1.items() if caught & set(PROPERTIES) and name not in NOTEBOOK_CANNOT_TELL
)


@pytest.fixture(scope="module")
def bench_world():
    clock = VirtualClock().start()
    aws = world.build()
    yield aws, clock
    aws.close()
    clock.stop()


@pytest.mark.parametrize("name", IN_CONSUMER)
def test_the_properties_find_a_smallest_world_breaking_each_fresh_consumer_and_the_same_one_twice(name, bench_world):
    aws, clock = bench_world
    variant = next(v for v in fresh_variants.variants("lab1") if v["name"] == name)
    bench = consumer_properties.NotebookBench(aws, clock, _handler_of(variant))
    expected = CAUGHT_BY_LAB1[name] & set(PROPERTIES)
    holds = PROPERTIES[min(expected)]  # the public checks' budget and seed: what the learner sees in the notebook
    found = holds(bench, examples=6, seed=1)
    assert found is not None, f"{name}: {holds.__name__} found no world that breaks it"
    assert found.story and len(found.story) <= 30
    again = holds(bench, examples=6, seed=1)
    assert (again.why, len(again.story)) == (found.why, len(found.story))


def test_the_solution_holds_every_property_in_this_process(bench_world):
    aws, clock = bench_world
    notebook_variant = {"name": "solution", "edits": []}
    bench = consumer_properties.NotebookBench(aws, clock, _handler_of(notebook_variant))
    assert [holds(bench, examples=6, seed=1) for holds in consumer_properties.PROPERTIES] == [None] * 4


def grade_sample(folder):
    """The sample and the last one again, each graded with the checks that catch it (tests/labs/lab_variants.py says
    why a variant's other checks are left out): what grading them whole cost, 93 s of the suite, buys nothing."""
    folder.mkdir(parents=True, exist_ok=True)
    for variant in fresh_variants.variants("lab1"):
        if variant["name"] in GRADED_SAMPLE:
            lab_variants.write(fresh_variants.notebook("lab1", variant), folder / f"{variant['name']}.ipynb")
    (folder / f"{AGAIN}.ipynb").write_bytes((folder / f"{GRADED_SAMPLE[-1]}.ipynb").read_bytes())
    aimed = {name: CAUGHT_BY_LAB1[name] for name in GRADED_SAMPLE} | {AGAIN: CAUGHT_BY_LAB1[GRADED_SAMPLE[-1]]}
    return lab_variants.grade_against_aimed_checks(folder, "lab1", nbrun.Limits(cell_timeout_seconds=20), aimed)


AGAIN = "zz_the_same_again"
STARTED_EARLY = SAMPLE = scheduling.Later(grade_sample)  # graded while the one-core tests run (tests/conftest.py)


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return SAMPLE.result(tmp_path_factory.mktemp("fresh"))


@pytest.mark.parametrize("name", GRADED_SAMPLE)
def test_the_grader_catches_each_sampled_fresh_variant_with_the_checks_listed(sample, name):
    failed = {result.check for result in sample[name].checks if not result.passed}
    assert CAUGHT_BY_LAB1[name] <= failed, failed
    for result in sample[name].checks:
        if result.check in PROPERTIES and not result.passed:
            assert result.story, f"{result.check} failed without its smallest world"


def test_grading_the_same_notebook_twice_gives_the_same_score_and_the_same_counterexample(sample):
    first, again = sample[GRADED_SAMPLE[-1]], sample[AGAIN]
    assert (first.score, [r.reason for r in first.checks]) == (again.score, [r.reason for r in again.checks])
    assert [r.story for r in first.checks] == [r.story for r in again.checks]
    assert any(r.story for r in first.checks)
