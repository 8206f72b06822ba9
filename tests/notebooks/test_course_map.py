"""A way through the course: every notebook links to the previous and the next, and the labs where they fit."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
from tools import nbtools  # noqa: E402 (the maintainer's tool writes the links this test reads)

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


SPANISH = sorted((ROOT / "notebooks" / "es").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("edition", [NOTEBOOKS, SPANISH], ids=["en", "es"])
def test_every_notebook_ends_with_working_links_to_the_previous_and_the_next(edition):
    """In each edition: the Spanish notebooks reach their Spanish neighbours, and the labs one level further up."""
    for index, path in enumerate(edition):
        last = nbformat.read(path, as_version=4).cells[-1]
        assert last.get("id") == nbtools.NAV_ID, f"{path.name}: run `python tools/nbtools.py links`"
        targets = re.findall(r"\]\(([^)]+\.ipynb)\)", last.source)
        assert all((path.parent / target).resolve().is_file() for target in targets), (path.name, targets)
        expected = [edition[i].name for i in (index - 1, index + 1) if 0 <= i < len(edition)]
        assert [t for t in targets if not t.startswith("../")] == expected, path.name


def test_each_lab_is_linked_after_the_notebook_it_builds_on():
    linked = {}
    for path in NOTEBOOKS:
        for target in re.findall(r"\]\(\.\./labs/([^)]+)\)", nbformat.read(path, as_version=4).cells[-1].source):
            linked[target] = path.name[:2]
    assert linked == {"lab1_double_charge.ipynb": "04", "lab2_dlq_runbook.ipynb": "11", "lab3_outbox.ipynb": "13"}


def test_every_notebook_says_what_to_do_after_a_kernel_restart():
    for path in NOTEBOOKS:
        assert nbtools.RESTART in nbformat.read(path, as_version=4).cells[0].source, path.name


def test_the_links_are_what_the_tool_writes():
    assert nbtools.links() == []  # nothing to change: the committed notebooks are linked


def test_notebook_00_maps_the_course_with_each_lab_after_the_notebook_it_builds_on():
    from mercadofresco.lessons import course_map

    stops = course_map.stops()
    names = [stop.path.stem for stop in stops]
    assert [n for n in names if not n.startswith("lab")] == [path.stem for path in NOTEBOOKS]
    for number, (lab, _) in nbtools.LAB_AFTER.items():  # the links at each notebook's end say the same
        assert names.index(lab.removesuffix(".ipynb")) == names.index(next(n for n in names if n[:2] == number)) + 1
    assert all(stop.words > 300 and stop.reading_minutes == -(-stop.words // 200) for stop in stops)
    notebook_00 = nbformat.read(NOTEBOOKS[0], as_version=4)
    assert any("course_map.shown()" in cell.source for cell in notebook_00.cells)


def test_the_course_maps_links_open_files_and_its_times_were_measured_for_every_stop():
    from mercadofresco.lessons import course_map

    text = course_map.shown().data
    targets = re.findall(r"\]\(([^)]+\.ipynb)\)", text)
    assert len(targets) == len(course_map.stops())
    assert all((ROOT / "notebooks" / target).resolve().is_file() for target in targets), targets
    measured = course_map.measured()["seconds"]
    missing = {stop.path.name for stop in course_map.stops()} - set(measured)
    assert not missing, f"maintainers: run `make benchmark` (notebook_times.py --write) to measure {missing}"
    assert "not measured" not in text


def test_a_labs_size_comes_from_its_solution_or_the_measured_count_without_it(tmp_path):
    from mercadofresco.lessons import course_map

    size = course_map.lab_size(ROOT / "labs" / "lab3_outbox.ipynb")
    assert size["written answers"] == 5 and size["hidden checks"] == 12
    assert size["lines of code in the solution"] == course_map.measured()["solution_lines"]["lab3_outbox.ipynb"]
    alone = tmp_path / "labs" / "lab3_outbox.ipynb"  # a learner's bundle: no solutions/ beside labs/
    alone.parent.mkdir()
    alone.write_bytes((ROOT / "labs" / "lab3_outbox.ipynb").read_bytes())
    assert course_map.lab_size(alone) == size
