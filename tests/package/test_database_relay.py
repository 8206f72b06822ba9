"""A PostgreSQL session that dies at a statement boundary leaves the database as PostgreSQL would."""

from __future__ import annotations

import psycopg
import pytest

from mercadofresco.runtime import database
from mercadofresco.runtime.database_relay import Relay


@pytest.fixture(scope="module")
def db():
    with database.start(schema="relay_test") as started:
        yield started


@pytest.fixture
def relay(db, tmp_path):
    db.reset()
    with db.connect(autocommit=True) as conn:
        conn.execute("CREATE TABLE pedidos (pedido_id text PRIMARY KEY)")
    relayed = Relay(db.url, tmp_path / "pg")
    yield relayed
    relayed.close()


def _connect(relay, db):
    return psycopg.connect(relay.conninfo(options=f"-c search_path={db.schema}"), autocommit=True)


def _orders(db):
    with db.connect(autocommit=True) as conn:
        return [row[0] for row in conn.execute("SELECT pedido_id FROM pedidos ORDER BY 1").fetchall()]


def test_a_crash_after_the_first_insert_keeps_it_when_each_insert_commits_on_its_own(relay, db):
    conn = _connect(relay, db)
    relay.die_at(1)
    conn.execute("INSERT INTO pedidos VALUES ('PED-2026-084417')")
    with pytest.raises(psycopg.OperationalError):
        conn.execute("INSERT INTO pedidos VALUES ('PED-2026-084418')")
    assert _orders(db) == ["PED-2026-084417"]
    assert relay.deaths == 1


def test_a_crash_inside_a_transaction_leaves_nothing_of_it(relay, db):
    conn = _connect(relay, db)
    relay.die_at(2)  # BEGIN, the first INSERT: the process dies before the second
    with pytest.raises(psycopg.OperationalError), conn.transaction():
        conn.execute("INSERT INTO pedidos VALUES ('PED-2026-084417')")
        conn.execute("INSERT INTO pedidos VALUES ('PED-2026-084418')")
    assert _orders(db) == []


def test_a_dead_process_gets_no_new_session_until_revived(relay, db):
    conn = _connect(relay, db)
    relay.die()
    with pytest.raises(psycopg.OperationalError):
        conn.execute("SELECT 1")
    with pytest.raises(psycopg.OperationalError, match="has died"):
        _connect(relay, db)
    relay.revive()
    with _connect(relay, db) as again:
        assert again.execute("SELECT 1").fetchone() == (1,)


def test_unarmed_the_relay_only_counts(relay, db):
    with _connect(relay, db) as conn:
        conn.execute("INSERT INTO pedidos VALUES ('PED-2026-084417')")
        conn.execute("SELECT count(*) FROM pedidos")
    assert relay.statements >= 2 and relay.deaths == 0
