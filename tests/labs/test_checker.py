"""The hidden checks run in the grader's process (issue 21): the wire, a stub kernel, and hostile blank labs.

The verdict is read from the checker's own state (its moto, its gateway's ledger, the calls it served); the
learner's kernel only answers calls. These tests show what the kernel can no longer do about that.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import json
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path

from tests.labs import hostile
import nbformat
import pytest

from mercadofresco.clock import VirtualClock
from mercadofresco.course import checker, grading, protocol
from mercadofresco.course.checker import boundary, learner_side
from mercadofresco.course.grading import marks, reports, results
from mercadofresco.course.handout import labs

ROOT = labs.ROOT
CHECKS = ROOT / "solutions" / "checks" / "lab1.py"
SOLUTION = ROOT / "solutions" / labs.lab_file("lab1")
STAND_IN = Path(__file__).parent / "kernel_stand_in.py"
# Checks whose verdict is a value the learner chose (an answer judged as data): a stub may answer them.
ANSWER_CHECKS = {"more_likely", "fix_order", "config_relations"}


# -- the wire ----------------------------------------------------------------------------------
def _pair(handle_a, handle_b, codec=None):
    left, right = socket.socketpair()
    codec = codec or boundary.Codec()
    return boundary.Boundary(left, handle_a, codec, "c"), boundary.Boundary(right, handle_b, codec, "k")


def test_calls_nest_both_ways_and_lanes_run_side_by_side():
    def kernel(name, args):  # the kernel's function calls back into the checker before it answers
        return ["kernel", *args, kernel_side.call("twice", args[0])]

    checker_side, kernel_side = _pair(lambda name, args: args[0] * 2, kernel)
    assert checker_side.call("f", 21) == ["kernel", 21, 42]
    answers = []
    threads = [threading.Thread(target=lambda n=n: answers.append(checker_side.call("f", n))) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answer[2] for answer in answers) == [2 * n for n in range(8)]


def test_an_exception_raised_into_the_other_side_comes_back_as_itself():
    class Crash(BaseException):
        pass

    crash = Crash("at after_lock")

    def checker_handle(name, args):
        raise crash

    def kernel(name, args):  # what learner_side does: the checker's exception, rebuilt with its token
        try:
            kernel_side.call("reached")
        except boundary.RemoteError as error:
            rebuilt = RuntimeError(error.message)
            rebuilt.boundary_token, rebuilt.boundary_lane = error.error["token"], kernel_side.current_lane()
            raise rebuilt from None

    checker_side, kernel_side = _pair(checker_handle, kernel)
    with pytest.raises(Crash) as raised:
        checker_side.call("handler")
    assert raised.value is crash


@pytest.mark.parametrize(
    "answer",
    [
        b"not json\n",
        b'{"lane": "c1", "id": 999, "result": true}\n',  # out of turn: nobody waits for id 999
        b'{"lane": "c1", "id": 1, "result": {"$decimal": [1]}}\n',  # a tag that encode never makes
        b'{"lane": "c1", "id": 1, "result": {"$ref": 7}}\n',  # a reference the checker never handed out
    ],
)
def test_answers_that_are_not_answers_fail_the_call(answer):
    left, right = socket.socketpair()
    lab = checker.Lab()
    wire = boundary.Boundary(left, lab.handle, lab.codec, "c", timeout_seconds=1)
    lab.wire = wire
    threading.Thread(target=lambda: (right.recv(4096), right.sendall(answer)), daemon=True).start()
    with pytest.raises(boundary.BoundaryError):
        wire.call("value", "more_likely")


def test_the_kernel_may_call_only_what_is_exposed():
    lab = checker.Lab()
    with pytest.raises(PermissionError):
        lab.handle("method", [object(), "ledger", [], {}])
    with pytest.raises(PermissionError, match="no motoapi"):
        lab.serve_aws("POST", "https://motoapi.amazonaws.com/moto-api/reset", {}, b"")
    with pytest.raises(PermissionError):
        lab.handle("model", ["reset_world"])
    with checker.world_of_the_checker():  # the poller's two questions: anything odd is "not sure", never an error
        for junk in (None, 5, "", "no-slash", "https://sqs.us-east-1.amazonaws.com/000000000000/nobody", "x" * 10_000):
            assert lab.handle("model", ["nothing_to_receive", junk]) is False
            assert lab.handle("model", ["queue_is_empty", junk]) is None


# -- a stub kernel -------------------------------------------------------------------------------
def _checks_against(notebook: Path, tmp_path: Path, record: Path | None = None, stub=None) -> dict[str, dict]:
    module = checker.load_checks(CHECKS)
    lab = checker.Lab()
    module.setup(lab)
    listener, path = checker.listen(tmp_path, None)
    process = None
    if stub is None:
        command = [sys.executable, str(STAND_IN), str(notebook), str(path), *([str(record)] if record else [])]
        process = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    else:
        threading.Thread(target=stub, args=(str(path),), daemon=True).start()
    try:
        with checker.world_of_the_checker():
            lab.connect(listener, None)
            rows = {row.check: row.to_json() for row in checker.run_checks(module, lab, 20)}
            lab.hang_up()
    finally:
        listener.close()
        if process is not None:
            process.wait(timeout=30)
    return rows


POLL_CELL = """from mercadofresco.models import lambda_poller

def poll(aws, clock):
    poller = lambda_poller.Poller(aws.sqs, aws.orders.url, lambda event, invocation: {}, clock)
    return poller.run_until_idle(900)
"""


def _poll_orders(lab: checker.Lab, run) -> list[dict]:
    """Two orders now and one a minute later on a fresh queue of the checker's, polled by `run(aws, clock)`."""
    from mercadofresco import orders, queues, world

    lab.reset_world()
    with VirtualClock() as clock:
        sqs = lab.client("sqs")
        pair = queues.create_queue_pair(
            sqs, world.ORDERS_QUEUE, world.ORDERS_DLQ, visibility_timeout_seconds=120, max_receive_count=4
        )
        for number, delay in ((1, 0), (2, 0), (3, 60)):
            body = orders.order_body(orders.Order(orders.order_id(number), Decimal(10)))
            sqs.send_message(QueueUrl=pair.url, MessageBody=body, DelaySeconds=delay)
        aws = world.World(world.WorldConfig(), lab.session(), pair, "", "", {}, "", _clients={"sqs": sqs})
        return run(aws, clock)


@pytest.mark.parametrize("peek", [True, False], ids=["checker answers the peek", "checker never sure"])
def test_the_kernels_poller_asks_the_checker_instead_of_receiving_from_an_empty_queue(tmp_path, peek):
    """Lambda's poller model skips a receive that would find nothing; across the boundary it asks the checker.

    Same timeline as in the checker's own process, and the checker serves only the receives that hand out
    messages; a checker that is never sure (the second case) serves the empty ones too, and the timeline stays.
    """
    notebook = tmp_path / "poll.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(POLL_CELL)]), notebook)
    namespace: dict = {}
    exec(POLL_CELL, namespace)
    lab = checker.Lab()
    lab.expose("clock", VirtualClock)
    if not peek:
        lab.models["nothing_to_receive"] = lambda queue_url: False
    listener, path = checker.listen(tmp_path, None)
    kernel = subprocess.Popen([sys.executable, str(STAND_IN), str(notebook), str(path)])
    try:
        with checker.world_of_the_checker():
            here = _poll_orders(lab, namespace["poll"])
            lab.connect(listener, None)
            lab.aws_calls.clear()
            across = _poll_orders(lab, lab.function("poll"))
            lab.hang_up()
    finally:
        listener.close()
        kernel.wait(timeout=30)
    receives = [call for call in lab.aws_calls if call["action"] == "ReceiveMessage"]
    empty = [call for call in receives if not call["answer"].get("Messages")]
    assert across == here and sum(row["event"] == "received" for row in here) == 3
    assert (not empty) if peek else (len(empty) > len(receives) - len(empty)), f"{len(empty)} empty receives"


def _replaying(record: Path):
    """A kernel that answers each call with the solution's recorded answer to the same call, touching nothing."""
    recorded = [json.loads(line) for line in record.read_text().splitlines()]

    def stub(path: str) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
        for line in sock.makefile("rb"):
            call = json.loads(line)
            if "call" not in call:
                continue
            same = next(
                (
                    r
                    for r in recorded
                    if r["call"]["call"] == call["call"] and r["call"]["args"][:1] == call["args"][:1]
                ),
                None,
            )
            if same is not None:
                recorded.remove(same)
            answer = (same or {"answer": {"result": None}})["answer"]
            reply = {key: answer[key] for key in ("result", "error") if key in answer}
            sock.sendall((json.dumps({"lane": call["lane"], "id": call["id"], **reply}) + "\n").encode())

    return stub


def test_a_kernel_that_replays_the_solutions_answers_fails_every_check_that_reads_the_checkers_state(tmp_path):
    record = tmp_path / "answers.jsonl"
    real = _checks_against(SOLUTION, tmp_path, record)
    assert all(row["verdict"] for row in real.values()), {k: r["reason"] for k, r in real.items() if not r["verdict"]}
    replayed = _checks_against(SOLUTION, tmp_path, stub=_replaying(record))
    passed = {check for check, row in replayed.items() if row["verdict"]}
    assert passed == ANSWER_CHECKS, f"a stub with the solution's answers passed {sorted(passed)}"


def test_the_blank_lab_fails_every_check(tmp_path):
    blank = tmp_path / "blank.ipynb"
    nbformat.write(labs.handed_out("lab1"), blank)  # as handed out: labs/ may hold a learner's work
    rows = _checks_against(blank, tmp_path)
    assert not any(row["verdict"] for row in rows.values())


# -- hostile notebooks, graded as root beside a correct one (tests/labs/hostile.py) ------------------------------------
LABS_GRADED = ("lab1", "lab2", "lab3")


def _grade_hostile(lab: str, folder: Path) -> dict:
    """Every hostile notebook of `lab` and the solution, graded two at a time: each learner's report."""
    blank, solution = labs.handed_out(lab), nbformat.read(ROOT / "solutions" / labs.lab_file(lab), as_version=4)
    notebooks = {name: (blank, attack) for name, attack in hostile.BLANK_ATTACKS[lab].items()}
    notebooks |= {name: (solution, attack) for name, attack in hostile.KEEPS_FULL_MARKS.get(lab, {}).items()}
    notebooks |= {name: (blank, attack) for name, (attack, _) in hostile.STOPPED_BY.get(lab, {}).items()}
    for name, (base, attack) in notebooks.items():
        notebook = nbformat.from_dict(json.loads(json.dumps(base)))
        if callable(attack):  # an attack that edits the notebook itself
            notebook = attack(notebook)
        else:  # a cell of the attacker's, after the lab's
            notebook.cells.append(nbformat.v4.new_code_cell(attack))
        nbformat.write(notebook, folder / f"{name}.ipynb")
    nbformat.write(solution, folder / "zz_correct.ipynb")
    return {report.learner: report for report in grading.grade(folder, lab, jobs=2)}


@pytest.fixture(scope="module")
def every_hostile(tmp_path_factory) -> dict:
    """The three labs' hostile sets graded at once, as three gradings on one machine share it."""
    if os.geteuid() != 0:
        pytest.skip("the grader isolates learners only when it runs as root")
    victim = Path(hostile.VICTIM)  # a folder of the host's, root's: no learner may make the grader touch it
    victim.mkdir(mode=0o700, exist_ok=True)
    victim.chmod(0o700)
    (victim / ".s.PGSQL.5432").write_text("precious")
    with ThreadPoolExecutor(len(LABS_GRADED)) as pool:
        folders = [tmp_path_factory.mktemp(f"hostile-{lab}") for lab in LABS_GRADED]
        return dict(zip(LABS_GRADED, pool.map(_grade_hostile, LABS_GRADED, folders), strict=True))


@pytest.fixture(scope="module", params=LABS_GRADED)
def graded(request, every_hostile):
    return request.param, every_hostile[request.param]


def test_every_hostile_blank_lab_scores_nothing(graded):
    lab, reports = graded
    blank = set(hostile.BLANK_ATTACKS[lab]) | set(hostile.STOPPED_BY.get(lab, {}))
    scored = {name: reports[name].score for name in blank if reports[name].score}
    assert scored == {}, {name: [(r.check, r.reason) for r in reports[name].checks if r.passed] for name in scored}


def test_the_correct_learner_graded_beside_them_scores_full_marks(graded):
    _, reports = graded
    report = reports["zz_correct"]
    assert report.score == report.max_score, [(r.check, r.reason) for r in report.checks if not r.passed]


def test_what_tries_to_run_with_the_graders_rights_changes_no_mark_and_escapes_nothing(graded):
    """Lab 3's database objects around the solution's tables, and an escape tried before every step of it."""
    lab, reports = graded
    for name in hostile.KEEPS_FULL_MARKS.get(lab, {}):
        report = reports[name]
        assert report.score == report.max_score, (name, [(r.check, r.reason) for r in report.checks if not r.passed])
    assert not glob.glob(hostile.MARKER + "*"), "SQL of a learner's ran a program or wrote a file on the grader's host"


def test_the_cast_that_once_ran_as_the_superuser_is_refused_with_its_reason(graded):
    lab, reports = graded
    if lab == "lab3":
        reasons = {result.reason for result in reports["cast_escalation"].checks}
        assert any("outbox.publicado has the type" in reason and "sino" in reason for reason in reasons), reasons


def test_a_kernel_that_makes_the_checker_wait_or_grow_is_stopped_at_once_with_the_limit_named(graded):
    lab, reports = graded
    for name, (_, words) in hostile.STOPPED_BY.get(lab, {}).items():
        reasons = [result.reason for result in reports[name].checks]
        said = (words,) if isinstance(words, str) else words  # one of several limits may come first
        assert any(word in reason for word in said for reason in reasons + reports[name].notes), (name, reasons)
        assert reasons[-1].startswith("not run"), (name, reasons[-1])


def test_what_the_checker_read_from_disk_reaches_no_report(graded):
    """The cast attack once read solutions/checks/lab3.py with pg_read_file, and slices of it reached report.json."""
    _, reports = graded
    written = json.dumps([dataclasses.asdict(report) for report in reports.values()])
    checks = [line.strip() for line in CHECKS.with_name("lab3.py").read_text().splitlines()]
    assert [line for line in checks if len(line) > 30 and line in written] == []
    hostname = Path("/etc/hostname").read_text().strip()
    assert len(hostname) < 8 or hostname not in written


def test_no_learner_makes_the_root_grader_touch_a_folder_of_the_host(graded):
    victim = Path(hostile.VICTIM)
    assert victim.stat().st_mode & 0o777 == 0o700 and victim.stat().st_uid == 0
    assert [entry.name for entry in victim.iterdir()] == [".s.PGSQL.5432"]
    assert (victim / ".s.PGSQL.5432").read_text() == "precious"


def test_text_the_learner_chose_reaches_every_report_cut_short_and_shown_literally(graded, tmp_path):
    """Failing cells whose exception is HTML and escape codes, a huge written answer, a file name with escapes."""
    lab, reports_by_name = graded
    if lab != "lab1":
        return
    injected = reports_by_name["report_injection"]
    assert len(injected.notes) <= reports.MOST_NOTES + 1
    assert all(len(note) <= reports.NOTE_CHARS for note in injected.notes)
    assert all(len(answer) <= labs.ANSWER_CHARS + 60 for _, answer in injected.answers)
    reports.write_all(list(reports_by_name.values()), lab, tmp_path)
    marks.write_answers(tmp_path / "answers.csv", [results.to_data(r, lab, None, "t") for r in [injected]], [1])
    for path in [tmp_path / "report.csv", tmp_path / "answers.csv", *tmp_path.glob("feedback/*.md")]:
        text = path.read_text(encoding="utf-8")
        assert not any(ord(ch) < 32 and ch not in "\n\r\t" for ch in text), path.name
        assert "\u202e" not in text and "\x1b" not in text, path.name
    feedback = "".join(path.read_text() for path in tmp_path.glob("feedback/*.md"))
    assert "<img" not in feedback and "<script>" not in feedback and "](javascript" not in feedback
    assert (tmp_path / "report.csv").stat().st_size < 200_000


def test_a_kernel_that_exits_mid_check_fails_that_check_and_every_one_after(graded):
    _, reports = graded
    reasons = [result.reason for result in reports["exits_mid_check"].checks]
    assert any("kernel was gone" in reason for reason in reasons)
    assert reasons[-1].startswith("not run: the kernel was gone")


def test_a_kernel_whose_serve_cell_was_emptied_is_reported_when_the_cell_ends_not_after_the_wait(graded):
    """The audit hook blanks every cell the grader sends: the grader sees the cell end and stops waiting then."""
    _, reports = graded
    reasons = {result.reason for result in reports["audit_hook"].checks}
    assert reasons == {f"not run: {checker.SERVE_CELL_ENDED}"}, reasons


# -- the boundary fails fast and stays small (issue 46) --------------------------------------------
def _raw_pair(handle):
    """The checker's side of a wire and the raw socket a forged kernel writes to."""
    left, right = socket.socketpair()
    lab = checker.Lab()
    wire = boundary.Boundary(left, handle or lab.handle, lab.codec, "c", timeout_seconds=20, peer="your kernel")
    return wire, right


def test_a_reply_nested_too_deep_closes_the_wire_at_once_and_every_later_call_fails_at_once():
    wire, kernel = _raw_pair(lambda name, args: None)
    threading.Thread(
        target=lambda: (kernel.recv(4096), kernel.sendall(b"[" * 100_000 + b"]" * 100_000 + b"\n"))
    ).start()
    started = time.monotonic()
    with pytest.raises(boundary.BoundaryError, match="your kernel sent a message that cannot be read"):
        wire.call("value", "more_likely")
    with pytest.raises(boundary.BoundaryError, match="RecursionError"):
        wire.call("value", "because")
    assert time.monotonic() - started < 2, "a call waited out its timeout on a dead reader"
    assert wire.refused


def test_a_kernel_that_opens_a_thousand_lanes_is_cut_off_at_the_limit_with_few_threads():
    wire, kernel = _raw_pair(lambda name, args: time.sleep(0.5))
    before = threading.active_count()
    calls = b"".join(
        json.dumps({"lane": f"k{n}", "id": 1, "call": "anything", "args": []}).encode() + b"\n" for n in range(1_000)
    )
    kernel.sendall(calls)
    deadline = time.monotonic() + 5
    while not wire.closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert wire.refused == f"your kernel opened more than {boundary.MAX_LANES} lanes at once (the limit)"
    assert threading.active_count() - before <= boundary.MAX_LANES + 1
    with pytest.raises(boundary.BoundaryError, match="lanes at once"):
        wire.call("value", "more_likely")


def test_lanes_used_one_after_another_keep_few_threads():
    """The poller starts a thread per invocation: lanes come and go, and each lane's thread ends when it is idle."""
    checker_side, kernel_side = _pair(lambda name, args: args[0], lambda name, args: None)
    for n in range(3 * boundary.MAX_LANES):  # more lanes in all than the limit, never more than one at once
        thread = threading.Thread(target=lambda n=n: kernel_side.call("echo", n))
        thread.start()
        thread.join()
    assert not checker_side.closed
    assert len(checker_side._pool._threads) <= 2  # the pool's threads, reused


def test_the_learners_exception_is_never_taken_for_one_the_checker_threw():
    """Tokens were numbers from each side's own counter: the kernel's NameError once came back as the checker's
    PermissionError (same number, same lane). Each side's token now starts with its own letter."""

    def checker_handle(name, args):
        raise PermissionError("'ledger' is not something the learner's code may call here")

    def kernel_handle(name, args):
        if name == "first":
            with contextlib.suppress(boundary.RemoteError):
                kernel_side.call("refused")  # the checker throws into lane c1 and keeps its exception
            return None
        raise NameError("`fix_order` is not defined")

    checker_side, kernel_side = _pair(checker_handle, kernel_handle)
    checker_side.call("first")
    with pytest.raises(boundary.RemoteError) as raised:
        checker_side.call("value", "fix_order")
    assert raised.value.type_name == "NameError"


@pytest.mark.parametrize(
    "url, target",
    [
        ("https://sqs.s3.eu-south-2.amazonaws.com/", "AmazonSQS.ListQueues"),  # moto would route it to S3
        ("https://s3.eu-south-2.checker.invalid/", "AmazonSQS.ListQueues"),
        ("https://sqs.eu-south-2.amazonaws.com/moto-api/reset", "AmazonSQS.ListQueues"),
        ("https://sqs.eu-south-2.amazonaws.com:8443/", "AmazonSQS.ListQueues"),
        ("http://sqs.eu-south-2.checker.invalid/", "AmazonSQS.ListQueues"),
        ("https://sqs.us-east-1.checker.invalid/", "AmazonSQS.ListQueues"),  # another region: another world
        ("https://sqs.eu-south-2.checker.invalid/", "DynamoDB_20120810.ListTables"),
        ("https://sqs.eu-south-2.checker.invalid/?Action=ListQueues", "AmazonSQS.ListQueues"),
        ("https://kms.eu-south-2.checker.invalid/", "TrentService.ListKeys"),
    ],
)
def test_a_request_for_anything_but_the_labs_services_is_refused_whatever_its_host_starts_with(url, target):
    lab = checker.Lab(("sqs", "dynamodb"))
    with checker.world_of_the_checker(), pytest.raises(PermissionError):
        lab.serve_aws("POST", url, {"X-Amz-Target": target, "Content-Type": "application/x-amz-json-1.0"}, b"{}")
    assert lab.aws_calls == []


def test_a_request_of_a_labs_service_at_its_own_host_is_served():
    lab = checker.Lab(("sqs",))
    with checker.world_of_the_checker():
        headers = {"X-Amz-Target": "AmazonSQS.ListQueues", "Content-Type": "application/x-amz-json-1.0"}
        status, _, _ = lab.serve_aws("POST", "https://sqs.eu-south-2.checker.invalid/", headers, b"{}")
    assert status == 200 and lab.aws_calls[0]["action"] == "ListQueues"


def test_a_long_poll_on_an_empty_queue_is_answered_at_once_and_kept_as_the_learner_sent_it():
    lab = checker.Lab(("sqs",))
    host, target = "https://sqs.eu-south-2.checker.invalid/", "AmazonSQS."
    json_type = {"Content-Type": "application/x-amz-json-1.0"}
    with checker.world_of_the_checker(), VirtualClock():  # frozen: moto's own long poll would never end
        created = lab.serve_aws(
            "POST", host, json_type | {"X-Amz-Target": target + "CreateQueue"}, b'{"QueueName": "q"}'
        )
        url = json.loads(created[2])["QueueUrl"]
        started = time.monotonic()
        request = json.dumps({"QueueUrl": url, "WaitTimeSeconds": 20}).encode()
        status, _, answer = lab.serve_aws(
            "POST", host, json_type | {"X-Amz-Target": target + "ReceiveMessage"}, request
        )
    assert status == 200 and not json.loads(answer).get("Messages") and time.monotonic() - started < 1
    assert lab.aws_calls[-1]["request"]["WaitTimeSeconds"] == 20


def test_the_checker_stops_a_kernel_that_sends_more_than_its_limit_to_aws():
    lab = checker.Lab(("dynamodb",))
    item = json.dumps({"TableName": "t", "Item": {"clave": {"S": "x" * 390_000}}}).encode()
    target = {"X-Amz-Target": "DynamoDB_20120810.PutItem", "Content-Type": "application/x-amz-json-1.0"}
    with checker.world_of_the_checker(), pytest.raises(boundary.BoundaryError, match="more than 16 MB"):
        for _ in range(1_000):
            lab.serve_aws("POST", "https://dynamodb.eu-south-2.checker.invalid/", target, item)
    assert lab.stopped == f"your code sent more than {checker.AWS_MB} MB to AWS (the checker's limit)"
    assert len(lab.aws_calls) < (checker.AWS_MB << 20) / 390_000 + 1


def test_a_name_the_learner_chose_reaches_a_report_cut_short_and_only_as_a_name():
    assert protocol.learner_name("NameError") == "NameError"
    assert len(protocol.learner_name("E" * 80)) == protocol.NAME_CHARS
    assert protocol.learner_name("Error\x1b[2J; rm -rf /") == "an exception"


def test_a_kernel_that_keeps_calling_past_a_checks_budget_is_interrupted_then_hung_up_on():
    lab = checker.Lab(("sqs",))
    interrupted = []
    lab.interrupt = lambda: interrupted.append(True)
    lab.call_budget, lab.calls_this_check = 10, 10  # spent: the wire never went silent (clock.now() in a loop)
    with pytest.raises(TimeoutError, match="more than 10 calls during this check"):
        lab.handle("method", [None, "now", [], {}])
    with pytest.raises(TimeoutError):
        lab.handle("method", [None, "now", [], {}])
    assert interrupted == [True]  # once
    lab.calls_this_check = 10 + checker.GRACE_CALLS
    with pytest.raises(boundary.BoundaryError, match="kept calling the checker past a check's 10 calls"):
        lab.handle("method", [None, "now", [], {}])
    assert lab.stopped.startswith("your code kept calling the checker")


def test_a_kernel_that_keeps_calling_past_a_checks_time_is_interrupted_then_hung_up_on():
    """A hostile session's function blocked SIGINT and called clock.now() every 10 s: never silent, never past its
    calls, it held the grading slot for the notebook's whole budget. Past the check's time it is interrupted; past
    the grace too, hung up on."""
    lab = checker.Lab(("sqs",))
    interrupted = []
    lab.interrupt = lambda: interrupted.append(True)
    lab.call_budget, lab.grace_seconds = 100_000, 20.0
    lab.check_ends = time.monotonic() + 60  # within its time: served
    with pytest.raises(PermissionError):  # no such object: the call itself was let through, to be refused
        lab.handle("method", [None, "now", [], {}])
    lab.check_ends = time.monotonic() - 1
    for _ in range(2):
        with pytest.raises(TimeoutError, match="still running past this check's time limit: interrupted"):
            lab.handle("method", [None, "now", [], {}])
    assert interrupted == [True] and lab.over_budget  # once; the check fails whatever the kernel answers later
    lab.check_ends = time.monotonic() - 21
    with pytest.raises(boundary.BoundaryError, match="busy past a check's time limit"):
        lab.handle("method", [None, "now", [], {}])
    assert lab.stopped.startswith("your code kept the checker busy")


def test_a_request_in_any_protocol_but_awss_json_is_refused_before_moto_sees_it():
    lab = checker.Lab(("sqs",))
    host, target = "https://sqs.eu-south-2.checker.invalid/", {"X-Amz-Target": "AmazonSQS.ReceiveMessage"}
    form = b"Action=ReceiveMessage&Version=2012-11-05&WaitTimeSeconds=20&QueueUrl=q"  # moto would read this first
    with checker.world_of_the_checker(), VirtualClock():
        for headers, body in (
            (target | {"Content-Type": "application/x-www-form-urlencoded"}, form),
            (target | {"Content-Type": "application/x-amz-json-1.0"}, form),
            (target | {"Content-Type": "application/x-amz-json-1.0"}, b"[1]"),
        ):
            with pytest.raises(PermissionError, match="JSON protocol only"):
                lab.serve_aws("POST", host, headers, body)
    assert lab.aws_calls == []


SQS_HOST, JSON_TYPE = "https://sqs.eu-south-2.checker.invalid/", {"Content-Type": "application/x-amz-json-1.0"}


def _sqs(lab: checker.Lab, action: str, request: dict) -> list:
    """One SQS request of the kernel's, served by the checker: [status, headers, answer]."""
    headers = JSON_TYPE | {"X-Amz-Target": f"AmazonSQS.{action}"}
    return lab.serve_aws("POST", SQS_HOST, headers, json.dumps(request).encode())


def test_a_queue_named_by_its_last_part_alone_is_noted_under_its_one_url():
    lab = checker.Lab(("sqs",))
    with checker.world_of_the_checker(), VirtualClock():
        url = json.loads(_sqs(lab, "CreateQueue", {"QueueName": "cola-x"})[2])["QueueUrl"]
        for alias in ("cola-x", "https://elsewhere.example/1/cola-x"):
            status, _, _ = _sqs(lab, "SendMessage", {"QueueUrl": alias, "MessageBody": "m"})
            assert status == 200 and lab.aws_calls[-1]["request"]["QueueUrl"] == url


def test_an_action_written_as_a_form_inside_a_json_string_runs_nothing_but_the_targets_action():
    """helper-7's attack: moto reads every body as a form too, and ran the Action= found inside a JSON string (a
    long poll on a frozen clock) under an X-Amz-Target of GetQueueAttributes, which the checker had noted."""
    lab = checker.Lab(("sqs",))
    with checker.world_of_the_checker(), VirtualClock():
        url = json.loads(_sqs(lab, "CreateQueue", {"QueueName": "cola-x"})[2])["QueueUrl"]
        _sqs(lab, "SendMessage", {"QueueUrl": url, "MessageBody": "m"})
        form = ["&Action=ReceiveMessage&"]
        started = time.monotonic()
        request = {"QueueUrl": "cola-x", "AttributeNames": ["All"], "MessageAttributeNames": form}
        request["WaitTimeSeconds"] = 20
        _, _, answer = _sqs(lab, "GetQueueAttributes", request)
    assert time.monotonic() - started < 5
    assert "Messages" not in json.loads(answer or b"{}")  # GetQueueAttributes answered, or refused: no receive
    assert lab.aws_calls[-1]["action"] == "GetQueueAttributes"
    assert lab.aws_calls[-1]["request"]["MessageAttributeNames"] == form  # kept as the learner sent it


def _undeclared_calls(proxy: type) -> set[str]:
    """Names a proxy sends across the wire that its CALLS does not list, and listed names it has no member for."""
    import inspect
    import re

    sent = set(re.findall(r'self\._call\("([^"]+)"', inspect.getsource(proxy)))
    return (sent - proxy.CALLS) | {name for name in proxy.CALLS if not hasattr(proxy, name)}


def test_each_proxy_kind_lists_exactly_what_it_sends_and_the_checker_answers_that():
    for kind, proxy in learner_side.PROXIES.items():
        assert _undeclared_calls(proxy) == set(), kind
        assert checker.lab.EXPOSED[kind] == proxy.CALLS


def test_a_proxy_that_sends_what_it_does_not_list_is_seen():
    class RemoteSloppy(learner_side._Remote):
        CALLS = frozenset({"now", "gone"})

        def now(self):
            return self._call("now")

        def advance(self, seconds):
            return self._call("advance", seconds)

    assert _undeclared_calls(RemoteSloppy) == {"advance", "gone"}


def test_answers_to_calls_nobody_made_do_not_hold_a_call_past_its_silence():
    """helper-9's stall (7 December): answers out of turn, every 2 s, kept a call waiting past its 3 s timeout."""
    wire, kernel = _raw_pair(lambda name, args: None)
    wire.timeout_seconds = 1

    def chatter():
        lane = json.loads(kernel.makefile().readline())["lane"]
        for _ in range(20):
            kernel.sendall(json.dumps({"lane": lane, "id": 0, "result": None}).encode() + b"\n")
            time.sleep(0.2)

    threading.Thread(target=chatter, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(boundary.BoundaryError, match="no answer within 1 s"):
        wire.call("value", "more_likely")
    assert time.monotonic() - started < 2.5 and wire.out_of_turn >= 3


@pytest.mark.parametrize(
    "headers",
    [
        # helper-9's attack (7 December): the checker noted ListQueues while moto, which reads headers ignoring case
        # and takes the last, ran the send
        {"X-Amz-Target": "AmazonSQS.ListQueues", "x-amz-target": "AmazonSQS.SendMessage"},
        {"X-Amz-Target": "AmazonSQS.x.ReceiveMessage"},  # moto runs the last dotted part: a long poll
        {"X-Amz-Target": "AmazonSQS.ReceiveMessage.ListQueues"},
    ],
)
def test_a_target_sent_twice_or_naming_more_than_one_action_is_refused_and_runs_nothing(headers):
    lab = checker.Lab(("sqs",))
    host, json_type = "https://sqs.eu-south-2.checker.invalid/", {"Content-Type": "application/x-amz-json-1.0"}
    with checker.world_of_the_checker(), VirtualClock():
        url = json.loads(_sqs(lab, "CreateQueue", {"QueueName": "cola-x"})[2])["QueueUrl"]
        request = json.dumps({"QueueUrl": url, "MessageBody": "m", "WaitTimeSeconds": 20}).encode()
        started = time.monotonic()
        with pytest.raises(PermissionError):
            lab.serve_aws("POST", host, json_type | headers, request)
        assert time.monotonic() - started < 1
        answer = _sqs(lab, "GetQueueAttributes", {"QueueUrl": url, "AttributeNames": ["ApproximateNumberOfMessages"]})
    assert json.loads(answer[2])["Attributes"]["ApproximateNumberOfMessages"] == "0"  # nothing was sent
    assert [call["action"] for call in lab.aws_calls] == ["CreateQueue", "GetQueueAttributes"]


@pytest.mark.skipif(os.geteuid() != 0, reason="connecting as another user needs root")
def test_a_connection_from_anyone_but_the_learner_is_dropped_and_the_learners_kernel_still_accepted():
    """A hostile session pointed its own grading's root client at a classmate's checker socket (a link where its
    kernel's socket had been): the classmate's checker refused that connection and lost every check. A stranger's
    connection is now closed and the wait goes on; only strangers, and the wait ends naming them."""
    import tempfile

    from mercadofresco.course.checker import connection

    learner = 65534  # nobody
    workdir = Path(tempfile.mkdtemp(prefix="mercadofresco-accept-"))
    try:
        workdir.chmod(0o755)
        listener, path = checker.listen(workdir, learner)
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(connection.accept_kernel, listener, learner, 10)
            strangers = [socket.socket(socket.AF_UNIX) for _ in range(3)]
            for stranger in strangers:
                stranger.connect(str(path))  # root, first: not the learner's kernel
            kernel = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    f"import os, socket, time; os.setuid({learner}); s = socket.socket(socket.AF_UNIX)"
                    f"; s.connect({str(path)!r}); s.sendall(b'kernel'); time.sleep(10)",
                ]
            )
            try:
                assert waiting.result(timeout=15).recv(6) == b"kernel"
            finally:
                kernel.kill()
        for stranger in strangers:
            assert stranger.recv(1) == b""  # closed by the checker
        late = socket.socket(socket.AF_UNIX)
        late.connect(str(path))
        with pytest.raises(boundary.BoundaryError, match=r"within 1 s \(refused 1 connection\(s\) from uid 0\)"):
            connection.accept_kernel(listener, learner, timeout=1)
        listener.close()
    finally:
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)


def test_the_checkers_read_of_its_own_table_is_what_getitem_answers():
    """`Lab.dynamodb_item` reads moto's backend instead of sending a request: the same item, every type of value,
    {} for none, and the request's own error for a table that is not there."""
    from botocore.exceptions import ClientError

    from mercadofresco import world

    lab = checker.Lab()
    with checker.world_of_the_checker():
        dynamodb = lab.client("dynamodb")
        world.create_idempotency_table(dynamodb)
        values = {"L": [{"BOOL": True}, {"NULL": True}, {"B": b"\x00\x01"}, {"SS": ["b", "a"]}, {"N": "1.50"}]}
        dynamodb.put_item(
            TableName=world.IDEMPOTENCY_TABLE, Item={"clave": {"S": "cobro:x"}, "m": {"M": {"a": values}}}
        )
        for clave in ("cobro:x", "cobro:y"):
            key = {"clave": {"S": clave}}
            asked = dynamodb.get_item(TableName=world.IDEMPOTENCY_TABLE, Key=key).get("Item") or {}
            assert lab.dynamodb_item(world.IDEMPOTENCY_TABLE, key) == asked
        with pytest.raises(ClientError, match="ResourceNotFoundException"):
            lab.dynamodb_item("no-such-table", {"clave": {"S": "cobro:x"}})
