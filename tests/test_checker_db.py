"""Lab 3's database in the grader's process: what the learner's role may do through the relay, and a death."""

from __future__ import annotations

import psycopg
import pytest

from mercadofresco.course import checker_db


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    db = checker_db.LabDatabase("lab3_test")
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
    assert (user, path) == (checker_db.ROLE, "lab3_test")
    with pytest.raises(psycopg.OperationalError, match="only the role mf_learner may connect here"):
        psycopg.connect(database.conninfo().replace(f"user={checker_db.ROLE}", "user=postgres"))
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
    superuser = database.owner.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s", (checker_db.ROLE,))
    assert superuser.fetchone() == (False,)


def test_the_checker_refuses_to_read_a_view_posing_as_a_table(database, learner):
    learner.execute("CREATE TABLE outbox (agregado_id text)")
    learner.execute("CREATE VIEW pedidos AS SELECT agregado_id AS pedido_id FROM outbox")
    database.tables_are_tables("outbox")
    with pytest.raises(AssertionError, match="'pedidos' is not a table"):
        database.tables_are_tables("pedidos")


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
