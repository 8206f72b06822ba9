"""Run the notebooks in the pseudo edition and list the English a learner still reads in their outputs.

    python -m tools.pseudo_run                  # notebooks 00-19 and the labs' solutions
    python -m tools.pseudo_run --selfcheck      # and the self-check's report on a wrong lab 1
    python -m tools.pseudo_run notebooks/05_backoff_jitter.ipynb

A notebook's pseudo edition is its catalog template with every msgstr dotted (`i18n.dotted`: "ȧḃċ"), built as
the Spanish one is (`notebook_catalog.translated`) and run with MERCADOFRESCO_LANG=pseudo: whatever went through
a catalog, the notebook's or the package's, comes out dotted. The outputs a learner sees (streams, text, HTML
and its alt/aria-label/title, SVG titles, markdown, figure legends, widget state) are then read word by word. A
finding is a run of English words (3+ ASCII letters) on one line, with no dotted word or code between them; not
English are (a) letters inside a dotted word, (b) code: identifiers (snake_case, digits, camelCase, a call, an
attribute), a name the notebook's code writes, the code of a printed listing (its comments and docstrings are
read), (c) `ALLOWED` products and a date's words (`i18n.moment` leaves strftime's English in pseudo), (d) data: a
repr's quoted word, a quoted string in Spanish, the lesson's `DOMAIN` values and resource names, ARNs and URLs,
(e) a notebook's title (`course_map` reads it from the edition's folder, which pseudo lacks).
Exit 1 when anything is found or a run fails.
"""

from __future__ import annotations

import argparse
import ast
import calendar
import functools
import html
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import tokenize
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import nbformat
from markdown_it import MarkdownIt
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from mercadofresco import i18n, names
from tools import notebook_catalog

# (c) products, APIs, formats and states a learner reads as they are, in every language
ALLOWED = {
    *("SQS", "DynamoDB", "SNS", "EventBridge", "KMS", "CloudWatch", "AWS", "DLQ", "FIFO", "API", "HTTP", "JSON"),
    *("SDK", "ARN", "URL", "UTC", "Lambda", "PostgreSQL", "Redis", "moto", "boto3", "PED", "MercadoFresco", "USD"),
    "ALARM",  # a CloudWatch alarm's state
}
# (d) the lesson's data: its states, names and tables, and every word of the resource names in mercadofresco.names
DOMAIN = {"COMPLETADO", "FALLIDO", "PENDIENTE", "EN_CURSO", "cobro", "rafaga", "goteo", "outbox"}
DOMAIN |= {
    word
    for constant, value in vars(names).items()
    if constant.isupper()
    for word in re.findall(r"[A-Za-z]{3,}", " ".join(value) if isinstance(value, tuple) else value)
}
DATES = {*calendar.day_name, *calendar.day_abbr, *calendar.month_name[1:], *calendar.month_abbr[1:], "CET", "CEST"}
# a quoted string with more of the first words than of the second is Spanish: the lesson's data (a customer's
# message, the team's notes), which no edition translates
SPANISH = {"de", "del", "el", "la", "las", "los", "que", "con", "en", "una", "unos", "por", "para", "y", "al", "su"}
ENGLISH_WORDS = {"the", "of", "and", "to", "is", "at", "on", "for", "with", "by", "from", "it", "its", "a"}

ROOT = Path(__file__).resolve().parents[1]
ENV = {i18n.LANG_ENV: i18n.PSEUDO, "MERCADOFRESCO_WHOLE_RUN": "1"}  # a lab's selfcheck.here() cell idles
WIDGETS, VIEW = "application/vnd.jupyter.widget-state+json", "application/vnd.jupyter.widget-view+json"
WIDGET_TEXT = ("description", "tooltip", "description_tooltip", "placeholder", "_options_labels", "titles")
HIDDEN, INLINE = {"script", "style", "code"}, {"a", "abbr", "b", "code", "em", "i", "kbd", "small", "span", "strong"}
_MARKDOWN = MarkdownIt("commonmark").enable("table")
_KEPT = re.compile(r"(\{[^{}]*\}|\\(?:N\{[^}]*\}|x\w{2}|u\w{4}|U\w{8}|.)|%[-+#0-9.]*[a-zA-Z])")  # {x}, \n, %d
_TOKEN = re.compile(r"[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*")  # a word with its digits, underscores and hyphens
_QUOTED = re.compile(r"""(?<![^\s(\[{,:=])('[^'\n]*'|"[^"\n]*")(?=[\s)\]},:;.]|$)""")  # a repr's string
_WORD = re.compile(r"""(?<!\w)(['"])[\w.:/-]*\1(?!\w)""")  # a quoted word: 'received', a JSON key
_ADDRESS = re.compile(r"\b(?:arn|https?|s3):\S+")
_REPR = re.compile(r"<[\w.]+ object(?: at 0x[0-9a-f]+)?>")  # an object's default repr: a fallback nobody reads
_PLAN = re.compile(r"\s*(?:->\s+)?[A-Z][A-Za-z]*(?: [A-Za-z]+)*(?: (?:on|using) \w+)*|\s+[A-Z][\w ]*: .*")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
ENGLISH, NAME, CODE, OTHER = "English", "name", "code", "other"  # what a word of an output is


@dataclass(frozen=True)
class Finding:
    """English words an output shows: which notebook, cell and output, and the line around them."""

    notebook: str
    cell: str
    kind: str
    words: str
    context: str


# -- the pseudo edition, run -----------------------------------------------------------------------------------
def pseudo(text: str) -> str:
    """`text` with every letter dotted, except what code reads: {fields}, escapes (\\n), %-formats, tags."""
    pieces = _KEPT.split(text)
    return "".join(piece if index % 2 else i18n.dotted(piece) for index, piece in enumerate(pieces))


def pseudo_edition(path: Path) -> tuple[nbformat.NotebookNode, list[str]]:
    """The notebook's pseudo edition (no outputs), and what its build left in English."""
    english = nbformat.read(path, as_version=4)
    catalog = notebook_catalog.template(english, path.name)
    for message in catalog:
        message.string = pseudo(message.id) if message.id else message.string
    built, missing = notebook_catalog.translated(english, catalog, set())
    built.metadata["edition"] = i18n.PSEUDO
    return built, missing


def run(path: Path, folder: Path) -> tuple[nbformat.NotebookNode, list[str]]:
    """The pseudo edition executed in `folder`, and what went wrong. A run that stops at an error is reported and
    run again with errors allowed, so that the cells after it are read too."""
    notebook, missing = pseudo_edition(path)
    problems = [f"left in English by the build: {line}" for line in missing]
    (folder / path.name).write_text(nbformat.writes(notebook))
    try:
        return _executed(notebook, folder, allow_errors=False), problems
    except CellExecutionError as error:
        failed = [cell.id for cell in notebook.cells for out in cell.get("outputs", []) if out.output_type == "error"]
        said = _ANSI.sub("", f"{error.ename}: {error.evalue}").strip().splitlines()[0][:200]
        problems.append(f"the run stopped at cell [{(failed or ['?'])[0]}] ({said}); the rest ran with errors allowed")
        return _executed(pseudo_edition(path)[0], folder, allow_errors=True), problems


def _executed(notebook: nbformat.NotebookNode, folder: Path, allow_errors: bool) -> nbformat.NotebookNode:
    quiet = ["--IPKernelApp.log_level=ERROR"]  # no warning about the kernel's local TCP transport
    client = NotebookClient(notebook, timeout=120, kernel_name="python3", extra_arguments=quiet)
    client.allow_errors, client.store_widget_state = allow_errors, True
    client.execute(cwd=str(folder), env={**os.environ, **ENV})
    return notebook


# -- what a learner reads ---------------------------------------------------------------------------------------
class _Visible(HTMLParser):
    """The text an HTML output shows or says: its text (not scripts, styles or code), alt, aria-label, title."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines, self.hidden = [""], 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.lines[-1] += " … " if tag == "code" and not self.hidden else ""  # keeps the words around code apart
        self.hidden += tag in HIDDEN
        said = [value for name, value in attrs if name in ("alt", "aria-label", "title") and value]
        self.lines += [*said, ""] if said or tag not in INLINE else []  # a block ends a line: <td>a</td><td>b</td>

    def handle_endtag(self, tag: str) -> None:
        self.hidden -= tag in HIDDEN and self.hidden > 0
        self.lines += [] if tag in INLINE else [""]

    def handle_data(self, data: str) -> None:
        self.lines[-1] += "" if self.hidden else data


def visible(markup: str) -> str:
    """The visible text of an HTML or SVG fragment, a line a block."""
    parser = _Visible()
    parser.feed(markup)
    parser.close()
    return "\n".join(line for line in parser.lines if line.strip())


def texts(output: dict) -> list[tuple[str, str]]:
    """(kind, text) for each thing a learner reads in one output."""
    if output.get("output_type") == "stream":
        return [("stream", prose_of_code(output.get("text", "")))]
    if output.get("output_type") == "error":
        return [("error", _ANSI.sub("", f"{output.get('ename')}: {output.get('evalue')}"))]
    data, found = output.get("data", {}), []
    if data.get("text/plain") and VIEW not in data and not _REPR.fullmatch(data["text/plain"]):
        found.append(("text/plain", data["text/plain"]))  # not a widget's repr, nor an object's default one
    found += [(kind, visible(data[kind])) for kind in ("text/html", "image/svg+xml") if kind in data]
    if "text/markdown" in data:
        found.append(("text/markdown", visible(_MARKDOWN.render(data["text/markdown"]))))
    series = output.get("metadata", {}).get("text/html", {}).get("series", [])  # show.Picture's legends
    return found + [("figure legend", shown.get("label", "")) for shown in series]


def prose_of_code(text: str) -> str:
    """A printed text with its code reduced to comments and docstrings: a function's source (from a line `def`,
    `class` or `@` to the end), an SQL statement (to its `;` or a blank line), a PostgreSQL plan."""
    lines, kept, sql = text.split("\n"), [], False
    planned = any(re.match(r"\s+->  \w", line) for line in lines)
    for number, line in enumerate(lines):
        if re.match(r"(?:async def|def|class) \w|@\w", line):
            source = "\n".join(lines[number:])
            try:
                tree = ast.parse(source)
            except SyntaxError:
                return text
            defined = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            kept += [ast.get_docstring(node) or "" for node in ast.walk(tree) if isinstance(node, defined)]
            return "\n".join(kept + [token.string for token in _tokens(source) if token.type == tokenize.COMMENT])
        sql = sql or bool(re.match(r"(?:CREATE|INSERT|SELECT|UPDATE|DELETE|ALTER) ", line))
        if sql:
            kept.append(line.partition("--")[2])
            sql = bool(line.strip()) and not line.rstrip().endswith(";")
        elif not (planned and _PLAN.fullmatch(line)):
            kept.append(line)
    return "\n".join(kept)


def widget_texts(notebook: nbformat.NotebookNode) -> list[tuple[str, str, str]]:
    """(cell id, kind, text) for the words the notebook's widgets show, from their saved state."""
    models = notebook.metadata.get("widgets", {}).get(WIDGETS, {}).get("state", {})
    holder = {child: model for model, saved in models.items() for child in re.findall(r"IPY_MODEL_(\w+)", str(saved))}
    outputs = [(cell.id, output) for cell in notebook.cells for output in cell.get("outputs", [])]
    cells = {output.data[VIEW]["model_id"]: cell for cell, output in outputs if VIEW in output.get("data", {})}
    found = []
    for model, saved in models.items():
        state, name, shown = saved.get("state", {}), saved.get("model_name", ""), model
        while shown not in cells and holder.get(shown, shown) != shown:
            shown = holder[shown]  # up to the widget a cell's output shows
        cell = cells.get(shown, f"widget {model[:8]}")
        for key in WIDGET_TEXT:
            values = state.get(key) or []  # a label, or a dropdown's labels
            values = [values] if isinstance(values, str) else values
            found += [(cell, f"widget {key}", str(value)) for value in values]
        if name in ("HTMLModel", "HTMLMathModel") and state.get("value"):
            found.append((cell, "widget HTML", visible(state["value"])))
        elif name in ("LabelModel", "TextModel", "TextareaModel") and state.get("value"):
            found.append((cell, "widget value", str(state["value"])))
        for output in state.get("outputs", []) if name == "OutputModel" else []:
            found += [(cell, f"widget output {kind}", text) for kind, text in texts(output)]
    return found


# -- which words are English ------------------------------------------------------------------------------------
def english(text: str, code: set[str]) -> list[tuple[str, str]]:
    """(words, context) for each run of English words in `text`: on one line, in one quoted string, with no
    dotted word or code between them."""
    found = []
    for line in html.unescape(text).splitlines():
        quoted = [match.span() for match in _QUOTED.finditer(line)]
        data = [(start, end) for start, end in quoted if _spanish(line[start:end])]
        data += [match.span() for pattern in (_WORD, _ADDRESS) for match in pattern.finditer(line)]
        data += [match.span() for title in titles() for match in re.finditer(re.escape(title), line)]
        runs: list[list[tuple[int, int, str]]] = [[]]
        string = None
        for match in _TOKEN.finditer(line):
            kind = _kind(line, match.start(), match.end(), code, data)
            inside = next((span for span in quoted if span[0] <= match.start() < span[1]), None)
            if kind == CODE or inside != string or (runs[-1] and _dotted(line[runs[-1][-1][1] : match.start()])):
                runs.append([])
            string = inside
            runs[-1] += [(match.start(), match.end(), kind)] if kind in (ENGLISH, NAME) else []
        for marks in runs:
            while marks and NAME in (marks[0][2], marks[-1][2]):  # a code name is English only between English
                marks.pop(0 if marks[0][2] == NAME else -1)
            if marks:
                start, end = marks[0][0], marks[-1][1]
                found.append((line[start:end], line[max(0, start - 30) : end + 30].strip()))
    return found


def _kind(line: str, start: int, end: int, code: set[str], data: list[tuple[int, int]]) -> str:
    """ENGLISH, NAME (a name the notebook's code writes), CODE (code or data: it ends a run of words) or OTHER (too
    short to tell, a product: a run goes on over it)."""
    token, before, after = line[start:end], line[max(0, start - 2) : start], line[end : end + 2]
    if _dotted(before[-1:] + after[:1]):
        return CODE  # (a)
    if any(s <= start and end <= e for s, e in data) or token in ("True", "False", "None"):
        return CODE  # (d), (e)
    if any(part in DOMAIN for part in token.split("-")):
        return CODE  # (d) a resource name: cola-mercadofresco-pedidos
    words = [word for word in re.findall(r"[A-Za-z]+", token) if len(word) >= 3]
    if not words or token in ALLOWED or all(word in ALLOWED for word in words) or token in DATES:
        return OTHER  # (c)
    if re.search(r"[\d_]|[a-z][A-Z]|[A-Za-z][A-Z][a-z]", token):
        return CODE  # (b) snake_case, digits, camelCase
    if re.match(r"\(|=(?!=)|\.\w", after) or re.fullmatch(r"\w\.", before):
        return CODE  # (b) a call, a keyword argument, an attribute
    return NAME if token in code else ENGLISH


@functools.cache
def titles() -> tuple[str, ...]:
    """(e) Each notebook's and lab's title, as a markdown output shows it."""
    paths = [*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("labs/*.ipynb"), *ROOT.glob("solutions/*.ipynb")]
    found = {nbformat.read(path, as_version=4).cells[0].source.splitlines()[0].lstrip("# ") for path in paths}
    shown = {visible(_MARKDOWN.render(title.split(" · ", 1)[-1])).strip() for title in found}
    return tuple(sorted(shown - {""}, key=len, reverse=True))


def code_names(notebook: nbformat.NotebookNode) -> set[str]:
    """Every name written in the notebook's code cells: variables, attributes, keywords."""
    sources = [re.sub(r"(?m)^[%!]", "#", cell.source) for cell in notebook.cells if cell.cell_type == "code"]
    return {token.string for source in sources for token in _tokens(source) if token.type == tokenize.NAME}


def _tokens(source: str) -> list[tokenize.TokenInfo]:
    try:
        return list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return []


def _spanish(text: str) -> bool:
    words = re.findall(r"\w+", text.lower())
    return sum(word in SPANISH for word in words) > sum(word in ENGLISH_WORDS for word in words)


def _dotted(text: str) -> bool:
    return any(character.isalpha() and not character.isascii() for character in text)


# -- the report -------------------------------------------------------------------------------------------------
def scan(name: str, notebook: nbformat.NotebookNode, code: set[str]) -> list[Finding]:
    """The findings in an executed notebook's outputs and widget state, one per cell and run of words."""
    seen: dict[tuple[str, str], Finding] = {}
    outputs = [(cell.get("id", "?"), output) for cell in notebook.cells for output in cell.get("outputs", [])]
    shown = [(cell, kind, text) for cell, output in outputs for kind, text in texts(output)]
    for cell, kind, text in shown + widget_texts(notebook):
        for words, context in english(text, code):
            old = seen.setdefault((cell, words), Finding(name, cell, kind, words, context))
            if kind not in old.kind.split(", "):  # the same words in another form of the output (alt text, HTML)
                seen[cell, words] = Finding(name, cell, f"{old.kind}, {kind}", words, old.context)
    return list(seen.values())


def selfcheck(folder: Path) -> tuple[list[Finding], list[str]]:
    """Self-check a pseudo lab 1 whose fixed_config retries 5 times (a wrong answer) and scan its report."""
    path = ROOT / "solutions" / "lab1_double_charge.ipynb"
    notebook, _missing = pseudo_edition(path)
    changed = [cell for cell in notebook.cells if cell.cell_type == "code" and '"sdk_max_attempts": 2,' in cell.source]
    for cell in changed:
        cell.source = cell.source.replace('"sdk_max_attempts": 2,', '"sdk_max_attempts": 5,')
    (folder / path.name).write_text(nbformat.writes(notebook))
    command = [sys.executable, "-m", "mercadofresco.course.selfcheck", path.name]
    environment = {**os.environ, i18n.LANG_ENV: i18n.PSEUDO}
    done = subprocess.run(command, capture_output=True, text=True, cwd=folder, env=environment, check=False)
    code = code_names(nbformat.read(path, as_version=4))
    found = [Finding("selfcheck", "-", "report", *said) for said in english(done.stdout + done.stderr, code)]
    return found, [] if changed else ["lab 1 has no fixed_config with sdk_max_attempts 2: nothing was changed"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.pseudo_run", description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="English notebooks (default: 00-19 and the labs)")
    parser.add_argument("--selfcheck", action="store_true", help="also self-check a pseudo lab 1 with a wrong answer")
    args = parser.parse_args(argv)
    lessons, labs = sorted(ROOT.glob("notebooks/[0-9][0-9]_*.ipynb")), sorted(ROOT.glob("solutions/lab*.ipynb"))
    paths = args.notebooks or lessons + labs
    counts: dict[str, int] = {}
    problems: list[str] = []
    for path in paths:
        print(f"== {path.name}", flush=True)
        with tempfile.TemporaryDirectory(prefix="pseudo-") as folder:
            notebook, said = run(path.resolve(), Path(folder))
        counts[path.name] = _report(scan(path.name, notebook, code_names(nbformat.read(path, as_version=4))), said)
        problems += [f"{path.name}: {line}" for line in said]
    if args.selfcheck:
        print("== selfcheck of a pseudo lab1_double_charge.ipynb with sdk_max_attempts 5", flush=True)
        with tempfile.TemporaryDirectory(prefix="pseudo-") as folder:
            findings, said = selfcheck(Path(folder))
        counts["selfcheck"] = _report(findings, said)
        problems += [f"selfcheck: {line}" for line in said]
    print("\n== English runs found, per notebook")
    print("\n".join(f"{count:4d}  {name}" for name, count in counts.items()))
    print(f"{sum(counts.values()):4d}  in all" + "".join(f"\n⚠ {line}" for line in problems))
    return 1 if sum(counts.values()) or problems else 0


def _report(findings: list[Finding], problems: list[str]) -> int:
    """Print a notebook's findings and problems; the number of findings."""
    for finding in findings:
        print(f"{finding.notebook} [{finding.cell}] {finding.kind}: {json.dumps(finding.words, ensure_ascii=False)}")
        print(f"    … {finding.context} …")
    print("".join(f"⚠ {line}\n" for line in problems), end="")
    return len(findings)


if __name__ == "__main__":
    sys.exit(main())
