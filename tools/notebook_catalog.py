"""A notebook's prose as a gettext catalog, and the Spanish notebook built from the English one and that catalog.

One entry a unit of a markdown cell (a heading, a paragraph, a list item, a table, a diagram), keyed by the cell's
id and the unit's place in it (`msgctxt "c03/2"`), its English source as the msgid: a translator sees one
paragraph at a time, and an edited paragraph marks one entry fuzzy (gettext's word for "the English changed
since this was translated"), not its neighbours.

Code cells are the same code in both editions (the package speaks the edition's language itself:
`mercadofresco.i18n`, which a kernel started in `notebooks/es/` reads), except the words a learner reads in them:
a panel control's label (`description="wait (s)"`, `show.log_slider("lock (s)", …)`), a title (`title=…`, a
`figures.…("…")` argument), a `print`ed sentence, and the comments (`msgctxt "c11/str"` and `"c11/#"`). Those are
entries too, the string's text as written between its quotes; the build puts each translation back between the
same quotes and refuses a cell that no longer parses. Strings written as two literals side by side are left as
they are.

A `<!-- try: … -->` comment at the end of a unit is the tests' ("try this" values to set), never the
translator's: it is kept out of the msgid and written back with each control's label in the notebook's
translation of it.
"""

from __future__ import annotations

import ast
import html
import io
import re
import tokenize
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


# -- the words in code cells ---------------------------------------------------------------------
PROSE_KEYWORDS = {
    *("description", "title", "label", "xlabel", "ylabel", "placeholder", "tooltip", "caption", "button"),
    *("hint", "holds"),  # a public check's words (`checks.expect`)
}
LABEL = "panel control label"
FIELD = r"\{[^{}]*\}"  # an f-string's or a template's field: the same in a translation as in its English
_LITERAL = re.compile(r"([rRuUfF]{0,2})('\'\'|\"\"\"|'|\")(.*)\2", re.DOTALL)


@dataclass(frozen=True)
class CodeWords:
    """A string or comment of a code cell a learner reads: characters [start, end) of the cell's source."""

    context: str  # "<cell id>/str" or "<cell id>/#"
    kind: str  # "code string", "panel control label", "code docstring", "option" or "code comment"
    start: int
    end: int
    text: str
    quote: str = ""  # literals side by side: the one literal's opening (`f"`) written for the whole of [start, end)


def code_words(cell_id: str, source: str) -> list[CodeWords]:
    """The strings and comments of a code cell that are prose, in the cell's order."""
    masked = _masked(source)
    offsets = [0]
    for line in masked.split("\n"):
        offsets.append(offsets[-1] + len(line) + 1)
    found: list[CodeWords] = []
    for node, kind in _prose_literals(ast.parse(masked)):
        start = offsets[node.lineno - 1] + _chars(masked, node.lineno, node.col_offset)
        end = offsets[node.end_lineno - 1] + _chars(masked, node.end_lineno, node.end_col_offset)
        literal = _LITERAL.fullmatch(masked[start:end]) if _one_literal(masked[start:end]) else None
        if literal and "b" not in literal.group(1).lower() and _has_words(literal.group(3)):
            inner = start + len(literal.group(1)) + len(literal.group(2))
            found.append(CodeWords(f"{cell_id}/str", kind, inner, inner + len(literal.group(3)), literal.group(3)))
        elif literal is None and (joined := _side_by_side(masked[start:end])) and _has_words(joined[1]):
            found.append(CodeWords(f"{cell_id}/str", kind, start, end, joined[1], joined[0]))
    for token in tokenize.generate_tokens(io.StringIO(masked).readline):
        text = token.string.lstrip("#").strip()
        if token.type == tokenize.COMMENT and source[offsets[token.start[0] - 1]] != "%" and len(text.split()) > 1:
            start = offsets[token.start[0] - 1] + token.start[1] + token.string.index(text)
            found.append(CodeWords(f"{cell_id}/#", "code comment", start, start + len(text), text))
    return sorted(found, key=lambda words: words.start)


def _masked(source: str) -> str:
    """A code cell with each IPython `%`/`!` line turned into a comment of the same length: Python, same offsets."""
    return "\n".join(("#" + line[1:]) if line.startswith(("%", "!")) else line for line in source.split("\n"))


def _prose_literals(tree: ast.AST) -> list[tuple[ast.expr, str]]:
    """The string literals in prose positions: a title or label keyword, a `title = …`, a `figures.…(…)`
    argument, `show.log_slider`'s label, a `print`ed string."""
    found: list[tuple[ast.expr, str]] = []

    def text(node: ast.expr) -> bool:
        return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))

    for node in ast.walk(tree):
        named = isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id in PROSE_KEYWORDS for target in node.targets
        )
        if named and text(node.value):
            found.append((node.value, "code string"))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and ast.get_docstring(node):
            found.append((node.body[0].value, "code docstring"))
        if _options(node):
            found += [(value, "option") for value in node.value.values]
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        owner = (
            function.value.id if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name) else ""
        )
        name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
        for keyword in node.keywords:
            if keyword.arg in PROSE_KEYWORDS and text(keyword.value):
                found.append((keyword.value, LABEL if keyword.arg == "description" else "code string"))
            if keyword.arg == "seen" and isinstance(keyword.value, ast.Lambda) and text(keyword.value.body):
                found.append((keyword.value.body, "code string"))  # a check's "what was seen", for the learner
        if owner == "checks" and name in ("expect", "part"):  # a public check's hint, or its part's name
            at = 1 if name == "expect" else 0
            found += [(node.args[at], "code string")] if len(node.args) > at and text(node.args[at]) else []
        if owner == "figures" or (owner == "" and name == "print"):
            found += [(argument, "code string") for argument in node.args if text(argument)]
        elif owner == "show" and name == "log_slider" and node.args and text(node.args[0]):
            found.append((node.args[0], LABEL))
    return found


def _side_by_side(segment: str) -> tuple[str, str] | None:
    """Literals written side by side (`"a" f"b {x}"`, a long hint over lines) as one: the opening of the literal
    that replaces them all (`f"` if any is an f-string, with the first one's quote) and its text, the plain
    parts' braces doubled in an f-string. None for anything else (bytes, raw or triple-quoted parts, code)."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(segment).readline) if t.string.strip()]
    except (tokenize.TokenError, SyntaxError):
        return None
    parts = [_LITERAL.fullmatch(token.string) for token in tokens]
    if len(parts) < 2 or not all(parts) or any(t.type != tokenize.STRING for t in tokens):
        return None
    if any(set(part.group(1).lower()) - {"f"} or len(part.group(2)) != 1 for part in parts):
        return None
    formatted = any(part.group(1) for part in parts)
    quote = parts[0].group(2)
    texts = [
        p.group(3) if p.group(1) or not formatted else p.group(3).replace("{", "{{").replace("}", "}}") for p in parts
    ]
    if any(part.group(2) != quote and quote in part.group(3) for part in parts):
        return None  # the other quote inside a part: one literal in the first's quotes would end early
    return ("f" if formatted else "") + quote, "".join(texts)


def _options(node: ast.AST) -> bool:
    """A table of options: `FIXES = {"name": "what it means", …}`, a constant of names a learner chooses from and
    the sentences that explain them (the names are the answer's vocabulary and stay; the sentences are prose)."""
    if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and node.value.keys):
        return False
    constant = all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets)
    keys = all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.value.keys)
    values = all(isinstance(v, ast.Constant) and isinstance(v.value, str) and " " in v.value for v in node.value.values)
    return constant and keys and values


def _one_literal(segment: str) -> bool:
    """Whether `segment` is one string literal, not two side by side ("a" f"b")."""
    try:
        tokens = [token for token in tokenize.generate_tokens(io.StringIO(segment).readline) if token.string.strip()]
    except (tokenize.TokenError, SyntaxError):
        return False
    return len(tokens) == 1 and tokens[0].type == tokenize.STRING


def _chars(source: str, line: int, byte_offset: int) -> int:
    """ast's column (UTF-8 bytes) as a character count."""
    return len(source.split("\n")[line - 1].encode()[:byte_offset].decode())


def _has_words(text: str) -> bool:
    """Letters outside the f-string fields: something to translate."""
    return any(character.isalpha() for character in re.sub(FIELD, "", text))


def template(notebook: nbformat.NotebookNode, name: str) -> Catalog:
    """The catalog template of a notebook's prose: one entry a unit, and one a string or comment of a code cell a
    learner reads, in the notebook's order."""
    catalog = Catalog(project=name, version="1", fuzzy=False, creation_date=DATED, revision_date=DATED)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            for words in code_words(cell.id, cell.source):
                flags = ["python-brace-format"] if re.search(FIELD, words.text) else []
                catalog.add(words.text, context=words.context, auto_comments=[words.kind], flags=flags)
        if cell.cell_type != "markdown":
            continue
        for unit in units(cell.id, cell.source):
            if any(character.isalpha() for character in unit.text):
                catalog.add(unit.text, context=unit.context, auto_comments=[unit.kind])
    return catalog


def translated(
    notebook: nbformat.NotebookNode, catalog: Catalog, edition: set[str], relink: bool = True
) -> tuple[nbformat.NotebookNode, list[str]]:
    """The notebook with each unit of prose replaced by its translation, without outputs, and what could not be
    translated (a unit with no translation, or a fuzzy one). `edition`: the notebooks' file names that have a
    Spanish edition, which its links reach as siblings (`relink=False`: links stay as written)."""
    built = nbformat.reads(nbformat.writes(notebook), as_version=4)
    missing: list[str] = []
    labels = _labels(notebook, catalog)
    for cell in built.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            cell.source = _translated_code(cell, catalog, missing)
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
            tail = _relabelled(unit.tail, labels)
            spanish = unit.marker + entry.string + (" " + tail if tail else "")
            lines[unit.start : unit.end] = spanish.split("\n")
        cell.source = relinked("\n".join(lines), edition) if relink else "\n".join(lines)
    built.metadata["edition"] = EDITION
    return built, missing


def _translated_code(cell: nbformat.NotebookNode, catalog: Catalog, missing: list[str]) -> str:
    """A code cell with each string and comment a learner reads in the catalog's words; the English cell when one
    is missing or the result does not parse."""
    source, before = cell.source, len(missing)
    for words in reversed(code_words(cell.id, cell.source)):
        entry = catalog.get(words.text, context=words.context)
        if entry is None or not entry.string or entry.fuzzy:
            missing.append(f"{words.context} {words.text!r}: {'fuzzy' if entry is not None else 'untranslated'}")
            continue
        if sorted(re.findall(FIELD, entry.string)) != sorted(re.findall(FIELD, words.text)):
            missing.append(f"{words.context} {words.text!r}: its translation has other {{fields}}")
            continue
        if entry.string == words.text:
            continue  # said the same in both (a command, a name): the English cell's own characters stay
        written = f"{words.quote}{entry.string}{words.quote[-1]}" if words.quote else entry.string
        source = source[: words.start] + written + source[words.end :]
    try:
        ast.parse(_masked(source))
    except SyntaxError as error:
        missing.append(f"{cell.id}: the translated code does not parse ({error.msg}, line {error.lineno})")
        return cell.source
    return source if len(missing) == before else cell.source


def _labels(notebook: nbformat.NotebookNode, catalog: Catalog) -> dict[str, str]:
    """The notebook's panel control labels, English -> its translation."""
    found = {}
    for cell in notebook.cells:
        if cell.cell_type == "code":
            for words in code_words(cell.id, cell.source):
                entry = catalog.get(words.text, context=words.context)
                if words.kind == LABEL and entry is not None and entry.string:
                    found[words.text] = entry.string
    return found


def _relabelled(tail: str, labels: dict[str, str]) -> str:
    """The try comments of a unit with each control's label as the translated panel shows it: the notebook's
    translation of a label its code writes, else the package's (a question `rules.questions()` gives)."""

    def relabelled(comment: re.Match) -> str:
        written = []
        for ask in comment.group(1).split(";"):
            asked = re.match(r"^\s*(?P<label>.+)\s=\s(?P<value>.+?)\s*$", ask)  # tests/notebooks/try_this.py's
            if asked is None:
                return comment.group(0)
            label, value = asked.group("label").strip(), asked.group("value")
            written.append(f"{labels.get(label) or _packages(label)} = {_option(value)}")
        return f"<!-- try: {'; '.join(written)} -->"

    return re.sub(r"<!--\s*try:(.*?)-->", relabelled, tail, flags=re.DOTALL)


def _packages(label: str) -> str:
    """A control's label the notebook's code does not write (a question `rules.questions()` gives) as the package
    says it in the edition: itself where the package's catalog has no translation."""
    from mercadofresco import i18n

    with i18n.speaking(EDITION):
        return i18n._(label)


def _option(value: str) -> str:
    """A try comment's value as the edition's control shows it: a dropdown's option in its words (`show.choices`),
    a number or a text as it is (the package has no table word for it)."""
    from mercadofresco import i18n

    quoted = re.fullmatch(r'(["\'])(.*)\1', value.strip())
    with i18n.speaking(EDITION):
        said = i18n.pgettext("table cell", quoted.group(2) if quoted else value)
    return f"{quoted.group(1)}{said}{quoted.group(1)}" if quoted else said


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
        other = re.fullmatch(r"\.\./(labs|notebooks|solutions)/([^/]+)", path)
        if other and other.group(2) in edition:  # a lab or lesson of the other folder, in its Spanish edition
            return f"{match.group(1)}(../../{other.group(1)}/{EDITION}/{link[len('../' + other.group(1)) + 1 :]})"
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
