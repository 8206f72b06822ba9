"""The grading command line: build labs/, grade a folder (whole or one shard), merge results, regrade.

    python -m mercadofresco.course.grading build
    python -m mercadofresco.course.grading grade SUBMISSIONS/ --lab lab1 [--out DIR] [--jobs 2]
    python -m mercadofresco.course.grading grade SUBMISSIONS/ --lab lab1 --shard 3/8 --results DIR
    python -m mercadofresco.course.grading merge RESULTS/ --lab lab1 --out DIR [--answers F] [--roster F] [--deadline T]
    python -m mercadofresco.course.grading regrade SUBMISSIONS/ --lab lab1 --results DIR [--check ID] [--learner NAME]

`grading` grades; this module turns its reports into results (course.grading.results) and results into the
gradebook (course.grading.gradebook), so a class graded on many machines merges into one.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
from pathlib import Path

import nbformat

from mercadofresco.course.grading import LearnerReport, grade, reports, results
from mercadofresco.course.handout import labs
from mercadofresco.course.run import nbrun


def parse_shard(text: str) -> tuple[int, int]:
    """ "3/8" -> (3, 8), with a message that says the form when it is not."""
    match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise ValueError(f"--shard takes k/n with 1 <= k <= n (e.g. 3/8); got {text!r}")
    return int(match.group(1)), int(match.group(2))


def write_results(graded: list[LearnerReport], submissions: Path, lab: str, folder: Path, version: str) -> None:
    """One result file per learner in `folder` (course.grading.results)."""
    for report in graded:
        data = results.to_data(report, lab, submissions / f"{report.learner}.ipynb", version)
        results.write(data, folder)


def regrade(
    submissions: Path, lab: str, folder: Path, only: tuple[str, ...], learners: tuple[str, ...], **grading: object
) -> list[str]:
    """Grade again from the kept submissions and replace only those outcomes in `folder`; returns what changed."""
    version = results.checks_version(lab, grading.get("solutions_dir", labs.SOLUTIONS_DIR))  # type: ignore[arg-type]
    kept = {data["learner"]: data for data in results.read_folder(folder, lab)}
    chosen = learners or tuple(sorted(kept))
    for learner in chosen:
        if learner not in kept:
            raise ValueError(f"{folder} has no result for {learner!r}: grade them first")
        digest = kept[learner].get("submission_sha256")
        path = submissions / f"{learner}.ipynb"
        if digest and path.is_file() and results.sha256(path) != digest:
            raise ValueError(f"{path.name} changed since it was graded: grade it again instead of regrading")
    graded = grade(submissions, lab, learners=chosen, only=only, **grading)  # type: ignore[arg-type]
    changed = []
    for report in graded:
        ids = set(only) or {result.check for result in report.checks}
        results.write(results.replace_checks(kept[report.learner], report, ids, version), folder)
        changed.append(f"{report.learner}: {', '.join(sorted(ids))}")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mercadofresco.course.grading", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="write labs/ from solutions/")
    build.add_argument("--solutions", type=Path, default=labs.SOLUTIONS_DIR)
    build.add_argument("--labs", type=Path, default=labs.LABS_DIR)
    build.add_argument("--replace", action="store_true", help="write over labs that were changed since their build")
    grade_ = commands.add_parser("grade", help="grade a folder of learner notebooks (or one shard of it)")
    grade_.add_argument("submissions", type=Path)
    grade_.add_argument("--out", type=Path, help="where the reports go (default grading-report-LAB)")
    grade_.add_argument("--shard", help="k/n: grade only the k-th of n parts, write its results, merge later")
    grade_.add_argument("--results", type=Path, help="where the result files go (default OUT/results)")
    regrade_ = commands.add_parser("regrade", help="grade again one check or one learner, from kept submissions")
    regrade_.add_argument("submissions", type=Path)
    regrade_.add_argument("--results", type=Path, required=True, help="the folder of results to update")
    regrade_.add_argument("--check", action="append", default=[], help="only this check (repeat for more)")
    regrade_.add_argument("--learner", action="append", default=[], help="only this learner (repeat for more)")
    for command in (grade_, regrade_):
        command.add_argument("--lab", required=True, choices=sorted(labs.LABS))
        command.add_argument("--cell-timeout", type=float, default=nbrun.Limits.cell_timeout_seconds)
        command.add_argument("--memory-mb", type=int, default=nbrun.Limits.memory_mb)
        command.add_argument("--jobs", type=int, default=1, help="notebooks graded at the same time")
        command.add_argument("--solutions", type=Path, default=labs.SOLUTIONS_DIR)
    merge_ = commands.add_parser("merge", help="the gradebook from a folder of results (from any number of shards)")
    merge_.add_argument("results", type=Path)
    merge_.add_argument("--lab", required=True, choices=sorted(labs.LABS))
    merge_.add_argument("--out", type=Path, help="where the reports go (default grading-report-LAB)")
    merge_.add_argument("--solutions", type=Path, default=labs.SOLUTIONS_DIR)
    merge_.add_argument("--answers", type=Path, help="answers.csv with the points and comments filled in")
    merge_.add_argument("--roster", type=Path, help="CSV: learner, name, lms_id, sis_user_id, …, submitted_at")
    merge_.add_argument("--assignment", help="the assignment's name in the LMS (default: the lab's id)")
    merge_.add_argument("--assignment-id", help="Canvas's id of the assignment: its column fills it, not a new one")
    merge_.add_argument("--deadline", help="ISO time with zone, e.g. 2026-12-10T23:59+01:00: late days count after it")
    merge_.add_argument("--late-penalty", type=float, default=10.0, help="percent of the total per day late")
    merge_.add_argument("--late-cap", type=float, default=100.0, help="the most percent a late penalty takes")
    args = parser.parse_args(argv)

    if args.command == "build":
        built = labs.build(args.solutions, args.labs, args.replace)
        for path in built.written:
            print(f"wrote {path}")
        for path in built.kept:
            mine = path.with_name(f"{path.stem}.mine{path.suffix}")
            print(
                f"kept {path}: it is not what the last build wrote (someone's work is in it). For a fresh copy, move "
                f"it aside (mv {path} {mine}) and build again, or build --replace to write over it."
            )
        return 0
    if args.command == "merge":
        return _merge(parser, args)
    try:
        limits = nbrun.Limits(cell_timeout_seconds=args.cell_timeout, memory_mb=args.memory_mb)
    except ValueError as exc:
        parser.error(str(exc))
    version = results.checks_version(args.lab, args.solutions)
    if args.command == "regrade":
        grading = {"limits": limits, "solutions_dir": args.solutions, "jobs": args.jobs}
        try:
            changed = regrade(
                args.submissions, args.lab, args.results, tuple(args.check), tuple(args.learner), **grading
            )
        except (ValueError, results.ResultError) as exc:
            parser.error(str(exc))
        print("regraded " + "; ".join(changed) + f" (checks {version[:12]}); merge again for the reports")
        return 0
    try:
        shard = parse_shard(args.shard) if args.shard else (1, 1)
    except ValueError as exc:
        parser.error(str(exc))
    out = args.out or Path(f"grading-report-{args.lab}")
    folder = args.results or out / "results"
    graded = grade(args.submissions, args.lab, limits, args.solutions, args.jobs, hide=(out, folder), shard=shard)
    write_results(graded, args.submissions, args.lab, folder, version)
    print(reports.summary_table(graded))
    if args.shard:
        print(f"\nshard {args.shard}: {len(graded)} result(s) in {folder}; `merge` them with the other shards'")
        return 0
    args.results, args.out = folder, out
    return _merge(parser, args)


def _merge(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from mercadofresco.course.grading import gradebook, marks

    out = args.out or Path(f"grading-report-{args.lab}")
    try:
        found = results.read_folder(args.results, args.lab)
        solution = nbformat.read(args.solutions / labs.lab_file(args.lab), as_version=4)
        maxima = marks.answer_maxima(solution.metadata, len(labs.answer_questions(solution)))
        deadline = getattr(args, "deadline", None)
        policy = None
        if deadline:
            policy = gradebook.LatePolicy(dt.datetime.fromisoformat(deadline), args.late_penalty, args.late_cap)
        written = gradebook.merge(
            found,
            args.lab,
            out,
            maxima,
            getattr(args, "answers", None),
            getattr(args, "roster", None),
            policy,
            getattr(args, "assignment", None),
            args.results,
            getattr(args, "assignment_id", None),
        )
    except (ValueError, results.ResultError) as exc:  # GradebookError is a ValueError
        parser.error(str(exc))
    if args.command == "merge":
        print(reports.summary_table([results.report_of(d) for d in found]))
    print("\ntotals (checks, written answers, late penalty), as every report and LMS file says them:")
    print(reports.totals_table(written.totals))
    for warning in written.warnings:
        print(f"note: {warning}")
    if written.warnings:
        print("so the LMS files are canvas.DRAFT.csv and moodle.DRAFT.csv: not to import as they are")
    paths = written.written
    print(f"\nwrote {', '.join(str(path) for path in paths[:6])}" + (" …" if len(paths) > 6 else ""))
    return 0
