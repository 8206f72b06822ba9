"""Labs from solutions: `solutions/` is the source, `labs/` is what the build step makes of it.

A solution notebook holds the whole lab. Solution code sits between
`### BEGIN SOLUTION` and `### END SOLUTION`; the build replaces each region
with a prompt and `raise NotImplementedError`, and clears every output. The
same input always gives byte-identical output, so a test can prove `labs/` is
up to date (nbgrader and otter-grader use the same solution delimiters). The
hidden checks are not in the notebook at all: the solution names a module of
them (`solutions/checks/labN.py`, notebook metadata `mercadofresco.checks`),
which the grader runs in its own process (`course.checker`).

    python -m mercadofresco.course.grading build        # writes labs/ from solutions/

No build writes over a learner's work: each lab records the digest of what the
build wrote (`course_lab.built`), and a lab in labs/ that no longer matches its
record (edited, run, saved) is kept as it is and named, unless `--replace`.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
from nbformat import NotebookNode

from mercadofresco import i18n
from mercadofresco.errors import MercadoFrescoError
from mercadofresco.i18n import N_

if TYPE_CHECKING:
    from mercadofresco.course.checker import Check

ROOT = Path(__file__).resolve().parents[3]  # the repository: this room of mercadofresco/course/ is three levels down
SOLUTIONS_DIR = ROOT / "solutions"
LABS_DIR = ROOT / "labs"

BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"
METADATA_KEY = "mercadofresco"  # a solution's notebook metadata: {"checks": "checks/labN.py"}
CODE_PROMPT = (
    N_("# YOUR CODE HERE: replace the next line with your solution."),
    'raise NotImplementedError("your code here")',
)
MARKDOWN_PROMPT = N_("*Your answer here.*")
EDITION_FOLDERS = ("es",)  # solutions/es/ builds labs/es/: the Spanish edition, its prompts in Spanish
ANSWER_CHARS = 20_000  # of one written answer in the reports (5 MB once went into answers.csv whole)
# Set for a whole-notebook run (selfcheck's own, the grader's, a maintainer's refresh): a lab's
# `selfcheck.here()` cell then does nothing instead of starting a run of its own notebook.
WHOLE_RUN_ENV = "MERCADOFRESCO_WHOLE_RUN"
# Notebook metadata of a built lab: {"hidden_checks": n} for the public self-check, and "built", the digest of the
# notebook as the build wrote it (`untouched`).
LAB_METADATA_KEY = "course_lab"
# What must never appear in labs/: the delimiters, the grader's metadata.
LEAK_MARKERS = (BEGIN_SOLUTION, END_SOLUTION, f'"{METADATA_KEY}"')

# Lab name (as given to `grade --lab`) -> notebook file name in solutions/ and labs/.
LABS = {"lab1": "lab1_double_charge.ipynb", "lab2": "lab2_dlq_runbook.ipynb", "lab3": "lab3_outbox.ipynb"}


class SolutionFormatError(MercadoFrescoError, ValueError):
    """A solution notebook's delimiters or its checks module are malformed."""


def lab_file(lab: str) -> str:
    """The notebook file name of `lab` ("lab1" -> "lab1_double_charge.ipynb")."""
    if lab not in LABS:
        raise ValueError(f"lab must be one of {', '.join(LABS)}; got {lab!r}")
    return LABS[lab]


def strip_solutions(source: str, prompt: tuple[str, ...] = CODE_PROMPT) -> str:
    """Replace each BEGIN/END SOLUTION region with `prompt`, indented like the BEGIN line."""
    lines, out, inside = source.split("\n"), [], False
    for number, line in enumerate(lines, start=1):
        marker = line.strip()
        if marker == BEGIN_SOLUTION:
            if inside:
                raise SolutionFormatError(f"line {number}: {BEGIN_SOLUTION} inside another solution region")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out.extend(indent + prompt_line for prompt_line in prompt)
        elif marker == END_SOLUTION:
            if not inside:
                raise SolutionFormatError(f"line {number}: {END_SOLUTION} without {BEGIN_SOLUTION}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise SolutionFormatError(f"{BEGIN_SOLUTION} is never closed by {END_SOLUTION}")
    return "\n".join(out)


def checks_file(notebook: NotebookNode, solutions_dir: Path = SOLUTIONS_DIR) -> Path:
    """The module of hidden checks a solution names (metadata mercadofresco.checks), run by the grader itself."""
    name = notebook.metadata.get(METADATA_KEY, {}).get("checks")
    if not name:
        raise SolutionFormatError(f'a solution names its checks module in its metadata: {{"{METADATA_KEY}": ...}}')
    return solutions_dir / name


def hints_in(specs: list[Check], checks: Path, language: str) -> list[Check]:
    """`specs` with each hint in `language`, from the checks' own catalog (`<checks folder>/locale/<language>.po`,
    the grader's, never in the learner's bundle): a hint it lacks, or marks fuzzy, stays English."""
    path = checks.parent / "locale" / f"{language}.po"
    if language == "en" or not path.exists():
        return specs
    from babel.messages.pofile import read_po

    with path.open("rb") as opened:
        catalog = read_po(opened)
    said = {}
    for spec in specs:
        entry = catalog.get(spec.hint, context=f"{checks.stem}/{spec.check}")
        if entry is not None and entry.string and not entry.fuzzy:
            said[spec.check] = entry.string
    return [dataclasses.replace(spec, hint=said.get(spec.check, spec.hint)) for spec in specs]


def check_specs(notebook: NotebookNode, solutions_dir: Path = SOLUTIONS_DIR) -> list[Check]:
    """The hidden checks of a solution notebook, in order: its checks module's CHECKS."""
    from mercadofresco.course.checker import load_checks  # the grader's: the learner's bundle has no checker

    specs = list(load_checks(checks_file(notebook, solutions_dir)).CHECKS)
    ids = [spec.check for spec in specs]
    if len(set(ids)) != len(ids):
        raise SolutionFormatError(f"check ids must be unique; got {ids}")
    return specs


def edition_of(notebook: NotebookNode) -> str:
    """The edition a notebook is written in (its metadata `edition`): "en" unless it names another one we have."""
    language = notebook.metadata.get("edition", "en")
    return language if language in i18n.EDITIONS else "en"


def prompts(notebook: NotebookNode) -> tuple[tuple[str, ...], str]:
    """The code and markdown prompts in the notebook's edition (metadata `edition`, English by default)."""
    with i18n.speaking(edition_of(notebook)):
        return (i18n._(CODE_PROMPT[0]), CODE_PROMPT[1]), i18n._(MARKDOWN_PROMPT)


def is_prompt(text: str) -> bool:
    """Whether a written answer is still the prompt, in either edition."""
    said = {MARKDOWN_PROMPT}
    for language in EDITION_FOLDERS:
        with i18n.speaking(language):
            said.add(i18n._(MARKDOWN_PROMPT))
    return text.strip() in said


def lab_notebook(solution: NotebookNode, solutions_dir: Path = SOLUTIONS_DIR) -> NotebookNode:
    """The learner's copy of a solution notebook: no solutions, no outputs, no name of the checks module."""
    lab = copy.deepcopy(solution)
    code_prompt, markdown_prompt = prompts(solution)
    for cell in lab.cells:
        cell.metadata.pop(METADATA_KEY, None)
        if cell.cell_type == "code":
            cell.source = strip_solutions(cell.source, code_prompt)
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("execution", None)
        elif cell.cell_type == "markdown":
            cell.source = strip_solutions(cell.source, (markdown_prompt,))
    lab.metadata.pop("widgets", None)
    lab.metadata.pop(METADATA_KEY, None)
    lab.metadata[LAB_METADATA_KEY] = {"hidden_checks": len(check_specs(solution, solutions_dir))}
    lab.metadata[LAB_METADATA_KEY]["built"] = built_digest(lab)
    return lab


def built_digest(notebook: NotebookNode) -> str:
    """A digest of a lab's content (its own record of the digest left out): what the build wrote, recorded in it."""
    plain = copy.deepcopy(notebook)
    plain.metadata.get(LAB_METADATA_KEY, {}).pop("built", None)
    return hashlib.sha256(nbformat.writes(plain).encode("utf-8")).hexdigest()[:16]


def untouched(path: Path) -> bool:
    """True if the lab at `path` is still what a build wrote: no learner's work in it, safe to write over."""
    try:
        notebook = nbformat.read(path, as_version=4)
    except Exception:  # not a notebook the build wrote (or not one at all): never ours to overwrite
        return False
    recorded = notebook.metadata.get(LAB_METADATA_KEY, {}).get("built")
    return recorded == built_digest(notebook)


def handed_out(lab: str, solutions_dir: Path = SOLUTIONS_DIR) -> NotebookNode:
    """`lab` as the build hands it out, made from its solution: never the copy in labs/ a learner may be editing."""
    return lab_notebook(nbformat.read(solutions_dir / lab_file(lab), as_version=4), solutions_dir)


def answer_questions(solution: NotebookNode) -> list[tuple[str, str]]:
    """(cell id, question) of each written answer a lab asks for: markdown cells with a solution region."""
    found = []
    for cell in solution.cells:
        if cell.cell_type == "markdown" and BEGIN_SOLUTION in cell.source:
            question = cell.source.split(BEGIN_SOLUTION, 1)[0].strip()
            found.append((cell.get("id", ""), question))
    return found


def written_answers(learner: NotebookNode, solution: NotebookNode) -> list[tuple[str, str]]:
    """(question, the learner's text) for each written answer, found by cell id or else by the question's text."""
    markdown = [cell for cell in learner.cells if cell.cell_type == "markdown"]
    answers = []
    for cell_id, question in answer_questions(solution):
        head = question[:60]
        cell = next((c for c in markdown if cell_id and c.get("id") == cell_id), None)
        cell = cell or next((c for c in markdown if head and c.source.strip().startswith(head)), None)
        text = "" if cell is None else cell.source.strip()
        if text.startswith(question):
            text = text[len(question) :].strip()
        text = "\n".join(
            line for line in text.splitlines() if line.strip() not in (BEGIN_SOLUTION, END_SOLUTION)
        ).strip()
        answers.append((question, "" if is_prompt(text) else _plain(text)))
    return answers


def _plain(text: str) -> str:
    """A written answer as the reports keep it: no control characters (escape codes, overrides), ANSWER_CHARS long."""
    text = "".join(ch for ch in text if ch.isprintable() or ch in "\n\t")
    cut = len(text) - ANSWER_CHARS
    return text if cut <= 0 else f"{text[:ANSWER_CHARS]}\n… ({cut:,} more characters, not kept)"


def leaks(notebook_text: str) -> list[str]:
    """The solution markers found in a lab notebook's text (none, if the build worked)."""
    return [marker for marker in LEAK_MARKERS if marker in notebook_text]


def render(notebook: NotebookNode) -> str:
    """The exact text written to disk: nbformat's JSON, ending in a newline."""
    return nbformat.writes(notebook) + "\n"


@dataclass(frozen=True)
class Built:
    """What a build did: the labs it wrote, and those it kept because someone's work is in them."""

    written: list[Path]
    kept: list[Path]


def build(solutions_dir: Path = SOLUTIONS_DIR, labs_dir: Path = LABS_DIR, replace: bool = False) -> Built:
    """Write one lab per solution notebook, except over a lab someone changed since its build (unless `replace`)."""
    written, kept = [], []
    editions = [path for folder in EDITION_FOLDERS for path in sorted((solutions_dir / folder).glob("*.ipynb"))]
    for path in [*sorted(solutions_dir.glob("*.ipynb")), *editions]:
        solution = nbformat.read(path, as_version=4)
        check_specs(solution, solutions_dir)  # refuse to build from a checks module that does not load
        text = render(lab_notebook(solution, solutions_dir))
        found = leaks(text)
        if found:
            raise SolutionFormatError(f"{path.name}: the lab would still contain {found}")
        target = labs_dir / path.relative_to(solutions_dir)
        if target.exists() and not replace and not untouched(target) and target.read_text(encoding="utf-8") != text:
            kept.append(target)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written.append(target)
    return Built(written, kept)
