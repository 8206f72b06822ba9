"""The hidden checks run in the grader's process (issue 21): the wire, a stub kernel, and hostile blank labs.

The verdict is read from the checker's own state (its moto, its gateway's ledger, the calls it served); the
learner's kernel only answers calls. These tests show what the kernel can no longer do about that.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path

import nbformat
import pytest

from mercadofresco.clock import VirtualClock
from mercadofresco.course import boundary, checker, grading, labs

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
            rows = {row["check"]: row for row in checker.run_checks(module, lab, 20)}
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


# -- hostile blank labs, graded as root beside a correct one --------------------------------------
HOSTILE = {
    "compiler_class": """ip = get_ipython()
class Blind(type(ip.compile)):
    def ast_parse(self, source, filename="<unknown>", symbol="exec"):
        import ast
        return ast.parse("print('proof')")
ip.compile.__class__ = Blind""",
    "audit_hook": """import ast, sys
def _hook(event, args):
    if event == "compile" and isinstance(args[0], ast.Module):
        args[0].body[:] = [ast.Pass()]
sys.addaudithook(_hook)""",
    "reply_patched": """from jupyter_client.session import Session
import ipykernel.kernelbase
_send = Session.send
def send(self, stream, msg_or_type, content=None, *args, **kwargs):
    if isinstance(content, dict) and content.get("status") == "error":
        count = content.get("execution_count", 0)
        content = {"status": "ok", "execution_count": count, "user_expressions": {}, "payload": []}
    return _send(self, stream, msg_or_type, content, *args, **kwargs)
Session.send = send
ipykernel.kernelbase.Kernel.send_response = lambda self, *args, **kwargs: None""",
    "objects_rewritten": """import ctypes, gc
from mercadofresco.course import boundary, checker
from mercadofresco.models import gateway
boundary.encode.__code__ = (lambda value, codec, depth=0: True).__code__  # every answer becomes true
for obj in gc.get_objects():
    if isinstance(obj, gateway.PaymentGateway):
        obj.ledger.clear()
checker.run_checks = lambda *args, **kwargs: iter([{"check": "x", "verdict": True}])
ctypes.memset(id(0) + 24, 0, 0)""",
    "thread_and_signal": """import gc, json, signal, threading, time
def _forge():
    for _ in range(400):
        for obj in gc.get_objects():
            if type(obj).__name__ == "Boundary":
                for n in range(1, 200):
                    try:
                        obj._send({"lane": "c1", "id": n, "result": {"passed": True}})
                    except BaseException:
                        return
        time.sleep(0.01)
threading.Thread(target=_forge, daemon=True).start()
signal.signal(signal.SIGALRM, lambda *args: print("verdict: passed"))
signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)""",
    "forged_kernel": """import json, socket
from mercadofresco.course import learner_side
def _forged(namespace, path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    for line in sock.makefile("rb"):
        call = json.loads(line)
        reply = {"lane": call["lane"], "id": call["id"], "result": {"passed": True, "verdict": True}}
        sock.sendall((json.dumps(reply) + "\\n").encode())
learner_side.serve = _forged""",
}
EXITS_MID_CHECK = """import os
def {name}(*args, **kwargs):
    os._exit(3)"""
# Labs 2 and 3 share the grader's mechanism with lab 1: a few of the attacks above, and their own.
ATTACKS = {
    "lab1": sorted(HOSTILE),
    "lab2": ["audit_hook", "forged_kernel", "objects_rewritten"],
    "lab3": ["audit_hook", "forged_kernel", "objects_rewritten"],
}
FIRST_FUNCTION = {"lab1": "build_handler", "lab2": "inspect_dlq", "lab3": "create_schema"}
LAB3_ATTACKS = {
    # the kernel asks the grader's database for its owner, through the relay it was given
    "db_owner": """import psycopg
def create_schema(conn):
    owner = psycopg.connect(host=conn.info.host, port=conn.info.port, dbname="postgres", user="postgres")
    owner.execute("ALTER ROLE mf_learner SUPERUSER")""",
    # orders that are not a table: a view the grader's owner would run when it reads
    "view_for_orders": """def create_schema(conn):
    conn.execute("CREATE TABLE outbox (id bigint, agregado_id text, publicado boolean)")
    conn.execute("CREATE VIEW pedidos AS SELECT agregado_id AS pedido_id FROM outbox")""",
    # a trigger that tries to make the learner's role a superuser when someone writes to outbox
    "trigger_escalation": """def create_schema(conn):
    conn.execute("CREATE TABLE pedidos (pedido_id text PRIMARY KEY, importe numeric, creado_en timestamptz)")
    conn.execute("CREATE TABLE outbox (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, tipo_agregado text,"
                 " agregado_id text, tipo_evento text, payload jsonb, creado_en timestamptz,"
                 " publicado boolean NOT NULL DEFAULT false, publicado_en timestamptz)")
    conn.execute("CREATE FUNCTION up() RETURNS trigger LANGUAGE plpgsql AS "
                 "$$ BEGIN ALTER ROLE mf_learner SUPERUSER; RETURN NEW; END $$")
    conn.execute("CREATE TRIGGER up BEFORE INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION up()")""",
}


LABS_GRADED = ("lab1", "lab2", "lab3")


def _grade_hostile(lab: str, folder: Path) -> dict:
    blank = labs.handed_out(lab)
    attacks = {name: HOSTILE[name] for name in ATTACKS[lab]} | (LAB3_ATTACKS if lab == "lab3" else {})
    attacks["exits_mid_check"] = EXITS_MID_CHECK.format(name=FIRST_FUNCTION[lab])
    for name, source in attacks.items():
        notebook = nbformat.from_dict(json.loads(json.dumps(blank)))
        notebook.cells.append(nbformat.v4.new_code_cell(source))
        nbformat.write(notebook, folder / f"{name}.ipynb")
    nbformat.write(nbformat.read(ROOT / "solutions" / labs.lab_file(lab), as_version=4), folder / "zz_correct.ipynb")
    return {report.learner: report for report in grading.grade(folder, lab, jobs=2)}


@pytest.fixture(scope="module")
def every_hostile(tmp_path_factory) -> dict:
    """The three labs' hostile sets graded at once, as three gradings on one machine share it."""
    if os.geteuid() != 0:
        pytest.skip("the grader isolates learners only when it runs as root")
    with ThreadPoolExecutor(len(LABS_GRADED)) as pool:
        folders = [tmp_path_factory.mktemp(f"hostile-{lab}") for lab in LABS_GRADED]
        return dict(zip(LABS_GRADED, pool.map(_grade_hostile, LABS_GRADED, folders), strict=True))


@pytest.fixture(scope="module", params=LABS_GRADED)
def hostile(request, every_hostile):
    return every_hostile[request.param]


def test_every_hostile_blank_lab_scores_nothing(hostile):
    scored = {name: report.score for name, report in hostile.items() if name != "zz_correct" and report.score}
    assert scored == {}, {name: [(r.check, r.reason) for r in hostile[name].checks if r.passed] for name in scored}


def test_the_correct_learner_graded_beside_them_scores_full_marks(hostile):
    report = hostile["zz_correct"]
    assert report.score == report.max_score, [(r.check, r.reason) for r in report.checks if not r.passed]


def test_a_kernel_that_exits_mid_check_fails_that_check_and_every_one_after(hostile):
    reasons = [result.reason for result in hostile["exits_mid_check"].checks]
    assert any("kernel was gone" in reason for reason in reasons)
    assert reasons[-1].startswith("not run: the kernel was gone")


def test_a_kernel_whose_serve_cell_was_emptied_is_reported_when_the_cell_ends_not_after_the_wait(hostile):
    """The audit hook blanks every cell the grader sends: the grader sees the cell end and stops waiting then."""
    reasons = {result.reason for result in hostile["audit_hook"].checks}
    assert reasons == {f"not run: {checker.SERVE_CELL_ENDED}"}, reasons
