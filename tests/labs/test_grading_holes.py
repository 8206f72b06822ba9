"""Each hole of issue 13, reproduced with a hostile notebook against a tiny lab, and shown closed.

The tiny lab has one solution line (`x = 1`) and two hidden checks, so a graded
notebook costs a kernel start, not a whole lab. The grader runs as root here, so
each learner gets its own user, namespaces and hidden paths (course.run.sandbox).
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import importlib
import json
import os
import time
from pathlib import Path

import nbformat
import pytest

from mercadofresco.course import grading, protocol
from mercadofresco.course.grading import reports
from mercadofresco.course.handout import labs
from mercadofresco.course.run import limits, nbrun, watch
from mercadofresco.course.run import sandbox as sb

# The isolation holds only when the grader is root: without it a hostile notebook here would really write into
# solutions/ and the package, so the module does not run.
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the grader isolates learners only when it runs as root")
SECRET = "the-hidden-check-says-x-is-1"
ROOT = labs.ROOT


TINY_CHECKS = f"""from mercadofresco.course.checker import Check

SERVICES = ()
CHECKS = [Check("x_is_one", "x_is_one hint " * 5), Check("x_plus_one", "x_plus_one hint " * 5)]


def setup(lab):
    pass


def check_x_is_one(lab):
    assert lab.value("x") == 1, {SECRET!r}


def check_x_plus_one(lab):
    assert lab.value("x") + 1 == 2
"""


def _tiny_solution(folder: Path) -> Path:
    """One solution line (`x = 1`) and a checks module of two checks, run by the grader."""
    cells = [nbformat.v4.new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION")]
    (folder / "checks").mkdir(parents=True, exist_ok=True)
    (folder / "checks" / "tiny.py").write_text(TINY_CHECKS)
    path = folder / labs.lab_file("lab1")
    nbformat.write(
        nbformat.v4.new_notebook(cells=cells, metadata={"mercadofresco": {"checks": "checks/tiny.py"}}), path
    )
    return path


def _learner(folder: Path, name: str, *sources: str, tagged: dict | None = None) -> None:
    cells = [nbformat.v4.new_code_cell(source) for source in sources]
    if tagged is not None:  # a cell that claims to be a hidden check, with an output that claims it passed
        fake = nbformat.v4.new_code_cell("print('ok')", outputs=[nbformat.v4.new_output("stream", text="proof-0\n")])
        fake.metadata = tagged
        cells.append(fake)
    nbformat.write(nbformat.v4.new_notebook(cells=cells), folder / f"{name}.ipynb")


def _digest(folder: Path) -> str:
    files = sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in files)).hexdigest()


TRANSFORMER = "get_ipython().input_transformers_post.append(lambda lines: [l for l in lines if l.startswith('print(')])"
FORGER = """import glob, json, os, signal
row = {"role": "checker", "check": "x_is_one", "verdict": True, "reason": ""}
for path in ["record.jsonl", "/tmp/record.jsonl", *glob.glob("RUNS/g-*/private-*/record.jsonl")]:
    try:
        open(path, "a").write(json.dumps(row) + "\\n")
    except OSError as exc:
        print("could not forge", path, type(exc).__name__)
os.kill(os.getppid(), signal.SIGKILL)  # the test runner: not ours to kill"""
WRITER = f"""import mercadofresco, pathlib
targets = [pathlib.Path({str(ROOT / "solutions")!r}) / "lab1_double_charge.ipynb",
           pathlib.Path(mercadofresco.__file__).parent / "course" / "checks.py"]
for target in targets:
    target.write_text("tampered")"""
HOG = """import subprocess, sys
hog = "b = bytearray(700 * 1024 * 1024)\\nimport select\\nselect.select([], [], [])"
children = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(3)]
for child in children:
    child.wait()"""
DETACHED = """import subprocess, sys
subprocess.Popen([sys.executable, "-c", "import select; select.select([], [], [])"], start_new_session=True)"""
PATCHER = "import builtins\nbuiltins.sorted = lambda *args, **kwargs: []"
COMPILER = """import ast
shell = get_ipython()
parse = shell.compile.ast_parse
def quiet(source, filename="<unknown>", symbol="exec"):  # every assert of the cells after this one disappears
    tree = parse(source, filename, symbol)
    tree.body = [node for node in tree.body if not isinstance(node, ast.Assert)]
    return tree
shell.compile.ast_parse = quiet"""
SPINNERS = """import subprocess, time
spinners = [subprocess.Popen(["/bin/sh", "-c", "while :; do :; done"], start_new_session=True) for _ in range(6)]
time.sleep(25)  # under the cell timeout: the kernel waits while its spinners take the machine's CPUs"""
SHOUTER = 'raise RuntimeError("\\x1b[2K\\x1b[1A" + "y" * 200_000)  # escape codes, and a reason far too long'
DEEP = """import os
for _ in range(3000):  # shutil.rmtree recurses: removing this working copy once stopped the whole grading
    os.mkdir("d")
    os.chdir("d")"""
# A hostile session's attack on a classmate (7 December): the kernel reads the host's socket table for the other
# learners' checker sockets, puts a link to one where its own shell socket was, and drops its shell socket, so a
# root client that (re)connects to the kernel lands on the classmate's checker, which once refused the connection
# and with it every check of the classmate's.
HIJACKER = """import json, os, threading, time
conn = json.load(open(".kernel.json"))
shell = f"{conn['ip']}-{conn['shell_port']}" if conn["transport"] == "ipc" else None
here = os.getcwd()
def point(target):
    os.symlink(target, shell + ".tmp")
    os.rename(shell + ".tmp", shell)
def hunt():
    while True:
        for line in open("/proc/1/net/unix"):
            path = line.split()[-1] if len(line.split()) >= 8 else ""
            mine = path.startswith(os.path.dirname(here) + "/l-") and here not in path
            if path.endswith("/.grader/boundary") and mine:
                get_ipython().kernel.shell_stream.socket.close(linger=0)  # its file goes with it
                time.sleep(0.3)
                point(path)  # nbval's client reconnects every 0.1 s
                return
        time.sleep(0.01)
if shell:
    threading.Thread(target=hunt, daemon=True).start()
x = 1"""
SYSV_KEY = 0x4D46  # a System V shared memory key: the segment would outlive every process without an IPC namespace
SYSV = f"""import ctypes
libc = ctypes.CDLL(None, use_errno=True)
assert libc.shmget({SYSV_KEY}, 4096, 0o1666) >= 0, ctypes.get_errno()"""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """One grading run of the tiny lab over correct and hostile notebooks, two at a time."""
    base = tmp_path_factory.mktemp("holes")
    solutions = base / "solutions"
    _tiny_solution(solutions)
    folder = base / "submissions"
    folder.mkdir()
    reader = f"print(open({str(solutions / 'checks' / 'tiny.py')!r}).read().count({SECRET!r}))"
    _learner(folder, "ana_ok", "x = 1")
    _learner(folder, "bea[2]", "x = 1")
    _learner(folder, "=cmd", "x = 1")
    _learner(folder, "carla_transformer", TRANSFORMER)
    _learner(folder, "dani_forger", FORGER.replace("RUNS", str(nbrun.CACHE_DIR / "runs")))
    _learner(folder, "eva_writer", WRITER)
    _learner(folder, "fede_reader", reader)
    _learner(folder, "gil_exit", "x = 1", "import os\nos._exit(3)")
    _learner(folder, "hugo_children", "x = 1", HOG)
    _learner(folder, "ines_detached", "x = 1", DETACHED)
    _learner(folder, "juan_prefilled", "y = 2", tagged={"tags": ["hidden-check"]})
    _learner(folder, "kim_patcher", "x = 1", PATCHER)
    _learner(folder, "nico_showtraceback", "x = 0", "get_ipython().showtraceback = lambda *args, **kwargs: None")
    _learner(folder, "mira_scratch", "x = 1", "open('/tmp/mercadofresco-left-by-mira', 'w').write('x')")
    _learner(folder, "lia_network", "x = 1", "import socket\nsocket.create_connection(('192.0.2.1', 80), timeout=5)")
    _learner(folder, "olga_compiler", "x = 0", COMPILER)
    (folder / "pau_link.ipynb").symlink_to(solutions / labs.lab_file("lab1"))  # the instructor's own solution
    _learner(folder, "quim_shouter", "x = 1", SHOUTER)
    _learner(folder, "sara_spinners", "x = 1", SPINNERS)
    _learner(folder, "tere_sysv", "x = 1", SYSV)
    _learner(folder, "uma_invalid", "x = 1")
    broken = json.loads((folder / "uma_invalid.ipynb").read_text())
    broken["cells"][0]["metadata"] = {"tags": 5}  # valid JSON, not a valid notebook: the grader once died on it
    (folder / "uma_invalid.ipynb").write_text(json.dumps(broken))
    _learner(folder, "vic_deep", "x = 1", DEEP)
    borrowed = nbrun.CACHE_DIR / "last-years-submission.ipynb"  # a file outside the repository's secret folders
    borrowed.write_text("x = 1")
    _learner(folder, "wen_borrower", f"exec(open({str(borrowed)!r}).read())", f"open({str(ROOT / 'README.md')!r})")
    _learner(folder, "yago_fake_memory", "x = 1", 'raise type("MemoryError", (Exception,), {})("not really")', "y = 2")
    _learner(folder, "xeno_hijacker", HIJACKER)
    _learner(folder, "zoe_ok_after_them", "x = 1")
    protected = {path: _digest(path) for path in (ROOT / "solutions", ROOT / "mercadofresco", solutions)}
    limits = nbrun.Limits(cell_timeout_seconds=30, memory_mb=1536)
    started = time.perf_counter()
    try:
        graded = grading.grade(folder, "lab1", limits, solutions_dir=solutions, jobs=2)
    finally:
        borrowed.unlink()
    seconds = time.perf_counter() - started
    out = base / "report"
    reports.write_all(graded, "lab1", out)
    return {r.learner: r for r in graded}, out, protected, solutions, seconds


def test_a_learner_who_points_a_root_client_at_a_classmates_checker_costs_the_classmate_nothing(hostile):
    graded = hostile[0]
    refused = [(name, r.reason) for name, report in graded.items() for r in report.checks if "uid 0" in r.reason]
    assert not refused, refused


def test_correct_notebooks_score_full_marks_whatever_their_file_name(hostile):
    graded, out, *_ = hostile
    for name in ("ana_ok", "bea[2]", "=cmd", "zoe_ok_after_them"):
        assert (graded[name].score, graded[name].max_score) == (2, 2), (name, graded[name].checks, graded[name].notes)
    rows = list(csv.reader((out / "report.csv").open()))
    assert rows[[r[:2] for r in rows].index(["'=cmd", "TOTAL"])][:4] == ["'=cmd", "TOTAL", "2", "2"]
    assert not any(cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row)
    assert {p.name for p in (out / "feedback").iterdir()} >= {"bea_2_.md", "_cmd.md", "ana_ok.md"}


@pytest.mark.parametrize(
    ("learner", "score", "reason"),
    [
        ("carla_transformer", 0, "not run: the kernel did not connect"),  # its transformer ate the grader's cell too
        ("kim_patcher", 2, ""),  # its own builtins changed: the checker's verdict did not
        ("nico_showtraceback", 0, "AssertionError"),
        ("olga_compiler", 0, "AssertionError"),  # the asserts it strips are not in its kernel any more
    ],
)
def test_tampering_with_the_kernel_changes_no_verdict_and_is_named(hostile, learner, score, reason):
    report = hostile[0][learner]
    assert report.score == score, report.checks
    assert all(result.reason.startswith(reason) for result in report.checks if not result.passed), report.checks
    assert any("look at your code cell" in note for note in report.notes)


def test_a_forged_record_and_a_killed_runner_give_nothing(hostile):
    report = hostile[0]["dani_forger"]
    assert report.score == 0
    assert any("PermissionError" in note for note in report.notes), report.notes  # the runner is not its to kill


def test_writes_to_solutions_and_the_package_fail_and_change_nothing_for_others(hostile):
    graded, _, protected, _, _ = hostile
    assert graded["eva_writer"].score == 0
    assert any("Error" in note for note in graded["eva_writer"].notes)
    assert {path: _digest(path) for path in protected} == protected
    assert graded["zoe_ok_after_them"].score == 2


def test_the_hidden_checks_cannot_be_read_from_the_kernel(hostile):
    report = hostile[0]["fede_reader"]
    assert report.score == 0
    assert any("PermissionError" in note or "FileNotFoundError" in note for note in report.notes), report.notes


def test_os_exit_is_a_dead_kernel_and_every_check_after_it_fails(hostile):
    report = hostile[0]["gil_exit"]
    assert report.score == 0
    assert any("Kernel died" in note for note in report.notes), report.notes
    assert all(result.reason.startswith("not run:") and "Kernel died" in result.reason for result in report.checks)


def test_children_over_the_memory_limit_together_are_killed(hostile):
    report = hostile[0]["hugo_children"]
    assert report.score == 0
    assert any("together used" in note and "1536 MB limit" in note for note in report.notes), report.notes


def test_a_detached_child_is_killed_when_the_learner_is_done(hostile):
    report = hostile[0]["ines_detached"]
    assert report.score == 2  # starting a process is allowed; outliving grading is not
    assert any("still running at the end (killed)" in note for note in report.notes), report.notes
    with sb.claimed_user() as first, sb.claimed_user() as second:  # free users: nobody grades with them now
        # killed processes whose parent was gone wait as zombies until init reaps them: they run nothing
        left = [pid for user in (first, second) for pid in watch.processes_of(user[1]) if watch.running(pid)]
        assert left == [], [watch.command_name(pid) for pid in left]


def test_the_kernel_has_no_network_outside_the_machine(hostile):
    report = hostile[0]["lia_network"]
    assert report.score == 2
    assert any("Network is unreachable" in note for note in report.notes), report.notes


def test_what_a_learner_writes_in_tmp_is_its_own(hostile):
    assert hostile[0]["mira_scratch"].score == 2
    assert not Path("/tmp/mercadofresco-left-by-mira").exists()


def test_a_cell_claiming_to_be_a_hidden_check_with_a_passed_output_counts_for_nothing(hostile):
    assert hostile[0]["juan_prefilled"].score == 0


def test_a_later_run_is_unaffected(hostile, tmp_path):
    _, _, _, solutions, _ = hostile
    folder = tmp_path / "later"
    folder.mkdir()
    _learner(folder, "blank", "pass")
    (report,) = grading.grade(folder, "lab1", nbrun.Limits(cell_timeout_seconds=30), solutions_dir=solutions)
    assert report.score == 0


def test_os_exit_is_reported_at_once_not_after_the_cell_timeout(tmp_path):
    solutions = tmp_path / "solutions"
    _tiny_solution(solutions)
    folder = tmp_path / "exit"
    folder.mkdir()
    _learner(folder, "gil", "import os\nos._exit(3)")
    started = time.perf_counter()
    (report,) = grading.grade(folder, "lab1", nbrun.Limits(cell_timeout_seconds=120), solutions_dir=solutions)
    assert time.perf_counter() - started < 60
    assert report.notes[0].startswith("your code cell [1]: Kernel died")


def test_memory_below_what_the_solutions_need_is_refused():
    with pytest.raises(ValueError, match=f"memory_mb .* between {limits.MIN_MEMORY_MB} and 65536; got 256"):
        nbrun.Limits(memory_mb=256)


def test_the_report_json_has_totals_and_notes(hostile):
    data = json.loads((hostile[1] / "report.json").read_text())
    carla = next(row for row in data["learners"] if row["learner"] == "carla_transformer")
    assert (carla["score"], carla["max_score"]) == (0, 2) and carla["notes"]


def test_a_link_to_the_solution_is_not_graded(hostile):
    report = hostile[0]["pau_link"]
    assert report.score == 0
    assert any("is a link to" in note and "only regular files are graded" in note for note in report.notes)


def test_a_reason_is_one_short_printable_line(hostile):
    graded, out, *_ = hostile
    note = next(note for note in graded["quim_shouter"].notes if "RuntimeError" in note)
    assert len(note) < 450 and "\x1b" not in note and note.endswith("…")
    assert "\x1b" not in (out / "feedback" / "quim_shouter.md").read_text()
    assert "\x1b" not in reports.summary_table(list(graded.values()))


def test_spinning_processes_are_killed_before_they_starve_the_learner_graded_beside(hostile):
    graded, *_ = hostile
    assert any("CPUs busy" in note for note in graded["sara_spinners"].notes), graded["sara_spinners"].notes
    assert graded["zoe_ok_after_them"].score == 2 and graded["tere_sysv"].score == 2


def test_system_v_shared_memory_does_not_outlive_the_learner(hostile):
    import ctypes

    assert hostile[0]["tere_sysv"].score == 2  # the segment was made, inside the learner's own IPC namespace
    assert ctypes.CDLL(None).shmget(SYSV_KEY, 0, 0) == -1  # and is gone with it


def test_an_invalid_notebook_and_a_deep_working_copy_stop_nobody(hostile):
    graded, *_ = hostile
    assert graded["uma_invalid"].score == 0
    assert any("could not read uma_invalid.ipynb" in note for note in graded["uma_invalid"].notes)
    assert graded["vic_deep"].score == 2
    assert graded["zoe_ok_after_them"].score == 2
    assert not any(nbrun.CACHE_DIR.joinpath("runs").glob("g-*/l-*"))  # every working copy is gone


def test_feedback_tells_the_learner_the_kind_of_error_not_its_text():
    assert reports.feedback_reason("AssertionError: 3 charges for {'PED': 3}") == (
        "AssertionError (the instructor's report has the details)"
    )
    assert reports.feedback_reason("not run: grading stopped at your code cell 2").startswith("not run")
    assert reports.feedback_reason("aGlkZGVuIGNoZWNrcw: x").startswith("an error")  # a class named after a secret


def test_extra_cells_add_nothing_to_the_time_budget():
    cells = nbrun.Limits(cell_timeout_seconds=20)
    learner, end = protocol.Cell(protocol.LEARNER), protocol.Cell(protocol.END)
    lab = protocol.Plan((learner,) * 15 + (end,), 2048, "checks.py", lab_cells=15, workdir="", uid=None, check_count=5)
    padded = dataclasses.replace(lab, cells=(learner,) * 2_000 + (end,))
    assert limits.time_budget(lab, cells) == limits.STARTUP_SECONDS + (15 + 1 + 5) * 30
    assert limits.time_budget(padded, cells) == limits.STARTUP_SECONDS + (15 + 10 + 1 + 5) * 30


def test_the_kernel_sees_only_the_interpreter_the_package_and_its_working_copy(hostile):
    report = hostile[0]["wen_borrower"]
    assert report.score == 0  # another notebook on the instructor's disk, out of reach
    assert sum("FileNotFoundError" in note for note in report.notes) == 2, report.notes  # and the README too


def test_files_past_the_disk_limit_stop_the_learner(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "DISK_MB", 20)  # 1,024 MB in a real grading; 3 GB once went to the grader's disk
    solutions = tmp_path / "solutions"
    _tiny_solution(solutions)
    folder = tmp_path / "disk"
    folder.mkdir()
    writer = "import time\nfor n in range(3):\n    open(f'fill{n}', 'wb').write(bytes(10 << 20))\ntime.sleep(20)"
    _learner(folder, "filler", "x = 1", writer)
    (report,) = grading.grade(folder, "lab1", nbrun.Limits(cell_timeout_seconds=30), solutions_dir=solutions)
    assert report.score == 0
    assert any("working copy reached" in note and "over the 20 MB limit" in note for note in report.notes)


def test_an_exception_merely_named_memoryerror_stops_nothing_and_blames_no_limit(hostile):
    report = hostile[0]["yago_fake_memory"]
    assert report.score == 2  # the checks after it still ran
    assert report.notes == ["your code cell [2]: MemoryError: not really"]


# The tiny lab's checks, and one that says where it runs.
ALONE_CHECKS = (
    TINY_CHECKS.replace("CHECKS = [", 'CHECKS = [Check("checker_alone", "checker_alone hint " * 5), ').replace(
        "def setup(lab):\n    pass", "def setup(lab):\n    SETUP"
    )
    + """

def check_checker_alone(lab):
    import sys
    loaded = sorted(name for name in sys.modules if name.split(".")[0] in ("pytest", "_pytest", "nbval"))
    assert not loaded and sys.argv[0].endswith("__main__.py"), (sys.argv, loaded[:5])
"""
)
NO_GRADER_ENV = """import os
x = 1 if not [name for name in os.environ if name.startswith("MERCADOFRESCO_GRADING")] else 0"""


@pytest.mark.parametrize("setup", ["pass", "raise RuntimeError('a bug of the checks, not the learner')"])
def test_the_checks_run_in_a_checker_process_of_their_own_not_in_pytest(tmp_path, setup, capsys):
    """Issue 49: nbval runs the cells, the checker (python -m mercadofresco.course.checker) runs the checks, and
    the kernel sees nothing of the pipes between them; a checker that fails is the grader's fault, said so."""
    solutions = tmp_path / "solutions"
    path = _tiny_solution(solutions)
    (solutions / "checks" / "tiny.py").write_text(ALONE_CHECKS.replace("SETUP", setup))
    folder = tmp_path / "submissions"
    folder.mkdir()
    _learner(folder, "ana", NO_GRADER_ENV)
    assert path.exists()
    [report] = grading.grade(folder, "lab1", nbrun.Limits(cell_timeout_seconds=20), solutions_dir=solutions)
    if setup == "pass":
        assert (report.score, report.max_score) == (3, 3), (report.checks, report.notes)
        return
    assert report.score == 0, report.checks
    assert any("the grader's checker failed (exit code 1)" in note for note in report.notes), report.notes
    assert "a bug of the checks" in capsys.readouterr().err  # its last words reach the instructor, not the report
    assert not any("a bug of the checks" in result.reason for result in report.checks)


GRADER_SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "the-instructors-key",
    "MERCADOFRESCO_MODE": "endpoint",
    "MERCADOFRESCO_ENDPOINT_URL": "http://127.0.0.1:9",  # a server of the grader's that has gone (CI, stop 59)
    "MERCADOFRESCO_DATABASE_URL": "postgresql://grader:secret@db/marks",
}
SEES_NO_GRADER_SECRET = """import os
from mercadofresco import world
with world.build() as aws:  # in this process, as the lab says: the grader's mode is not the learner's
    pass
x = 1 if not {name for name in os.environ if name.startswith(("AWS_", "MERCADOFRESCO_MODE", "MERCADOFRESCO_D",
                                                              "MERCADOFRESCO_E"))} else 0"""


def test_the_graders_environment_does_not_reach_the_learners_kernel(tmp_path, monkeypatch):
    """A kernel keeps only what starts Python and names the locale: the grader's keys and its MERCADOFRESCO_MODE
    are not the learner's to read, and a world the learner builds runs in the kernel whatever the grader's mode."""
    solutions = tmp_path / "solutions"
    _tiny_solution(solutions)
    folder = tmp_path / "submissions"
    folder.mkdir()
    _learner(folder, "ana", SEES_NO_GRADER_SECRET)
    for name, value in GRADER_SECRETS.items():
        monkeypatch.setenv(name, value)
    [report] = grading.grade(folder, "lab1", nbrun.Limits(cell_timeout_seconds=30), solutions_dir=solutions)
    assert (report.score, report.max_score) == (2, 2), (report.checks, report.notes)


HOST_FILE = Path("/mercadofresco-test-host-file.json")  # a file at the top of the host, readable by all (as the
# machine's own /container_info.json is)
SEES_ONLY_ITS_OWN = f"""import glob, os
others = [p for p in glob.glob('/proc/[0-9]*') if os.stat(p).st_uid != os.getuid()]
try:
    host = open({str(HOST_FILE)!r}).read()
except OSError:
    host = ''
x = 1 if not others and 'host-secret' not in host else 0"""


def test_a_kernel_sees_neither_other_users_processes_nor_the_hosts_top_level_files(tmp_path):
    """A hostile session read every process's command line (the grader's paths, a classmate's kernel) through the
    shared /proc, and the host's top-level files: the kernel's /proc shows its own user's processes only, and a
    top-level file reads as empty. The same probe in the grader's own process sees both (what the guard stops)."""
    if os.geteuid() != 0:
        pytest.skip("the grader sets learners apart only when it runs as root")
    HOST_FILE.write_text('{"host-secret": 1}')
    HOST_FILE.chmod(0o644)
    try:
        solutions = tmp_path / "solutions"
        _tiny_solution(solutions)
        folder = tmp_path / "submissions"
        folder.mkdir()
        _learner(folder, "ana", SEES_ONLY_ITS_OWN)
        [report] = grading.grade(folder, "lab1", nbrun.Limits(cell_timeout_seconds=30), solutions_dir=solutions)
        assert (report.score, report.max_score) == (2, 2), (report.checks, report.notes)
        here: dict = {}
        exec(SEES_ONLY_ITS_OWN.replace("os.getuid()", "-1"), here)  # the host, as any user other than root sees it
        assert here["others"] and here["x"] == 0
    finally:
        HOST_FILE.unlink(missing_ok=True)


def test_a_notebook_over_the_size_limit_is_not_read_and_says_what_to_do(tmp_path, monkeypatch):
    """A hostile session's 6 MB of 40,000 empty cells cost the grader 25 s of its own before any limit applied: a
    notebook over MAX_NOTEBOOK_MB is refused unread, with a note that says how to hand it in again."""
    grade = importlib.import_module("mercadofresco.course.grading.grade")  # the module, not the function
    solutions = tmp_path / "solutions"
    _tiny_solution(solutions)
    folder = tmp_path / "submissions"
    folder.mkdir()
    _learner(folder, "ana", "x = 1", *["pass"] * 2_000)
    size_mb = (folder / "ana.ipynb").stat().st_size / 1e6
    monkeypatch.setattr(grade, "MAX_NOTEBOOK_MB", size_mb / 2)
    monkeypatch.setattr(grade, "_run", lambda *args: pytest.fail("a notebook over the limit was run"))
    [report] = grading.grade(folder, "lab1", nbrun.Limits(cell_timeout_seconds=20), solutions_dir=solutions)
    assert report.score == 0 and all(result.reason.startswith("not run: over") for result in report.checks)
    assert any("outputs cleared" in note and "grade it by hand" in note for note in report.notes), report.notes
