"""Notebook 19 points each closing claim at a notebook section: every cited section must exist, in each edition."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
POINTER = re.compile(r"\[(\d\d) · ([^\]]+)\]\((\d\d_[a-z_]+\.ipynb)\)")


EDITIONS = [NOTEBOOKS, NOTEBOOKS / "es"]


def markdown(name: str, folder: Path = NOTEBOOKS) -> str:
    cells = json.loads((folder / name).read_text())["cells"]
    prose = [cell for cell in cells if cell["cell_type"] == "markdown" and cell.get("id") != "nav-links"]
    return "\n".join("".join(cell["source"]) for cell in prose)  # the previous/next links are not claims


@pytest.mark.parametrize("folder", EDITIONS, ids=["en", "es"])
def test_every_pointer_names_a_section_that_exists(folder):
    pointers = POINTER.findall(markdown("19_conclusion.ipynb", folder))
    assert len(pointers) >= 20
    for number, heading, name in pointers:
        assert name.startswith(number), f"{number} · {heading} points at {name}"
        headings = {line[3:].strip() for line in markdown(name, folder).splitlines() if line.startswith("## ")}
        assert heading in headings, f"{folder.name}/{name} has no section {heading!r}"


@pytest.mark.parametrize("folder", EDITIONS, ids=["en", "es"])
def test_every_section_notebook_is_cited(folder):
    cited = {name for _, _, name in POINTER.findall(markdown("19_conclusion.ipynb", folder))}
    sections = {path.name for path in folder.glob("*.ipynb")} - {"00_start_here.ipynb", "19_conclusion.ipynb"}
    assert sections <= cited, f"not cited: {sorted(sections - cited)}"
