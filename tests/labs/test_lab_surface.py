"""The labs' surface for a term (issue 48, item 5; docs/lab-surface.md): the names the labs call stay, a name that
moves keeps working with a warning naming its new place, and a lab filled on an earlier release still grades."""

from __future__ import annotations

import re
import subprocess
import warnings
from pathlib import Path

import nbformat
import pytest

from mercadofresco import moved
from mercadofresco.course import grading
from mercadofresco.course.handout import labs
from mercadofresco.course.run import nbrun

ROOT = Path(__file__).resolve().parents[2]
SURFACE = ROOT / "docs" / "lab-surface.md"
OLD_LABS = ROOT / "tests" / "labs" / "old_labs"
TWO_RELEASES_AGO = OLD_LABS / "lab1_double_charge@37a9d92.ipynb"
BEFORE_THE_MOVES = OLD_LABS / "lab1_double_charge@27b7149.ipynb"


def _called(path: Path) -> set[str]:
    notebook = nbformat.read(path, as_version=4)
    return set(moved.names_in("\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")))


def _documented() -> set[str]:
    names = set()
    for module, rest in re.findall(r"^\| `(mercadofresco[^`]*)` \|(.*)\|$", SURFACE.read_text(), re.MULTILINE):
        names |= {module} | {f"{module}.{name}" for name in re.findall(r"`([^`]+)`", rest)}
    return names


def test_the_labs_call_exactly_the_documented_surface_and_every_name_of_it_exists():
    called = set()
    for lab in labs.LABS:
        called |= _called(ROOT / "labs" / labs.lab_file(lab)) | _called(ROOT / "solutions" / labs.lab_file(lab))
    documented = _documented()
    assert called - documented == set(), "the labs call names docs/lab-surface.md does not promise"
    named_on_the_way = {name for name in documented if any(other.startswith(name + ".") for other in called)}
    assert documented - called - named_on_the_way == set(), "docs/lab-surface.md promises names no lab calls"
    with warnings.catch_warnings():
        warnings.simplefilter("error", moved.MovedName)  # the surface is today's names, none of them moved
        for name in sorted(documented):
            moved.resolve(name)


def test_the_surface_check_sees_a_name_the_labs_call_that_is_not_documented(tmp_path):
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("from mercadofresco import world\nworld.gone")]
    )
    nbformat.write(notebook, tmp_path / "lab.ipynb")
    assert _called(tmp_path / "lab.ipynb") - _documented() == {"mercadofresco.world.gone"}


@pytest.mark.parametrize("old", sorted(moved.MOVES))
def test_a_moved_name_still_gives_its_object_with_a_warning_that_names_the_new_one(old):
    module, _, name = old.rpartition(".")
    with pytest.warns(moved.MovedName, match=re.escape(moved.MOVES[old].new)):
        found = getattr(__import__(module, fromlist=[name]), name)
    assert found is moved.resolve(moved.MOVES[old].new)


def test_a_name_that_never_existed_is_still_an_attribute_error():
    from mercadofresco.lessons import delivery

    with pytest.raises(AttributeError, match="has no attribute 'run_everything'"):
        delivery.run_everything  # noqa: B018


def test_the_old_labs_are_what_git_history_holds():
    for path in sorted(OLD_LABS.glob("*.ipynb")):
        lab, commit = path.stem.split("@")
        shown = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{commit}:solutions/{lab}.ipynb"], capture_output=True, check=False
        )
        if (shown.returncode and b"bad object" in shown.stderr + shown.stdout) or b"unknown revision" in shown.stderr:
            pytest.skip(f"this clone has no history back to {commit} (a shallow clone)")
        assert shown.returncode == 0, shown.stderr.decode(errors="replace")
        assert shown.stdout == path.read_bytes(), f"{path.name} is not solutions/{lab}.ipynb at {commit}"


def test_lab1_filled_two_releases_ago_scores_full_marks_and_one_filled_before_the_moves_is_told_each_move(
    tmp_path,
):
    # Two releases ago lab 1's solution was byte for byte today's, which tests/labs/test_grading.py grades to full marks
    # (ana_solution); once they differ, it is graded here too.
    old_labs = [BEFORE_THE_MOVES]
    if TWO_RELEASES_AGO.read_bytes() != (ROOT / "solutions" / labs.lab_file("lab1")).read_bytes():
        old_labs.append(TWO_RELEASES_AGO)
    for path in old_labs:
        (tmp_path / path.name.replace("@", "_")).write_bytes(path.read_bytes())
    reports = {r.learner: r for r in grading.grade(tmp_path, "lab1", nbrun.Limits(), jobs=2)}
    if TWO_RELEASES_AGO in old_labs:
        recent = reports[TWO_RELEASES_AGO.stem.replace("@", "_")]
        assert recent.score == recent.max_score, [(r.check, r.reason) for r in recent.checks if not r.passed]

    old = reports[BEFORE_THE_MOVES.stem.replace("@", "_")]
    calls = moved.used_in(
        "\n".join(c.source for c in nbformat.read(BEFORE_THE_MOVES, 4).cells if c.cell_type == "code")
    )
    assert len(calls) == 4
    for name in calls:  # each move named in the report, with its new name
        assert any(moved.MOVES[name].new in note for note in old.notes), (name, old.notes)
    assert not any("AttributeError" in note for note in old.notes), old.notes
    failed = {r.check: r.reason for r in old.checks if not r.passed}
    # what failed is what the lab itself changed since: its experiment functions now take the checker's gateway
    assert set(failed) == {"mechanism_visibility", "mechanism_sdk_retries", "fifo_experiment"}, failed
    for reason in failed.values():
        assert "cannot take the checks' arguments" in reason and "def line" in reason, reason


def test_the_checker_knows_the_kernels_word_for_parameters_that_differ():
    from mercadofresco.course import checker
    from mercadofresco.course.checker import learner_side

    assert (learner_side.ArgumentsDiffer.__module__, learner_side.ArgumentsDiffer.__name__) == checker.ARGUMENTS_DIFFER
    with pytest.raises(learner_side.ArgumentsDiffer):
        learner_side._takes(lambda aws, clock: None, [1, 2, 3], {})
    learner_side._takes(lambda aws, clock, provider=None: None, [1, 2, 3], {})  # the lab's parameters: no word


def test_a_decorated_function_is_judged_by_what_its_wrapper_takes():
    import functools

    from mercadofresco.course.checker import learner_side

    def adapting(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):  # takes anything, passes on what the wrapped function wants
            return function(*args[:2])

        return wrapper

    learner_side._takes(adapting(lambda aws, clock: None), [1, 2, 3], {})


def test_code_made_to_break_or_slow_the_parser_gets_a_note_not_the_graders_time():
    """helper-7's attacks: an expression too deep for the parser (MemoryError) once made the grader drop the whole
    report ("grade it by hand"); 60,000 attribute lines took 40 s of the grader's own process."""
    assert moved.names_in("x = " + "-" * 100_000 + "1") == []
    assert moved.names_in("import mercadofresco as m\nm" + ".a" * 5_000) == []  # too deep: nothing, no error
    huge = nbformat.v4.new_code_cell("import mercadofresco as m\n" + "m.a\n" * (grading.MOVED_SCAN_CHARS // 4))
    notes = grading.moved_names(nbformat.v4.new_notebook(cells=[huge]))
    assert notes == [f"your code was not read for moved names: it is over {grading.MOVED_SCAN_CHARS:,} characters"]
