"""The build step (labs/ from solutions/) and the grading command, end to end on four notebooks."""

from __future__ import annotations

import ast
import csv
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from tests.labs import lab_variants
import nbformat
import pytest

from mercadofresco.course import checker, checks, grading, protocol
from mercadofresco.course.grading import reports
from mercadofresco.course.handout import labs, selfcheck_report
from mercadofresco.course.run import nbrun, watch
from mercadofresco.course.run.limits import MIN_MEMORY_MB

CELL_TIMEOUT = "10"  # generous for a slow CI machine; the solution's slowest cell takes about 2 s


# -- the build step ----------------------------------------------------------------------
def test_strip_solutions_keeps_the_code_around_and_the_indentation():
    source = "def f():\n    x = 1\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION\n\nf()"
    assert labs.strip_solutions(source) == (
        "def f():\n    x = 1\n"
        "    # YOUR CODE HERE: replace the next line with your solution.\n"
        '    raise NotImplementedError("your code here")\n\nf()'
    )


@pytest.mark.parametrize(
    "source",
    [
        "### BEGIN SOLUTION\nx = 1",
        "x = 1\n### END SOLUTION",
        "### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION",
    ],
)
def test_malformed_solution_regions_are_refused(source):
    with pytest.raises(labs.SolutionFormatError):
        labs.strip_solutions(source)


def test_the_lab_has_no_hidden_cells_no_outputs_and_no_grader_metadata():
    solution = nbformat.read(labs.SOLUTIONS_DIR / labs.lab_file("lab1"), as_version=4)
    lab = labs.lab_notebook(solution)
    # lab 1's hidden checks live in solutions/checks/lab1.py and run in the grader's process
    assert labs.checks_file(solution) == labs.SOLUTIONS_DIR / "checks" / "lab1.py"
    assert len(labs.check_specs(solution)) == 12
    assert labs.METADATA_KEY not in lab.metadata  # the learner's copy does not name the checks module
    assert all(cell.outputs == [] and cell.execution_count is None for cell in lab.cells if cell.cell_type == "code")
    assert len(lab.cells) == len(solution.cells)
    assert solution.cells[3].source != lab.cells[3].source  # the input was not modified in place


def _hidden_lines(solution) -> list[str]:
    """The lines of the hidden checks that hold a verdict: their asserts and check functions' names."""
    code = [line.strip() for line in labs.checks_file(solution).read_text().splitlines()]
    return [line for line in code if line.startswith(("assert ", "def check_"))]


def _drift(built: dict[str, bytes], committed) -> list[str]:
    """Maintainers' check: the labs the build makes that differ from what git holds (`committed(name)`)."""
    return [name for name, text in sorted(built.items()) if committed(name) != text]


def _name(path: Path, folder: Path) -> str:
    """A built lab's name under labs/: `lab1_double_charge.ipynb`, `es/lab1_double_charge.ipynb`."""
    return path.relative_to(folder).as_posix()


def _in_git(name: str, checkout: Path = labs.ROOT) -> bytes | None:
    result = subprocess.run(["git", "show", f"HEAD:labs/{name}"], cwd=checkout, capture_output=True, check=False)
    return result.stdout if result.returncode == 0 else None


def test_labs_in_git_are_what_the_build_makes_from_solutions(tmp_path):
    if not (labs.ROOT / ".git").exists():
        pytest.skip("not a git checkout (a learner's bundle): nothing committed to compare")
    built = {_name(path, tmp_path): path.read_bytes() for path in labs.build(labs.SOLUTIONS_DIR, tmp_path).written}
    drifted = _drift(built, _in_git)
    assert drifted == [], (
        f"maintainers: labs/ in git differs from what `python -m mercadofresco.course.grading build` makes of "
        f"solutions/ for {drifted}: rebuild and commit labs/ (a learner's work in labs/ is never checked here)"
    )


def test_the_drift_check_ignores_a_learners_edits_in_place_and_still_catches_a_stale_commit(tmp_path):
    if not (labs.ROOT / ".git").exists():
        pytest.skip("not a git checkout (a learner's bundle): nothing committed to compare")
    built = {_name(path, tmp_path / "built"): path.read_bytes() for path in labs.build(labs.SOLUTIONS_DIR, tmp_path / "built").written}
    name = labs.lab_file("lab1")
    # The learner's edit goes in a clone's working tree, not this one's: the browser suite may have the lab open.
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--shared", str(labs.ROOT), str(clone)], check=True)
    working = clone / "labs" / name
    working.write_text(working.read_text().replace('raise NotImplementedError("your code here")', "x = 1", 1))
    assert _drift(built, lambda name: _in_git(name, clone)) == []  # the edit plays no part
    stale = {**built, name: built[name].replace(b"YOUR CODE HERE", b"YOUR CODE THERE", 1)}
    assert _drift(built, stale.get) == [name]


def test_nothing_of_the_solution_or_the_hidden_checks_leaks_into_labs():
    solution = nbformat.read(labs.SOLUTIONS_DIR / labs.lab_file("lab1"), as_version=4)
    text = labs.render(labs.handed_out("lab1"))
    assert labs.leaks(text) == []
    hidden_lines = _hidden_lines(solution)
    answers = ['more_likely = "visibility"', "ReturnValuesOnConditionCheckFailure", "caduca_bloqueo < :now"]
    distinctive = [line for line in hidden_lines if len(line) > 30] + answers
    assert [line for line in distinctive if line in text] == []
    sources = "\n".join(cell.source for cell in nbformat.reads(text, as_version=4).cells)
    assert sources.count('raise NotImplementedError("your code here")') == 7  # one per solution region


def test_check_ids_are_unique_and_every_check_has_a_hint():
    specs = labs.check_specs(nbformat.read(labs.SOLUTIONS_DIR / labs.lab_file("lab1"), as_version=4))
    assert len(specs) == 12
    assert all(len(spec.hint) > 40 for spec in specs)


# -- pieces of the grader ------------------------------------------------------------------
def test_expect_says_what_it_saw_only_when_it_fails():
    asked = []
    checks.expect(lambda: True, "unused", seen=lambda: asked.append(1))
    assert asked == []
    with pytest.raises(checks.CheckFailed, match=r"^count the charges \(seen: \{'PED-2026-084417': 2\}\)$"):
        checks.expect(False, "count the charges", seen=lambda: {"PED-2026-084417": 2})
    with pytest.raises(checks.CheckFailed, match=r"seen: nothing readable \(NameError\)"):
        checks.expect(False, "count the charges", seen=lambda: undefined_name)  # noqa: F821


def test_expect_turns_a_false_condition_or_an_error_into_the_hint():
    checks.expect(lambda: True, "unused")
    with pytest.raises(checks.CheckFailed, match=r"^count the charges$"):
        checks.expect(False, "count the charges")
    with pytest.raises(checks.CheckFailed, match=r"count the charges \(the check could not run: NameError"):
        checks.expect(lambda: undefined_name, "count the charges")  # noqa: F821


def test_a_part_runs_every_check_ticks_those_that_hold_and_fails_once_with_all_that_did_not(capsys):
    with pytest.raises(checks.CheckFailed) as failed, checks.part("(d)"):
        checks.expect(False, "each order charged once; look at the timeline", seen=lambda: {"PED-2026-084417": 2})
        checks.expect(True, "the table holds cobro:<pedido_id>: read it back")
        checks.expect(lambda: undefined_name, "the replay ran")  # noqa: F821
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        "✗ failed: each order charged once; look at the timeline (seen: {'PED-2026-084417': 2})",
        "✓ passed: the table holds cobro:<pedido_id>",  # the rule, without its advice; the word, for a screen reader
        "✗ failed: the replay ran (the check could not run: NameError: name 'undefined_name' is not defined)",
    ]
    read = [line.removeprefix("✗ failed: ") for line in (printed[0], printed[2])]
    assert str(failed.value).splitlines() == read  # what selfcheck and the grader read
    shown = failed.value._render_traceback_()  # what JupyterLab shows instead of a traceback: one line
    assert len(shown) == 1 and "public check (d): 2 failed (the lines above)" in shown[0]
    assert shown[0].startswith("\x1b[1;31m")  # bold: JupyterLab's intense red, 5:1 where plain red is under 3:1


def test_a_part_reports_code_that_raised_between_its_checks_and_says_passed_when_all_held(capsys):
    with pytest.raises(checks.CheckFailed, match=r"^public check \(c\) stopped: KeyError: 'ids'$"), checks.part("(c)"):
        checks.expect(True, "publisher A sent its batch")
        {}["ids"]
    assert capsys.readouterr().out.splitlines()[-1] == "✗ failed: public check (c) stopped: KeyError: 'ids'"
    with checks.part("(e)"):
        checks.expect(True, "backlog: 1 pending row", holds="backlog: 1 pending row, waiting 45 s")
    assert capsys.readouterr().out.splitlines() == [
        "✓ passed: backlog: 1 pending row, waiting 45 s",
        "public check (e) passed",
    ]


@pytest.mark.parametrize(("name", "value"), [("cell_timeout_seconds", 0), ("memory_mb", 100)])
def test_run_limits_refuse_values_out_of_range(name, value):
    with pytest.raises(ValueError, match=name):
        nbrun.Limits(**{name: value})


SPECS = [checker.Check(f"check_{i}", f"hint {i}") for i in range(3)]
PLAN = (protocol.Cell(protocol.LEARNER), protocol.Cell(protocol.LEARNER), protocol.Cell(protocol.END))


def _row(cell, outcome="passed", reason=""):
    return protocol.CellRow(cell, PLAN[cell].role, outcome, reason, stops=protocol.stops(reason))


def _verdict(number, verdict=True, reason=""):
    return protocol.CheckRow(f"check_{number}", verdict, reason)


def test_a_check_passes_only_on_the_checkers_own_row():
    rows = [_row(0), _row(1), _row(2), _verdict(0), _verdict(1, False, "AssertionError: 2 charges")]
    forged = {"kind": "cell", "cell": 5, "role": "learner", "outcome": "passed", "reason": "", "check": "check_2"}
    rows.append(protocol.row_from_json(forged | {"verdict": True}))  # not the checker's: no verdict
    report = grading.score(rows, PLAN, SPECS, nbrun.Run(rows))
    assert [result.passed for result in report.checks] == [True, False, False]
    assert report.checks[1].reason == "AssertionError: 2 charges"
    assert report.checks[2].reason == "not run: grading stopped before the checks"


def test_the_checkers_notes_reach_the_report():
    rows = [_row(0), _row(1), _verdict(0), protocol.NoteRow("the kernel sent 3 message(s) out of turn")]
    report = grading.score(rows, PLAN, SPECS, nbrun.Run(rows))
    assert report.notes == ["the kernel sent 3 message(s) out of turn"]


def test_a_learner_cell_cut_off_by_the_time_limit_is_noted_and_the_checks_still_run():
    slow = "Timeout of 5 seconds exceeded executing cell (interrupted)"
    rows = [_row(0), _row(1, "failed", slow), _verdict(0), _verdict(1, False)]
    report = grading.score(rows, PLAN, SPECS, nbrun.Run(rows))
    assert [result.passed for result in report.checks][:2] == [True, False]
    assert report.notes == [f"your code cell [2]: {slow}"]


def test_a_learner_cell_that_could_not_be_interrupted_or_killed_the_kernel_stops_every_check_after_it():
    for reason in (
        "Timeout of 5 seconds exceeded while executing cell. Failed to interrupt kernel in 10 seconds",
        "Kernel died while running the cell",
        "MemoryError: the cell ran out of memory (the grader's memory limit)",
    ):
        rows = [_row(0), _row(1, "failed", reason)]
        report = grading.score(rows, PLAN, SPECS, nbrun.Run(rows))
        assert not any(result.passed for result in report.checks)
        assert all(
            result.reason.startswith("not run: grading stopped at your code cell [2]") for result in report.checks
        )


def test_a_file_that_is_not_a_notebook_fails_every_check_and_grading_goes_on(tmp_path):
    (tmp_path / "broken.ipynb").write_text("{ not json")
    solution = nbformat.read(labs.SOLUTIONS_DIR / labs.lab_file("lab1"), as_version=4)
    setting = grading.Setting(solution, nbrun.Limits(), tmp_path, {}, (), False)
    report = grading.grade_notebook(tmp_path / "broken.ipynb", setting)
    assert (report.score, report.max_score) == (0, 14)
    assert {result.reason for result in report.checks} == {"not run: unreadable notebook"}
    assert report.notes[0].startswith("could not read broken.ipynb")


def test_spreadsheet_formulas_are_escaped_and_file_names_made_safe():
    values = ("=cmd", "+1+cmd", "-2-x", "@x", "ok", 3, "-20%", "+1", "'=ana")
    assert [reports.spreadsheet_safe(v) for v in values] == [
        "'=cmd",
        "'+1+cmd",
        "'-2-x",
        "'@x",
        "ok",
        3,
        "-20%",  # a plain number is no formula: shown as it is, not as '-20%
        "+1",
        "''=ana",  # a spreadsheet hides one leading apostrophe: '=ana and =ana stay two names
    ]
    taken = set()
    assert [reports.file_name(n, taken) for n in ("bea[2]", "bea_2_", "=cmd", "../x")] == [
        "bea_2_",
        "bea_2_-2",
        "_cmd",
        "_x",
    ]


def test_written_answers_are_found_by_cell_id_or_by_question():
    solution = nbformat.read(labs.SOLUTIONS_DIR / labs.lab_file("lab1"), as_version=4)
    learner = labs.handed_out("lab1")
    answer_cell = next(cell for cell in learner.cells if labs.MARKDOWN_PROMPT in cell.source)
    answer_cell.source = answer_cell.source.replace(labs.MARKDOWN_PROMPT, "=SUM(A1) because 150 s lies between")
    answers = labs.written_answers(learner, solution)
    assert len(answers) == 2 and answers[0][1] == "=SUM(A1) because 150 s lies between" and answers[1][1] == ""
    del answer_cell["id"]
    assert labs.written_answers(learner, solution)[0][1] == "=SUM(A1) because 150 s lies between"


def test_multiple_choice_options_are_in_alphabetical_order_and_no_ranking_is_shown():
    import ast

    names = {"lab1": ("MECHANISMS", "REASONS", "FIXES"), "lab2": ("MISLEADING", "FIXES", "RATE_REASONS", "SAFEGUARDS")}
    for lab, wanted in names.items():
        notebook = labs.handed_out(lab)
        found = {}
        for cell in notebook.cells:
            if cell.cell_type != "code":
                continue
            code = "\n".join(line for line in cell.source.splitlines() if not line.startswith("%"))
            for node in ast.parse(code).body:
                if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) in wanted:
                    found[node.targets[0].id] = list(ast.literal_eval(node.value))
        assert set(found) == set(wanted)
        assert all(options == sorted(options) for options in found.values()), found


def test_the_learner_bundle_has_no_solutions(tmp_path):
    import zipfile

    from mercadofresco.course.handout import bundle

    names = zipfile.ZipFile(bundle.write(tmp_path / "b.zip")).namelist()
    assert any(name.endswith("labs/lab1_double_charge.ipynb") for name in names)
    assert any(name.endswith("mercadofresco/course/selfcheck.py") for name in names)
    assert not any("/solutions/" in name or "/tests/" in name or "/.git/" in name for name in names)
    grader = ("course/checker.py", "course/grading.py", "course/sandbox.py", "course/watch.py", "course/nbrun.py")
    assert not any(name.endswith(grader) for name in names)


# -- the command, on four notebooks ------------------------------------------------------------
@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """`python -m mercadofresco.course.grading grade` on the solution, the blank lab, a mistake and an endless loop."""
    folder = tmp_path_factory.mktemp("submissions")
    lab_variants.write(lab_variants.solution(), folder / "ana_solution.ipynb")
    lab_variants.write(labs.handed_out("lab1"), folder / "bea_blank.ipynb")
    lab_variants.write(lab_variants.variant("messageid_key"), folder / "carla_messageid.ipynb")
    lab_variants.write(lab_variants.looping(), folder / "dani_loops.ipynb")
    out = tmp_path_factory.mktemp("report")
    command = [
        sys.executable,
        "-m",
        "mercadofresco.course.grading",
        "grade",
        str(folder),
        "--lab",
        "lab1",
        "--out",
        str(out),
    ]
    started = time.perf_counter()
    result = subprocess.run(
        [*command, "--cell-timeout", CELL_TIMEOUT, "--jobs", "3"], capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    assert result.returncode == 0, result.stderr
    return result.stdout, json.loads((out / "report.json").read_text()), out / "report.csv", seconds


def test_the_command_prints_the_expected_score_of_each_learner(graded):
    stdout, _, _, seconds = graded
    table = stdout.split("\n\n")[0].splitlines()
    scores = {line.split()[0]: line.split()[1] for line in table[2:]}
    expected = {"ana_solution": "14/14", "bea_blank": "0/14", "carla_messageid": "7/14"}
    assert {name: score for name, score in scores.items() if name != "dani_loops"} == expected
    assert int(scores["dani_loops"].split("/")[0]) < 14  # its first function never returns
    assert seconds < 180, f"grading four notebooks took {seconds:.0f} s"


def test_the_looping_notebook_is_cut_off_reported_and_only_a_dead_kernel_stops_the_checks(graded):
    stdout, report, _, _ = graded
    dani = next(learner for learner in report["learners"] if learner["learner"] == "dani_loops")
    # cut off by the time limit, or by the memory limit if the list fills it first
    slow = f"your code cell [2]: Timeout of {CELL_TIMEOUT} seconds exceeded executing cell (interrupted)"
    assert dani["notes"], f"no note on the looping notebook (seen once on a loaded box): {dani}"
    assert dani["notes"][0] in (
        slow,
        "your code cell [2]: MemoryError: the cell ran out of memory (the grader's memory limit)",
    )
    stopped = [check for check in dani["checks"] if check["reason"].startswith("not run: grading stopped at")]
    if dani["notes"][0] == slow and not any("memory" in note for note in dani["notes"]):  # interrupted: it went on
        assert stopped == [] and any(not check["passed"] for check in dani["checks"])
    else:
        assert dani["score"] == 0 and len(stopped) == len(dani["checks"])
    assert "dani_loops: " in stdout and "\n  note: your code cell [2]: " in stdout


def test_feedback_names_failed_checks_and_hints_but_never_shows_hidden_source(graded):
    stdout, report, csv_path, _ = graded
    carla = next(learner for learner in report["learners"] if learner["learner"] == "carla_messageid")
    failed = {check["check"] for check in carla["checks"] if not check["passed"]}
    assert failed == {
        "record_contract",
        "exactly_once",
        "exactly_once_despite_crashes",
        "declined_stays_failed",
        "poison_reaches_the_dlq",
    }
    assert "FAILED exactly_once: AssertionError: order 1 (PED-2026-900010) was charged 2 times" in stdout
    assert "hint: (d) every order is charged exactly once with the table alone" in stdout
    solution = lab_variants.solution()
    hidden = _hidden_lines(solution)
    shown = stdout + json.dumps(report) + csv_path.read_text()
    assert [line for line in hidden if len(line) > 25 and line in shown] == []
    assert "lab.call(" not in shown and "fresh(lab" not in shown


def test_the_blank_lab_fails_public_checks_with_hints_not_bare_assertions(graded):
    _, report, _, _ = graded
    bea = next(learner for learner in report["learners"] if learner["learner"] == "bea_blank")
    public = [note for note in bea["notes"] if "CheckFailed" in note]
    assert len(public) == 6
    assert all("(the check could not run: NameError" in note for note in public)
    ana = next(learner for learner in report["learners"] if learner["learner"] == "ana_solution")
    assert ana["notes"] == []


def test_the_csv_has_one_row_per_learner_and_check_and_a_total(graded):
    _, report, csv_path, _ = graded
    rows = list(csv.DictReader(csv_path.open()))
    checks = [row for row in rows if row["check"] not in ("TOTAL", "WRITTEN")]  # WRITTEN: points given by hand
    assert len(checks) == 4 * 12 and sum(row["check"] == "WRITTEN" for row in rows) == 4
    by_learner = {}
    for row in checks:
        by_learner[row["learner"]] = by_learner.get(row["learner"], 0) + int(row["points"])
    assert by_learner == {learner["learner"]: learner["score"] for learner in report["learners"]}
    totals = {row["learner"]: int(row["points"]) for row in rows if row["check"] == "TOTAL"}
    assert totals == by_learner
    feedback = csv_path.parent / "feedback" / "carla_messageid.md"
    assert "**Score: 7/18** (checks 7/14, written answers 0/4)" in feedback.read_text()  # answers not marked yet


def test_lab1_lock_is_shorter_than_the_queue_visibility_as_notebook_03_says():
    lab = labs.handed_out("lab1")
    source = next(cell.source for cell in lab.cells if "LOCK_SECONDS =" in cell.source)
    lock = int(source.split("LOCK_SECONDS =", 1)[1].split()[0])
    assert 2 * 30 < lock < 120  # longer than one delivery of the fixed configuration, shorter than the visibility


def test_the_learners_own_check_names_a_cell_as_jupyterlab_numbers_it_and_the_answers_still_blank(tmp_path, capsys):
    from mercadofresco.course import selfcheck

    notebook = labs.handed_out("lab1")
    path = lab_variants.write(notebook, tmp_path / "lab1_double_charge.ipynb")
    assert selfcheck.main([str(path)]) == 1
    out = capsys.readouterr().out
    assert "  cell [2] (" in out and "NotImplementedError" in out  # [N]: the number after Run All
    said = int(re.search(r"(\d+) cell\(s\) failed", out).group(1))
    assert said == out.count("\n  cell [")  # the cells it lists, not its lines (a check cell's are several)
    assert "2 written answer(s) still blank" in out
    assert "WARNING" not in out


def test_the_learners_own_check_says_how_many_hidden_checks_remain(tmp_path, capsys):
    from mercadofresco.course import selfcheck

    wrong_answer = [("l10", 'more_likely = "visibility"', 'more_likely = "sdk_retries"')]
    notebook = lab_variants.edited(wrong_answer, "sdk_retries")  # public checks pass; a hidden one would not
    notebook.metadata[labs.LAB_METADATA_KEY] = {"hidden_checks": 12}
    path = lab_variants.write(notebook, tmp_path / "mine.ipynb")
    assert selfcheck.main([str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"checking {path} as saved (save it in JupyterLab first)")
    assert lines[1:] == ["public checks passed; 12 hidden checks run at grading"]  # no warning, no blank answer
    lab = labs.handed_out("lab1")
    assert lab.metadata[labs.LAB_METADATA_KEY]["hidden_checks"] == 12


def run_in_a_kernel(folder: Path, *sources: str) -> tuple[str, list[dict]]:
    """Run `sources` one after the other in a fresh kernel in `folder`, as cells: its printed text and displays."""
    import os

    from jupyter_client.manager import start_new_kernel

    env = {key: value for key, value in os.environ.items() if key != labs.WHOLE_RUN_ENV}  # conftest sets it
    manager, client = start_new_kernel(cwd=str(folder), env=env, extra_arguments=["--IPKernelApp.log_level=ERROR"])
    messages: list[dict] = []
    try:
        for source in sources:
            client.execute_interactive(source, output_hook=messages.append, timeout=120)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    text = "".join(m["content"].get("text", "") for m in messages if m["msg_type"] == "stream")
    return text, [m["content"]["data"] for m in messages if m["msg_type"] == "display_data"]


CHECK_CELL = 'from mercadofresco.course import selfcheck\nselfcheck.here("lab1_double_charge.ipynb")'


def test_the_check_cell_asks_for_a_save_when_the_saved_file_lacks_the_cell_run_last(tmp_path):
    lab_variants.write(labs.handed_out("lab1"), tmp_path / "lab1_double_charge.ipynb")
    text, displays = run_in_a_kernel(tmp_path, "pedido = 'PED-2026-084417'  # typed, run, never saved", CHECK_CELL)
    assert "does not hold the cell you ran last (pedido = 'PED-2026-084417'" in text
    assert "checking" not in text  # no run of a file that is not what the learner sees
    assert all(len(line) <= selfcheck_report.WIDTH for line in text.splitlines())  # broken between words, not in one
    assert 'data-commandlinker-command="docmanager:save"' in displays[0]["text/html"]


def test_the_check_cell_runs_the_saved_lab_when_it_holds_the_cell_run_last(tmp_path):
    lab = labs.handed_out("lab1")
    lab_variants.write(lab, tmp_path / "lab1_double_charge.ipynb")
    first = next(cell.source for cell in lab.cells if cell.cell_type == "code")
    public_only = CHECK_CELL.replace('.ipynb")', '.ipynb", hidden=False)')  # the browser test runs the grader too
    text, displays = run_in_a_kernel(tmp_path, first, public_only)
    assert "checking lab1_double_charge.ipynb as saved" in text
    report = displays[-1]
    assert "  cell [2] (" in report["text/plain"] and "NotImplementedError" in report["text/plain"]
    html = report["text/html"]
    assert html.count("<details open>") == 1 and "✗ <b>cell def " in html  # the first failure open, the rest folded
    assert "✗ <b>public check (a, mechanism 1)</b> failed (cell [4])" in html
    assert str(tmp_path) not in text + report["text/plain"] + html  # no absolute path
    assert all(len(line) <= selfcheck_report.WIDTH for line in text.splitlines())


def test_selfcheck_runs_cells_as_the_grader_does_a_slow_cell_interrupted_and_the_next_ones_run(tmp_path):
    from mercadofresco.course import selfcheck

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("import time\ntime.sleep(30)"),
        nbformat.v4.new_code_cell("# Public check (a)\nprint('ran')"),
    ]
    path = lab_variants.write(notebook, tmp_path / "slow.ipynb")
    cells, stopped, _ = selfcheck.examine(path, timeout=1)
    assert cells[0].problem == ("Timeout of 1 seconds exceeded executing cell (interrupted)",)
    assert cells[1] == selfcheck.Cell(2, "# Public check (a)", "(a)") and stopped == ""
    assert not protocol.stops(cells[0].problem[0])  # the grader goes on after it too


def test_selfcheck_stops_where_the_grader_stops_at_a_kernel_that_died(tmp_path):
    from mercadofresco.course import selfcheck

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in ("x = 1", "import os\nos._exit(1)", "x = 2")]
    path = lab_variants.write(notebook, tmp_path / "dies.ipynb")
    cells, stopped, _ = selfcheck.examine(path, timeout=10)
    assert [cell.number for cell in cells] == [1, 2] and cells[1].problem == (protocol.KERNEL_DIED,), (cells, stopped)
    assert stopped == f"grading stops at cell [2] ({protocol.KERNEL_DIED}): no check after it runs"


def test_the_check_cell_idles_in_a_whole_notebook_run(tmp_path):
    """selfcheck's own run, the grader's and a maintainer's refresh run the lab's last cell: it must not recurse."""
    lab_variants.write(labs.handed_out("lab1"), tmp_path / "lab1_double_charge.ipynb")
    text, _ = run_in_a_kernel(tmp_path, f"import os\nos.environ[{labs.WHOLE_RUN_ENV!r}] = '1'", CHECK_CELL)
    assert "checks nothing from inside it" in text


def test_the_instructor_guide_matches_the_grader():
    section = (labs.ROOT / "docs" / "instructor.md").read_text()  # the README's "For instructors", grown into a guide
    limits = nbrun.Limits()
    for text in [
        f"--cell-timeout {limits.cell_timeout_seconds:g}",
        f"--memory-mb {limits.memory_mb}",
        f"refused below {MIN_MEMORY_MB}",
        "--jobs",
        "--out DIR (default grading-report-lab1/)",
        "report.csv",
        "answers.csv",
        "feedback/<learner>.md",
        "report.json",
        "TOTAL",
        "make learner-bundle",
        "python -m mercadofresco.course.selfcheck",
        "public checks passed; 12 hidden checks run at grading",
        "mercadofresco-learner-0",
        "bea[2].ipynb",
    ]:
        assert text in section, f"docs/instructor.md no longer says {text!r}"
    assert sandbox_user_prefix() in section


def sandbox_user_prefix() -> str:
    from mercadofresco.course.run import sandbox

    return sandbox.USER_PREFIX


def test_the_grader_keeps_at_most_output_chars_of_a_cell(monkeypatch):
    from mercadofresco.course.run import nbplugin

    chunk = "y" * 1_000_000
    sent = [{"msg_type": "stream", "parent_header": {"msg_id": "m1"}, "content": {"name": "stdout", "text": chunk}}]
    monkeypatch.setattr(nbplugin, "_NBVAL_GET_MESSAGE", lambda self, stream, timeout: json.loads(json.dumps(sent[0])))
    kernel = type("Kernel", (), {"mf_output_chars": {}})()
    texts = [nbplugin._get_message(kernel, "iopub")["content"]["text"] for _ in range(5)]
    kept = [text for text in texts if text == chunk]
    assert len(kept) == 1 and texts[1].startswith("[output cut by the grader") and texts[2:] == ["", "", ""]


def test_a_folder_with_more_files_than_a_walk_may_count_is_a_limit_not_a_small_folder(tmp_path):
    """20,001 empty files once hid 6 GB behind them: the walk counted only the first 20,000 entries."""
    for number in range(30):
        (tmp_path / f"{number}").touch()
    assert watch.folder_mb(tmp_path, most_entries=100) == 0.0
    with pytest.raises(watch.TooManyFilesError, match="more than 20 files"):
        watch.folder_mb(tmp_path, most_entries=20)


@pytest.mark.parametrize("lab", sorted(labs.LABS))
def test_no_hint_gives_the_answer_a_learner_is_asked_to_choose(lab):
    """A hint says where to look, never the answer: hints reach every learner's feedback, and a learner who
    resubmits once could copy them (lab 2's blank lab scored 4/13 with the answers read off its hints). No hint
    names a key the solution chooses, nor four words in a row of that option's description (numbers aside)."""
    solution = nbformat.read(labs.SOLUTIONS_DIR / labs.lab_file(lab), as_version=4)
    options = {}  # the lab's lists of options (MECHANISMS, FIXES, GUARANTEES…) as handed out: key -> description
    for cell in labs.handed_out(lab).cells:
        if cell.cell_type == "code":
            options |= _options(cell.source)
    regions = [
        part.split(labs.END_SOLUTION)[0]
        for cell in solution.cells
        for part in cell.source.split(labs.BEGIN_SOLUTION)[1:]
    ]
    chosen = {key for region in regions for key in options if re.search(rf"\b{key}\b", region)}
    hints = " ".join(check.hint for check in labs.check_specs(solution, labs.SOLUTIONS_DIR)).lower()
    hint_words = re.findall(r"[a-z0-9']+", hints)
    said = {" ".join(hint_words[i : i + 4]) for i in range(len(hint_words))}  # four words in a row, in a hint
    assert len(chosen) >= 3
    for key in sorted(chosen):
        words = re.findall(r"[a-z0-9']+", options[key].lower())
        assert not re.search(rf"\b{key}\b", hints), key
        phrases = {" ".join(words[i : i + 4]) for i in range(len(words) - 3)}
        phrases = {phrase for phrase in phrases if not re.search(r"\d", phrase)}  # the incident's numbers are data
        assert not phrases & said, (key, options[key])


def _options(source: str) -> dict[str, str]:
    """The options a cell offers: the keys (and their descriptions) of what it assigns to an UPPER_CASE name."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a cell of IPython magics
        return {}
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets):
            value = node.value
            if isinstance(value, ast.Dict):
                pairs = zip(value.keys, value.values, strict=True)
            else:
                pairs = ((member, member) for member in getattr(value, "elts", []))
            for key, text in pairs:
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    parts = [
                        n.value for n in ast.walk(text) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                    ]
                    found[key.value] = " ".join(parts)
    return {key: text for key, text in found.items() if re.fullmatch(r"[a-z0-9]+(?:_[a-z0-9]+)+", key)}


def test_the_build_never_writes_over_a_lab_someone_changed_and_says_how_to_get_a_fresh_copy(tmp_path, capsys):
    from mercadofresco.course.grading import commands

    first = labs.build(labs.SOLUTIONS_DIR, tmp_path)
    assert len(first.written) == len(labs.LABS) * (1 + len(labs.EDITION_FOLDERS)) and first.kept == []
    assert all(labs.untouched(path) for path in first.written)
    mine = tmp_path / labs.lab_file("lab1")
    notebook = nbformat.read(mine, as_version=4)
    next(cell for cell in notebook.cells if "your code here" in cell.source).source = "x = 1  # the learner's work"
    nbformat.write(notebook, mine)
    edited = mine.read_text()
    stale = tmp_path / labs.lab_file("lab2")
    stale.write_text(stale.read_text().replace("YOUR CODE HERE", "YOUR CODE THERE", 1))
    stale_text = stale.read_text()
    assert commands.main(["build", "--labs", str(tmp_path)]) == 0
    said = capsys.readouterr().out
    assert mine.read_text() == edited and f"kept {mine}: it is not what the last build wrote" in said
    assert f"mv {mine} {tmp_path / 'lab1_double_charge.mine.ipynb'}" in said and "build --replace" in said
    assert stale.read_text() == stale_text  # changed by hand: kept too, whoever changed it
    untouched = tmp_path / labs.lab_file("lab3")
    assert f"wrote {untouched}" in said
    assert commands.main(["build", "--labs", str(tmp_path), "--replace"]) == 0
    assert mine.read_text() != edited and labs.untouched(mine)


def test_the_learner_bundle_holds_the_labs_as_built_never_a_copy_someone_is_working_on(tmp_path):
    import shutil
    import zipfile

    from mercadofresco.course.handout import bundle

    root = tmp_path / "repo"
    for name in (*bundle.INCLUDED, "solutions", "learner"):
        source = labs.ROOT / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
        else:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, root / name)
    lab = root / "labs" / labs.lab_file("lab1")
    lab.write_text(lab.read_text().replace("YOUR CODE HERE", "my code", 1))
    before = lab.read_bytes()
    archive = zipfile.ZipFile(bundle.write(tmp_path / "b.zip", root))
    held = archive.read(f"{bundle.PREFIX}/labs/{labs.lab_file('lab1')}").decode()
    assert held == labs.render(labs.handed_out("lab1")) and lab.read_bytes() == before
