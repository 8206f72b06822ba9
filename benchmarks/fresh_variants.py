"""Grade every fresh wrong answer of a lab (tests/labs/fresh/labN.json) with the real grader: what each check catches.

    PYTHONPATH=$PWD python benchmarks/fresh_variants.py lab1            # about 5 minutes on 2 CPUs
    PYTHONPATH=$PWD python benchmarks/fresh_variants.py lab1 --json out.json

Issue 47's measure: the hidden checks must fail every one (and each property with its smallest world), the
public checks (the notebook's own cells, run by the grader too) at least 80 % of them, and the solution keep full
marks. Prints one line a variant, then the totals; exits 1 if a hidden check misses one or the public checks catch
less than 80 %. The tests run a sample of the same (tests/labs/test_fresh_variants.py): all of them take minutes.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
from pathlib import Path

from mercadofresco.course import grading
from mercadofresco.course.grading import reports
from mercadofresco.course.handout import labs
from mercadofresco.course.run import nbrun

ROOT = labs.ROOT
sys.path.insert(0, str(ROOT))  # the fresh variants and their loader live with the tests (tests.labs)
from tests.labs import fresh_variants, lab_variants  # noqa: E402

PUBLIC_SHARE = 0.8


def grade_all(lab: str) -> dict[str, dict]:
    """Each fresh variant of `lab` and the solution, graded with every check: what failed, and what the public
    checks (the notebook's own cells) said."""
    with tempfile.TemporaryDirectory() as folder:
        for variant in fresh_variants.variants(lab):
            lab_variants.write(fresh_variants.notebook(lab, variant), Path(folder) / f"{variant['name']}.ipynb")
        solution = labs.SOLUTIONS_DIR / labs.lab_file(lab)
        (Path(folder) / "zz_solution.ipynb").write_bytes(solution.read_bytes())
        progress = reports.Progress(1, stream=io.StringIO())
        found = grading.grade(Path(folder), lab, nbrun.Limits(cell_timeout_seconds=20), jobs=2, progress=progress)
    return {
        report.learner: {
            "hidden_failed": [result.check for result in report.checks if not result.passed],
            "stories": {result.check: result.story for result in report.checks if result.story},
            "public_failed": any("CheckFailed" in note for note in report.notes),
            "score": [report.score, report.max_score],
        }
        for report in found
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("lab", choices=sorted(labs.LABS))
    parser.add_argument("--json", type=Path, help="write what was found there")
    args = parser.parse_args()
    found = grade_all(args.lab)
    solution = found.pop("zz_solution")
    for name, seen in sorted(found.items()):
        public = "public ✗" if seen["public_failed"] else "public ✓"
        print(f"{name:48} {public}  hidden: {', '.join(seen['hidden_failed']) or 'ALL PASSED'}")
    missed = [name for name, seen in found.items() if not seen["hidden_failed"]]
    public = sum(seen["public_failed"] for seen in found.values())
    print(
        f"\n{args.lab}: the solution {solution['score'][0]}/{solution['score'][1]}; hidden checks caught "
        f"{len(found) - len(missed)}/{len(found)}, public checks {public}/{len(found)} ({public / len(found):.0%})"
    )
    if args.json:
        args.json.write_text(json.dumps(found | {"zz_solution": solution}, indent=1, ensure_ascii=False))
    full = solution["score"][0] == solution["score"][1]
    return 0 if full and not missed and public >= PUBLIC_SHARE * len(found) else 1


if __name__ == "__main__":
    sys.exit(main())
