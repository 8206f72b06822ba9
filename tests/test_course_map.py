"""A way through the course: every notebook links to the previous and the next, and the labs where they fit."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import nbtools  # noqa: E402 (the maintainer's tool writes the links this test reads)

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_every_notebook_ends_with_working_links_to_the_previous_and_the_next():
    for index, path in enumerate(NOTEBOOKS):
        last = nbformat.read(path, as_version=4).cells[-1]
        assert last.get("id") == nbtools.NAV_ID, f"{path.name}: run `python tools/nbtools.py links`"
        targets = re.findall(r"\]\(([^)]+\.ipynb)\)", last.source)
        assert all((path.parent / target).resolve().is_file() for target in targets), (path.name, targets)
        expected = [NOTEBOOKS[i].name for i in (index - 1, index + 1) if 0 <= i < len(NOTEBOOKS)]
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
