"""The gradebook's totals as an LMS imports them: Canvas's gradebook CSV and Moodle's CSV grade import.

`canvas.csv` follows Canvas's gradebook import (Student, ID, SIS User ID, SIS Login ID, Section, then the
assignment, with a Points Possible row); `moodle.csv` Moodle's CSV grade import (an identifier column to map,
the grade, and its feedback). The identities come from the roster (`gradebook.read_roster`).
"""

from __future__ import annotations

import csv
from pathlib import Path

from mercadofresco.course.grading import reports
from mercadofresco.course.grading.reports import spreadsheet_safe
from mercadofresco.course.grading.total import Total


def canvas_column(assignment: str, assignment_id: str | None) -> str:
    """The assignment's column as Canvas matches it: "Name (id)" fills that assignment; a bare name makes a new one."""
    return f"{assignment} ({assignment_id})" if assignment_id else assignment


def unidentified(found: list[Total], roster: dict[str, dict[str, str]]) -> list[str]:
    """What the LMS files cannot tell, in words: the learners with no identity Canvas or Moodle can match."""
    canvas = [t.learner for t in found if not _any(roster.get(t.learner, {}), "lms_id", "sis_user_id", "sis_login_id")]
    moodle = [t.learner for t in found if not _any(roster.get(t.learner, {}), "lms_id", "email")]
    said = []
    if canvas:
        said.append(f"no lms_id, sis_user_id or sis_login_id in a roster for {named(canvas)}: Canvas cannot match")
    if moodle:
        said.append(f"no lms_id or email in a roster for {named(moodle)}: Moodle cannot match")
    return said


def _any(row: dict[str, str], *keys: str) -> bool:
    return any(row.get(key, "").strip() for key in keys)


def named(learners: list[str]) -> str:
    """Learners as a report names them: the first five, and how many more."""
    shown = ", ".join(reports.display_name(name) for name in learners[:5])
    return shown + (f" and {len(learners) - 5} more" if len(learners) > 5 else "")


def write_canvas(path: Path, found: list[Total], roster: dict[str, dict[str, str]], assignment: str) -> Path:
    """Canvas's gradebook import: the identity columns, then the assignment; a Points Possible row first."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", assignment])
        writer.writerow(["Points Possible", "", "", "", "", _number(found[0].maximum if found else 0)])
        for total in found:
            row = roster.get(total.learner, {})
            identity = [row.get("name") or reports.display_name(total.learner), row.get("lms_id", "")]
            identity += [row.get("sis_user_id", "")]
            identity += [row.get("sis_login_id", ""), row.get("section", "")]
            writer.writerow([spreadsheet_safe(value) for value in [*identity, _number(total.final)]])
    return path


def write_moodle(path: Path, found: list[Total], roster: dict[str, dict[str, str]], item: str) -> Path:
    """Moodle's CSV grade import: map "Email address" (or "ID number") to the user, the grade to the grade item."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["ID number", "Email address", "Full name", f"{item} (Real)", f"{item} (Feedback)"])
        for total in found:
            row = roster.get(total.learner, {})
            feedback = f"{_number(total.final)}/{_number(total.maximum)}" + (
                f", {total.penalty_percent:g} % off for {total.days_late} day(s) late" if total.days_late else ""
            )
            feedback += f" ({total.provisional})" if total.provisional else ""
            line = [row.get("lms_id", ""), row.get("email", ""), row.get("name") or reports.display_name(total.learner)]
            writer.writerow([spreadsheet_safe(value) for value in [*line, _number(total.final), feedback]])
    return path


def _number(value: float) -> str:
    return f"{value:g}"
