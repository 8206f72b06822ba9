"""One learner, one result: the JSON file grading writes for each notebook, and the folder a merge reads.

    {"format": 1, "lab": "lab1", "learner": "bea", "submission": "bea.ipynb", "submission_sha256": "…",
     "grader_version": "0.1.0", "checks_sha256": "…", "checks": [...], "notes": [...], "answers": [...],
     "regraded": [{"checks": ["record_contract"], "checks_sha256": "…"}]}

A result is self-contained: results written on many machines (shards) combine by copying them into
one folder. Everything an instructor reads is built from such a folder (`course.grading.gradebook`), so grading
a whole class on one machine and grading it in shards give the same gradebook.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path

import nbformat

from mercadofresco import i18n
from mercadofresco.course.grading import reports
from mercadofresco.course.handout import labs

FORMAT = 1


@dataclass
class CheckResult:
    """One check for one learner."""

    check: str
    passed: bool
    points: int
    reason: str
    hint: str
    story: list[str] = field(default_factory=list)  # the smallest world that broke the check, a line a step


@dataclass
class LearnerReport:
    """Everything the grader found in one notebook."""

    learner: str
    checks: list[CheckResult]
    notes: list[str] = field(default_factory=list)  # learner cells that raised, ran out of time, or look suspicious
    answers: list[tuple[str, str]] = field(default_factory=list)  # (question, the learner's written answer)
    language: str = "en"  # the edition the learner worked in: their feedback, hints and reasons are in it

    @property
    def score(self) -> int:
        return sum(result.points for result in self.checks if result.passed)

    @property
    def max_score(self) -> int:
        return sum(result.points for result in self.checks)


class ResultError(ValueError):
    """A result file that is not one, or a folder of results that do not belong together."""


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def checks_version(lab: str, solutions_dir: Path = labs.SOLUTIONS_DIR) -> str:
    """A digest of what decides a verdict: the lab's solution notebook and its checks module."""
    solution = solutions_dir / labs.lab_file(lab)
    checks = labs.checks_file(nbformat.read(solution, as_version=4), solutions_dir)
    return hashlib.sha256(solution.read_bytes() + b"\0" + checks.read_bytes()).hexdigest()


def grader_version() -> str:
    try:
        return metadata.version("mercadofresco-workbook")
    except metadata.PackageNotFoundError:  # run from a folder that was never installed
        return "unknown"


def file_name(learner: str) -> str:
    """A result's file name: the learner's name made safe, and a digest of it so two names never share one."""
    safe = reports.file_name(learner, set())[:60]
    return f"{safe}-{hashlib.sha256(learner.encode()).hexdigest()[:10]}.json"


def to_data(report: LearnerReport, lab: str, submission: Path | None, version: str) -> dict:
    """The result of one learner as plain JSON data."""
    return {
        "format": FORMAT,
        "lab": lab,
        "learner": report.learner,
        "submission": submission.name if submission else None,
        "submission_sha256": sha256(submission) if submission and submission.is_file() else None,
        "grader_version": grader_version(),
        "checks_sha256": version,
        "checks": [asdict(result) for result in report.checks],
        "notes": list(report.notes),
        "answers": [{"question": q, "answer": a} for q, a in report.answers],
        "language": report.language,
        "regraded": [],
    }


def write(data: dict, folder: Path) -> Path:
    """Write one result into `folder`; an existing result of the same learner is replaced."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name(data["learner"])
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read(path: Path) -> dict:
    """One result file, checked to be one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultError(f"{path.name} is not a result file: {type(exc).__name__}: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ResultError(f"{path.name} is not a result of format {FORMAT} (grading writes them)")
    missing = {"lab", "learner", "checks", "notes", "answers"} - set(data)
    if missing:
        raise ResultError(f"{path.name} lacks {sorted(missing)}")
    return data


def read_folder(folder: Path, lab: str | None = None) -> list[dict]:
    """Every result in `folder`, sorted by learner, all of one lab; two results of one learner are refused."""
    if not folder.is_dir():
        raise ResultError(f"{folder} is not a folder of results")
    found = [read(path) for path in sorted(folder.glob("*.json"))]
    labs_seen = {data["lab"] for data in found} | ({lab} if lab else set())
    if len(labs_seen) > 1:
        raise ResultError(f"{folder} mixes the results of {sorted(labs_seen)}: merge one lab at a time")
    learners = [data["learner"] for data in found]
    twice = sorted({name for name in learners if learners.count(name) > 1})
    if twice:
        raise ResultError(f"{folder} holds two results for {twice}")
    return sorted(found, key=lambda data: data["learner"])


def report_of(data: dict) -> LearnerReport:
    """The grader's report of one learner, as the on-screen table and the gradebook read it."""
    checks = [CheckResult(**result) for result in data["checks"]]
    answers = [(item["question"], item["answer"]) for item in data["answers"]]
    language = data.get("language") if data.get("language") in i18n.EDITIONS else "en"  # older results: English
    return LearnerReport(data["learner"], checks, list(data["notes"]), answers, language)


def replace_checks(data: dict, regraded: LearnerReport, only: set[str], version: str) -> dict:
    """`data` with the outcomes of the checks in `only` taken from `regraded`, and nothing else changed."""
    fresh = {result.check: asdict(result) for result in regraded.checks if result.check in only}
    unknown = only - {result["check"] for result in data["checks"]}
    if unknown:
        raise ResultError(f"{data['learner']}'s result has no check {sorted(unknown)}")
    data = dict(data)
    data["checks"] = [fresh.get(result["check"], result) for result in data["checks"]]
    data["regraded"] = [*data.get("regraded", []), {"checks": sorted(only), "checks_sha256": version}]
    return data
