"""Every command and repository path the README and the guides in docs/ show exists.

Commands come from ```bash blocks and from inline code: `make X` must be a target of the Makefile it runs
against (learner/Makefile where the sentence is about the unzipped learner bundle), `python -m pkg.mod` a module
that resolves, `python path/to/file.py` a file. A repository path in backticks must be a file or folder of the
repository, or of the package as the package map writes them (`lessons/worlds`). Nothing is run:
tests/labs/test_class_grading.py runs the instructor's grading steps as the guide writes them.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mercadofresco"
MAKEFILE = ROOT / "Makefile"
LEARNER_MAKEFILE = ROOT / "learner" / "Makefile"
GUIDES = ("docs/learner.md", "docs/instructor.md", "docs/maintainer.md", "docs/package-map.md")
README_MAX_LINES = 150

FENCE = re.compile(r"^ *```(\w*)\n(.*?)^ *```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`([^`]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
PYTHON = re.compile(r"(\S*/)?python(3(\.\d+)?)?")
ENVIRONMENT = re.compile(r"[A-Z_][A-Z0-9_]*=\S*")
# A sentence about the unzipped learner bundle: its `make` commands run against learner/Makefile.
IN_THE_BUNDLE = re.compile(r"\bunzipped\b|inside the learner bundle", re.IGNORECASE)
# Stands for one of several files (solutions/checks/labN.py): not a path to look for.
PLACEHOLDER = re.compile(r"labN\b")


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


# -- what a guide shows ------------------------------------------------------------------------------------------


def sentence_up_to(text: str) -> str:
    """The last sentence of `text`, from its start to the end of `text` (a period inside code ends nothing)."""
    masked = CODE_SPAN.sub(lambda span: "x" * len(span.group()), text)
    return text[max((end.end() for end in re.finditer(r"[.!?]\s", masked)), default=0) :]


def fenced_commands(markdown: str) -> list[tuple[str, str]]:
    """Each line of the ```bash blocks (continuations joined), with the sentence that leads to its block."""
    found = []
    for block in FENCE.finditer(markdown):
        if block.group(1) != "bash":
            continue
        before = sentence_up_to(" ".join(markdown[: block.start()].rstrip().rsplit("\n\n", 1)[-1].split()))
        found += [(line.strip(), before) for line in block.group(2).replace("\\\n", " ").splitlines() if line.strip()]
    return found


def inline_code(markdown: str) -> list[tuple[str, str]]:
    """Each inline code span outside the fenced blocks, its whitespace collapsed, with its sentence up to it."""
    found = []
    for paragraph in re.split(r"\n\s*\n", FENCE.sub("\n\n", markdown)):
        paragraph = " ".join(paragraph.split())
        found += [
            (span.group(1).strip(), sentence_up_to(paragraph[: span.end()])) for span in CODE_SPAN.finditer(paragraph)
        ]
    return found


def simple_commands(line: str) -> list[list[str]]:
    """A shell line's commands as words, without comments, `sudo` or VAR=value in front; split at && || ; |."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:  # an apostrophe in prose-like code
        words = line.split()
    commands: list[list[str]] = [[]]
    for word in words:
        if word in ("&&", "||", ";", "|"):
            commands.append([])
        elif commands[-1] or not (word == "sudo" or ENVIRONMENT.fullmatch(word)):
            commands[-1].append(word)
    return [command for command in commands if command]


# -- one check per kind of command -------------------------------------------------------------------------------


def make_targets(makefile: Path) -> set[str]:
    """The targets a Makefile and the files it includes define (learner/Makefile's install.mk is the repository's,
    beside it in the bundle)."""
    text = makefile.read_text()
    for included in re.findall(r"^-?include\s+(\S+)", text, re.MULTILINE):
        beside = makefile.parent / included
        text += "\n" + (beside if beside.exists() else ROOT / included).read_text()
    rules = re.findall(r"^([A-Za-z0-9_.-][^:=#\n]*?)\s*:(?!=)", text, re.MULTILINE)
    return {target for rule in rules for target in rule.split()}


def make_problem(words: list[str], makefile: Path) -> str | None:
    targets = [word for word in words[1:] if "=" not in word and not word.startswith("-")]
    missing = [target for target in targets if target not in make_targets(makefile)]
    if missing:
        return f"`{' '.join(words)}`: {', '.join(missing)} is no target of {makefile.relative_to(ROOT)}"
    return None


def module_problem(name: str) -> str | None:
    try:
        found = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent package that does not exist
        found = False
    return None if found else f"`python -m {name}`: no such module"


def script_problem(script: str) -> str | None:
    return None if (ROOT / script).is_file() else f"`python {script}`: no such file"


def command_problem(words: list[str], context: str) -> str | None:
    """What is wrong with one shown command, if it is one of the kinds checked here."""
    if words[0] == "make":
        return make_problem(words, LEARNER_MAKEFILE if IN_THE_BUNDLE.search(context) else MAKEFILE)
    if PYTHON.fullmatch(words[0]) and len(words) > 2 and words[1] == "-m":
        return module_problem(words[2])
    if PYTHON.fullmatch(words[0]) and len(words) > 1 and words[1].endswith(".py"):
        return script_problem(words[1])
    return None


# -- repository paths in backticks -------------------------------------------------------------------------------


def ignored(path: str) -> bool:
    """True for what .gitignore names: what the workbook writes (dist/, .venv/…), not a repository path."""
    patterns = [line.strip().rstrip("/") for line in (ROOT / ".gitignore").read_text().splitlines() if line.strip()]
    parts = path.strip("/").split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    return any(fnmatch.fnmatch(name, pattern) for pattern in patterns for name in [*prefixes, *parts])


def looks_like_a_repository_path(span: str) -> bool:
    if "/" not in span or any(mark in span for mark in (" ", "<", "*", "…", "://")) or span[0] in "/~$":
        return False
    first = span.split("/")[0]
    if first in ("", ".", "..") or PLACEHOLDER.search(span) or ignored(span):
        return False
    return (ROOT / first).exists() or (PACKAGE / first).is_dir()


def path_problem(span: str) -> str | None:
    if not looks_like_a_repository_path(span):
        return None
    candidates = [base / name for base in (ROOT, PACKAGE) for name in (span, span.rstrip("/") + ".py")]
    return None if any(candidate.exists() for candidate in candidates) else f"`{span}`: no such file or folder"


def problems(markdown: str) -> list[str]:
    """Every command or repository path the markdown shows that does not exist."""
    found = []
    for line, context in fenced_commands(markdown) + inline_code(markdown):
        found += [command_problem(words, context) for words in simple_commands(line)]
    found += [path_problem(span) for span, _ in inline_code(markdown)]
    return [problem for problem in found if problem]


# -- links between the guides ------------------------------------------------------------------------------------


def anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.+)$", FENCE.sub("", markdown), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def link_problems(path: Path) -> list[str]:
    found = []
    prose = CODE_SPAN.sub("", FENCE.sub("", path.read_text()))
    for target in LINK.findall(prose):
        if re.match(r"[a-z]+:", target):
            continue
        name, _, anchor = target.partition("#")
        linked = (path.parent / name).resolve() if name else path
        if not linked.exists():
            found.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked.read_text()):
            found.append(f"{target}: no such heading")
    return found


# -- the tests ---------------------------------------------------------------------------------------------------


def test_the_readme_is_short():
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move what is not for every reader to a guide"


@pytest.mark.parametrize("guide", GUIDES)
def test_each_guide_exists_and_the_readme_links_it(guide):
    assert (ROOT / guide).is_file()
    linked = {target.partition("#")[0] for target in LINK.findall((ROOT / "README.md").read_text())}
    assert guide in linked, f"README.md does not link {guide}"


@pytest.mark.parametrize("path", markdown_files(), ids=lambda path: path.name)
def test_every_command_and_path_the_guide_shows_exists(path):
    assert problems(path.read_text()) == []


@pytest.mark.parametrize("path", markdown_files(), ids=lambda path: path.name)
def test_every_relative_link_of_the_guide_leads_somewhere(path):
    assert link_problems(path) == []


def test_made_up_commands_and_paths_are_reported():
    markdown = (
        "Run `make no-such-target`, then `python -m mercadofresco.no_such` and `python tools/no_such.py`; "
        "read `mercadofresco/no_such/` and `lessons/no_such`.\n\n"
        "```bash\nsudo .venv/bin/python -m no_such_package.module --flag  # a comment\nmake start && make lint\n```\n\n"
        "In the repository `make check LAB=labs/lab1_double_charge.ipynb` is no target. "
        "Unzipped, the bundle has `make check LAB=labs/lab1_double_charge.ipynb` and `make start`.\n"
    )
    assert problems(markdown) == [
        "`python -m no_such_package.module`: no such module",
        "`make no-such-target`: no-such-target is no target of Makefile",
        "`python -m mercadofresco.no_such`: no such module",
        "`python tools/no_such.py`: no such file",
        "`make check LAB=labs/lab1_double_charge.ipynb`: check is no target of Makefile",
        "`mercadofresco/no_such/`: no such file or folder",
        "`lessons/no_such`: no such file or folder",
    ]
