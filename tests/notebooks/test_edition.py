"""The Spanish edition cannot drift from the English: built from its catalogs, the same code, the same numbers."""

from __future__ import annotations

import html
import io
import json
import re
import tokenize
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from tools import edition, notebook_catalog

ROOT = Path(__file__).resolve().parents[2]
SPANISH = sorted([*(ROOT / "notebooks" / "es").glob("*.ipynb"), *(ROOT / "solutions" / "es").glob("*.ipynb")])
ENGLISH_NUMBER = re.compile(r"(?<![\w.,])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d])|(?<![\w.,])-?\d+(?:\.\d+)?(?![\d])")
QUOTED = re.compile(r'"[^"\n]*"|\'[^\'\s]*\'')  # a JSON string, or a repr's word ('PED-2026-084417')
ALT = re.compile(r'\balt="([^"]*)"')  # a picture's text alternative: its numbers are the run's too
SPANISH_NUMBER = re.compile(r"(?<![\w.,])-?\d{1,3}(?:\.\d{3})+(?:,\d+)?(?![\d])|(?<![\w.,])-?\d+(?:,\d+)?(?![\d])")


def numbers(text: str, spanish: bool) -> Counter:
    """The numbers of `text` as values, read with the edition's symbols (5.472,5 in Spanish is 5,472.5 in English).

    Quoted text is data (a JSON item, a repr), the same in both editions: its numbers are left out of both."""
    text = QUOTED.sub(" ", html.unescape(text))
    found = (SPANISH_NUMBER if spanish else ENGLISH_NUMBER).findall(text)
    if spanish:
        found = [number.replace(".", "").replace(",", ".") for number in found]
    else:
        found = [number.replace(",", "") for number in found]
    return Counter(float(number) for number in found)


def output_text(output: dict) -> str:
    """What one output says as text: a stream, text/plain, or the text of HTML with its tags left out."""
    if output.get("output_type") == "stream":
        return str(output.get("text", ""))
    data = output.get("data", {})
    return str(data.get("text/plain", "") if "text/html" not in data else re.sub(r"<[^>]+>", " ", data["text/html"]))


def _repr(output: dict) -> bool:
    return output.get("output_type") == "execute_result" and set(output.get("data", {})) == {"text/plain"}


def text_outputs(cell: dict) -> str:
    """What a code cell's outputs say as text."""
    return "".join(output_text(output) for output in cell.get("outputs", []))


def _streams_joined(outputs: list) -> list:
    """Outputs with each run of one stream's pieces as one: where a stream breaks into pieces is the kernel's
    timing, not the notebook's (a longer Spanish line can arrive in two)."""
    joined: list = []
    for output in outputs:
        last = joined[-1] if joined else None
        stream = last is not None and output.get("output_type") == "stream" == last.get("output_type")
        if stream and last.get("name") == output.get("name"):
            joined[-1] = dict(last, text=str(last.get("text", "")) + str(output.get("text", "")))
            continue
        joined.append(output)
    return joined


def different_numbers(english: nbformat.NotebookNode, spanish: nbformat.NotebookNode) -> list[str]:
    """The code cells whose outputs hold different numbers in the two editions (by value, in any order).

    An output is read with the edition's symbols, except a value's repr (an execute_result of text/plain alone:
    `{'mean_s': 266.7}` is Python's writing, the same data in both editions), read with English ones in both."""
    found = []
    for mine, theirs in zip(english.cells, spanish.cells, strict=True):
        if mine.cell_type != "code" or "nbval-ignore-output" in mine.metadata.get("tags", []):
            continue  # prose, or an output that differs from run to run (strict nbval does not compare it either)
        ours, others = _streams_joined(mine.get("outputs", [])), _streams_joined(theirs.get("outputs", []))
        outputs = list(zip(ours, others, strict=False))
        if len(ours) != len(others) or any(
            numbers(output_text(one), spanish=False) != numbers(output_text(other), spanish=not _repr(other))
            for one, other in outputs
        ):
            found.append(mine.id)
    return found


def test_every_spanish_notebook_has_its_catalog_and_every_catalog_its_notebook():
    assert {path.name for path in SPANISH} == edition.in_edition()


@pytest.mark.parametrize("name", sorted(edition.in_edition()))
def test_a_spanish_notebook_is_what_its_english_and_its_catalog_make(name):
    """Each unit translated and none fuzzy, the template current, the committed sources those the build writes:
    so the code cells are the English ones, character for character."""
    assert edition.notebook_problems(name) == []


@pytest.mark.parametrize("name", sorted(edition.in_edition()))
def test_both_editions_of_a_notebook_show_the_same_numbers(name):
    english, spanish = _editions(name)
    assert different_numbers(english, spanish) == []


def _editions(name: str) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode]:
    """A lesson's or a lab solution's English notebook and its Spanish edition."""
    english, _template, _catalog, spanish = edition.notebook_paths(name)
    return nbformat.read(english, as_version=4), nbformat.read(spanish, as_version=4)


# -- the drift tests, each proven to fail ---------------------------------------------------------------------------
def _first(name: str = "00_start_here.ipynb") -> tuple[nbformat.NotebookNode, object]:
    english = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    return english, notebook_catalog.read(edition.notebook_paths(name)[2])


def test_an_edited_english_paragraph_makes_its_translation_stale_and_only_its_own():
    english, catalog = _first()
    cell = next(c for c in english.cells if c.cell_type == "markdown" and c.id == "c08")
    cell.source = "A paragraph inserted before the others.\n\n" + cell.source.replace("sleeps", "waits", 1)
    merged = edition.merged_by_place(notebook_catalog.template(english, "00"), catalog)
    fuzzy = [m.context for m in merged if m.id and m.fuzzy]
    empty = [m.context for m in merged if m.id and not m.string]
    assert (fuzzy, empty) == (["c08/1"], ["c08/0"]), (fuzzy, empty)  # moved paragraphs keep their Spanish
    _built, missing = notebook_catalog.translated(english, merged, edition.in_edition())
    assert missing == ["c08/1: fuzzy", "c08/0: untranslated"]


def test_a_missing_cell_and_a_changed_code_cell_are_not_what_the_catalog_makes():
    english, catalog = _first()
    built, _missing = notebook_catalog.translated(english, catalog, edition.in_edition())
    committed = nbformat.read(ROOT / "notebooks" / "es" / "00_start_here.ipynb", as_version=4)
    assert [c.source for c in committed.cells] == [c.source for c in built.cells]
    shorter = [c.source for c in committed.cells[:-1]]
    changed = [c.source.replace("120", "130") if c.cell_type == "code" else c.source for c in committed.cells]
    assert shorter != [c.source for c in built.cells] and changed != [c.source for c in built.cells]


def test_a_different_number_in_one_edition_is_found():
    english = nbformat.read(ROOT / "notebooks" / "00_start_here.ipynb", as_version=4)
    spanish = nbformat.read(ROOT / "notebooks" / "es" / "00_start_here.ipynb", as_version=4)
    compared = [
        c for c in spanish.cells if c.cell_type == "code" and "nbval-ignore-output" not in c.metadata.get("tags", [])
    ]
    cell = next(c for c in compared if text_outputs(c).strip())
    cell.outputs = [nbformat.v4.new_output("stream", text=text_outputs(cell) + " 7")]
    assert different_numbers(english, spanish) == [cell.id]
    assert numbers("5,472,000 and 0.24", spanish=False) == numbers("5.472.000 y 0,24", spanish=True)


def _code_tokens(source: str) -> list[tuple[int, str]]:
    """A code cell's tokens, strings and comments reduced to their kind (a magic line is a comment)."""
    masked = "\n".join(("#" + line[1:]) if line.startswith(("%", "!")) else line for line in source.split("\n"))
    kept: list[tuple[int, str]] = []
    for token in tokenize.generate_tokens(io.StringIO(masked).readline):
        if token.type == tokenize.NL or (token.type == tokenize.STRING and kept and kept[-1][0] == tokenize.STRING):
            continue  # literals side by side are one string (a translation writes them as one literal)
        kept.append((token.type, "" if token.type in (tokenize.STRING, tokenize.COMMENT) else token.string))
    return kept


@pytest.mark.parametrize("name", [path.name for path in SPANISH])
def test_a_spanish_code_cell_differs_from_its_english_in_its_words_only(name):
    """The same code in both editions: every token but a string or a comment is the English one, and each string
    that differs is one the catalog translates (a panel label, a title, a printed sentence)."""
    english, spanish = _editions(name)
    for mine, theirs in zip(english.cells, spanish.cells, strict=True):
        if mine.cell_type == "code":
            assert _code_tokens(mine.source) == _code_tokens(theirs.source), mine.id
            if mine.source != theirs.source:
                assert notebook_catalog.code_words(mine.id, mine.source), mine.id


def test_a_code_string_whose_translation_breaks_its_cell_or_its_fields_is_refused():
    english, catalog = _first()
    cell = next(c for c in english.cells if c.cell_type == "code" and 'description="wait (s)"' in c.source)
    cell.source += '\nprint(f"waited {seconds} s")'
    merged = edition.merged_by_place(notebook_catalog.template(english, "00"), catalog)
    entry = next(m for m in merged if m.context == f"{cell.id}/str" and "seconds" in m.id)
    for spanish, why in [('esperó" {seconds} s', "does not parse"), ("esperó {segundos} s", "other {fields}")]:
        entry.string, entry.flags = spanish, set()
        built, missing = notebook_catalog.translated(english, merged, edition.in_edition())
        assert any(why in line for line in missing), missing
        assert next(c for c in built.cells if c.id == cell.id).source == cell.source  # the English cell, unbroken
    entry.string = "esperó {seconds} s"
    built, missing = notebook_catalog.translated(english, merged, edition.in_edition())
    assert 'print(f"esperó {seconds} s")' in next(c for c in built.cells if c.id == cell.id).source
    assert missing == []


def test_literals_side_by_side_are_one_entry_and_come_back_as_one_literal():
    source = 'checks.expect(\n    ok,\n    "the first half, "\n    f"then {count} more",\n)\nprint("a" "b")\n'
    words = notebook_catalog.code_words("c1", source)
    assert [(w.text, w.quote) for w in words] == [("the first half, then {count} more", 'f"'), ("ab", '"')]
    catalog = notebook_catalog.template(nbformat.v4.new_notebook(), "t")
    entry = catalog.add(words[0].text, string="la primera mitad, luego {count} más", context="c1/str")
    catalog.add("ab", string="ab", context="c1/str")  # said the same: the English characters stay
    cell = nbformat.v4.new_code_cell(source, id="c1")
    written = notebook_catalog._translated_code(cell, catalog, missing := [])
    assert missing == [] and entry.string in written
    assert 'f"la primera mitad, luego {count} más",' in written and 'print("a" "b")' in written


def test_a_labs_hints_checks_and_docstrings_are_its_prose():
    source = (
        'FIXES = {"key": "send the key", "table": "a table of claims"}\n'
        'def f(aws):\n    """What the learner must write."""\n'
        'with checks.part("(a, contain)"):\n'
        '    checks.expect(lambda: x, "x must hold", seen=lambda: f"saw {x}", holds="x holds")\n'
    )
    said = [(w.kind, w.text) for w in notebook_catalog.code_words("c1", source)]
    assert said == [
        ("option", "send the key"),
        ("option", "a table of claims"),
        ("code docstring", "What the learner must write."),
        ("code string", "(a, contain)"),
        ("code string", "x must hold"),
        ("code string", "saw {x}"),
        ("code string", "x holds"),
    ]


# JupyterLab's commands the notebooks name (English as they write it -> the label its menus show).
MENU_WORDS = {
    "Run All Cells": "Run All Cells",
    "Restart Kernel and Run All Cells": "Restart Kernel and Run All Cells…",
    "Save Notebook": "Save %1",
}
MENUS = ("Run", "Kernel", "File", "Edit")  # "Run → Run All Cells": a menu the pack leaves English stays English


def test_the_spanish_edition_opens_jupyterlab_in_spanish_and_names_its_commands_as_its_menus_do():
    """`make start-es` reads .jupyterlab-settings/es: JupyterLab's locale is the Spanish language pack's, and every
    Spanish sentence that names one of JupyterLab's commands names it as that pack's menus show it."""
    from jupyterlab_server.translation_utils import get_language_pack

    settings = json.loads((ROOT / ".jupyterlab-settings" / "es" / "overrides.json").read_text())
    locale = settings["@jupyterlab/translation-extension:plugin"]["locale"]
    menus = get_language_pack(locale)[0]["jupyterlab"]
    shown = {
        english: menus[label][0].replace("…", "").replace("%1", menus["Notebook"][0])
        for english, label in MENU_WORDS.items()
    }
    for menu in MENUS:  # a path as the menu bar and the menu show it
        said = menus.get(f"menu\x04{menu}", [menu])[0]
        shown |= {
            f"{menu} → {english}": f"{said} → {item}" for english, item in list(shown.items()) if "→" not in english
        }
    assert shown["Run All Cells"] == "Ejecutar todas las celdas"
    catalogs = [edition.SPANISH, *sorted((ROOT / "locale" / "es" / "notebooks").glob("*.po"))]
    wrong = [
        (path.name, entry.id[:60])
        for path in catalogs
        for entry in notebook_catalog.read(path)
        for english, spanish in shown.items()
        if entry.id and english in str(entry.id) and entry.string and spanish.lower() not in str(entry.string).lower()
    ]
    assert wrong == [], f"say JupyterLab's commands as its Spanish menus do: {shown}"


@pytest.mark.parametrize("source", sorted(edition.DOCS))
def test_a_spanish_guide_is_what_its_english_and_its_catalog_make(source):
    """The learner's and the instructor's guides, the bundle's README and the labs' README, in Spanish: each unit
    translated and current, the committed file the one the build writes."""
    assert edition.doc_problems(source) == []


def test_every_english_notebook_and_lab_has_its_spanish_edition():
    assert {path.name for path in edition.english_notebooks()} == edition.in_edition()
