"""The instructor's marks for the written answers: answers.csv to fill, and marks.csv, which every merge carries.

`answers.csv` comes out of a merge with each learner's written answers, the maximum of each question (the
lab's metadata, `answer_points`) and `points` and `comment` to fill; filled in, it is checked row by row (a
learner or a question that is not in the results, points that are not a number or are over the maximum, an
answer whose text changed, a question marked twice). Marks are data, never output: a merge records every mark
it knows in the results folder (`marks.csv`, which grading never writes) and writes them all into the new
answers.csv, so no merge erases one.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from mercadofresco.course.grading import reports
from mercadofresco.course.grading.reports import spreadsheet_safe

ANSWER_COLUMNS = ["learner", "question_number", "question", "answer", "max_points", "points", "comment"]


class GradebookError(ValueError):
    """A filled-in answers file or a roster that cannot be used; the message names the row."""


@dataclass(frozen=True)
class Mark:
    """A person's points and comment for one written answer."""

    points: float
    comment: str


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


def _number(value: float) -> str:
    return f"{value:g}"


def _unsafe(text: str) -> str:
    """A cell as written before spreadsheet_safe added its apostrophe."""
    return text[1:] if reports.spreadsheet_safe(text[1:]) == text else text
