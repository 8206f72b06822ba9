"""The Spanish edition of a lab is graded by the same checks, to the same score, and told in Spanish (issue 51)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat

from mercadofresco.course import grading
from mercadofresco.course.grading import reports
from mercadofresco.course.handout import labs

ROOT = Path(__file__).resolve().parents[2]
RIGHT, WRONG = '"sdk_max_attempts": 2,', '"sdk_max_attempts": 5,'  # five SDK attempts: the incident's own setting


def _with_the_wrong_config(path: Path, target: Path) -> Path:
    """A learner's lab 1 (the solution) whose fixed_config keeps the SDK's five attempts: the same code in both."""
    notebook = nbformat.read(path, as_version=4)
    cell = next(c for c in notebook.cells if c.cell_type == "code" and RIGHT in c.source)
    cell.source = cell.source.replace(RIGHT, WRONG)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    return target


def test_a_spanish_lab_with_a_wrong_answer_scores_what_the_english_one_does_and_is_told_in_spanish(tmp_path):
    name = labs.lab_file("lab1")
    _with_the_wrong_config(ROOT / "solutions" / name, tmp_path / "class" / "ana_en.ipynb")
    spanish = _with_the_wrong_config(ROOT / "solutions" / "es" / name, tmp_path / "class" / "ana_es.ipynb")
    graded = {report.learner: report for report in grading.grade(tmp_path / "class", "lab1", jobs=2)}
    english, spanish_report = graded["ana_en"], graded["ana_es"]
    verdicts = [(check.check, check.passed) for check in english.checks]
    assert verdicts == [(check.check, check.passed) for check in spanish_report.checks]
    assert ("config_relations", False) in verdicts and english.score == spanish_report.score
    assert (english.language, spanish_report.language) == ("en", "es")
    reports.write_all(list(graded.values()), "lab1", tmp_path / "out")
    told = (tmp_path / "out" / "feedback" / "ana_es.md").read_text()
    assert "**Puntuación: " in told and "pista: (c) fixed_config:" in told, told
    assert "Score:" not in told and "hint:" not in told
    assert "**Score: " in (tmp_path / "out" / "feedback" / "ana_en.md").read_text()
    gradebook = (tmp_path / "out" / "report.csv").read_text().splitlines()
    assert gradebook[0].endswith(",language") and any(line.endswith(",es") for line in gradebook[1:])

    said = subprocess.run(
        [sys.executable, "-m", "mercadofresco.course.selfcheck", str(spanish)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    ).stdout
    assert "celda(s) fallaron" in said and "(# Comprobación pública (c))" in said and "(visto: 5 intentos" in said, said
    assert "failed" not in said and "public check" not in said, said
