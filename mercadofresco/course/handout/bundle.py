"""The learner bundle: what a learner needs, and nothing of solutions/ (the instructor's copy is the repository).

    python -m mercadofresco.course.handout.bundle dist/mercadofresco-learner.zip

Holds the package (of `course/` the learner's doors `checks` and `selfcheck`, `protocol` and this room,
`handout/`; the grader's rooms, `run/`, `checker/` and `grading/`, stay with the instructor), the lesson
notebooks, the labs, what the install and JupyterLab need (pyproject.toml, constraints.txt, install.mk,
.jupyterlab-settings/, and binder/ for repo2docker: a hub's image made from the bundle),
and, in place of the repository's, the learner's own README and Makefile from `learner/`: two
commands that work in the bundle, `make start` and `make check LAB=labs/<lab>.ipynb`. It refuses
to write a bundle in which any file carries a solution region or names a checks module.
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path

import nbformat

from mercadofresco.course.handout import labs

ROOT = labs.ROOT
INCLUDED = (
    "pyproject.toml",
    "constraints.txt",
    "environment.yml",
    "install.mk",
    ".jupyterlab-settings",
    "binder",
    "notebooks",
    "labs",
    "mercadofresco",
)
# The bundle's own files, in place of the repository's (whose README leads to the instructor's and maintainer's
# guides and whose Makefile runs tests the bundle has not): the bundle's name -> the file in the repository.
LEARNER = {"README.md": "learner/README.md", "README.es.md": "learner/es/README.md", "Makefile": "learner/Makefile"}
SKIPPED_PARTS = ("__pycache__", ".ipynb_checkpoints")
# The grader's rooms stay with the instructor: a learner needs the doors, the protocol and handout/ from course/.
GRADER_ROOMS = tuple(Path("mercadofresco/course") / room for room in ("run", "checker", "grading"))
PREFIX = "mercadofresco-workbook"


class LeakError(labs.SolutionFormatError):
    """A file bound for the learner bundle carries part of a solution."""


def sources(root: Path = ROOT) -> dict[Path, Path]:
    """Each file of the bundle (its path in the bundle) and the file of `root` it is made from, sorted."""
    found = {}
    for name in INCLUDED:
        path = root / name
        candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        found |= {p.relative_to(root): p for p in candidates if not set(p.parts) & set(SKIPPED_PARTS)}
    found = {member: path for member, path in found.items() if not _in_a_grader_room(member)}
    found |= {Path(member): root / source for member, source in LEARNER.items()}
    return dict(sorted(found.items()))


def _in_a_grader_room(member: Path) -> bool:
    return any(room in member.parents for room in GRADER_ROOMS)


def files(root: Path = ROOT) -> list[Path]:
    """The files of the bundle, as paths in the bundle, sorted."""
    return list(sources(root))


def content(member: Path, source: Path, root: Path = ROOT) -> bytes:
    """What the bundle holds for `member`: a lab as the build makes it from its solution (never the copy in labs/,
    where someone may be working), any other file as it is."""
    solution = root / "solutions" / member.relative_to("labs") if member.parts[0] == "labs" else root / "-"
    if member.parts[0] == "labs" and member.suffix == ".ipynb" and solution.exists():
        built = labs.lab_notebook(nbformat.read(solution, as_version=4), root / "solutions")
        return labs.render(built).encode("utf-8")
    return source.read_bytes()


def write(target: Path, root: Path = ROOT) -> Path:
    """Write the zip; raise LeakError if a solution or hidden check would go into it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    members = {member: content(member, source, root) for member, source in sources(root).items()}
    for member, data in members.items():  # not the package: it names the markers it strips
        text = data.decode("utf-8")
        found = labs.leaks(text) if member.suffix == ".ipynb" or member.as_posix() in LEARNER else []
        if found or member.parts[0] == "solutions":
            raise LeakError(f"{member} carries {found or 'a solution'}: rebuild labs/ (grading build)")
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in members.items():
            archive.writestr(f"{PREFIX}/{member}", data)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mercadofresco.course.handout.bundle", description=__doc__.split("\n")[0]
    )
    parser.add_argument("target", type=Path, nargs="?", default=ROOT / "dist" / "mercadofresco-learner.zip")
    args = parser.parse_args(argv)
    print(f"wrote {write(args.target)} ({len(files())} files, no solutions/)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
