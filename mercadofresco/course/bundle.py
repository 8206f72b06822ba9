"""The learner bundle: what a learner needs, and nothing of solutions/ (the instructor's copy is the repository).

    python -m mercadofresco.course.bundle dist/mercadofresco-learner.zip

Holds the package (of `course/` only `checks` for the public checks, `labs` and `selfcheck`;
the grader's own modules stay with the instructor), the lesson notebooks, the labs, README,
pyproject.toml and constraints.txt. It refuses to
write a bundle in which any file carries a solution region or names a checks module.
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path

from mercadofresco.course import labs

ROOT = labs.ROOT
INCLUDED = ("README.md", "pyproject.toml", "constraints.txt", "environment.yml", "notebooks", "labs", "mercadofresco")
SKIPPED_PARTS = ("__pycache__", ".ipynb_checkpoints")
# The grader's own modules stay with the instructor: a learner needs checks, labs and selfcheck from course/.
GRADER = ("grading", "sandbox", "watch", "nbplugin", "nbrun", "reports", "bundle", "legacy", "checker", "checker_db")
GRADER_ONLY = {f"mercadofresco/course/{name}.py" for name in (*GRADER, "boundary", "learner_side")}
PREFIX = "mercadofresco-workbook"


class LeakError(labs.SolutionFormatError):
    """A file bound for the learner bundle carries part of a solution."""


def files(root: Path = ROOT) -> list[Path]:
    """The files of the bundle, relative to `root`, sorted."""
    found = []
    for name in INCLUDED:
        path = root / name
        candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        found += [p.relative_to(root) for p in candidates if not set(p.parts) & set(SKIPPED_PARTS)]
    found = [path for path in found if path.as_posix() not in GRADER_ONLY]
    return sorted(found)


def write(target: Path, root: Path = ROOT) -> Path:
    """Write the zip; raise LeakError if a solution or hidden check would go into it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    members = files(root)
    for member in members:  # notebooks only: the package and README name the markers they strip
        found = labs.leaks((root / member).read_text(encoding="utf-8")) if member.suffix == ".ipynb" else []
        if found or member.parts[0] == "solutions":
            raise LeakError(f"{member} carries {found or 'a solution'}: rebuild labs/ (grading build)")
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for member in members:
            archive.write(root / member, f"{PREFIX}/{member}")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mercadofresco.course.bundle", description=__doc__.split("\n")[0])
    parser.add_argument("target", type=Path, nargs="?", default=ROOT / "dist" / "mercadofresco-learner.zip")
    args = parser.parse_args(argv)
    print(f"wrote {write(args.target)} ({len(files())} files, no solutions/)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
