"""Lab 1's hidden checks can fail: each of the lesson's common mistakes fails at least the check aimed at it."""

from __future__ import annotations

import time

from tests.labs import lab_variants
import nbformat
import pytest
from nbclient import NotebookClient

from mercadofresco.course.handout import labs
from mercadofresco.course.run import nbrun

CELL_TIMEOUT = 10
ALWAYS_EQUAL = """class Yes(str):
    def __eq__(self, other): return True
    def __ge__(self, other): return True
    __hash__ = str.__hash__

more_likely, because, root_fix = Yes("?"), Yes("?"), Yes("?")
fix_order = [Yes("?") for _ in range(5)]
fixed_config = dict.fromkeys(["visibility_timeout_seconds", "read_timeout_seconds", "sdk_max_attempts"], Yes("?"))

class FakeRun:
    timeline = [{"event": "received", "detail": "receive #1"}, {"event": "received", "detail": "receive #2"}]
    def charges_per_order(self): return {"PED": Yes("2")}

def visibility_mechanism(aws, clock, provider): return FakeRun()"""


@pytest.fixture(scope="module")
def mistakes(tmp_path_factory):
    """Grade every variant of tests/labs/lab_variants.py against the checks aimed at it, the others against all."""
    folder = tmp_path_factory.mktemp("mistakes")
    for name in lab_variants.EDITS:
        lab_variants.write(lab_variants.variant(name), folder / f"{name}.ipynb")
    hangs = lab_variants.edited(lab_variants.HANGS_ON_ONE_ORDER, "hangs_on_one_order")
    lab_variants.write(hangs, folder / "hangs_on_one_order.ipynb")
    blank = labs.handed_out("lab1")  # no answer known, only objects that agree with anything
    blank.cells.append(nbformat.v4.new_code_cell(ALWAYS_EQUAL))
    lab_variants.write(blank, folder / "always_equal.ipynb")
    limits = nbrun.Limits(cell_timeout_seconds=CELL_TIMEOUT)
    return lab_variants.grade_against_aimed_checks(folder, "lab1", limits, lab_variants.EXPECTED_FAILURES)


@pytest.mark.parametrize("name", sorted(lab_variants.EXPECTED_FAILURES))
def test_each_common_mistake_fails_the_hidden_checks_aimed_at_it(mistakes, name):
    report = mistakes[name]
    failed = {result.check for result in report.checks if not result.passed}
    assert lab_variants.EXPECTED_FAILURES[name] <= failed, f"{name} failed only {sorted(failed)}"
    assert report.score < report.max_score
    # the mistake is in the handler or the answers, never a crash of the notebook itself
    assert not any("not run" in result.reason for result in report.checks)


def test_a_check_that_hangs_fails_with_its_reason_and_grading_goes_on_with_the_next_checks(mistakes):
    report = mistakes["hangs_on_one_order"]
    failed = [result for result in report.checks if not result.passed]
    assert [result.check for result in failed] == ["record_contract"]
    assert failed[0].reason == f"Timeout of {CELL_TIMEOUT:g} seconds exceeded waiting for your code (interrupted)"
    assert report.score == report.max_score - 1  # the checks after the one that hung still ran and passed


def test_there_are_at_least_five_mistakes_and_each_edit_changes_the_solution():
    assert len(lab_variants.EDITS) >= 5
    solution = nbformat.writes(lab_variants.solution())
    for name in lab_variants.EDITS:
        assert nbformat.writes(lab_variants.variant(name)) != solution


def test_the_solution_runs_top_to_bottom_in_under_10_seconds():
    notebook = lab_variants.solution()
    started = time.perf_counter()
    NotebookClient(notebook, timeout=30, kernel_name="python3").execute()
    seconds = time.perf_counter() - started
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    errors = [output for output in outputs if output.output_type == "error"]
    assert errors == []
    assert seconds <= 10, f"the solved lab took {seconds:.1f} s (kernel start included)"


def test_answers_that_claim_to_equal_anything_score_nothing(mistakes):
    """Objects of the learner's own class with an `__eq__` that always says yes once scored 5 of 16 with no answer."""
    report = mistakes["always_equal"]
    assert report.score == 0
    reasons = {result.check: result.reason for result in report.checks}
    assert "`more_likely` is a Yes object, not plain data" in reasons["more_likely"]
    assert "what visibility_mechanism returns is a FakeRun object" in reasons["mechanism_visibility"]


@pytest.mark.parametrize("name", ["no_table", "messageid_key", "consumer_uuid", "bare_order_key"])
def test_the_public_check_of_d_fails_the_classic_mistakes_and_says_what_it_saw(mistakes, name):
    notes = mistakes[name].notes  # the learner's cells as the grader ran them: the public checks among them
    assert any("CheckFailed" in note and "seen:" in note for note in notes), notes
