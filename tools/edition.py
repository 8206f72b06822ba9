"""The Spanish edition's catalogs: the package's messages extracted with Babel, merged into the Spanish catalog.

    python -m tools.edition extract     # mercadofresco/locale/mercadofresco.pot from the package's _() calls
    python -m tools.edition update      # merge it into mercadofresco/locale/es/LC_MESSAGES/mercadofresco.po
    python -m tools.edition update notebooks/05_backoff_jitter.ipynb   # start (or merge) one notebook's catalog
    python -m tools.edition build [notebooks/NN_name.ipynb]  # the Spanish notebooks (a changed one loses its outputs)
    python -m tools.edition check       # exit 1 when the template is stale or a Spanish entry is missing or fuzzy

A message whose English changed keeps its old translation marked fuzzy (gettext's way; Poedit and Weblate show
the old English beside it), and `mercadofresco.i18n` does not use a fuzzy entry until a translator clears it.
Locations (#: file:line) are left out of the files so that moving a line does not change a catalog.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import io
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

import nbformat
from babel.messages.catalog import Catalog, Message
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po, write_po

from tools import notebook_catalog

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mercadofresco"
NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = ROOT / "solutions"
LOCALE = ROOT / "locale"  # the notebooks' catalogs (the package's travel with it, in mercadofresco/locale)
TEMPLATE = PACKAGE / "locale" / "mercadofresco.pot"
SPANISH = PACKAGE / "locale" / "es" / "LC_MESSAGES" / "mercadofresco.po"
CELL = "table cell"  # the context of a word a table shows (`show.tables.cell`), marked T_() in the package
KEYWORDS = {"_": None, "N_": None, "pgettext": ((1, "c"), 2), "ngettext": (1, 2)}
PROJECT = "MercadoFresco reliability workbook"
DATED = datetime(2026, 12, 7, tzinfo=UTC)  # the files' header dates, fixed: git says when a line changed
SPANISH_PLURALS = "nplurals=2; plural=(n != 1);"  # gettext's and Poedit's for Spanish (CLDR adds one for millions)


def extracted() -> Catalog:
    """The package's messages as a template: every `_`, `pgettext` and `ngettext` call with a literal."""
    template = Catalog(project=PROJECT, version="1", fuzzy=False, creation_date=DATED, revision_date=DATED)
    found = extract_from_dir(PACKAGE, method_map=[("**.py", "python")], keywords=KEYWORDS, strip_comment_tags=True)
    for filename, _lineno, message, comments, context in found:
        template.add(message, locations=[(filename, 0)], auto_comments=comments, context=context)
    cells = extract_from_dir(PACKAGE, method_map=[("**.py", "python")], keywords={"T_": None}, strip_comment_tags=True)
    for filename, _lineno, message, comments, _context in cells:  # T_(): a table cell's words, shown translated
        template.add(message, locations=[(filename, 0)], auto_comments=comments, context=CELL)
    for rule in property_rules():
        template.add(rule, context=RULE, auto_comments=["a property a lab's public check states (its ✓ line)"])
    from mercadofresco.lessons import course_map  # its tables' columns are computed, in notebook 00's markdown

    columns = {column for rows in (course_map.table(), course_map.labs_table()) for row in rows for column in row}
    for header in sorted(set(notebook_catalog.shown_headers(english_notebooks())) | columns):
        template.add(header, context="table header", auto_comments=["a table's column header, in the notebooks"])
    return template


CHECKS = SOLUTIONS / "checks"  # the hidden checks: their hints have a catalog of their own, the grader's
CHECKS_TEMPLATE, CHECKS_SPANISH = CHECKS / "locale" / "checks.pot", CHECKS / "locale" / "es.po"


def check_hints() -> Catalog:
    """The hidden checks' hints as a template, `msgctxt "lab1/fix_order"`: what a learner's feedback says of a
    failed check. Kept beside the checks, out of the package's catalog, which the learner's bundle carries."""
    template = Catalog(project=PROJECT, version="1", fuzzy=False, creation_date=DATED, revision_date=DATED)
    for path in sorted(CHECKS.glob("lab*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            named = isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Check" and len(node.args) >= 2
            if named and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args[:2]):
                check, hint = node.args[0].value, node.args[1].value
                template.add(hint, context=f"{path.stem}/{check}", auto_comments=["a hidden check's hint"])
    return template


RULE = "property rule"  # a property's rule, its docstring's first line: `checks.no_counterexample` shows it


def property_rules() -> list[str]:
    """The first line of each property's docstring (`def prop(bench, examples, seed)` in lessons/exercises): the
    labs' public checks state it as their rule, `holds.__doc__`, where no `_()` can mark it."""
    found = []
    for path in sorted((PACKAGE / "lessons" / "exercises").glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            names = [argument.arg for argument in node.args.args] if isinstance(node, ast.FunctionDef) else []
            if names[:3] == ["bench", "examples", "seed"] and ast.get_docstring(node):
                found.append(ast.get_docstring(node).split("\n")[0])
    return found


def as_text(catalog: Catalog) -> str:
    """A catalog as the committed file holds it: no dates, no line numbers, entries in the template's order."""
    out = io.BytesIO()
    write_po(out, catalog, width=100, include_lineno=False, include_previous=True)
    return out.getvalue().decode()


def updated(template: Catalog, spanish_text: str | None) -> Catalog:
    """The Spanish catalog merged with `template`: new entries empty, changed ones fuzzy, gone ones dropped."""
    spanish = read_po(io.StringIO(spanish_text), locale="es") if spanish_text else _new_spanish()
    spanish.update(template, update_header_comment=False, no_fuzzy_matching=False)
    spanish.obsolete.clear()  # a message the package no longer says is not kept (git keeps the history)
    return spanish


def said(message: Message) -> bool:
    """Whether a catalog entry is translated: its one string, or every form of a plural one."""
    forms = message.string if isinstance(message.string, tuple | list) else (message.string,)
    return all(forms)


def _new_spanish() -> Catalog:
    spanish = Catalog(locale="es", project=PROJECT, version="1", fuzzy=False, creation_date=DATED, revision_date=DATED)
    spanish.mime_headers = [("Plural-Forms", SPANISH_PLURALS)]
    return spanish


def problems(template: Catalog, spanish: Catalog, template_path: Path = TEMPLATE) -> list[str]:
    """What stops the Spanish edition from saying a catalog's messages (the package's, or the hidden checks' hints):
    a stale template, missing or fuzzy entries."""
    found = []
    if not template_path.exists() or template_path.read_text() != as_text(template):
        found.append(f"{template_path.relative_to(ROOT)} is stale: run `python -m tools.edition extract`")
    for message in template:
        if not message.id:
            continue
        translated = spanish.get(message.id, context=message.context)
        if translated is None or not said(translated):
            found.append(f"no Spanish for {message.id!r}" + (f" ({message.context})" if message.context else ""))
        elif translated.fuzzy:
            found.append(f"fuzzy (the English changed): {message.id!r}")
    return found


def hint_problems() -> list[str]:
    """What keeps the hidden checks' hints from being said in Spanish: a stale template, a missing or fuzzy hint."""
    spanish = read_po(io.StringIO(CHECKS_SPANISH.read_text()), locale="es") if CHECKS_SPANISH.exists() else None
    return problems(check_hints(), spanish or _new_spanish(), CHECKS_TEMPLATE)


def merged_by_place(template: Catalog, old: Catalog | None) -> Catalog:
    """A notebook's catalog merged with its template, cell by cell: a unit whose English is unchanged keeps its
    Spanish wherever it moved in its cell; an edited one keeps the Spanish of the most similar unit left in its
    cell, fuzzy, with the old English beside it (#| msgid); anything else is new. Babel's own merge goes by text
    alone, across the notebook, so one inserted paragraph there marks its neighbours fuzzy as well."""
    spanish = _new_spanish()
    spanish.project = template.project
    left: dict[str, list[Message]] = {}  # a cell -> its old units not matched yet
    for message in old or []:
        if message.id:
            left.setdefault(message.context.split("/")[0], []).append(message)
    entries, kept = [m for m in template if m.id], set()
    for message in entries:  # the same English in the same cell first: kept as it was
        same = next((m for m in left.get(_cell(message), []) if m.id == message.id), None)
        if same is not None:
            left[_cell(message)].remove(same)
            message.string, message.flags = same.string, set(same.flags)
            message.previous_id = list(same.previous_id)
            kept.add(id(message))
    for message in entries:  # then an edited one: the most similar left in its cell, if it is similar enough
        if id(message) in kept:
            continue
        ratio, similar = max(((_similar(message.id, m.id), m) for m in left.get(_cell(message), [])), default=(0, None))
        if similar is not None and ratio >= SIMILAR and similar.string:
            left[_cell(message)].remove(similar)
            message.string, message.flags, message.previous_id = similar.string, {"fuzzy"}, [similar.id]
    for message in entries:
        entry = spanish.add(message.id, context=message.context, auto_comments=message.auto_comments)
        entry.string, entry.flags, entry.previous_id = message.string or "", set(message.flags), message.previous_id
    return spanish


SIMILAR = 0.6  # difflib's ratio from which an edited paragraph is the old one changed, not a new one


def _cell(message: Message) -> str:
    return message.context.split("/")[0]


def _similar(one: str, other: str) -> float:
    return difflib.SequenceMatcher(None, one, other, autojunk=False).ratio()


def notebook_paths(name: str) -> tuple[Path, Path, Path, Path]:
    """An English notebook's template, its Spanish catalog and its Spanish notebook, by the notebook's file name:
    a lesson's in notebooks/, a lab's solution in solutions/ (the Spanish lab is built from the Spanish solution,
    as the English one is: `python -m mercadofresco.course.grading build`)."""
    stem = Path(name).stem
    folder = SOLUTIONS if (SOLUTIONS / name).exists() else NOTEBOOKS
    return (
        folder / name,
        LOCALE / "notebooks" / f"{stem}.pot",
        LOCALE / "es" / "notebooks" / f"{stem}.po",
        folder / "es" / name,
    )


# The guides a learner or an instructor reads -> their Spanish edition (the learner's bundle ships README.es.md).
DOCS = {
    "docs/learner.md": "docs/es/learner.md",
    "docs/instructor.md": "docs/es/instructor.md",
    "learner/README.md": "learner/es/README.md",
    "labs/README.md": "labs/es/README.md",
}
BUNDLE_ROOT = {"learner/README.md"}  # read from the bundle's root, beside the English one: its links stay as written


def doc_paths(source: str) -> tuple[Path, Path, Path, Path]:
    """A guide's English file, template, Spanish catalog and Spanish file (`docs/learner.md` -> docs-learner.po)."""
    key = source.removesuffix(".md").replace("/", "-")
    return ROOT / source, LOCALE / "docs" / f"{key}.pot", LOCALE / "es" / "docs" / f"{key}.po", ROOT / DOCS[source]


def _as_notebook(text: str) -> nbformat.NotebookNode:
    """A guide as the notebook catalog reads prose: one markdown cell (its units keyed "doc/<n>")."""
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text, id="doc")])


def doc_template(source: str) -> Catalog:
    """The catalog template of a guide's prose: one entry a heading, paragraph, list item or table."""
    return notebook_catalog.template(_as_notebook(doc_paths(source)[0].read_text()), source)


def built_doc(source: str) -> tuple[str, list[str]]:
    """A guide's Spanish edition as its English and its catalog make it, and what is missing."""
    english, _template, catalog, _spanish = doc_paths(source)
    read = notebook_catalog.read(catalog) if catalog.exists() else Catalog(locale="es")
    siblings = {Path(target).name for name, target in DOCS.items() if Path(name).parent == Path(source).parent}
    relink = source not in BUNDLE_ROOT
    notebook, missing = notebook_catalog.translated(
        _as_notebook(english.read_text()), read, siblings | in_edition(), relink
    )
    return _anchored(notebook.cells[0].source, source) if relink else notebook.cells[0].source, missing


def _anchored(text: str, source: str) -> str:
    """Links to a heading of a Spanish sibling guide (`instructor.md#grading-a-class-step-by-step`) with the anchor
    its Spanish heading makes, as GitHub and JupyterLab make one from a heading's words."""
    folder = Path(source).parent

    def anchor(match: re.Match) -> str:
        linked = (folder / match.group(2)).as_posix() if match.group(2) else source  # no file: this guide
        spanish = _heading_anchors(linked) if linked in DOCS else {}
        return f"{match.group(1)}{match.group(2) or ''}#{spanish.get(match.group(3), match.group(3))})"

    return re.sub(r"(\]\()([\w.-]+\.md)?#([\w-]+)\)", anchor, text)


def _heading_anchors(source: str) -> dict[str, str]:
    """A guide's headings: the English anchor -> the Spanish one, from its catalog."""
    _english, _template, catalog, _spanish = doc_paths(source)
    found = {}
    for entry in notebook_catalog.read(catalog) if catalog.exists() else []:
        if entry.id and entry.string and "heading" in entry.auto_comments:
            found[_slug(entry.id)] = _slug(entry.string)
    return found


def _slug(heading: str) -> str:
    """A heading's anchor: lower case, punctuation dropped, spaces as hyphens (GitHub's and JupyterLab's rule)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def doc_problems(source: str) -> list[str]:
    """What keeps a guide's Spanish edition from being what its English and its catalog make."""
    _english, template_path, _catalog, spanish = doc_paths(source)
    found = []
    if not template_path.exists() or template_path.read_text() != as_text(doc_template(source)):
        found.append(f"{template_path.relative_to(ROOT)} is stale: run `python -m tools.edition extract`")
    text, missing = built_doc(source)
    found += [f"{source} {line}" for line in missing]
    if not spanish.exists() or spanish.read_text() != text:
        found.append(f"{spanish.relative_to(ROOT)} is not what its catalog makes: run `python -m tools.edition build`")
    return found


def english_notebooks() -> list[Path]:
    """Every notebook with prose to translate: the lessons and the labs' solutions."""
    return sorted([*NOTEBOOKS.glob("*.ipynb"), *SOLUTIONS.glob("*.ipynb")])


def in_edition() -> set[str]:
    """The notebooks that have a Spanish edition: those whose catalog exists."""
    return {f"{path.stem}.ipynb" for path in (LOCALE / "es" / "notebooks").glob("*.po")}


def built(name: str) -> tuple[nbformat.NotebookNode, list[str]]:
    """The Spanish notebook `name` as its English source and catalog make it (no outputs), and what is missing."""
    english, _template, catalog, _spanish = notebook_paths(name)
    notebook = nbformat.read(english, as_version=4)
    return notebook_catalog.translated(notebook, notebook_catalog.read(catalog), in_edition())


def notebook_problems(name: str) -> list[str]:
    """What keeps a notebook's Spanish edition from being what its English and its catalog make."""
    english, template_path, _catalog, spanish = notebook_paths(name)
    found = []
    template = notebook_catalog.template(nbformat.read(english, as_version=4), name)
    if not template_path.exists() or template_path.read_text() != as_text(template):
        found.append(f"{template_path.relative_to(ROOT)} is stale: run `python -m tools.edition extract`")
    notebook, missing = built(name)
    found += [f"{name} {line}" for line in missing]
    if not spanish.exists():
        found.append(f"{spanish.relative_to(ROOT)} is missing: run `python -m tools.edition build`")
    else:
        committed = nbformat.read(spanish, as_version=4)
        if [(c.cell_type, c.source) for c in committed.cells] != [(c.cell_type, c.source) for c in notebook.cells]:
            found.append(
                f"{spanish.relative_to(ROOT)} is not what its catalog makes: run `python -m tools.edition build`"
            )
    return found


def _names(paths: list[str]) -> set[str]:
    return {Path(path).name for path in paths if path}


def _sources(notebook: nbformat.NotebookNode) -> list[tuple[str, str]]:
    return [(cell.cell_type, cell.source) for cell in notebook.cells]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.edition", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["extract", "update", "build", "check"])
    parser.add_argument(
        "notebooks",
        nargs="*",
        help="update, build: only these notebooks (every one with a Spanish catalog by default); update starts a "
        "catalog for a notebook that has none",
    )
    parser.add_argument("--draft", action="store_true", help="build: write untranslated units in English")
    args = parser.parse_args(argv)
    template = extracted()
    if args.command == "extract":
        TEMPLATE.parent.mkdir(parents=True, exist_ok=True)
        TEMPLATE.write_text(as_text(template))
        for english in english_notebooks():
            _english, path, _catalog, _spanish = notebook_paths(english.name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(as_text(notebook_catalog.template(nbformat.read(english, as_version=4), english.name)))
        CHECKS_TEMPLATE.parent.mkdir(parents=True, exist_ok=True)
        CHECKS_TEMPLATE.write_text(as_text(check_hints()))
        for source in DOCS:
            _english, path, _catalog, _spanish = doc_paths(source)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(as_text(doc_template(source)))
        print(
            f"wrote {TEMPLATE.relative_to(ROOT)} ({len(template)} messages), the notebooks' and the checks' templates"
        )
        return 0
    spanish_text = SPANISH.read_text() if SPANISH.exists() else None
    if args.command == "update":
        SPANISH.parent.mkdir(parents=True, exist_ok=True)
        merged = updated(template, spanish_text)
        SPANISH.write_text(as_text(merged))
        old_hints = CHECKS_SPANISH.read_text() if CHECKS_SPANISH.exists() else None
        CHECKS_SPANISH.write_text(as_text(updated(check_hints(), old_hints)))
        for source in [name for name in DOCS if not args.notebooks or name in args.notebooks]:
            _english, _template, catalog_path, _spanish = doc_paths(source)
            old = notebook_catalog.read(catalog_path) if catalog_path.exists() else None
            catalog_path.parent.mkdir(parents=True, exist_ok=True)
            catalog_path.write_text(as_text(merged_by_place(doc_template(source), old)))
        asked = {name for name in _names(args.notebooks) if name.endswith(".ipynb")}
        names = sorted(asked or (set() if args.notebooks else in_edition()))
        for name in [name for name in names if name]:
            english, _template, catalog_path, _spanish = notebook_paths(name)
            old = notebook_catalog.read(catalog_path) if catalog_path.exists() else None
            fresh = notebook_catalog.template(nbformat.read(english, as_version=4), name)
            catalog_path.parent.mkdir(parents=True, exist_ok=True)
            catalog_path.write_text(as_text(merged_by_place(fresh, old)))
        print(f"updated {SPANISH.relative_to(ROOT)} and {len(names)} notebook catalog(s)")
        return 0
    if args.command == "build":
        refused = 0
        for source in [name for name in DOCS if not args.notebooks or name in args.notebooks]:
            text, missing = built_doc(source)
            spanish_doc = doc_paths(source)[3]
            if missing and not args.draft:
                print(f"{source}: not built, {len(missing)} unit(s) untranslated or fuzzy, first {missing[0]}")
                refused += 1
            elif not spanish_doc.exists() or spanish_doc.read_text() != text:
                spanish_doc.parent.mkdir(parents=True, exist_ok=True)
                spanish_doc.write_text(text)
                print(f"wrote {spanish_doc.relative_to(ROOT)}")
        asked = {name for name in _names(args.notebooks) if name.endswith(".ipynb")}
        for name in sorted(in_edition() & (asked or (set() if args.notebooks else in_edition()))):
            notebook, missing = built(name)
            if missing and not args.draft:
                print(f"{name}: not built, {len(missing)} unit(s) untranslated or fuzzy, first {missing[0]}")
                refused += 1
                continue
            _english, _template, _catalog, spanish_path = notebook_paths(name)
            if spanish_path.exists() and _sources(nbformat.read(spanish_path, as_version=4)) == _sources(notebook):
                continue  # the same cells: its outputs stay
            spanish_path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(notebook, spanish_path)
            print(f"wrote {spanish_path.relative_to(ROOT)}: run tools/nbtools.py execute on it for its outputs")
        return 1 if refused else 0
    spanish = read_po(io.StringIO(spanish_text), locale="es") if spanish_text else _new_spanish()
    found = problems(template, spanish) + [line for name in sorted(in_edition()) for line in notebook_problems(name)]
    found += hint_problems() + [line for source in DOCS for line in doc_problems(source)]
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
