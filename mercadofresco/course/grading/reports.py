"""What the grader hands the instructor: progress while grading, a table, a gradebook CSV, feedback, answers.

Everything here is built from results (check ids, reasons, hints, notes), never
from a hidden check's source. Much of it is the learner's to choose (file names,
the text of an error their code raised, written answers), and reaches every
report made safe here: control characters (a terminal's escape codes, a
right-to-left override) dropped, cut short, and in the Markdown feedback shown
literally (`markdown_text`: no HTML, no links). Cells a spreadsheet could read
as a formula (starting with = + - @, a tab or a carriage return, after any
blank or control character) are written with a leading apostrophe, as OWASP
recommends for CSV exports.
"""

from __future__ import annotations

import builtins
import csv
import json
import re
import sys
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from mercadofresco import i18n
from mercadofresco.course.protocol import shown
from mercadofresco.i18n import N_, _, ngettext

NOTES_ON_SCREEN = 3  # the first notes of a learner; report.json and the feedback file keep them all
MOST_NOTES = 20  # of one learner (1,000 failing cells once made 1,014 notes and a 471 KB cell in report.csv)
NOTE_CHARS = 450
LEARNER_CHARS = 120  # of a learner's name (a submission's file name) in a report
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class Progress:
    """A progress bar on stderr: learners graded so far, the last one's score."""

    def __init__(self, total: int, stream: IO[str] | None = None, width: int = 24) -> None:
        self.total, self.done, self.width = total, 0, width
        self.stream = stream or sys.stderr

    def advance(self, learner: str, score: int, max_score: int) -> None:
        self.done += 1
        filled = self.width * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(
            f"\rgrading [{bar}] {self.done}/{self.total}  {shown(learner, 30)}: {score}/{max_score}\x1b[K"
        )
        self.stream.flush()

    def finish(self) -> None:
        if self.total:
            self.stream.write("\n")
            self.stream.flush()


def spreadsheet_safe(value: Any) -> Any:
    """`value`, with a leading apostrophe if a spreadsheet would read it as a formula (after any blank), or would
    hide its own leading apostrophe (so `'=ana` and `=ana` stay two names); a plain number (-20%) stays as it is."""
    if not isinstance(value, str) or re.fullmatch(r"[+-]?\d+(?:[.,]\d+)?%?", value):
        return value
    if re.sub(r"^[\s\x00-\x1f\x7f]+", "", value).startswith(FORMULA_START) or value.startswith("'"):
        return "'" + value
    return value


def display_name(learner: str) -> str:
    """A learner's name (a submission's file name, theirs to choose) as a report shows it."""
    return shown(learner, LEARNER_CHARS)


def markdown_text(text: str) -> str:
    """`text` (one line) as Markdown shows it literally: every ASCII punctuation escaped, so no HTML, link or
    emphasis of the learner's is rendered."""
    return re.sub(r"([!-/:-@\[-`{-~])", r"\\\1", text)


def kept_notes(notes: list[str]) -> list[str]:
    """A learner's notes as every report keeps them: the first MOST_NOTES, each one line of NOTE_CHARS at most."""
    kept = [shown(note, NOTE_CHARS) for note in notes[:MOST_NOTES]]
    if len(notes) > MOST_NOTES:
        kept.append(f"… and {len(notes) - MOST_NOTES} more note(s), not kept")
    return kept


def file_name(learner: str, taken: set[str]) -> str:
    """A file name for `learner` that any tool takes: letters, digits, dot, dash, underscore; never twice."""
    base = re.sub(r"[^A-Za-z0-9._-]", "_", learner).lstrip(".-") or "learner"
    name, number = base, 2
    while name in taken:
        name, number = f"{base}-{number}", number + 1
    taken.add(name)
    return name


def summary_table(reports: list) -> str:
    """Learners as rows, checks as columns (numbered), then each failed check with its reason and hint."""
    if not reports:
        return "(no notebooks to grade)"
    checks = [result.check for result in reports[0].checks]
    names = {id(report): shown(report.learner) for report in reports}  # file names are the learners' to choose
    width = max(len("learner"), *(len(name) for name in names.values()))
    header = f"{'learner':{width}}  score  " + " ".join(f"{i + 1:>2}" for i in range(len(checks)))
    lines = [header, "-" * len(header)]
    for report in reports:
        marks = " ".join(f"{'ok' if r.passed else '--':>2}" for r in report.checks)
        lines.append(f"{names[id(report)]:{width}}  {report.score:>2}/{report.max_score:<2}  {marks}")
    lines += ["", "checks: " + ", ".join(f"{i + 1} {name}" for i, name in enumerate(checks))]
    for report in reports:
        lines += ["", f"{names[id(report)]}: {report.score}/{report.max_score}"]
        lines += [f"  note: {shown(note, 450)}" for note in report.notes[:NOTES_ON_SCREEN]]
        if len(report.notes) > NOTES_ON_SCREEN:
            lines.append(f"  note: … and {len(report.notes) - NOTES_ON_SCREEN} more in report.json")
        for result in report.checks:
            if not result.passed:
                lines.append(f"  FAILED {result.check}: {shown(result.reason, 450)}")
                lines.append(f"         hint: {result.hint}")
    return "\n".join(lines)


GRADER_WORDS = (N_("not run"), N_("not trusted"), N_("the check did not finish"), N_("the grader could not confirm"))


def totals_table(totals: list) -> str:
    """Each learner's total as every report gives it (checks, written answers, a late penalty), provisional or not."""
    if not totals:
        return ""
    width = max(len("learner"), *(len(shown(t.learner)) for t in totals))
    lines = [f"{'learner':{width}}  total", "-" * (width + 14)]
    for t in totals:
        late = f", {t.penalty_percent:g} % off late" if t.days_late else ""
        lines.append(
            f"{shown(t.learner):{width}}  {t.final:g}/{t.maximum:g}{late}"
            + (f"  {t.provisional}" * bool(t.provisional))
        )
    return "\n".join(lines)


def feedback_reason(reason: str) -> str:
    """What the learner is told of a failed hidden check: the grader's own words, or the kind of error only.

    The text of an error raised while a hidden check ran is partly the learner's to choose (their code
    raised it, or their values are in it): sent back whole, it could carry the check's code out.
    """
    if reason.startswith((*GRADER_WORDS, *map(_, GRADER_WORDS))):
        return shown(reason, 300)
    kind = reason.split(":", 1)[0]
    known = kind == "CheckFailed" or isinstance(getattr(builtins, kind, None), type)  # a class name is text too
    return _("{kind} (the instructor's report has the details)").format(kind=kind if known else _("an error"))


def feedback(report: Any, lab: str, total: Any = None) -> str:
    """One learner's feedback, in Markdown and in the learner's edition (`report.language`): score, each check
    with its reason and hint, the notes.

    `total` (a gradebook line) adds the points a person gave the written answers, their comments and a late penalty.
    """
    with i18n.speaking(getattr(report, "language", "en")):
        return _feedback(report, lab, total)


def _feedback(report: Any, lab: str, total: Any) -> str:
    who = markdown_text(display_name(report.learner))
    score = _("**Score: {score}/{maximum}**").format(score=report.score, maximum=report.max_score)
    lines = [_("# {lab}: feedback for {who}").format(lab=lab, who=who), "", score, ""]
    if total is not None:
        said = _("**Score: {score}/{maximum}** (checks {checks}/{checks_max}, written answers {written}/{written_max}")
        lines[-2] = said.format(
            score=f"{total.final:g}",
            maximum=f"{total.maximum:g}",
            checks=total.checks,
            checks_max=total.checks_max,
            written=f"{total.written:g}",
            written_max=f"{total.written_max:g}",
        )
        late = _(", {percent} off for {days} day(s) late").format(
            percent=f"{total.penalty_percent:g} %", days=total.days_late
        )
        lines[-2] += (late if total.days_late else "") + ")"
        lines[-2] += f"; {total.provisional}" if total.provisional else ""
    for result in report.checks:
        if result.passed:
            points = ngettext("{count} point", "{count} points", result.points).format(count=result.points)
            lines.append("- " + _("passed: `{check}` ({points})").format(check=result.check, points=points))
        else:
            why = shown(result.reason, 300) if result.story else feedback_reason(result.reason)  # a story: ours
            lines += [
                "- " + _("**not passed: `{check}`**: {why}").format(check=result.check, why=markdown_text(why)),
                "  - " + _("hint: {hint}").format(hint=result.hint),
            ]
            if result.story:  # the smallest world the instructor's check found: the learner's own story to read
                lines += ["  - " + _("the smallest world that breaks it:"), "", "    ```text"]
                lines += [f"    {shown(line, 160).replace('`', chr(39))}" for line in result.story] + ["    ```"]
    if total is not None and total.comments:
        lines += ["", _("## Your written answers"), ""]
        lines += [f"- *{markdown_text(shown(question, 120))}*: {comment}" for question, comment in total.comments]
    if report.notes:
        lines += ["", _("## Notes"), "", *(f"- {markdown_text(note)}" for note in kept_notes(report.notes))]
    return "\n".join(lines) + "\n"


def write_all(reports: list, lab: str, out_dir: Path, totals: dict[str, Any] | None = None) -> list[Path]:
    """report.json, report.csv (a gradebook) and feedback/<learner>.md; returns what was written.

    `totals` ({learner: gradebook line}) adds the written answers' points and the late penalty to the totals.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    totals = totals or {}
    data = {
        "lab": lab,
        "learners": [
            {"learner": r.learner, "language": getattr(r, "language", "en"), "score": r.score, "max_score": r.max_score}
            | {"notes": r.notes}
            | _total_fields(totals.get(r.learner))
            | {"checks": [asdict(c) for c in r.checks]}
            | {"answers": [{"question": q, "answer": a} for q, a in r.answers]}
            for r in reports
        ],
    }
    json_path, csv_path = out_dir / "report.json", out_dir / "report.csv"
    json_path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["learner", "check", "points", "max_points", "passed", "reason", "hint", "language"])
        for r in reports:
            name, language = display_name(r.learner), getattr(r, "language", "en")  # the learner's edition
            for c in r.checks:
                points = c.points if c.passed else 0
                row = [name, c.check, points, c.points, int(c.passed), shown(c.reason, NOTE_CHARS), c.hint, language]
                writer.writerow([spreadsheet_safe(value) for value in row])
            total = totals.get(r.learner)
            if total is not None and total.written_max:
                row = [
                    name,
                    "WRITTEN",
                    f"{total.written:g}",
                    f"{total.written_max:g}",
                    "",
                    "marked by hand",
                    "",
                    language,
                ]
                writer.writerow([spreadsheet_safe(value) for value in row])
            if total is not None and total.days_late:
                why = f"{total.days_late} day(s) late"
                row = [name, "LATE", f"-{total.penalty_percent:g}%", "", "", why, "", language]
                writer.writerow([spreadsheet_safe(value) for value in row])
            score, top = (f"{total.final:g}", f"{total.maximum:g}") if total else (r.score, r.max_score)
            said = ([total.provisional] if total is not None and total.provisional else []) + kept_notes(r.notes)
            row = [name, "TOTAL", score, top, "", "; ".join(said), "", language]  # passed: a check's word only
            writer.writerow([spreadsheet_safe(value) for value in row])
    folder = out_dir / "feedback"
    folder.mkdir(exist_ok=True)
    taken: set[str] = set()
    written = [json_path, csv_path]
    for r in reports:
        path = folder / f"{file_name(r.learner, taken)}.md"
        path.write_text(feedback(r, lab, totals.get(r.learner)), encoding="utf-8")
        written.append(path)
    return written


def _total_fields(total: Any) -> dict:
    if total is None:
        return {}
    fields = {"written": total.written, "written_max": total.written_max, "days_late": total.days_late}
    fields |= {"penalty_percent": total.penalty_percent, "total": total.final, "total_max": total.maximum}
    return fields | {"provisional": total.provisional}
