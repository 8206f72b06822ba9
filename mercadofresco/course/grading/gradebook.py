"""The gradebook of a class, built from a folder of results: points a person gave, late days, the LMS files.

    python -m mercadofresco.course.grading merge RESULTS/ --lab lab1 --out REPORT/
        [--answers answers.csv]                      # the instructor's points and comments, filled in
        [--roster roster.csv]                        # learner -> LMS ids, and when each handed in
        [--deadline 2026-12-10T23:59+01:00 --late-penalty 10 --late-cap 50]

The written answers are graded by a person (`marks`): the marks recorded in the results folder,
those filled in the report folder's own `answers.csv`, and `--answers`, each winning over the one
before; they join the totals, their comments the feedback. The late policy takes a percentage of
the total per day late (each day begun counts), up to a cap. The LMS files are `lms`'s:
`canvas.csv` and `moodle.csv` once every learner has an identity in the roster, a submission time
under a deadline, and every answer marked; until then `canvas.DRAFT.csv` and `moodle.DRAFT.csv`,
and the merge says what is missing, for whom.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
from dataclasses import dataclass
from pathlib import Path

from mercadofresco.course.grading import lms, reports, results
from mercadofresco.course.grading.marks import MARKS_FILE, GradebookError, Mark, known_marks, write_answers
from mercadofresco.course.grading.total import Total

ROSTER_COLUMNS = ["learner", "name", "lms_id", "sis_user_id", "sis_login_id", "section", "email", "submitted_at"]


@dataclass(frozen=True)
class LatePolicy:
    """A percentage of the total per day late (each day begun), at most `cap_percent`."""

    deadline: dt.datetime
    percent_per_day: float = 10.0
    cap_percent: float = 100.0

    def __post_init__(self) -> None:
        if self.deadline.tzinfo is None:
            raise GradebookError("the deadline needs its time zone, e.g. 2026-12-10T23:59+01:00")
        if not 0 <= self.percent_per_day <= 100 or not 0 <= self.cap_percent <= 100:
            raise GradebookError("the late penalty and its cap are percentages between 0 and 100")

    def days_late(self, submitted: dt.datetime | None) -> int:
        if submitted is None or submitted <= self.deadline:
            return 0
        return math.ceil((submitted - self.deadline).total_seconds() / 86_400)

    def penalty_percent(self, submitted: dt.datetime | None) -> float:
        return min(self.cap_percent, self.percent_per_day * self.days_late(submitted))


def read_roster(path: Path) -> dict[str, dict[str, str]]:
    """{learner: their row}: `learner` is the notebook's file name without .ipynb; other columns optional."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        if "learner" not in (reader.fieldnames or []):
            raise GradebookError(f"{path.name} needs a 'learner' column (the notebook's file name without .ipynb)")
        roster: dict[str, dict[str, str]] = {}
        for line, row in enumerate(reader, start=2):
            if row["learner"] in roster:
                raise GradebookError(f"{path.name}, row {line}: {row['learner']!r} is listed twice")
            if row.get("submitted_at"):
                try:
                    submitted_at(row)
                except ValueError:
                    raise GradebookError(
                        f"{path.name}, row {line}: submitted_at {row['submitted_at']!r} is not an ISO time with zone"
                    ) from None
            roster[row["learner"]] = {key: value or "" for key, value in row.items()}
    return roster


def submitted_at(row: dict[str, str]) -> dt.datetime | None:
    text = row.get("submitted_at", "")
    if not text:
        return None
    moment = dt.datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError("no time zone")
    return moment


def totals(
    results: list[dict],
    maxima: list[float],
    marks: dict[tuple[str, int], Mark],
    roster: dict[str, dict[str, str]],
    policy: LatePolicy | None,
) -> list[Total]:
    """Each learner's checks, written points, late days and final total."""
    found = []
    for data in results:
        learner = data["learner"]
        checks = sum(c["points"] for c in data["checks"] if c["passed"])
        total = Total(learner, checks, sum(c["points"] for c in data["checks"]), 0.0, sum(maxima))
        for number, item in enumerate(data["answers"], start=1):
            mark = marks.get((learner, number))
            if mark:
                total.written += mark.points
                if mark.comment:
                    total.comments.append((item["question"], mark.comment))
            elif number <= len(maxima):
                total.unmarked += maxima[number - 1]
        if policy is not None:
            when = submitted_at(roster.get(learner, {}))
            total.days_late, total.penalty_percent = policy.days_late(when), policy.penalty_percent(when)
        found.append(total)
    return found


def merge(
    found: list[dict],
    lab: str,
    out: Path,
    maxima: list[float],
    marked: Path | None = None,
    roster_file: Path | None = None,
    policy: LatePolicy | None = None,
    assignment: str | None = None,
    results_dir: Path | None = None,
    assignment_id: str | None = None,
) -> Merged:
    """Every file an instructor reads, from a list of results: reports, answers.csv, canvas.csv, moodle.csv.

    The marks: those recorded in `results_dir`, those filled in `out`'s answers.csv, then `marked`'s; all of them
    are recorded again in `results_dir` and written into the new answers.csv.
    """
    recorded = results_dir / MARKS_FILE if results_dir is not None else None
    sources = [path for path in (recorded, out / "answers.csv", marked) if path is not None]
    marks = known_marks(found, maxima, sources)
    roster = read_roster(roster_file) if roster_file else {}
    unknown = sorted(set(roster) - {data["learner"] for data in found})
    if roster and unknown:
        raise GradebookError(f"{roster_file.name} lists learners with no result: {unknown[:5]}")
    lines = totals(found, maxima, marks, roster, policy)
    written = reports.write_all([results.report_of(d) for d in found], lab, out, {t.learner: t for t in lines})
    written.append(write_answers(out / "answers.csv", found, maxima, marks))
    if recorded is not None and (marks or recorded.exists()):
        write_answers(recorded, found, maxima, marks)  # the marks, for every later merge
    name = assignment or lab
    warnings = lms.unidentified(lines, roster)
    if policy is not None:
        missing = [t.learner for t in lines if submitted_at(roster.get(t.learner, {})) is None]
        if missing:
            warnings.append(f"no submitted_at in the roster, so no late penalty, for {lms.named(missing)}")
    unmarked = [t.learner for t in lines if t.unmarked]
    if unmarked:
        warnings.append(f"written answers not marked yet for {lms.named(unmarked)}: every total says provisional")
    final = not warnings  # the LMS files are named draft until every learner is identified and fully marked
    canvas, moodle = ("canvas.csv", "moodle.csv") if final else ("canvas.DRAFT.csv", "moodle.DRAFT.csv")
    written.append(lms.write_canvas(out / canvas, lines, roster, lms.canvas_column(name, assignment_id)))
    written.append(lms.write_moodle(out / moodle, lines, roster, name))
    regraded = [d["learner"] for d in found if d.get("regraded")]
    if regraded:
        lines_ = [
            f"{d['learner']}: {', '.join(r['checks'])} regraded with checks {r['checks_sha256'][:12]}"
            for d in found
            for r in d.get("regraded", [])
        ]
        (out / "regraded.txt").write_text("\n".join(lines_) + "\n", encoding="utf-8")
        written.append(out / "regraded.txt")
    return Merged(written, lines, warnings)


@dataclass(frozen=True)
class Merged:
    """What a merge wrote, each learner's total, and what keeps the LMS files a draft (none: they are final)."""

    written: list[Path]
    totals: list[Total]
    warnings: list[str]
