"""A learner's own check before handing a lab in: run the notebook top to bottom, report the public checks.

    python -m mercadofresco.course.selfcheck labs/lab1_double_charge.ipynb

It says "public checks passed; N hidden checks run at grading" when every cell
ran, never "all passed": the hidden checks are the instructor's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from mercadofresco.course import labs


def run(path: Path, timeout: int = 120) -> tuple[list[str], int]:
    """The problems found (one line each) and the number of hidden checks the lab announces."""
    notebook = nbformat.read(path, as_version=4)
    hidden = int(notebook.metadata.get(labs.LAB_METADATA_KEY, {}).get("hidden_checks", 0))
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3", allow_errors=True)
    client.execute(cwd=str(path.parent))
    problems = []
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for number, cell in enumerate(code, start=1):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                first = (str(output.get("evalue", "")).strip().splitlines() or [""])[0]
                problems.append(f"code cell {number}: {output.get('ename')}: {first}")
    return problems, hidden


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mercadofresco.course.selfcheck", description=__doc__.split("\n")[0]
    )
    parser.add_argument("notebook", type=Path)
    args = parser.parse_args(argv)
    problems, hidden = run(args.notebook)
    if problems:
        print(f"{len(problems)} cell(s) failed; fix them from the first one down:")
        print("\n".join(f"  {line}" for line in problems))
        return 1
    print(f"public checks passed; {hidden} hidden checks run at grading")
    return 0


if __name__ == "__main__":
    sys.exit(main())
