"""What the committed notebooks show a reader who does not see every colour, or does not see the page at all.

Every picture in a notebook, a lab or a lab solution is an HTML image with a text alternative that says what
that run shows (JupyterLab reads `alt`; a bare PNG output gets none), and its series stay apart under
simulated colour-vision deficiencies (tests/notebooks/colour_vision.py). Every HTML table has column headers a
screen reader uses. The committed outputs are what strict nbval compares each run with, so they are current.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.notebooks.colour_vision import distance, problems

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(
    str(p.relative_to(ROOT))
    for pattern in ("notebooks/*.ipynb", "notebooks/es/*.ipynb", "labs/*.ipynb", "solutions/*.ipynb")
    for p in ROOT.glob(pattern)
)
IMAGE = re.compile(r"<img\b[^>]*>")
ALT = re.compile(r'\balt="([^"]*)"')
TABLE = re.compile(r"<table\b.*?</table>", re.DOTALL)


def outputs(path: str) -> list[tuple[int, dict]]:
    """Each output of the notebook at `path`, with the number of its cell."""
    cells = json.loads((ROOT / path).read_text())["cells"]
    return [(number, output) for number, cell in enumerate(cells) for output in cell.get("outputs", [])]


def text(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "".join(value)


def picture_problems(path: str) -> list[str]:
    """Pictures without a text alternative, or whose alternative says nothing of the run."""
    found = []
    for number, output in outputs(path):
        data = output.get("data", {})
        if any(kind.startswith("image/") for kind in data):
            found.append(f"cell {number}: a bare {next(k for k in data if k.startswith('image/'))} output, without alt")
        for image in IMAGE.findall(text(data.get("text/html", ""))):
            alt = ALT.search(image)
            said = alt.group(1) if alt else ""
            if len(said) < 40 or not re.search(r"\d", said) or said.startswith("<Figure"):
                found.append(f"cell {number}: an image whose text alternative says nothing of the run: {said!r}")
    return found


def colour_problems(path: str) -> list[str]:
    found = []
    for number, output in outputs(path):
        series = output.get("metadata", {}).get("text/html", {}).get("series")
        if series is not None:
            found += [f"cell {number}: {problem}" for problem in problems(series)]
    return found


def table_problems(path: str) -> list[str]:
    found = []
    for number, output in outputs(path):
        for table in TABLE.findall(text(output.get("data", {}).get("text/html", ""))):
            if 'scope="col"' not in table:
                found.append(f"cell {number}: a table without column headers a screen reader uses: {table[:120]!r}")
            if re.search(r"<th[^>]*>\s*</th>", table):
                found.append(f"cell {number}: a table with an empty header cell")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_every_picture_has_a_text_alternative_and_series_a_reader_tells_apart(path):
    found = picture_problems(path) + colour_problems(path) + table_problems(path)
    assert not found, f"{path}:\n  " + "\n  ".join(found)


def test_the_rules_fail_a_red_green_pair_a_bare_figure_and_a_headerless_table(tmp_path, monkeypatch):
    """Each rule finds what it is for: a red/green pair of lines, a PNG without alt, a table of <td> only."""
    from matplotlib.figure import Figure

    from mercadofresco.lessons import show
    from mercadofresco.lessons.show.pictures import series

    figure = Figure()
    ax = figure.subplots()
    ax.plot([0, 1], [0, 1], color="tab:red", label="lost")
    ax.plot([0, 1], [1, 0], color="tab:green", label="kept")
    ax.legend()
    found = problems(series(figure))
    assert any("colour alone" in problem for problem in found), found
    assert any("deuteranopia" in problem for problem in found), found
    assert distance("tab:red", "tab:green", "deuteranomaly") < 10 <= distance(show.BAD, show.GOOD, "deuteranomaly")

    picture = show.Picture(figure, "Two lines cross at 0.5: lost falls from 0 to 1, kept from 1 to 0.")
    html, _ = picture._repr_mimebundle_()
    notebook = {
        "cells": [
            {"cell_type": "code", "outputs": [{"data": {"image/png": "iVBOR", "text/plain": "<Figure size 640x480>"}}]},
            {"cell_type": "code", "outputs": [{"data": {"text/html": html["text/html"].replace('alt="', 'alt="x')}}]},
            {"cell_type": "code", "outputs": [{"data": {"text/html": "<table><tr><td>1</td></tr></table>"}}]},
        ]
    }
    (tmp_path / "bad.ipynb").write_text(json.dumps(notebook))
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert picture_problems("bad.ipynb") == ["cell 0: a bare image/png output, without alt"]
    assert table_problems("bad.ipynb")[0].startswith("cell 2: a table without column headers")
    with pytest.raises(ValueError, match="text alternative"):
        show.Picture(figure, " ")
