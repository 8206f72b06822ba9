"""Lab 2's hidden checks can fail: the blank lab and each classic runbook mistake fail, the solution passes."""

from __future__ import annotations

from pathlib import Path

from tests import scheduling
from tests.labs import fresh_variants
from tests.labs import lab2_attacks
from tests.labs import lab2_variants
from tests.labs import lab_variants
import pytest
from tests.labs import test_fresh_variants_lab2 as fresh

from mercadofresco.course.handout import labs
from mercadofresco.course.run import nbrun

CELL_TIMEOUT = 30


def grade_lab2(folder: Path) -> dict:
    """Grade the solution, the blank lab and every variant of tests/labs/lab2_variants.py (against its aimed checks)."""
    folder.mkdir(parents=True, exist_ok=True)
    lab_variants.write(lab2_variants.solution(), folder / "solution.ipynb")
    lab_variants.write(labs.handed_out("lab2"), folder / "blank.ipynb")
    for name in lab2_variants.EDITS:
        lab_variants.write(lab2_variants.variant(name), folder / f"{name}.ipynb")
    for name in lab2_attacks.ATTACKS:
        lab_variants.write(lab2_attacks.attack(name), folder / f"{name}.ipynb")
    twice = next(v for v in fresh_variants.variants("lab2") if v["name"] == fresh.GRADED_TWICE)
    for name in (fresh.GRADED_TWICE, AGAIN):  # a fresh wrong answer (tests/labs/fresh/lab2.json), graded twice
        lab_variants.write(fresh_variants.notebook("lab2", twice), folder / f"{name}.ipynb")
    limits = nbrun.Limits(cell_timeout_seconds=CELL_TIMEOUT)
    caught = fresh.CAUGHT_BY_LAB2[fresh.GRADED_TWICE]
    aimed = lab2_variants.EXPECTED_FAILURES | lab2_attacks.AIMED | {fresh.GRADED_TWICE: caught, AGAIN: caught}
    return lab_variants.grade_against_aimed_checks(folder, "lab2", limits, aimed)


AGAIN = "zz_the_same_again"
STARTED_EARLY = REPORTS = scheduling.Later(grade_lab2)  # graded while the one-core tests run (tests/conftest.py)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return REPORTS.result(tmp_path_factory.mktemp("lab2"))


def test_the_solution_passes_every_hidden_check(reports):
    report = reports["solution"]
    assert report.score == report.max_score == len(labs.check_specs(lab2_variants.solution()))
    assert report.notes == []


def test_the_blank_lab_fails_every_hidden_check(reports):
    report = reports["blank"]
    assert report.score == 0
    assert all(not result.passed for result in report.checks)


@pytest.mark.parametrize("name", sorted(lab2_variants.EXPECTED_FAILURES))
def test_each_runbook_mistake_fails_the_hidden_checks_aimed_at_it(reports, name):
    report = reports[name]
    failed = {result.check for result in report.checks if not result.passed}
    assert lab2_variants.EXPECTED_FAILURES[name] <= failed, f"{name} failed only {sorted(failed)}"
    assert not any("not run" in result.reason for result in report.checks)


def test_there_are_at_least_four_mistakes_and_each_edit_changes_the_solution():
    assert {"inspect_by_deleting", "classify_by_time", "redrive_without_rate_limit", "redrive_before_fix"} <= set(
        lab2_variants.EDITS
    )
    import nbformat

    solution = nbformat.writes(lab2_variants.solution())
    for name in lab2_variants.EDITS:
        assert nbformat.writes(lab2_variants.variant(name)) != solution


@pytest.mark.parametrize(
    "name",
    [
        "contain_receives_source",
        "inspect_by_resending",
        "always_poison",
        "v2_amount_as_cents",
        "redrive_not_idempotent",
        "batch_of_ten_at_any_rate",
        "stops_at_first_empty_receive",
        "alarm_on_source_queue",
    ],
)
def test_the_public_checks_fail_the_runbooks_classic_mistakes_and_say_what_they_saw(reports, name):
    notes = reports[name].notes  # the learner's cells as the grader ran them: the public checks among them
    assert any("CheckFailed" in note and "seen:" in note for note in notes), notes


@pytest.mark.parametrize("name", sorted(set(lab2_attacks.AIMED) - {"attack_form_body_long_poll"}))
def test_each_attack_on_lab2s_grader_fails_the_checks_it_got_past(reports, name):
    failed = {result.check for result in reports[name].checks if not result.passed}
    assert failed == lab2_attacks.AIMED[name], [(r.check, r.reason) for r in reports[name].checks]


def test_a_long_poll_smuggled_in_a_form_body_is_refused_at_once_and_holds_nothing(reports):
    (result,) = reports["attack_form_body_long_poll"].checks
    assert result.passed, result.reason  # not cut off by the time limit: the checker answered at once


def test_the_grader_catches_a_fresh_wrong_answer_and_grading_it_twice_gives_the_same_counterexample(reports):
    first, again = reports[fresh.GRADED_TWICE], reports[AGAIN]
    assert fresh.CAUGHT_BY_LAB2[fresh.GRADED_TWICE] <= {r.check for r in first.checks if not r.passed}
    said = (first.score, [r.reason for r in first.checks]), (again.score, [r.reason for r in again.checks])
    assert said[0] == said[1], (first.notes, again.notes)  # the notes say why, if a grading failed in the grader
    assert [r.story for r in first.checks] == [r.story for r in again.checks]
    story = next(r.story for r in first.checks if r.check == "redrive_loses_nothing")
    assert "its process dies at its send number 1" in " ".join(story)
