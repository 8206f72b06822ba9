"""A notebook's prose as a gettext catalog, and the Spanish notebook built from the English one and that catalog.

One entry a unit of a markdown cell (a heading, a paragraph, a list item, a table, a diagram), keyed by the cell's
id and the unit's place in it (`msgctxt "c03/2"`), its English source as the msgid: a translator sees one
paragraph at a time, and an edited paragraph marks one entry fuzzy (gettext's word for "the English changed
since this was translated"), not its neighbours. Code cells are the same code in both editions: the package
speaks the edition's language itself (`mercadofresco.i18n`, which a kernel started in `notebooks/es/` reads).

A `<!-- try: … -->` comment at the end of a unit is the tests' ("try this" values to set), never the
translator's: it is kept out of the msgid and written back as it is.
"""

from __future__ import annotations

import html
import io
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import nbformat
from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po
from markdown_it import MarkdownIt

_HEADER = re.compile(r'<th scope="col"[^>]*>(.*?)</th>')
TRY_COMMENT = re.compile(r"\s*(<!--\s*try:.*?-->)\s*$", re.DOTALL)
_MARKDOWN = MarkdownIt("commonmark").enable("table")
EDITION = "es"
DATED = datetime(2026, 12, 7, tzinfo=UTC)  # the catalogs' header dates, fixed: git says when a line changed
_UNITS = {"heading_open": "heading", "paragraph_open": "paragraph", "fence": "diagram", "table_open": "table"}
_LISTS = ("bullet_list_open", "ordered_list_open")


@dataclass(frozen=True)
class Unit:
    """One piece of a markdown cell a translator translates at once: lines [start, end) of the cell."""

    context: str  # "<cell id>/<n>"
    kind: str
    start: int
    end: int
    marker: str  # a list item's "- " or "1. ", a heading's "## ": kept out of the msgid
    text: str  # what the translator reads: the unit's lines, without its marker and its try comment
    tail: str  # the try comment, if any


def units(cell_id: str, source: str) -> list[Unit]:
    """The units of one markdown cell, in order; the lines between them (blank lines, rules) are not units."""
    lines = source.split("\n")
    found: list[tuple[str, int, int]] = []
    for token in _MARKDOWN.parse(source):
        if token.level == 0 and token.type in _UNITS and token.map:
            if token.type == "fence" and token.info.strip() not in ("mermaid", ""):
                continue  # code shown in prose is code: the same in both editions
            found.append((_UNITS[token.type], *token.map))
        elif token.level == 1 and token.type == "list_item_open" and token.map:
            found.append(("item", *token.map))
    result = []
    for number, (kind, start, end) in enumerate(found):
        while end > start + 1 and not lines[end - 1].strip():
            end -= 1  # a list item's map takes the blank line after it
        chunk = "\n".join(lines[start:end])
        marker = ""
        if kind in ("item", "heading"):  # a list item's "- " or "1. ", a heading's "## ": the translator's to keep
            marker = re.match(r"\s*(?:[-*+]|\d+[.)]|#+)\s+", chunk).group(0)
            chunk = chunk[len(marker) :]
        tail_match = TRY_COMMENT.search(chunk)
        tail = tail_match.group(1) if tail_match else ""
        text = chunk[: tail_match.start()] if tail_match else chunk
        result.append(Unit(f"{cell_id}/{number}", kind, start, end, marker, text, tail))
    return result


def template(notebook: nbformat.NotebookNode, name: str) -> Catalog:
    """The catalog template of a notebook's prose: one entry a unit, in the notebook's order."""
    catalog = Catalog(project=name, version="1", fuzzy=False, creation_date=DATED, revision_date=DATED)
    for cell in notebook.cells:
        if cell.cell_type != "markdown":
            continue
        for unit in units(cell.id, cell.source):
            if any(character.isalpha() for character in unit.text):
                catalog.add(unit.text, context=unit.context, auto_comments=[unit.kind])
    return catalog


def translated(
    notebook: nbformat.NotebookNode, catalog: Catalog, edition: set[str]
) -> tuple[nbformat.NotebookNode, list[str]]:
    """The notebook with each unit of prose replaced by its translation, without outputs, and what could not be
    translated (a unit with no translation, or a fuzzy one). `edition`: the notebooks' file names that have a
    Spanish edition, which its links reach as siblings."""
    built = nbformat.reads(nbformat.writes(notebook), as_version=4)
    missing: list[str] = []
    for cell in built.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            continue
        if cell.cell_type != "markdown":
            continue
        lines = cell.source.split("\n")
        for unit in reversed(units(cell.id, cell.source)):
            if not any(character.isalpha() for character in unit.text):
                continue
            entry = catalog.get(unit.text, context=unit.context)
            if entry is None or not entry.string or entry.fuzzy:
                why = "fuzzy" if entry is not None and entry.fuzzy else "untranslated"
                missing.append(f"{unit.context}: {why}")
                continue
            spanish = unit.marker + entry.string + (" " + unit.tail if unit.tail else "")
            lines[unit.start : unit.end] = spanish.split("\n")
        cell.source = relinked("\n".join(lines), edition)
    built.metadata["edition"] = EDITION
    return built, missing


def relinked(source: str, edition: set[str]) -> str:
    """Links of an English notebook's prose as seen from its Spanish edition's folder, one level down: a sibling
    notebook in `edition` stays a sibling (the reader stays in Spanish), anything else is reached one level up."""

    def target(match: re.Match) -> str:
        link = match.group(2)
        if re.match(r"[a-z]+:|#|/", link):
            return match.group(0)  # a web page, an anchor in this notebook, an absolute path
        path = link.split("#")[0]
        if "/" not in path and path in edition:
            return match.group(0)
        return f"{match.group(1)}(../{link})"

    return re.sub(r"(\]\s?)\(([^()\s]+)\)", target, source)


def shown_headers(paths: list[Path]) -> list[str]:
    """The column headers the committed outputs of `paths` show (`show.Table` makes them from English keys, where
    no extractor can read them; the edition translates them where shown, `pgettext("table header", …)`)."""
    found: set[str] = set()
    for path in paths:
        for cell in nbformat.read(path, as_version=4).cells:
            for output in cell.get("outputs", []):
                shown = output.get("data", {}).get("text/html", "")
                found |= {html.unescape(header) for header in _HEADER.findall(shown)}
    return sorted(found)


def read(path: Path) -> Catalog:
    """A catalog from its PO file."""
    return read_po(io.StringIO(path.read_text()), locale="es")
