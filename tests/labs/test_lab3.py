"""Lab 3's hidden checks can fail: the blank lab and each classic outbox mistake fail, the solution passes."""

from __future__ import annotations

from pathlib import Path

from tests import scheduling
from tests.labs import fresh_variants
from tests.labs import lab3_attacks
from tests.labs import lab3_variants
from tests.labs import lab_variants
import nbformat
import pytest

from mercadofresco.course.handout import labs
from mercadofresco.course.run import nbrun

CELL_TIMEOUT = 60
# Wrong answers nobody here wrote (tests/labs/fresh/lab3.json), through the grader with their aimed checks (a grading
# that finds the same smallest world twice is shown on lab 1, tests/labs/test_fresh_variants.py).
FRESH_SAMPLE = {
    "cleanup_by_creation_date": {"cleanup_published_only"},
    "consumer_check_then_record": {"consumer_dedups"},
    "mark_after_the_claim_transaction": {"parallel_publishers"},
}


def grade_lab3(folder: Path) -> dict:
    """Grade the solution, the blank lab and every variant of tests/labs/lab3_variants.py (against its aimed checks)."""
    folder.mkdir(parents=True, exist_ok=True)
    lab_variants.write(lab3_variants.solution(), folder / "solution.ipynb")
    lab_variants.write(labs.handed_out("lab3"), folder / "blank.ipynb")
    for name in lab3_variants.NAMES:
        lab_variants.write(lab3_variants.variant(name), folder / f"{name}.ipynb")
    for variant in fresh_variants.variants("lab3"):
        if variant["name"] in FRESH_SAMPLE:
            lab_variants.write(fresh_variants.notebook("lab3", variant), folder / f"{variant['name']}.ipynb")
    for name in lab3_attacks.ATTACKS:
        lab_variants.write(lab3_attacks.attack(name), folder / f"{name}.ipynb")
    aimed = {**lab3_variants.EXPECTED_FAILURES, **FRESH_SAMPLE}
    aimed |= lab3_attacks.AIMED
    limits = nbrun.Limits(cell_timeout_seconds=CELL_TIMEOUT)
    return lab_variants.grade_against_aimed_checks(folder, "lab3", limits, aimed)


STARTED_EARLY = REPORTS = scheduling.Later(grade_lab3)  # graded while the one-core tests run (tests/conftest.py)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return REPORTS.result(tmp_path_factory.mktemp("lab3"))


def test_the_solution_passes_every_hidden_check(reports):
    report = reports["solution"]
    assert report.score == report.max_score == sum(spec.points for spec in labs.check_specs(lab3_variants.solution()))
    assert report.notes == []


def test_the_blank_lab_fails_every_hidden_check(reports):
    report = reports["blank"]
    assert report.score == 0
    assert all(not result.passed for result in report.checks)


@pytest.mark.parametrize("name", lab3_variants.NAMES)
def test_each_outbox_mistake_fails_the_hidden_checks_aimed_at_it(reports, name):
    report = reports[name]
    failed = {result.check for result in report.checks if not result.passed}
    assert lab3_variants.EXPECTED_FAILURES[name] <= failed, f"{name} failed only {sorted(failed)}"
    assert not any("not run" in result.reason for result in report.checks)


@pytest.mark.parametrize("name", sorted(FRESH_SAMPLE))
def test_the_grader_fails_a_fresh_wrong_answer_with_the_smallest_world_that_breaks_the_property(reports, name):
    failed = [result for result in reports[name].checks if not result.passed]
    assert {result.check for result in failed} == FRESH_SAMPLE[name]
    assert all(result.story for result in failed), [result.reason for result in failed]


@pytest.mark.parametrize("name", sorted(lab3_attacks.ATTACKS))
def test_each_attack_on_the_grader_fails_the_check_it_aimed_to_pass(reports, name):
    """They scored full marks, or held the grader for the notebook's whole budget, before the grader's fixes."""
    failed = {result.check: result.reason for result in reports[name].checks if not result.passed}
    assert set(failed) == lab3_attacks.AIMED[name], failed
    if name == "rls_blinds_the_rival":  # the checker's rival sees past any policy
        assert "B could take row" in failed["parallel_publishers"], failed
    if name == "trigger_holds_the_graders_session":  # cancelled after OWN_SECONDS, not after the notebook's budget
        assert "QueryCanceled" in failed["backlog"], failed


def test_the_issue_s_six_mistakes_are_among_the_variants_and_each_changes_the_solution():
    assert {
        "publish_then_commit",
        "commit_then_publish",
        "no_skip_locked",
        "no_partial_index",
        "cleanup_unpublished",
        "mark_before_publish",
    } <= set(lab3_variants.NAMES)
    solution = nbformat.writes(lab3_variants.solution())
    for name in lab3_variants.NAMES:
        assert nbformat.writes(lab3_variants.variant(name)) != solution


def test_multiple_choice_options_do_not_put_the_answer_first():
    source = "\n".join(cell.source for cell in lab3_variants.solution().cells)
    for options, answer in (("RETRY_REASONS", "no_process_left"), ("GUARANTEES", "at_least_once")):
        block = source[source.index(f"{options} = {{") :]
        first_key = block.split('"')[1]
        assert first_key != answer, f"{options} lists the correct answer first"
    for options, answer in (("CONSUMER_NEEDS", "idempotent"), ("OPERATIONS", "publisher_monitoring")):
        block = source[source.index(f"{options} = {{") :]
        assert block.split('"')[1] != answer


def test_there_are_at_least_twelve_mistakes_among_them_the_dual_write_inside_the_database():
    assert len(lab3_variants.NAMES) >= 12
    assert {"two_transactions", "no_transaction", "claim_ignores_order", "ignores_failed_entries"} <= set(
        lab3_variants.NAMES
    )


def test_lab_3_asks_for_its_reasoning_in_words_and_the_report_exports_it(reports):
    questions = labs.answer_questions(lab3_variants.solution())
    assert len(questions) == 5  # (a) to (e)
    answers = dict(reports["solution"].answers)
    assert len(answers) == 5 and all(len(text) > 100 for text in answers.values())
    assert all(text == "" for _, text in reports["blank"].answers)


@pytest.mark.parametrize("name", ["no_lock", "no_skip_locked", "publish_outside_transaction"])
def test_the_public_check_of_c_runs_two_publishers_and_says_what_it_saw(reports, name):
    notes = reports[name].notes  # the learner's cells as the grader ran them: the public checks among them
    assert any("CheckFailed" in note and ("waited" in note or "B sent" in note) for note in notes), notes


@pytest.mark.parametrize("name", ["two_transactions", "no_transaction"])
def test_the_public_check_of_b_fails_an_order_and_its_event_saved_apart_and_says_what_it_saw(reports, name):
    """The dual write inside the database: an INSERT that fails after the other one committed leaves half a fact."""
    notes = reports[name].notes
    assert any("CheckFailed" in note and "kept after the INSERT into" in note for note in notes), notes


def test_lab_3_states_everything_its_checks_expect():
    text = "\n".join(cell.source for cell in labs.handed_out("lab3").cells if cell.cell_type == "markdown")
    for stated in ("every second", "100 rows", "more than 500 rows", "older than 60 s", "db.reset()"):
        assert stated in text, stated
    for stated in ("partial index", "idempotency.run_once", "with conn.transaction():", "at most 10 entries"):
        assert stated in text, stated
