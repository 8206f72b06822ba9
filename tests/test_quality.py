"""The code stays formatted and linted (ruff), and the lesson notebooks stay committed with outputs."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = "../" + "shared"  # the course authors' folder; a learner does not have it


def _ruff(*args: str) -> subprocess.CompletedProcess:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    return subprocess.run([ruff, *args], cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_check():
    result = _ruff("check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format():
    result = _ruff("format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_lesson_notebooks_are_committed_with_outputs(path):
    notebook = json.loads(path.read_text())
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code" and "".join(cell["source"]).strip()]
    missing = [i for i, cell in enumerate(code) if not cell.get("outputs")]
    assert not missing, f"{path.name}: code cells {missing} have no outputs; run `make notebooks` and commit"
    assert notebook["metadata"]["kernelspec"]["name"] == "python3"


NOTEBOOKS = sorted([*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("labs/*.ipynb"), *ROOT.glob("solutions/*.ipynb")])


def test_every_nbval_marker_is_one_nbval_reads():
    """nbval reads a marker only when the comment is the marker alone: `# NBVAL_SKIP (why)` is silently ignored."""
    from nbval.plugin import comment_markers

    wrong = []
    for path in NOTEBOOKS:
        for number, cell in enumerate(json.loads(path.read_text())["cells"]):
            for line in "".join(cell["source"]).splitlines():
                comment = line.strip().lstrip("#").strip()
                if line.strip().startswith("#") and comment.startswith("NBVAL") and comment not in comment_markers:
                    wrong.append(f"{path.relative_to(ROOT)} cell {number}: {line.strip()!r}")
    assert NOTEBOOKS and not wrong, "put the reason on the next line:\n" + "\n".join(wrong)


def test_project_never_reads_the_course_shared_folder():
    offenders = []
    for path in ROOT.rglob("*"):
        if ".venv" in path.parts or ".git" in path.parts or not path.is_file():
            continue
        is_code = path.suffix in (".py", ".ipynb", ".toml", ".yml", ".cfg") or path.name in ("Makefile", "run")
        if is_code and SHARED in path.read_text(errors="ignore"):
            offenders.append(str(path.relative_to(ROOT)))
    assert not offenders


def _path_edits(folder: Path) -> list[str]:
    """Lines under `folder` that edit sys.path: a test imports the tests package instead."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        if "old_labs" in path.parts:
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if re.search(r"\bsys\.path\.(insert|append|extend)\b|\bsys\.path\s*=", line):
                found.append(f"{path.relative_to(folder)}:{number}")
    return found


def test_no_test_edits_sys_path():
    assert _path_edits(ROOT / "tests") == []


def test_a_test_that_edits_sys_path_is_seen(tmp_path):
    (tmp_path / "helper.py").write_text("import sys\nsys.path.insert(0, 'tools')\n")
    assert _path_edits(tmp_path) == ["helper.py:2"]
