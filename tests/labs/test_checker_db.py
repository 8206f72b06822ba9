"""Lab 3's database in the grader's process: what the learner's role may do through the relay, and a death."""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import socket
import subprocess
import threading
import time
from pathlib import Path

import psycopg
import pytest

from mercadofresco.course.checker import folder, lab_database
from mercadofresco.runtime import database_relay

PRIVILEGED_GROUPS = ("root", "sudo", "adm", "wheel", "shadow", "disk", "docker", "staff")


def _group_exists(name):
    try:
        grp.getgrnam(name)
    except KeyError:
        return False
    return True


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    db = lab_database.LabDatabase("lab3_test")
    db.serve(tmp_path_factory.mktemp("work"), None)
    yield db
    db.close()


@pytest.fixture
def learner(database):
    database.reset()
    conn = psycopg.connect(database.conninfo(), autocommit=True)
    yield conn
    conn.close()


def test_the_relay_admits_the_learners_role_in_the_labs_schema_only(database, learner):
    user, path = learner.execute("SELECT current_user, current_setting('search_path')").fetchone()
    assert (user, path) == (lab_database.ROLE, "lab3_test")
    with pytest.raises(psycopg.OperationalError, match="only the role mf_learner may connect here"):
        psycopg.connect(database.conninfo().replace(f"user={lab_database.ROLE}", "user=postgres"))
    assert "only the role mf_learner may connect here" in database.relay.refused


def test_the_learners_role_cannot_leave_its_schema_or_raise_itself(learner):
    for statement in (
        "CREATE TABLE public.fuera (x int)",
        "SELECT * FROM pg_catalog.pg_authid",
        "ALTER ROLE mf_learner SUPERUSER",
    ):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            learner.execute(statement)


def test_a_trigger_of_the_learners_runs_with_the_learners_rights_when_the_checker_seeds(database, learner):
    learner.execute("CREATE TABLE outbox (id int)")
    learner.execute(
        "CREATE FUNCTION up() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN ALTER ROLE mf_learner SUPERUSER; RETURN NEW; END $$"
    )
    learner.execute("CREATE TRIGGER up BEFORE INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION up()")
    with database.as_learner() as seeding, pytest.raises(psycopg.errors.InsufficientPrivilege):
        seeding.execute("INSERT INTO outbox VALUES (1)")
    superuser = database.owner.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s", (lab_database.ROLE,))
    assert superuser.fetchone() == (False,)


def test_the_checker_refuses_to_read_a_view_posing_as_a_table(database, learner):
    learner.execute("CREATE TABLE outbox (agregado_id text)")
    learner.execute("CREATE VIEW pedidos AS SELECT agregado_id AS pedido_id FROM outbox")
    database.admit("outbox")
    with pytest.raises(AssertionError, match="'pedidos' is not a table"):
        database.admit("pedidos")


# A function of the learner's that tries, with whatever rights it runs with, to raise the learner's role, to run
# a program and to read a file; it swallows every refusal and answers true, so where it runs with the learner's
# rights (or the reader's) nothing changes, and where it ran with the owner's the role would be a superuser.
ESCALATE = f"""CREATE FUNCTION escala(anyelement) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    BEGIN ALTER ROLE {lab_database.ROLE} SUPERUSER; EXCEPTION WHEN OTHERS THEN NULL; END;
    BEGIN GRANT pg_execute_server_program TO {lab_database.ROLE}; EXCEPTION WHEN OTHERS THEN NULL; END;
    BEGIN COPY (SELECT 1) TO PROGRAM 'touch /tmp/mf-escala-%%'; EXCEPTION WHEN OTHERS THEN NULL; END;
    BEGIN PERFORM pg_read_file('/etc/hostname'); EXCEPTION WHEN OTHERS THEN NULL; END;
    RETURN true;
END $$"""


def _unchanged(database):
    assert database.learner_role() == {
        "superuser": False,
        "createrole": False,
        "createdb": False,
        "replication": False,
        "bypassrls": False,
        "member_of": [],
    }


def test_a_column_of_the_learners_own_type_is_refused_and_its_cast_never_runs_as_the_checker(database, learner):
    """The attack that reached the grader's host: a type with an implicit cast to boolean, read by `NOT publicado`."""
    learner.execute(ESCALATE.replace("%%", "cast"))
    learner.execute("CREATE TYPE sino AS ENUM ('si', 'no')")
    learner.execute(
        "CREATE FUNCTION sino_bool(sino) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN RETURN escala($1); END $$"
    )
    learner.execute("CREATE CAST (sino AS boolean) WITH FUNCTION sino_bool(sino) AS IMPLICIT")
    learner.execute("CREATE TABLE outbox (id int, publicado sino)")
    learner.execute("INSERT INTO outbox VALUES (1, 'no')")
    with pytest.raises(lab_database.RefusedSchemaError, match=r"outbox\.publicado has the type .*sino"):
        database.admit("outbox")
    learner.execute("CREATE DOMAIN booleano AS boolean CHECK (escala(VALUE))")
    learner.execute("CREATE TABLE pedidos (pedido_id text, pagado booleano)")
    with pytest.raises(lab_database.RefusedSchemaError, match=r"pedidos\.pagado has the type .*booleano"):
        database.admit("pedidos")
    _unchanged(database)


def test_a_table_altered_after_it_was_admitted_is_refused_at_the_next_read(database, learner):
    learner.execute("CREATE TABLE outbox (id int, publicado boolean)")
    database.admit("outbox")
    assert database.read("SELECT count(*) FROM {outbox} WHERE NOT publicado") == [(0,)]
    learner.execute("CREATE TYPE sino AS ENUM ('si', 'no')")
    learner.execute("ALTER TABLE outbox ALTER COLUMN publicado TYPE sino USING 'no'")
    with pytest.raises(lab_database.RefusedSchemaError, match=r"outbox\.publicado"):
        database.read("SELECT count(*) FROM {outbox} WHERE NOT publicado")


def test_what_the_learner_defines_around_built_in_tables_runs_with_no_more_than_the_readers_rights(database, learner):
    """Operators, functions named like PostgreSQL's, a policy, rules, a trigger, an index whose predicate calls the
    learner's function: the checker's reads give the true rows, and the learner's role is what it was."""
    learner.execute(ESCALATE.replace("%%", "around"))
    for statement in (
        "CREATE TABLE outbox (id int, agregado_id text, publicado boolean NOT NULL DEFAULT false)",
        # an operator for text = text and functions with PostgreSQL's names, in the lab's schema
        "CREATE FUNCTION texto_igual(text, text) RETURNS boolean LANGUAGE sql AS 'SELECT escala(1)'",
        "CREATE OPERATOR = (LEFTARG = text, RIGHTARG = text, FUNCTION = texto_igual)",
        "CREATE FUNCTION lower(text) RETURNS text LANGUAGE sql AS 'SELECT escala(1)::text'",
        "CREATE FUNCTION now() RETURNS timestamptz LANGUAGE sql"
        " AS $$SELECT CASE WHEN escala(1) THEN 'epoch'::timestamptz END$$",
        # a policy the owner's reads would run (the reader bypasses policies), forced on the learner too
        "ALTER TABLE outbox ENABLE ROW LEVEL SECURITY",
        "ALTER TABLE outbox FORCE ROW LEVEL SECURITY",
        "CREATE POLICY oculta ON outbox USING (escala(id) AND id < 3) WITH CHECK (true)",
        # rules and a trigger on the learner's own writes
        "CREATE RULE anota AS ON UPDATE TO outbox DO ALSO SELECT escala(NEW.id)",
        "CREATE FUNCTION dispara() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM escala(1); RETURN NEW; END $$",
        "CREATE TRIGGER dispara BEFORE INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION dispara()",
        # an index whose predicate the planner evaluates while it plans the checker's read
        "CREATE INDEX pendientes ON outbox (id) WHERE NOT publicado AND escala(1)",
        "INSERT INTO outbox (id, agregado_id) SELECT n, 'PED-' || n FROM generate_series(1, 5) AS n",
    ):
        learner.execute(statement)
    database.admit("outbox")
    assert database.read("SELECT count(*) FROM {outbox} WHERE NOT publicado") == [(5,)]
    assert database.read("SELECT count(*) FROM {outbox} WHERE agregado_id = %s", ("PED-1",)) == [(1,)]
    with database.as_learner() as seeding:
        seeding.execute("INSERT INTO outbox (id, agregado_id) VALUES (9, 'PED-9')")
    learner.execute("SET enable_seqscan = off")
    assert database.read("SELECT count(*) FROM {outbox} WHERE NOT publicado") == [(6,)]
    _unchanged(database)


def test_the_checkers_rival_publisher_sees_past_a_policy_and_can_do_nothing_else(database, learner):
    """A policy keyed on the rival's settings once hid every row from it (lab 3's sent rows stayed claimed)."""
    learner.execute("CREATE TABLE outbox (id int, publicado boolean NOT NULL DEFAULT false)")
    learner.execute("INSERT INTO outbox (id) SELECT generate_series(1, 3)")
    learner.execute("ALTER TABLE outbox ENABLE ROW LEVEL SECURITY")
    learner.execute("ALTER TABLE outbox FORCE ROW LEVEL SECURITY")
    learner.execute("CREATE POLICY nadie ON outbox USING (false)")
    database.admit("outbox")
    with database.as_rival() as rival, rival.transaction(force_rollback=True):
        table = f"{database.schema}.outbox"
        assert rival.execute(f"SELECT count(*) FROM {table} WHERE NOT publicado").fetchone() == (3,)
        assert rival.execute(f"SELECT id FROM {table} ORDER BY id FOR UPDATE").fetchall() == [(1,), (2,), (3,)]
        assert rival.execute(
            "SELECT rolsuper, rolcreaterole FROM pg_roles WHERE rolname = current_user"
        ).fetchone() == (
            False,
            False,
        )


def test_learner_code_a_read_reaches_cannot_write(database, learner):
    """An index's predicate calls the learner's function while the reader's query is planned: it runs, as the
    learner's role (SECURITY DEFINER), in the reader's read-only transaction, and can change nothing it reads."""
    schema = database.schema
    for statement in (
        "CREATE TABLE outbox (id int PRIMARY KEY, publicado boolean NOT NULL DEFAULT false)",
        "INSERT INTO outbox (id) SELECT generate_series(1, 5)",
        f"""CREATE FUNCTION marca() RETURNS boolean LANGUAGE plpgsql VOLATILE SECURITY DEFINER
            SET search_path = {schema}, pg_catalog AS $$
            BEGIN
                IF session_user = 'mf_reader' THEN UPDATE outbox SET publicado = true WHERE NOT publicado; END IF;
                RETURN true;
            END $$""",
        f"CREATE FUNCTION siempre(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN {schema}.marca();"
        " END $$",
        "CREATE INDEX trampa ON outbox (id) WHERE siempre(1)",
    ):
        learner.execute(statement)
    database.admit("outbox")
    assert database.read("SELECT current_setting('transaction_read_only')") == [("on",)]
    with contextlib.suppress(psycopg.Error):  # refused in the read-only transaction: the read fails, or is true
        assert database.read("SELECT count(*) FROM {outbox} WHERE NOT publicado") == [(5,)]
    assert learner.execute("SELECT count(*) FROM outbox WHERE NOT publicado").fetchone() == (5,)


@pytest.mark.parametrize(
    "statement",
    [
        "COPY (SELECT 1) TO PROGRAM 'true'",
        "COPY outbox FROM PROGRAM 'echo 1'",
        "COPY outbox FROM '/etc/hostname'",
        "SELECT pg_read_file('/etc/hostname')",
        "SELECT pg_read_binary_file('/etc/hostname')",
        "SELECT pg_ls_dir('/')",
        "SELECT lo_import('/etc/hostname')",
        "SELECT lo_export(lo_create(0), '/tmp/mf-lo')",
        "ALTER SYSTEM SET log_min_messages = 'debug5'",
        "CREATE ROLE otro",
        "SET ROLE mf_reader",
        "SET SESSION AUTHORIZATION postgres",
        "GRANT pg_execute_server_program TO mf_learner",
        "CREATE EXTENSION IF NOT EXISTS adminpack",
        "CREATE EVENT TRIGGER t ON ddl_command_start EXECUTE FUNCTION pg_catalog.pg_event_trigger_ddl_commands()",
    ],
)
def test_the_learners_role_reaches_no_file_no_program_and_no_other_role(database, learner, statement):
    learner.execute("CREATE TABLE outbox (id int)")
    with pytest.raises(psycopg.Error):
        learner.execute(statement)
    _unchanged(database)


def test_no_function_the_learner_may_call_runs_with_its_owners_rights(database, learner):
    definer = learner.execute(
        "SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.prosecdef"
        " AND has_function_privilege(current_user, p.oid, 'EXECUTE')"
    ).fetchall()
    assert definer == []
    assert database.learner_role()["member_of"] == []


def test_the_embedded_servers_os_user_is_in_no_privileged_group(database):
    """pgserver starts it with subprocess's user= only, which kept root's group: the workbook drops it."""
    pid = database.db.server_pid()
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    status = dict(line.split(":", 1) for line in lines if ":" in line)
    uid, gid = int(status["Uid"].split()[0]), int(status["Gid"].split()[0])
    groups = {int(g) for g in status["Groups"].split()}
    privileged = {grp.getgrnam(name).gr_gid for name in PRIVILEGED_GROUPS if _group_exists(name)}
    assert gid not in privileged and not groups & privileged, status
    if uid != os.getuid():  # as root: pgserver's own user, and what `id` says of it
        name = pwd.getpwuid(uid).pw_name
        said = subprocess.run(["id", name], capture_output=True, text=True, check=True).stdout
        assert not any(f"({group})" in said for group in PRIVILEGED_GROUPS), said


def test_a_death_rolls_back_the_open_transaction_and_no_connection_is_admitted_until_revived(database, learner):
    learner.execute("CREATE TABLE pedidos (pedido_id text)")
    with pytest.raises(psycopg.OperationalError), learner.transaction():  # the death comes inside it
        learner.execute("INSERT INTO pedidos VALUES ('PED-2026-084417')")
        database.die()
        learner.execute("INSERT INTO pedidos VALUES ('PED-2026-084418')")
    with pytest.raises(psycopg.OperationalError, match="has died"):
        psycopg.connect(database.conninfo())
    database.revive()
    with psycopg.connect(database.conninfo()) as again:
        assert again.execute("SELECT count(*) FROM pedidos").fetchone() == (0,)


def test_the_relay_admits_only_the_learners_uid(database, monkeypatch):
    monkeypatch.setattr(database, "_uid", 65534)  # the learner's user; this test runs as another one
    with pytest.raises(psycopg.OperationalError, match="is not the learner's kernel"):
        psycopg.connect(database.conninfo())


def test_the_relay_serves_a_few_connections_at_once_and_closes_one_that_never_speaks(database, monkeypatch):
    """3,000 silent connections once gave the root checker 3,010 threads, each waiting for ever."""
    monkeypatch.setattr(database_relay, "STARTUP_SECONDS", 0.5)
    path = database.relay.folder / f".s.PGSQL.{database_relay.PORT}"
    before = threading.active_count()
    silent = []
    for _ in range(200):
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(str(path))
        silent.append(connection)
    time.sleep(0.1)
    assert threading.active_count() - before <= lab_database.MAX_SESSIONS + 2
    assert f"more than {lab_database.MAX_SESSIONS} connections at once" in database.relay.refused
    time.sleep(1.0)  # the silent ones are closed after STARTUP_SECONDS: the learner's role connects again
    for connection in silent:
        connection.close()
    with psycopg.connect(database.conninfo()) as again:
        assert again.execute("SELECT 1").fetchone() == (1,)


def test_a_cancel_request_is_admitted_by_its_peer_like_any_connection(database, monkeypatch):
    monkeypatch.setattr(database, "_uid", 65534)  # the learner's user; this test runs as another one
    assert "is not the learner's kernel" in database._admit(_unix_pair(), None)
    monkeypatch.setattr(database, "_uid", None)
    assert database._admit(_unix_pair(), None) == ""


def _unix_pair():
    left, _right = socket.socketpair()
    return left


def test_the_grader_refuses_a_working_copy_whose_folder_of_sockets_is_not_its_own(tmp_path):
    (tmp_path / folder.GRADER_FOLDER).symlink_to(tmp_path)
    with pytest.raises(folder.GraderFolderError, match="not the grader's folder"):
        folder.grader_folder(tmp_path)
