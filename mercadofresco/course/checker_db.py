"""The checker's PostgreSQL (lab 3): the grader's own server, which the learner's kernel reaches as a limited role.

The checker starts an embedded server (`database.start`) in the grader's
process. The learner's code gets real psycopg connections to it, made in the
kernel, through a relay socket in the learner's working copy
(`database_relay.Relay`):

- the relay admits only the learner's kernel (the peer's uid, SO_PEERCRED),
  and only a startup message for the learner's role (`ROLE`), which may use
  the lab's schema and nothing else: the server's owner stays the grader's;
- the checker reads its verdicts as the owner, on its own connection, after
  checking that the learner's tables are tables (`tables_are_tables`), so no
  view or rule of the learner's runs when it reads, and it writes its own rows
  as the learner's role (`as_learner`), so a trigger of theirs runs with their
  rights only.

A process death, as a check injects it (`die`, or `die_at` a statement
boundary), ends every session of the learner's role before the learner's code
hears of it: the server rolls back whatever transaction was open, as it would
for a process that is gone. Until the check says the process is back
(`revive`), the relay admits nobody.
"""

from __future__ import annotations

import socket
import struct
import time
from pathlib import Path

import psycopg
from psycopg import sql

from mercadofresco.runtime import database
from mercadofresco.runtime.database_relay import Relay

ROLE = "mf_learner"
SOCKET_DIR = ".pg"  # in the learner's working copy; libpq looks for .s.PGSQL.<port> in it
STATEMENT_TIMEOUT_MS = 10_000  # a learner's query that never ends is stopped by the server
KILL_SECONDS = 5.0  # for the learner's sessions to end once terminated


class LabDatabase:
    """The grader's PostgreSQL for one learner's checks: the owner's connection, the learner's role, the relay."""

    def __init__(self, schema: str = "lab3_grader") -> None:
        self.db = database.start(schema=schema)
        self.schema = schema
        self.relay: Relay | None = None
        self._uid: int | None = None
        self.owner = self.db.connect(autocommit=True)
        self.owner.execute(sql.SQL("SET search_path = pg_catalog, {}").format(sql.Identifier(schema)))
        role = sql.Identifier(ROLE)
        self.owner.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE").format(role))
        self.owner.execute(sql.SQL("REVOKE ALL ON SCHEMA public FROM PUBLIC"))
        timeout = sql.Literal(STATEMENT_TIMEOUT_MS)
        self.owner.execute(sql.SQL("ALTER ROLE {} SET statement_timeout = {}").format(role, timeout))
        self.reset()

    # -- the checker's side ------------------------------------------------------------------
    def reset(self) -> None:
        """An empty schema for the next check; the learner's role may create tables in it, and only there."""
        if self.relay is not None:  # a new process, which lives until a check says otherwise
            self.relay.die_at(None)
            self.relay.revive()
        self.kill_learner()
        name = sql.Identifier(self.schema)
        self.owner.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(name))
        self.owner.execute(sql.SQL("CREATE SCHEMA {}").format(name))
        self.owner.execute(sql.SQL("GRANT USAGE, CREATE ON SCHEMA {} TO {}").format(name, sql.Identifier(ROLE)))

    def as_learner(self) -> psycopg.Connection:
        """A connection of the checker's as the learner's role (to run the learner's SQL text with its rights)."""
        return psycopg.connect(self.db.url, user=ROLE, autocommit=True, options=f"-c search_path={self.schema}")

    def tables_are_tables(self, *names: str) -> None:
        """Assert that each of `names` is a plain table of the schema (not a view, whose code would run here)."""
        for name in names:
            row = self.owner.execute(
                "SELECT c.relkind FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = %s AND c.relname = %s",
                (self.schema, name),
            ).fetchone()
            assert row is not None, f"there is no table {name!r}"
            assert row[0] in ("r", "p"), f"{name!r} is not a table (relkind {row[0]!r})"

    def kill_learner(self) -> None:
        """End every backend of the learner's role (their open transactions roll back) and wait for them.

        pg_terminate_backend's own wait polls every 100 ms; a few milliseconds is what an exit takes.
        """
        backends = "FROM pg_catalog.pg_stat_activity WHERE usename = %s"
        self.owner.execute(f"SELECT pg_catalog.pg_terminate_backend(pid) {backends}", (ROLE,))
        deadline = time.monotonic() + KILL_SECONDS
        while self.owner.execute(f"SELECT count(*) {backends}", (ROLE,)).fetchone()[0]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the learner's sessions did not end within {KILL_SECONDS} s")
            time.sleep(0.002)

    def die(self) -> None:
        """The process running the learner's code died: its connections end, and no new one is admitted."""
        self.relay.die()

    def die_at(self, statements: int | None) -> None:
        """The process dies when the learner's code tries to send statement `statements` + 1 (None: it lives)."""
        self.relay.die_at(statements)

    @property
    def dead(self) -> bool:
        return self.relay.dead

    @property
    def deaths(self) -> int:
        """Process deaths so far: a check compares them before and after a call."""
        return self.relay.deaths

    def revive(self) -> None:
        """A new process: the relay admits connections again."""
        self.relay.revive()

    def conninfo(self, settings: tuple[tuple[str, str], ...] = ()) -> str:
        """What the learner's kernel connects with (through the relay in its working copy)."""
        options = " ".join(f"-c {name}={value}" for name, value in (("search_path", self.schema), *settings))
        return self.relay.conninfo(user=ROLE, connect_timeout=5, options=options)

    # -- the relay ----------------------------------------------------------------------------------
    def serve(self, workdir: Path, uid: int | None) -> None:
        """Relay <workdir>/.pg/.s.PGSQL.5432 to the server, for the learner's kernel."""
        self._uid = uid
        self.relay = Relay(self.db.url, workdir / SOCKET_DIR, admit=self._admit, on_death=self.kill_learner)
        self.relay.folder.chmod(0o755)

    def _admit(self, client: socket.socket, startup: dict[str, str]) -> str:
        """Why this connection may not reach the server ("" if it may): the learner's kernel, as the role."""
        if self._uid is not None:
            _, peer_uid, _ = struct.unpack("3i", client.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
            if peer_uid != self._uid:
                return f"a process of uid {peer_uid} is not the learner's kernel"
        if startup.get("user") != ROLE:
            return f"only the role {ROLE} may connect here"
        if startup.get("replication"):
            return "no replication connections"
        return ""

    def close(self) -> None:
        if self.relay is not None:
            self.relay.close()  # the learner's sessions end with it
        self.owner.close()
        self.db.close()
