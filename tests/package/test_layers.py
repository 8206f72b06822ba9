"""The package's folders are its layers: import-linter holds the contract, and the contract can fail."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _lint_imports(project: Path) -> subprocess.CompletedProcess:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if lint is None:
        pytest.fail("lint-imports is not installed: pip install -e '.[dev]'")
    env = {"PATH": str(Path(sys.executable).parent), "PYTHONPATH": str(project)}
    return subprocess.run(
        [lint, "--no-cache", "--config", str(project / "pyproject.toml")],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_layers_hold():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "wrong_import"),
    [
        ("patterns/_wrong.py", "from mercadofresco.lessons import show"),  # a pattern reaching up to a figure
        ("models/_wrong.py", "from mercadofresco.course import grading"),  # a model importing the grader
        ("errors.py", "from mercadofresco.patterns import retry"),  # the shared base importing a layer
        ("names.py", "from mercadofresco import clock"),  # the names reaching up into the world's base
        ("names.py", "import boto3"),  # the names paying for an AWS library
        ("clock.py", "from mercadofresco import world"),  # the world's base reaching up into the world
        ("queues.py", "from mercadofresco import orders"),  # two siblings of the world's base tied together
        ("runtime/endpoints.py", "from mercadofresco import world"),  # the plumbing reaching up: the old circle
        ("runtime/cleanup.py", "from mercadofresco.runtime import endpoints"),  # the ledger above the clients
        ("runtime/settings.py", "from mercadofresco.runtime import cleanup"),  # two bottom siblings tied together
        ("runtime/realtime.py", "import botocore"),  # the clock's pace paying for an AWS library
        ("patterns/dlq.py", "from mercadofresco import world"),  # a pattern taking the whole world again
        ("course/checker/boundary.py", "from mercadofresco.course.grading import reports"),  # the checker reaching up
        ("course/protocol.py", "from mercadofresco.course.checker import folder"),  # the shared words taking a room
        ("course/handout/labs.py", "from mercadofresco.course.run import sandbox"),  # what is handed, running it
        ("course/run/nbrun.py", "from mercadofresco.course.grading import results"),  # one run reaching the class
    ],
)
def test_a_wrong_import_is_reported(tmp_path, module, wrong_import):
    shutil.copytree(ROOT / "mercadofresco", tmp_path / "mercadofresco", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "mercadofresco" / module
    if target.exists():  # a contract that names modules one by one: put the wrong import in one of them
        target.write_text(target.read_text() + f"\n{wrong_import}  # noqa\n")
    else:
        target.write_text(f"{wrong_import}\n")
    result = _lint_imports(tmp_path)
    assert result.returncode != 0
    assert "BROKEN" in result.stdout
    assert wrong_import.split()[1] in result.stdout  # the report names the module that must not be imported


SITTING = 310  # "around 300 lines": a longer module is named in pyproject.toml with why it stays whole


def _long_modules_not_listed(package: Path, listed: dict[str, str]) -> list[str]:
    """Modules over SITTING lines missing from `listed`, and listed modules that are short or gone."""
    found = []
    lines = {path.relative_to(package).as_posix(): path.read_text().count("\n") for path in package.rglob("*.py")}
    for module, count in sorted(lines.items()):
        if count > SITTING and not listed.get(module, "").strip():
            found.append(f"{module}: {count} lines, no reason in [tool.mercadofresco.long-modules]")
    for module in sorted(listed):
        if lines.get(module, 0) <= SITTING:
            found.append(f"{module}: listed as long but has {lines.get(module, 0)} lines")
    return found


def _listed_long_modules(pyproject: Path) -> dict[str, str]:
    import tomllib

    return tomllib.loads(pyproject.read_text())["tool"]["mercadofresco"]["long-modules"]


def test_long_modules_are_listed_with_their_reason():
    assert _long_modules_not_listed(ROOT / "mercadofresco", _listed_long_modules(ROOT / "pyproject.toml")) == []


def test_an_unlisted_long_module_and_a_stale_entry_are_reported(tmp_path):
    package = tmp_path / "mercadofresco"
    (package / "lessons").mkdir(parents=True)
    (package / "short.py").write_text('"""Short."""\n')
    (package / "lessons" / "long.py").write_text('"""Long."""\n' + "x = 1\n" * SITTING)
    (package / "explained.py").write_text('"""Long."""\n' + "x = 1\n" * SITTING)
    listed = {"explained.py": "one idea, read whole", "short.py": "it used to be long"}
    assert _long_modules_not_listed(package, listed) == [
        f"lessons/long.py: {SITTING + 1} lines, no reason in [tool.mercadofresco.long-modules]",
        "short.py: listed as long but has 1 lines",
    ]


@pytest.mark.parametrize(
    ("module", "line"),
    [
        ("newbase.py", "X = 1"),  # a new top-level module nobody placed in a layer
        ("experiments/__init__.py", ""),  # a new folder nobody placed in a layer
        ("sims/_wrong.py", "import boto3"),  # a simulation reaching for AWS
        ("course/_wrong.py", "from mercadofresco.patterns import retry"),  # the grader importing the shop
        ("course/newroom/__init__.py", ""),  # a room of course/ nobody placed in its layers
    ],
)
def test_an_unplaced_module_or_a_crossed_rule_is_reported(tmp_path, module, line):
    shutil.copytree(ROOT / "mercadofresco", tmp_path / "mercadofresco", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "mercadofresco" / module
    target.parent.mkdir(exist_ok=True)
    target.write_text(f"{line}\n")
    result = _lint_imports(tmp_path)
    assert result.returncode != 0, result.stdout


def _map_table(package_map: str) -> dict[str, set[str]]:
    """The package map's module table (docs/package-map.md) as {folder: modules}; the top level is ''."""
    table: dict[str, set[str]] = {}
    folder = None
    for line in package_map.splitlines():
        if line.startswith("| module | lesson |"):
            folder = ""
            continue
        if folder is None or not line.startswith("|"):
            if folder is not None and table:
                break
            continue
        first = line.split("|")[1].strip()
        if first.startswith("**"):
            folder = "" if "top level" in first else first.strip("*`/")
            continue
        for name in first.split(","):
            name = name.strip().strip("`")
            if name and set(name) != {"-"}:
                table.setdefault(folder, set()).add(name)
    return table


def _package_modules(package: Path) -> dict[str, set[str]]:
    modules: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        if path.name == "__init__.py" or path.name.startswith("_"):
            continue
        folder = "" if path.parent == package else path.parent.relative_to(package).as_posix()
        modules.setdefault(folder, set()).add(path.stem)
    return modules


def test_the_package_map_lists_every_module_in_its_folder():
    listed = _map_table((ROOT / "docs" / "package-map.md").read_text())
    assert listed == _package_modules(ROOT / "mercadofresco")


def test_a_module_missing_from_the_package_map_is_seen():
    package_map = (ROOT / "docs" / "package-map.md").read_text()
    without_realtime = "\n".join(line for line in package_map.splitlines() if not line.startswith("| `realtime` |"))
    assert "realtime" not in _map_table(without_realtime)["runtime"]
    assert _map_table(without_realtime) != _package_modules(ROOT / "mercadofresco")


GRADING_WORDS = re.compile(r"\bgrad(?:er|ers|er's|ing)\b|\bthe checker\b|\bchecker's\b", re.IGNORECASE)


def _mentions_of_grading(package: Path) -> list[str]:
    """Lines outside course/ that speak of the grader: the lesson's world knows nothing of grading."""
    found = []
    for path in sorted(package.rglob("*.py")):
        if "course" in path.relative_to(package).parts:
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if GRADING_WORDS.search(line):
                found.append(f"{path.relative_to(package)}:{number}: {line.strip()}")
    return found


def test_the_lessons_world_knows_nothing_of_grading():
    assert _mentions_of_grading(ROOT / "mercadofresco") == []


def test_a_mention_of_the_grader_outside_course_is_seen(tmp_path):
    (tmp_path / "course").mkdir()
    (tmp_path / "course" / "inside.py").write_text("# the grader's own\n")
    (tmp_path / "queues.py").write_text('"""Asked by the grader\'s checker."""\n')
    assert _mentions_of_grading(tmp_path) == ['queues.py:1: """Asked by the grader\'s checker."""']


def _circles(package: str) -> list[tuple[str, str]]:
    """Pairs of modules that import each other, directly or not, under a TYPE_CHECKING guard or not."""
    import grimp

    graph = grimp.build_graph(package, include_external_packages=False, cache_dir=None)
    found = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if graph.chain_exists(importer=imported, imported=module):
                found.add(tuple(sorted((module, imported))))
    return sorted(found)


def test_no_module_imports_one_that_imports_it():
    assert _circles("mercadofresco") == []


def test_a_circle_is_found(tmp_path, monkeypatch):
    package = tmp_path / "circled"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from circled import b\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from circled import a\n")
    monkeypatch.syspath_prepend(tmp_path)  # grimp finds a package by importing it
    assert _circles("circled") == [("circled.a", "circled.b")]
