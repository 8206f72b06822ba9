"""The gradebook of a class, built from a folder of results: points a person gave, late days, the LMS files.

    python -m mercadofresco.course.grading merge RESULTS/ --lab lab1 --out REPORT/
        [--answers answers.csv]                      # the instructor's points and comments, filled in
        [--roster roster.csv]                        # learner -> LMS ids, and when each handed in
        [--deadline 2026-12-10T23:59+01:00 --late-penalty 10 --late-cap 50]

The written answers are graded by a person: `answers.csv` comes out with `points` and `comment`
columns to fill and the maximum of each question (the lab's metadata, `answer_points`); filled in
(in the report folder itself, or a copy given to `merge --answers`), it is checked row by row (a
learner or a question that is not in the results, points that are not a number or are over the
maximum, an answer whose text changed) and its points join the totals, its comments the feedback.
Marks are data, never output: every merge records them in the results folder (`marks.csv`, which
grading never writes) and carries them into every later merge, a regrade's included, without being
told again; the `answers.csv` a merge writes holds every mark known, so merging into the folder
that holds the marks cannot erase them. Where two give a mark for one answer, `--answers` wins over
the report folder's `answers.csv`, which wins over `marks.csv`. The late policy takes a percentage of
the total per day late (each day begun counts), up to a cap. The LMS files are `lms`'s:
`canvas.csv` and `moodle.csv` once every learner has an identity in the roster, a submission time
under a deadline, and every answer marked; until then `canvas.DRAFT.csv` and `moodle.DRAFT.csv`,
and the merge says what is missing, for whom.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
from dataclasses import dataclass, field
from pathlib import Path

from mercadofresco.course import lms, reports, results
from mercadofresco.course.reports import spreadsheet_safe

ANSWER_COLUMNS = ["learner", "question_number", "question", "answer", "max_points", "points", "comment"]
ROSTER_COLUMNS = ["learner", "name", "lms_id", "sis_user_id", "sis_login_id", "section", "email", "submitted_at"]


class GradebookError(ValueError):
    """A filled-in answers file or a roster that cannot be used; the message names the row."""


@dataclass(frozen=True)
class Mark:
    """A person's points and comment for one written answer."""

    points: float
    comment: str


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


@dataclass
class Total:
    """One learner's line of the gradebook."""

    learner: str
    checks: int
    checks_max: int
    written: float
    written_max: float
    days_late: int = 0
    penalty_percent: float = 0.0
    comments: list[tuple[str, str]] = field(default_factory=list)  # (question, comment)
    unmarked: float = 0.0  # points of written answers nobody has marked yet: the total is provisional

    @property
    def provisional(self) -> str:
        """What every report says of a total that may still grow: "" once every written answer is marked."""
        return f"provisional: {self.unmarked:g} points of written answers not marked yet" if self.unmarked else ""

    @property
    def before_penalty(self) -> float:
        return self.checks + self.written

    @property
    def final(self) -> float:
        return round(self.before_penalty * (1 - self.penalty_percent / 100), 2)

    @property
    def maximum(self) -> float:
        return self.checks_max + self.written_max


def answer_maxima(solution_metadata: dict, questions: int) -> list[float]:
    """The maximum of each written answer, from the lab's metadata (`answer_points`: one number or one a question)."""
    declared = solution_metadata.get("mercadofresco", {}).get("answer_points", 0)
    maxima = [float(declared)] * questions if isinstance(declared, int | float) else [float(p) for p in declared]
    if len(maxima) != questions:
        raise GradebookError(f"answer_points lists {len(maxima)} maxima for {questions} written answers")
    return maxima


MARKS_FILE = "marks.csv"  # in the results folder: the marks every merge carries (grading never writes it)


def answer_rows(
    results: list[dict], maxima: list[float], marks: dict[tuple[str, int], Mark] | None = None
) -> list[list[object]]:
    """The rows of answers.csv, with the marks known so far (the rest left for the instructor)."""
    rows = []
    for data in results:
        for number, item in enumerate(data["answers"], start=1):
            top = maxima[number - 1] if number <= len(maxima) else 0
            mark = (marks or {}).get((data["learner"], number))
            points, comment = (_number(mark.points), mark.comment) if mark else ("", "")
            rows.append([data["learner"], number, item["question"], item["answer"], _number(top), points, comment])
    return rows


def write_answers(
    path: Path, results: list[dict], maxima: list[float], marks: dict[tuple[str, int], Mark] | None = None
) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(ANSWER_COLUMNS)
        for row in answer_rows(results, maxima, marks):
            writer.writerow([spreadsheet_safe(value) for value in row])
    return path


def known_marks(results: list[dict], maxima: list[float], sources: list[Path]) -> dict[tuple[str, int], Mark]:
    """The marks of every file in `sources` that exists, each checked row by row; a later file's mark wins."""
    marks: dict[tuple[str, int], Mark] = {}
    for source in sources:
        if source.exists():
            marks |= read_marks(source, results, maxima)
    return marks


def read_marks(path: Path, results: list[dict], maxima: list[float]) -> dict[tuple[str, int], Mark]:
    """The instructor's points and comments from a filled-in answers.csv, each row checked against the results."""
    expected = {(r[0], r[1]): r for r in answer_rows(results, maxima)}
    marks: dict[tuple[str, int], Mark] = {}
    seen: set[tuple[str, int]] = set()
    with path.open(newline="", encoding="utf-8-sig") as handle:  # a spreadsheet may add a byte-order mark
        reader = csv.DictReader(handle)
        missing = set(ANSWER_COLUMNS) - set(reader.fieldnames or [])
        if missing:
            raise GradebookError(f"{path.name} lacks the columns {sorted(missing)} (it is answers.csv, filled in)")
        for line, row in enumerate(reader, start=2):
            where = f"{path.name}, row {line}"
            learner = _unsafe(row["learner"])
            try:
                number = int(row["question_number"])
            except ValueError:
                raise GradebookError(f"{where}: question_number {row['question_number']!r} is not a number") from None
            key = (learner, number)
            if key not in expected:
                known = learner in {k[0] for k in expected}
                what = f"question {number} of {learner}" if known else f"learner {learner!r}"
                raise GradebookError(f"{where}: {what} is not in the results")
            if row["answer"] != spreadsheet_safe(expected[key][3]):
                what = f"the answer of {learner} to question {number}"
                raise GradebookError(f"{where}: {what} differs from the one graded (answers.csv is for points)")
            if key in seen:
                raise GradebookError(f"{where}: question {number} of {learner} is marked twice")
            seen.add(key)
            if not row["points"].strip():
                continue  # not marked yet: no written points (an empty row never erases a mark found elsewhere)
            try:
                points = float(row["points"].replace(",", "."))
            except ValueError:
                raise GradebookError(f"{where}: points {row['points']!r} is not a number") from None
            top = maxima[number - 1]
            if not 0 <= points <= top:
                raise GradebookError(f"{where}: {points:g} points for question {number}, whose maximum is {top:g}")
            marks[key] = Mark(points, _unsafe(row["comment"]).strip())
    return marks


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


def _number(value: float) -> str:
    return f"{value:g}"


def _unsafe(text: str) -> str:
    """A cell as written before spreadsheet_safe added its apostrophe."""
    return text[1:] if reports.spreadsheet_safe(text[1:]) == text else text


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
