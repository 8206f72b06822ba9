"""Wrong answers to the labs written by sessions that had not read the checks: the labs' checks are held to them.

`tests/labs/fresh/labN.json` holds what each such learner handed in: the solution with one mistake a learner makes
after reading the lesson, in the learner's words (`learner_says`), the rule it breaks with a quote (`breaks`), and
the edits (cell id, text in the solution, its replacement). They were written for issue 47 by three sessions that
saw the lesson, the package and the solutions, never `solutions/checks/` nor the variant files; they are kept
as they were written, and the tests say which check catches each one (`CAUGHT_BY`).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.labs import lab_variants
import nbformat

from mercadofresco.course.handout import labs

FOLDER = Path(__file__).parent / "fresh"


def variants(lab: str) -> list[dict]:
    """The fresh wrong answers to `lab` ("lab1"…), as written."""
    return json.loads((FOLDER / f"{lab}.json").read_text(encoding="utf-8"))


def notebook(lab: str, variant: dict) -> nbformat.NotebookNode:
    """The lab's solution with the variant's edits, as the learner handed it in."""
    solution = nbformat.read(labs.SOLUTIONS_DIR / labs.lab_file(lab), as_version=4)
    edits = [tuple(edit) for edit in variant["edits"]]
    return lab_variants.edited(edits, variant["name"], solution)
