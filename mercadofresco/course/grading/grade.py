"""Grade a folder of learners' lab notebooks with the hidden checks, which run in a process of the grader's.

    python -m mercadofresco.course.grading build                         # labs/ from solutions/ (handout/labs.py)
    python -m mercadofresco.course.grading grade SUBMISSIONS/ --lab lab1 # a report per learner and per check
    (the command line is `commands`; `python -m mercadofresco.course.grading` runs it)

For each learner notebook the grader keeps the learner's code cells (never
their outputs) and runs them through `pytest --nbval-lax` in a fresh kernel
set apart for that learner (`course.run.sandbox`, `course.run.nbrun`). Then the
grader's pytest plugin (`course.run.nbplugin`) hands the kernel to the checker,
a process of the grader's own (`course.checker`), which runs the lab's hidden
checks (`solutions/checks/labN.py`) against a world it owns: the kernel only
answers calls. A check's verdict is read
from the grader's own state; nothing the kernel says can make it pass.
Reports: `course.grading.reports`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from mercadofresco import i18n, moved
from mercadofresco.course import protocol
from mercadofresco.course.checker import Check
from mercadofresco.course.grading import reports
from mercadofresco.course.grading.results import CheckResult, LearnerReport
from mercadofresco.course.handout import labs
from mercadofresco.course.run import nbrun
from mercadofresco.course.run import sandbox as sb
from mercadofresco.i18n import N_, _

# What in a learner's own code deserves the instructor's eyes (named in the report, never scored by itself).
MOVED_SCAN_CHARS = 200_000  # of a learner's code, read for moved names (grading.moved_names)
# A lab handed in with its outputs is 1-3 MB; one of 40,000 empty cells (6 MB) cost the grader 25 s of its own CPU
# to read and assemble before the learner's limits even applied (a hostile session's attack, stop 61).
MAX_NOTEBOOK_MB = 20
SUSPICIOUS = {
    r"get_ipython|get_\"|get_'|\bIPython\b|ipykernel": N_("reaches the IPython shell or kernel"),
    r"transformer|ast_parse|\bimport ast\b|linecache": N_("touches how cells are compiled"),
    r"showtraceback|excepthook|settrace|setprofile": N_("touches how errors are shown or traced"),
    r"\bbuiltins\b|__builtins__|sys\.modules": N_("changes builtins or loaded modules"),
    r"\bctypes\b|\bgc\.|__import__|importlib": N_("reaches the interpreter's internals"),
    r"os\._exit|os\.kill|\bsignal\.": N_("ends or signals processes"),
    r"subprocess|multiprocessing|os\.fork|Popen|os\.system": N_("starts processes"),
    r"\bsocket\b|urllib|requests\.": N_("opens network connections"),
}


# -- assembling the notebook that is graded ------------------------------------------
def assemble(learner: NotebookNode) -> tuple[NotebookNode, tuple[protocol.Cell, ...]]:
    """The learner's code cells and one last cell of the grader's; returns it and the role of every cell."""
    kernelspec = {"name": nbrun.KERNEL_NAME, "display_name": nbrun.KERNEL_NAME}
    graded = nbformat.v4.new_notebook(metadata={"kernelspec": kernelspec})
    plan = []
    for cell in learner.cells:
        if cell.cell_type == "code":  # never the learner's outputs
            graded.cells.append(nbformat.v4.new_code_cell(cell.source))
            plan.append(protocol.Cell(protocol.LEARNER))
    graded.cells.append(nbformat.v4.new_code_cell("# the grader's hidden checks run after this cell"))
    plan.append(protocol.Cell(protocol.END))  # after it, the checker's process runs the checks
    return graded, tuple(plan)


def suspicious(learner: NotebookNode) -> list[str]:
    """Notes on learner code cells that reach the kernel's machinery, for the instructor to read."""
    notes = []
    code = [cell for cell in learner.cells if cell.cell_type == "code"]
    for number, cell in enumerate(code, start=1):
        found = [_(why) for pattern, why in SUSPICIOUS.items() if re.search(pattern, cell.source)]
        if found:
            notes.append(_("look at your code cell [{number}]: it {what}").format(number=number, what="; ".join(found)))
    return notes


def moved_names(learner: NotebookNode) -> list[str]:
    """Notes on the package's names the learner's code calls that have moved since (mercadofresco.moved).

    The code is read as data in the grader's own process, so only up to MOVED_SCAN_CHARS of it (a lab's code is
    about 20,000 characters): a notebook made to be slow to parse gets a note, not the grader's time.
    """
    code = "\n".join(cell.source for cell in learner.cells if cell.cell_type == "code")
    if len(code) > MOVED_SCAN_CHARS:
        said = _("your code was not read for moved names: it is over {count} characters")
        return [said.format(count=i18n.number(MOVED_SCAN_CHARS, ","))]
    said = _("your code calls a name that moved: {message}")
    return [said.format(message=moved.message(old)) for old in moved.used_in(code)]


def score(
    rows: list[protocol.Row], cells: tuple[protocol.Cell, ...], specs: list[Check], run: nbrun.Run
) -> LearnerReport:
    """Turn the grader's record into check results: the checker's own rows, nothing the kernel said."""
    by_cell = {row.cell: row for row in rows if isinstance(row, protocol.CellRow)}
    notes, stopped = [], ""
    learner_cells = sum(1 for cell in cells if cell.role == protocol.LEARNER)
    for cell in range(learner_cells):
        row = by_cell.get(cell)
        if row and row.outcome == "failed":
            notes.append(_("your code cell [{number}]: {reason}").format(number=cell + 1, reason=row.reason))
            if row.stops:
                said = _("grading stopped at your code cell [{number}] ({reason})")
                stopped = stopped or said.format(number=cell + 1, reason=row.reason)
    stopped = stopped or run.stopped
    verdicts = {row.check: row for row in rows if isinstance(row, protocol.CheckRow)}
    results = []
    for spec in specs:
        row = verdicts.get(spec.check)
        if row is None:
            reason = _("not run: {why}").format(why=stopped or _("grading stopped before the checks"))
        else:
            reason = "" if row.verdict else row.reason or _("the check did not hold")
        story = list(row.story) if row and not row.verdict else []
        results.append(CheckResult(spec.check, bool(row and row.verdict), spec.points, reason, spec.hint, story))
    notes += [row.note for row in rows if isinstance(row, protocol.NoteRow)]
    if run.stopped:
        notes.append(_("the notebook was stopped: {why}").format(why=run.stopped))
    if run.left_behind:
        names = ", ".join(run.left_behind[:3]) + (" …" if len(run.left_behind) > 3 else "")
        said = _("{count} process(es) you started were still running at the end (killed): {names}")
        notes.append(said.format(count=len(run.left_behind), names=names))
    return LearnerReport("", results, notes)


# -- one learner -----------------------------------------------------------------------
@dataclass(frozen=True)
class Setting:
    """What every learner of one grading run shares."""

    solution: NotebookNode
    limits: nbrun.Limits
    base: Path  # the run's folder (mode 711): private folders and learners' working copies
    hidden: tuple[str, ...]  # paths the learner's kernel must not see
    isolated: bool  # root: a user per slot, namespaces; else the grader's own user
    fonts: Path | None = None  # matplotlib's font cache, copied into each working copy
    solutions_dir: Path = labs.SOLUTIONS_DIR  # where the lab's checks module lives (solutions/checks/)
    only: tuple[str, ...] = ()  # run only these checks (a regrade); every check when empty


def grade_notebook(path: Path, setting: Setting) -> LearnerReport:
    """Grade one learner notebook; a notebook that cannot even be read fails every check."""
    specs = labs.check_specs(setting.solution, setting.solutions_dir)
    if path.is_symlink() or not path.is_file():  # a link may point at solutions/ on the instructor's disk
        what = f"a link to {os.readlink(path)}" if path.is_symlink() else "not a file"
        return _not_graded(path, specs, "not a regular file", f"{path.name} is {what}: only regular files are graded")
    if (size_mb := path.stat().st_size / 1e6) > MAX_NOTEBOOK_MB:
        note = (
            f"{path.name} is {size_mb:.0f} MB, over the {MAX_NOTEBOOK_MB} MB a notebook may be: ask for it again with "
            "its outputs cleared (Edit > Clear Outputs of All Cells), or grade it by hand"
        )
        return _not_graded(path, specs, f"over {MAX_NOTEBOOK_MB} MB", note)
    try:
        learner = nbformat.read(path, as_version=4)
        nbformat.validate(learner)  # a cell whose tags or source are not what the format says would fail later
        graded, plan = assemble(learner)
    except Exception as exc:  # not a notebook at all: every check fails, grading goes on
        why = reports.shown(f"{type(exc).__name__}: {exc}", 200)
        return _not_graded(path, specs, "unreadable notebook", f"could not read {path.name}: {why}")
    with sb.claimed_user() if setting.isolated else contextlib.nullcontext() as user:
        run = _run(graded, plan, learner, setting, user)
    language = labs.edition_of(learner)
    specs = labs.hints_in(specs, labs.checks_file(setting.solution, setting.solutions_dir), language)
    with i18n.speaking(language):  # what the learner's feedback says: in the learner's edition
        report = score(run.rows, plan, specs, run)
        report.notes = reports.kept_notes(report.notes + moved_names(learner) + suspicious(learner))
        if not setting.isolated:
            said = _("graded without isolation: verdicts can be forged (the grader was not root; see {guide})")
            report.notes.append(said.format(guide="docs/instructor.md, Each learner apart"))
    report.learner, report.language = path.stem, language
    report.answers = labs.written_answers(learner, setting.solution)
    return report


def _run(
    graded: NotebookNode,
    cells: tuple[protocol.Cell, ...],
    learner: NotebookNode,
    setting: Setting,
    user: tuple[str, int, int] | None,
) -> nbrun.Run:
    """Run the assembled notebook in a private folder and a working copy of its own, both removed afterwards."""
    private = Path(tempfile.mkdtemp(prefix="private-", dir=setting.base))  # mode 700, the grader's only
    workdir = sb.prepare_workdir(setting.base, user, setting.fonts)
    try:
        target = private / "notebook.ipynb"  # a name every test runner takes, whatever the learner's file is called
        nbformat.write(graded, target)
        box = sb.Sandbox(
            str(workdir),
            setting.limits.memory_mb,
            *(user if user else (None, -1, -1)),
            hidden=setting.hidden,
            network=not setting.isolated,
        )
        lab_cells = sum(1 for cell in setting.solution.cells if cell.cell_type == "code")
        checks = labs.checks_file(setting.solution, setting.solutions_dir)  # run by the grader's own process
        plan = protocol.Plan(
            cells=cells,
            memory_mb=setting.limits.memory_mb,
            checks=str(checks),
            lab_cells=lab_cells,
            workdir=str(workdir),
            uid=user[1] if user else None,
            check_count=len(setting.only or labs.check_specs(setting.solution, setting.solutions_dir)),
            only=tuple(setting.only),
            cell_timeout_seconds=setting.limits.cell_timeout_seconds,
            language=labs.edition_of(learner),
        )
        run = nbrun.run_notebook(target, setting.limits, plan, box, private)
    finally:
        sb.remove(private)
        sb.remove(workdir)
    return run


def in_shard(name: str, k: int, n: int) -> bool:
    """True if the file `name` belongs to shard k of n: by a digest of its name, so any listing order agrees."""
    if not 1 <= k <= n:
        raise ValueError(f"a shard is k/n with 1 <= k <= n; got {k}/{n}")
    return int(hashlib.sha256(name.encode()).hexdigest(), 16) % n == k - 1


def grade(
    submissions: Path,
    lab: str,
    limits: nbrun.Limits | None = None,
    solutions_dir: Path = labs.SOLUTIONS_DIR,
    jobs: int = 1,
    progress: reports.Progress | None = None,
    hide: tuple[Path, ...] = (),
    shard: tuple[int, int] = (1, 1),
    learners: tuple[str, ...] = (),
    only: tuple[str, ...] = (),
) -> list[LearnerReport]:
    """Grade every notebook in `submissions` with `lab`'s hidden checks, `jobs` at a time (sorted by name).

    `shard=(k, n)` grades only the k-th of n deterministic parts of the folder (see `in_shard`);
    `learners` only those learners (file names without .ipynb); `only` runs only those checks.
    """
    limits = limits or nbrun.Limits()
    if not submissions.is_dir():
        raise ValueError(f"submissions must be a folder of .ipynb files; got {submissions}")
    if not 1 <= jobs <= 32:
        raise ValueError(f"jobs must be between 1 and 32; got {jobs}")
    solution = nbformat.read(solutions_dir / labs.lab_file(lab), as_version=4)  # read before any kernel starts
    specs = labs.check_specs(solution, solutions_dir)  # a checks module that does not load stops here
    unknown = set(only) - {spec.check for spec in specs}
    if unknown:
        raise ValueError(f"{lab} has no check {sorted(unknown)}; its checks: {[spec.check for spec in specs]}")
    paths = [path for path in sorted(submissions.glob("*.ipynb")) if in_shard(path.name, *shard)]
    if learners:
        missing = set(learners) - {path.stem for path in paths}
        if missing:
            raise ValueError(f"no notebook in {submissions} for {sorted(missing)}")
        paths = [path for path in paths if path.stem in learners]
    isolated = sb.is_root()
    secrets_ = [*sb.repository_secrets(sb.installed_checkouts()), solutions_dir, submissions, *hide]
    hidden = tuple(sorted({str(path.resolve()) for path in secrets_ if path.exists() and _hideable(path)}))
    progress = progress or reports.Progress(len(paths))

    runs = nbrun.CACHE_DIR / "runs"  # not under /tmp: the learner's kernel gets a /tmp of its own
    runs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="g-", dir=runs) as base:
        Path(base).chmod(0o711)  # learners reach their own working copy, and cannot list the others
        setting = Setting(solution, limits, Path(base), hidden, isolated, nbrun.matplotlib_cache(), solutions_dir, only)
        by_path: dict[Path, LearnerReport] = {}
        with ThreadPoolExecutor(jobs) as pool:
            futures = {pool.submit(grade_notebook, path, setting): path for path in paths}
            for future in as_completed(futures):
                by_path[futures[future]] = report = _result(future, futures[future], specs)
                if only:  # a regrade: the checks run again, not a score the learner's other checks are missing from
                    ran = [result for result in report.checks if result.check in only]
                    score, top = sum(r.points for r in ran if r.passed), sum(r.points for r in ran)
                    progress.advance(f"{report.learner} (regraded)", score, top)
                else:
                    progress.advance(report.learner, report.score, report.max_score)
        progress.finish()
        return [by_path[path] for path in paths]


def _result(future: Future, path: Path, specs: list[Check]) -> LearnerReport:
    """The learner's report; if grading that one notebook failed in the grader itself, a report that says so."""
    try:
        return future.result()
    except Exception as exc:  # one notebook must never stop the grading of the others
        why = reports.shown(f"{type(exc).__name__}: {exc}", 200)
        note = f"the grader failed on this notebook ({why}): grade it by hand"
        return _not_graded(path, specs, "the grader failed on this notebook", note)


def _not_graded(path: Path, specs: list[Check], why: str, note: str) -> LearnerReport:
    """A report in which every check is "not run: `why`", with `note` for the instructor."""
    checks = [CheckResult(spec.check, False, spec.points, f"not run: {why}", spec.hint) for spec in specs]
    return LearnerReport(path.stem, checks, [note])


def _hideable(path: Path) -> bool:
    """False for a folder the learner's kernel needs: one holding the package, the interpreter or the grading folder."""
    needed = [Path(nbrun.ROOT) / "mercadofresco", Path(sys.prefix), nbrun.CACHE_DIR / "runs"]
    return not any(path.resolve() == other.resolve() or path.resolve() in other.resolve().parents for other in needed)
