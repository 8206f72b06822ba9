"""A class's grading end to end: results per learner, shards in separate processes, merge, regrade, the gradebook.

One folder of 12 notebooks is graded once whole and once as 3 shards, each its own process (as pods of a
Kubernetes Indexed Job or jobs of a CI matrix would be), and the merges must agree file for file. The lab is a
tiny one (two checks and a written answer, run by the real grader and checker) so the class costs seconds; the
real labs' grading is what tests/labs/test_grading.py and the lab tests check.
"""

from __future__ import annotations

import csv
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from mercadofresco.course import grading
from mercadofresco.course.grading import commands, gradebook, marks, results
from mercadofresco.course.handout import labs

GRADING = [sys.executable, "-m", "mercadofresco.course.grading"]
QUESTION = "**In your words**, why is x one?"
CHECKS = """from mercadofresco.course.checker import Check

SERVICES = ()
CHECKS = [Check("x_is_one", "x must be one: " * 4), Check("x_plus_one", "x + 1 must be two: " * 4)]


def setup(lab):
    pass


def check_x_is_one(lab):
    assert lab.value("x") == 1, f"x is {lab.value('x')!r}"


def check_x_plus_one(lab):
    assert lab.value("x") + 1 == 2
"""


def tiny_lab(folder: Path) -> Path:
    """A solutions folder whose lab1 is one line of code and one written answer (2 points), with its checks."""
    (folder / "checks").mkdir(parents=True)
    (folder / "checks" / "tiny.py").write_text(CHECKS)
    cells = [
        nbformat.v4.new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION"),
        nbformat.v4.new_markdown_cell(f"{QUESTION}\n\n### BEGIN SOLUTION\nBecause.\n### END SOLUTION"),
    ]
    metadata = {"mercadofresco": {"checks": "checks/tiny.py", "answer_points": 2}}
    nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata=metadata), folder / labs.lab_file("lab1"))
    return folder


def learner(folder: Path, name: str, x: str, answer: str) -> None:
    cells = [nbformat.v4.new_code_cell(f"x = {x}"), nbformat.v4.new_markdown_cell(f"{QUESTION}\n\n{answer}")]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), folder / f"{name}.ipynb")


def command(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([*GRADING, *arguments], capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The same 12 notebooks graded whole, then as 3 shards in 3 processes at once, each merged."""
    solutions = tiny_lab(tmp_path_factory.mktemp("solutions"))
    folder = tmp_path_factory.mktemp("submissions")
    for n in range(6):
        learner(folder, f"ana_{n}", "1", f"Because the lab says so ({n}).")
    for name, x in [("blanca", "2"), ("=formula", "'1'"), ("bruno", "0"), ("carmen", "1 +"), ("diego", "None")]:
        learner(folder, name, x, "=SUM(A1)" if name == "=formula" else "")
    learner(folder, "elena", "1.0", "One, as a float.")
    whole, shards = tmp_path_factory.mktemp("whole"), tmp_path_factory.mktemp("shards")
    tiny = ["--lab", "lab1", "--solutions", str(solutions)]
    done = command("grade", str(folder), *tiny, "--out", str(whole), "--jobs", "2")
    assert done.returncode == 0, done.stderr
    pods = [
        subprocess.Popen(
            [*GRADING, "grade", str(folder), *tiny, "--shard", f"{k}/3", "--results", str(shards / "results")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in (1, 2, 3)
    ]
    outputs = [pod.communicate() for pod in pods]
    assert all(pod.returncode == 0 for pod in pods), [err for _, err in outputs]
    merged = command("merge", str(shards / "results"), *tiny, "--out", str(shards))
    assert merged.returncode == 0, merged.stderr
    return folder, whole, shards, outputs, solutions


def test_twelve_notebooks_graded_whole_or_as_three_shards_give_the_same_gradebook(graded):
    _, whole, shards, outputs, _ = graded
    assert sum(out.count(" result(s) in ") for out, _ in outputs) == 3
    for name in ("report.csv", "report.json", "answers.csv", "canvas.DRAFT.csv", "moodle.DRAFT.csv"):
        assert (whole / name).read_bytes() == (shards / name).read_bytes(), name
    feedback = sorted(p.name for p in (whole / "feedback").iterdir())
    assert len(feedback) == 12 and feedback == sorted(p.name for p in (shards / "feedback").iterdir())
    for name in feedback:
        assert (whole / "feedback" / name).read_bytes() == (shards / "feedback" / name).read_bytes(), name
    scores = {r["learner"]: r["score"] for r in json.loads((whole / "report.json").read_text())["learners"]}
    assert scores == {f"ana_{n}": 2 for n in range(6)} | {"elena": 2} | dict.fromkeys(
        ["blanca", "=formula", "bruno", "carmen", "diego"], 0
    )


def test_a_shard_is_the_same_files_in_any_listing_order_and_the_shards_cover_the_class_once():
    names = [f"learner_{n}.ipynb" for n in range(1_000)]
    parts = [{name for name in names if grading.in_shard(name, k, 8)} for k in range(1, 9)]
    assert sum(len(part) for part in parts) == 1_000 and set().union(*parts) == set(names)
    assert all(90 <= len(part) <= 160 for part in parts), [len(part) for part in parts]
    assert {n for n in reversed(names) if grading.in_shard(n, 3, 8)} == parts[2]
    for wrong in ("0/8", "9/8", "3", "a/b", "3/0"):
        with pytest.raises(ValueError, match=r"--shard takes k/n"):
            commands.parse_shard(wrong)


def test_each_result_is_self_contained(graded):
    folder, whole, _, _, solutions = graded
    found = results.read_folder(whole / "results", "lab1")
    assert len(found) == 12
    one = next(data for data in found if data["learner"] == "=formula")
    assert one["submission"] == "=formula.ipynb"
    assert one["submission_sha256"] == results.sha256(folder / "=formula.ipynb")
    assert one["checks_sha256"] == results.checks_version("lab1", solutions) and one["grader_version"] != "unknown"
    assert [c["check"] for c in one["checks"]] == ["x_is_one", "x_plus_one"] and one["regraded"] == []
    assert one["answers"] == [{"question": QUESTION, "answer": "=SUM(A1)"}]


def test_regrading_one_check_for_one_learner_changes_that_outcome_only(graded, tmp_path):
    folder, whole, _, _, solutions = graded
    kept = tmp_path / "results"
    kept.mkdir()
    for path in (whole / "results").iterdir():
        (kept / path.name).write_bytes(path.read_bytes())
    # the check was wrong and passed bruno (x = 0): his kept result says x_plus_one passed
    target = kept / results.file_name("bruno")
    data = json.loads(target.read_text())
    data["checks"][1]["passed"], data["checks"][1]["reason"] = True, ""
    target.write_text(json.dumps(data))
    before = {d["learner"]: d for d in results.read_folder(kept)}
    tiny = ["--lab", "lab1", "--solutions", str(solutions), "--results", str(kept)]
    done = command("regrade", str(folder), *tiny, "--check", "x_plus_one", "--learner", "bruno")
    assert done.returncode == 0, done.stderr
    assert "regraded bruno: x_plus_one" in done.stdout
    assert "bruno (regraded): 0/1" in done.stderr  # the progress bar: the check run again, not 0 of the whole lab
    after = {d["learner"]: d for d in results.read_folder(kept)}
    assert {n: d for n, d in after.items() if n != "bruno"} == {n: d for n, d in before.items() if n != "bruno"}
    old, new = before["bruno"], after["bruno"]
    assert new["checks"][0] == old["checks"][0]  # x_is_one: not run again, kept as it was
    assert not new["checks"][1]["passed"] and new["checks"][1]["reason"].startswith("AssertionError")
    assert new["regraded"] == [{"checks": ["x_plus_one"], "checks_sha256": results.checks_version("lab1", solutions)}]
    assert {k: v for k, v in new.items() if k not in ("checks", "regraded")} == {
        k: v for k, v in old.items() if k not in ("checks", "regraded")
    }
    merged = command("merge", str(kept), "--lab", "lab1", "--solutions", str(solutions), "--out", str(tmp_path / "r"))
    assert merged.returncode == 0, merged.stderr
    assert "bruno: x_plus_one regraded with checks " in (tmp_path / "r" / "regraded.txt").read_text()


def test_a_regrade_refuses_a_submission_that_changed_since_it_was_graded(graded, tmp_path):
    _, whole, _, _, solutions = graded
    changed = tmp_path / "submissions"
    changed.mkdir()
    learner(changed, "blanca", "1", "Now I know.")
    tiny = ["--lab", "lab1", "--solutions", str(solutions), "--results", str(whole / "results")]
    done = command("regrade", str(changed), *tiny, "--learner", "blanca")
    assert done.returncode == 2 and "blanca.ipynb changed since it was graded" in done.stderr


# -- the written answers, marked by a person ------------------------------------------------
def filled(whole: Path, tmp_path: Path, edit) -> Path:
    """answers.csv as the instructor saves it from a spreadsheet, after `edit(rows)`."""
    with (whole / "answers.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    edit(rows)
    path = tmp_path / "answers-marked.csv"
    with path.open("w", newline="", encoding="utf-8-sig") as handle:  # a spreadsheet's byte-order mark
        writer = csv.DictWriter(handle, fieldnames=marks.ANSWER_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


def merge(whole: Path, solutions: Path, out: Path, *more: str, kept: Path | None = None) -> subprocess.CompletedProcess:
    """`merge` of a copy of the class's results (`kept`, made once: a merge records the marks in it)."""
    kept = kept or out.parent / "results"
    if not kept.exists():
        shutil.copytree(whole / "results", kept)
    return command("merge", str(kept), "--lab", "lab1", "--solutions", str(solutions), "--out", str(out), *more)


def rows_of(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        return list(csv.DictReader(handle))


def totals_of(out: Path) -> dict[str, str]:
    return {row["learner"]: row["points"] for row in rows_of(out / "report.csv") if row["check"] == "TOTAL"}


def test_marks_filled_in_the_report_folder_survive_merging_into_it_and_every_later_merge(graded, tmp_path):
    _, whole, _, _, solutions = graded
    out = tmp_path / "report"
    assert merge(whole, solutions, out).returncode == 0
    rows = rows_of(out / "answers.csv")  # the instructor fills the report folder's own answers.csv, and saves it
    for row in rows:
        if row["learner"] == "ana_0":
            row["points"], row["comment"] = "1.5", "Half of it."
    with (out / "answers.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=marks.ANSWER_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    done = merge(whole, solutions, out)  # into the same folder, no --answers
    assert done.returncode == 0, done.stderr
    ana = next(row for row in rows_of(out / "answers.csv") if row["learner"] == "ana_0")
    assert (ana["points"], ana["comment"]) == ("1.5", "Half of it.") and totals_of(out)["ana_0"] == "3.5"
    later = tmp_path / "after-a-regrade"  # a merge elsewhere, told nothing: the results folder carries the marks
    assert merge(whole, solutions, later).returncode == 0
    assert totals_of(later)["ana_0"] == "3.5"
    assert "1.5" in (tmp_path / "results" / marks.MARKS_FILE).read_text()


def test_answers_csv_leaves_points_and_comments_to_the_instructor_with_each_questions_maximum(graded):
    _, whole, _, _, _ = graded
    with (whole / "answers.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == marks.ANSWER_COLUMNS and len(rows) == 12
    assert {row["max_points"] for row in rows} == {"2"} and {row["points"] + row["comment"] for row in rows} == {""}
    formula = next(row for row in rows if row["learner"] == "'=formula")  # what a spreadsheet would run, escaped
    assert formula["answer"] == "'=SUM(A1)"


def test_the_instructors_points_join_the_totals_and_the_comments_the_feedback(graded, tmp_path):
    _, whole, _, _, solutions = graded

    def mark(rows):
        for row in rows:
            if row["learner"] == "ana_0":
                row["points"], row["comment"] = "2", "Clear and short."
            if row["learner"] == "'=formula":
                row["points"] = "0,5"  # a decimal comma, as a Spanish spreadsheet writes it

    out = tmp_path / "report"
    done = merge(whole, solutions, out, "--answers", str(filled(whole, tmp_path, mark)))
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader((out / "report.csv").open()))
    total = {r["learner"]: (r["points"], r["max_points"]) for r in rows if r["check"] == "TOTAL"}
    assert total["ana_0"] == ("4", "4") and total["ana_1"] == ("2", "4") and total["'=formula"] == ("0.5", "4")
    feedback = (out / "feedback" / "ana_0.md").read_text()
    assert "**Score: 4/4** (checks 2/2, written answers 2/2)" in feedback and "Clear and short." in feedback


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda rows: rows[0].update(learner="nadie"), r"row 2: learner 'nadie' is not in the results"),
        (lambda rows: rows[0].update(question_number="7"), r"row 2: question 7 of \S+ is not in the results"),
        (lambda rows: rows[1].update(points="3"), r"row 3: 3 points for question 1, whose maximum is 2"),
        (lambda rows: rows[1].update(points="-1"), r"row 3: -1 points for question 1, whose maximum is 2"),
        (lambda rows: rows[2].update(points="dos"), r"row 4: points 'dos' is not a number"),
        (lambda rows: rows[3].update(answer=rows[3]["answer"] + " (edited)"), r"row 5: the answer of .* differs"),
        (lambda rows: rows.append(dict(rows[0])), r"row 14: question 1 of \S+ is marked twice"),
    ],
    ids=["unknown learner", "unknown question", "over the maximum", "negative", "not a number", "changed", "twice"],
)
def test_a_marked_answers_file_with_a_mistake_is_refused_naming_its_row(graded, tmp_path, edit, message):
    _, whole, _, _, solutions = graded
    done = merge(whole, solutions, tmp_path / "report", "--answers", str(filled(whole, tmp_path, edit)))
    assert done.returncode == 2 and not (tmp_path / "report").exists()
    assert re.search(message, done.stderr), done.stderr


# -- the LMS files, a roster and a late policy ------------------------------------------------
def write_roster(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=gradebook.ROSTER_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_canvas_and_moodle_files_follow_their_import_formats_with_late_days_taken_off(graded, tmp_path):
    _, whole, _, _, solutions = graded
    learners = [d["learner"] for d in results.read_folder(whole / "results", "lab1")]
    rows = [
        {"learner": name, "name": f"Learner {n}", "lms_id": str(1000 + n), "sis_user_id": f"SIS{n}"}
        | {"sis_login_id": f"l{n}", "section": "A", "email": f"l{n}@example.org"}
        | {"submitted_at": "2026-12-10T18:00:00+01:00"}
        for n, name in enumerate(learners)
    ]
    n = learners.index("ana_1")
    rows[n]["submitted_at"] = "2026-12-12T10:00:00+01:00"  # a day and ten minutes late: two days begun
    late = ["--deadline", "2026-12-11T09:50:00+01:00", "--late-penalty", "10", "--late-cap", "30"]
    out = tmp_path / "report"
    roster = write_roster(tmp_path / "roster.csv", rows)
    marked = filled(whole, tmp_path, lambda answers: [row.update(points="0") for row in answers])  # all marked
    lms = ["--assignment", "Lab 1: the double charge", "--assignment-id", "4411", "--answers", str(marked)]
    done = merge(whole, solutions, out, "--roster", str(roster), *late, *lms)
    assert done.returncode == 0, done.stderr
    assert "DRAFT" not in done.stdout and not (out / "canvas.DRAFT.csv").exists()  # identified, marked: final
    canvas = list(csv.reader((out / "canvas.csv").open()))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lab 1: the double charge (4411)"]
    assert canvas[1] == ["Points Possible", "", "", "", "", "4"] and len(canvas) == 2 + 12
    assert canvas[2 + n] == [f"Learner {n}", str(1000 + n), f"SIS{n}", f"l{n}", "A", "1.6"]  # 2 points less 20 %
    moodle = list(csv.reader((out / "moodle.csv").open()))
    item = "Lab 1: the double charge"
    assert moodle[0] == ["ID number", "Email address", "Full name", f"{item} (Real)", f"{item} (Feedback)"]
    assert moodle[1 + n] == [
        str(1000 + n),
        f"l{n}@example.org",
        f"Learner {n}",
        "1.6",
        "1.6/4, 20 % off for 2 day(s) late",
    ]
    assert "20 % off for 2 day(s) late" in (out / "feedback" / "ana_1.md").read_text()
    assert [row[5] for row in canvas[2:]].count("2") == 6  # the other five who passed, and elena: on time


def test_lms_files_are_drafts_that_say_whom_they_cannot_identify_and_every_total_says_provisional(graded, tmp_path):
    _, whole, _, _, solutions = graded
    out = tmp_path / "report"
    partial = write_roster(tmp_path / "roster.csv", [{"learner": "ana_0", "lms_id": "1000", "email": "a@example.org"}])
    late = ["--deadline", "2026-12-11T09:50:00+01:00"]
    done = merge(whole, solutions, out, "--roster", str(partial), *late)
    assert done.returncode == 0, done.stderr
    said = done.stdout
    assert "Canvas cannot match" in said and "Moodle cannot match" in said and "ana_1" in said
    assert "no submitted_at in the roster, so no late penalty, for =formula, ana_0, ana_1" in said
    assert "canvas.DRAFT.csv and moodle.DRAFT.csv: not to import as they are" in said
    assert not (out / "canvas.csv").exists() and (out / "canvas.DRAFT.csv").exists()
    provisional = "provisional: 2 points of written answers not marked yet"
    assert re.search(rf"\nana_0 +2/4  {provisional}\n", said)  # the screen's total is the reports' total
    totals = [row for row in rows_of(out / "report.csv") if row["check"] == "TOTAL"]
    assert {(row["points"], row["max_points"]) for row in totals if row["learner"] == "ana_0"} == {("2", "4")}
    assert all(row["passed"] == "" and row["reason"].startswith(provisional) for row in totals)
    assert (
        f"**Score: 2/4** (checks 2/2, written answers 0/2); {provisional}"
        in (out / "feedback" / "ana_0.md").read_text()
    )
    moodle = rows_of(out / "moodle.DRAFT.csv")
    assert all(provisional in row[f"{'lab1'} (Feedback)"] for row in moodle)


def test_a_roster_naming_a_learner_without_a_result_or_a_time_without_zone_is_refused(graded, tmp_path):
    _, whole, _, _, solutions = graded
    roster = write_roster(tmp_path / "roster.csv", [{"learner": "fantasma"}])
    done = merge(whole, solutions, tmp_path / "r", "--roster", str(roster))
    assert done.returncode == 2 and "roster.csv lists learners with no result: ['fantasma']" in done.stderr
    roster = write_roster(tmp_path / "roster.csv", [{"learner": "ana_0", "submitted_at": "2026-12-01T10:00"}])
    done = merge(whole, solutions, tmp_path / "r", "--roster", str(roster))
    assert done.returncode == 2 and "row 2: submitted_at '2026-12-01T10:00' is not an ISO time with zone" in done.stderr


def test_a_variant_graded_against_its_aimed_check_alone_still_fails_or_passes_on_its_merits(tmp_path):
    """The lab tests grade each variant with only its aimed checks (tests/labs/lab_variants.py): the check still decides."""
    from tests.labs import lab_variants

    solutions = tiny_lab(tmp_path / "solutions")
    folder = tmp_path / "submissions"
    folder.mkdir()
    for name, x in [("right", "1"), ("wrong", "2"), ("everything", "2")]:
        learner(folder, name, x, "Because.")
    aimed = {"right": {"x_is_one"}, "wrong": {"x_is_one"}}
    reports = lab_variants.grade_against_aimed_checks(folder, "lab1", None, aimed, solutions_dir=solutions)
    seen = {name: [(r.check, r.passed, r.reason) for r in report.checks] for name, report in reports.items()}
    assert seen["right"] == [("x_is_one", True, "")]
    assert seen["wrong"] == [("x_is_one", False, "AssertionError: x is 2")]
    assert [check for check, _, _ in seen["everything"]] == ["x_is_one", "x_plus_one"]  # not aimed: every check


# -- the instructor's guide's steps, as written and in their order ---------------------------------------------
INSTRUCTOR = Path(__file__).resolve().parents[2] / "docs" / "instructor.md"
STEPS = ["grade", "merge --answers", "merge --roster", "regrade", "merge --roster"]


def guide_commands() -> list[list[str]]:
    """The grading commands of the instructor's guide's steps ("Grading a class, step by step"), in order, each as
    its words."""
    section = INSTRUCTOR.read_text().split("\n## Grading a class, step by step", 1)[1]
    section = section.split("\n## A class across machines", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.DOTALL)
    lines = "\n".join(blocks).replace("\\\n", " ").splitlines()
    return [shlex.split(line) for line in lines if "mercadofresco.course.grading " in line.split("#")[0]]


def step_of(words: list[str]) -> str:
    verb = words[words.index("mercadofresco.course.grading") + 1]
    return verb + next((f" {flag}" for flag in ("--answers", "--roster") if flag in words), "")


def test_the_instructor_guides_steps_run_as_written_in_their_order(tmp_path):
    """Steps 4-8 (grade, mark the answers, hand the grades to the LMS, regrade, merge again) as docs/instructor.md
    has them: only the interpreter's path, the tiny lab's solutions and its check's name are put in."""
    commands = guide_commands()
    assert [step_of(words) for words in commands] == STEPS, "the instructor guide's steps changed: update STEPS"
    solutions = tiny_lab(tmp_path / "solutions")
    (tmp_path / "entregas").mkdir()
    for name, x in [("ana", "1"), ("bea", "2"), ("carlos", "1")]:
        learner(tmp_path / "entregas", name, x, f"Because {name} says so.")
    names = ["ana", "bea", "carlos"]
    write_roster(tmp_path / "roster.csv", [{"learner": name, "lms_id": str(n)} for n, name in enumerate(names)])
    for words in commands:
        words = [word for word in words if word != "sudo"]
        words = [sys.executable if word.endswith("bin/python") else word for word in words]
        words = ["--learner" if word == "[--learner" else "bea" if word == "bea]" else word for word in words]
        if "--check" in words:
            words[words.index("--check") + 1] = "x_plus_one"  # the tiny lab's check in place of lab 1's
        words[words.index("--lab") + 2 : words.index("--lab") + 2] = ["--solutions", str(solutions)]
        if "--answers" in words:  # step 6: the instructor's spreadsheet, marked
            rows = rows_of(tmp_path / "grading-report-lab1" / "answers.csv")
            for row in rows:
                row["points"], row["comment"] = "1.5", "Half of it."
            with (tmp_path / words[words.index("--answers") + 1]).open("w", newline="", encoding="utf-8") as out:
                writer = csv.DictWriter(out, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
        done = subprocess.run(words, cwd=tmp_path, capture_output=True, text=True, check=False)
        assert done.returncode == 0, (step_of(words), done.stderr[-2000:])
    out = tmp_path / "grading-report-lab1"
    assert totals_of(out) == {"ana": "3.5", "bea": "1.5", "carlos": "3.5"}  # the marks kept through the regrade
    assert (out / "canvas.csv").exists() and (out / "moodle.csv").exists()  # everyone identified and marked
    assert "bea: x_plus_one regraded" in (out / "regraded.txt").read_text()
