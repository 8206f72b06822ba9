"""Notebook 19 points each closing claim at a notebook section: every cited section must exist."""

from __future__ import annotations

import json
import re
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
POINTER = re.compile(r"\[(\d\d) · ([^\]]+)\]\((\d\d_[a-z_]+\.ipynb)\)")


def markdown(name: str) -> str:
    cells = json.loads((NOTEBOOKS / name).read_text())["cells"]
    return "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")


def test_every_pointer_names_a_section_that_exists():
    pointers = POINTER.findall(markdown("19_conclusion.ipynb"))
    assert len(pointers) >= 20
    for number, heading, name in pointers:
        assert name.startswith(number), f"{number} · {heading} points at {name}"
        headings = {line[3:].strip() for line in markdown(name).splitlines() if line.startswith("## ")}
        assert heading in headings, f"{name} has no section {heading!r}"


def test_the_sections_being_written_elsewhere_are_named_by_notebook_and_lesson_section():
    text = markdown("19_conclusion.ipynb")
    for name, section in [("12_ordering", 12), ("13_outbox", 13), ("14_backpressure", 14),
                          ("15_decision_table", 15), ("16_architecture", 16)]:  # fmt: skip
        assert f"`{name}` (lesson section {section}," in text
