"""The checker's PostgreSQL (lab 3): the grader's own server, which the learner's kernel reaches as a limited role.

The checker starts an embedded server (`database.start`) in the grader's
process. The learner's code gets real psycopg connections to it, made in the
kernel, through a relay socket in the learner's working copy
(`database_relay.Relay`):

- the relay admits only the learner's kernel (the peer's uid, SO_PEERCRED),
  and only a startup message for the learner's role (`ROLE`), which may use
  the lab's schema and nothing else;
- the checker reads its verdicts as `READER`, a role that cannot be raised:
  no superuser, no role it could become, SELECT on the lab's tables and
  nothing else. Code the learner defines (a cast of a type of theirs, an
  operator, a policy, an index's function) that a read reaches runs with those
  rights, which change nothing. Before it reads, the checker admits the tables
  (`admit`): plain tables whose columns have PostgreSQL's own types, since a
  learner's type would bring its casts and operators into the checker's query.
  Each read starts from a clean session (`DISCARD ALL`) whose search_path is
  pg_catalog alone, and names the tables with their schema, so no function or
  operator of the learner's is picked by name;
- the server's owner (a superuser) only creates and drops the schema, grants,
  and ends the learner's sessions; it never reads what the learner wrote;
- the checker writes its own rows as the learner's role (`as_learner`), so a
  trigger of theirs runs with their rights only.

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
from typing import Any

import psycopg
from psycopg import sql

from mercadofresco.course.checker import folder
from mercadofresco.runtime import database
from mercadofresco.runtime.database_relay import Relay

ROLE = "mf_learner"
READER = "mf_reader"  # the checker's reads: SELECT on the lab's tables, nothing else
RIVAL = "mf_rival"  # another publisher of the checker's: it asks for rows' locks, past any policy, and writes nothing
RIVAL_TIMEOUT_MS = 6_000
SOCKET_DIR = "pg"  # in the grader's folder of the working copy; libpq looks for .s.PGSQL.<port> in it
MAX_SESSIONS = 16  # the learner's connections at once (the solution holds 4); one more is turned away
STATEMENT_TIMEOUT_MS = 10_000  # a learner's query that never ends is stopped by the server
READ_TIMEOUT_MS = 5_000  # a read of the checker's: only a learner's function it reaches could make it slow
TEMP_FILE_MB = 256  # a learner's sort or hash that spills to disk stops there (the server's files are memory)
KILL_SECONDS = 5.0  # for the learner's sessions to end once terminated
# The roles PostgreSQL predefines that read files, run programs or act for others: the learner's role is in none.
PRIVILEGED_ROLES = ("pg_read_server_files", "pg_write_server_files", "pg_execute_server_program")
PRIVILEGED_ROLES += ("pg_read_all_data", "pg_write_all_data", "pg_signal_backend", "pg_create_subscription")


class RefusedSchemaError(AssertionError):
    """The learner's tables are not what the checker may read (a view, a column of a type of theirs)."""


class LabDatabase:
    """The grader's PostgreSQL for one learner's checks: the owner, the reader, the learner's role, the relay."""

    def __init__(self, schema: str = "lab3_grader") -> None:
        self.db = database.start(schema=schema)
        self.schema = schema
        self.relay: Relay | None = None
        self._uid: int | None = None
        self.admitted: dict[str, sql.Composable] = {}  # table name -> its schema-qualified name
        self.owner = self.db.connect(autocommit=True)
        self.owner.execute("SET search_path = pg_catalog")  # the owner never names an object of the learner's
        learner, reader = sql.Identifier(ROLE), sql.Identifier(READER)
        plain = sql.SQL("LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOINHERIT")
        self.owner.execute(sql.SQL("CREATE ROLE {} {} NOBYPASSRLS").format(learner, plain))
        self.owner.execute(sql.SQL("CREATE ROLE {} {} BYPASSRLS").format(reader, plain))  # no policy runs for it
        rival = sql.Identifier(RIVAL)
        self.owner.execute(sql.SQL("CREATE ROLE {} {} BYPASSRLS").format(rival, plain))  # a policy hides nothing
        self.owner.execute(sql.SQL("REVOKE ALL ON SCHEMA public FROM PUBLIC"))
        timeouts = ((learner, STATEMENT_TIMEOUT_MS), (reader, READ_TIMEOUT_MS), (rival, RIVAL_TIMEOUT_MS))
        for role, timeout in timeouts:
            self.owner.execute(sql.SQL("ALTER ROLE {} SET statement_timeout = {}").format(role, sql.Literal(timeout)))
            self.owner.execute(sql.SQL("ALTER ROLE {} SET temp_file_limit = {}").format(role, f"{TEMP_FILE_MB}MB"))
        for role in (reader, rival):  # they name the lab's tables with their schema, and nothing of the learner's
            self.owner.execute(sql.SQL("ALTER ROLE {} SET search_path = pg_catalog").format(role))
        # Learner code a read reaches (an index's function) runs in the reader's transaction: it may write nothing.
        self.owner.execute(sql.SQL("ALTER ROLE {} SET default_transaction_read_only = on").format(reader))
        self.reader = psycopg.connect(self.db.url, user=READER, autocommit=True, prepare_threshold=None)
        self.reset()

    # -- the checker's side ------------------------------------------------------------------
    def reset(self) -> None:
        """An empty schema for the next check; the learner's role may create tables in it, and only there."""
        if self.relay is not None:  # a new process, which lives until a check says otherwise
            self.relay.die_at(None)
            self.relay.revive()
        self.kill_learner()
        self.admitted = {}
        name = sql.Identifier(self.schema)
        self.owner.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(name))
        self.owner.execute(sql.SQL("CREATE SCHEMA {}").format(name))
        self.owner.execute(sql.SQL("GRANT USAGE, CREATE ON SCHEMA {} TO {}").format(name, sql.Identifier(ROLE)))
        for role in (READER, RIVAL):
            self.owner.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(name, sql.Identifier(role)))

    def as_learner(self) -> psycopg.Connection:
        """A connection of the checker's as the learner's role (to run the learner's SQL text with its rights)."""
        return psycopg.connect(self.db.url, user=ROLE, autocommit=True, options=f"-c search_path={self.schema}")

    def as_rival(self) -> psycopg.Connection:
        """A connection as another publisher of the checker's (`RIVAL`), for the admitted tables by their schema."""
        return psycopg.connect(self.db.url, user=RIVAL, autocommit=True, prepare_threshold=None)

    def admit(self, *names: str) -> None:
        """Let the checker read `names`: each must be a plain table of the schema whose columns have built-in types.

        Raises RefusedSchemaError (an AssertionError: the check fails) with the reason otherwise.
        """
        for name in names:
            self._refuse_unless_plain(name)
            table = sql.Identifier(self.schema, name)
            self.owner.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(table, sql.Identifier(READER)))
            self.owner.execute(sql.SQL("GRANT SELECT, UPDATE ON {} TO {}").format(table, sql.Identifier(RIVAL)))
            self.admitted[name] = table

    def read(self, query: str, params: tuple | list = ()) -> list[tuple]:
        """Rows of `query`, read as the reader in a clean session; `{outbox}` names an admitted table.

        The tables are checked again first: the learner's code may have altered them since they were admitted.
        """
        for name in self.admitted:
            self._refuse_unless_plain(name)
        statement = sql.SQL(query).format(**self.admitted)
        # Whatever a function of the learner's set in this session is gone (no statement is prepared to lose).
        self.reader.execute("DISCARD ALL")
        return self.reader.execute(statement, params).fetchall()

    def partial_indexes(self, name: str) -> set[str]:
        """The names of the partial indexes (with a WHERE clause) of the admitted table `name`, from the catalog."""
        rows = self.owner.execute(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
            " WHERE i.indrelid = %s::regclass AND i.indpred IS NOT NULL",
            (f"{self.schema}.{name}",),
        ).fetchall()
        return {index for (index,) in rows}

    def _refuse_unless_plain(self, name: str) -> None:
        kind = self.owner.execute(
            "SELECT c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relname = %s",
            (self.schema, name),
        ).fetchone()
        if kind is None:
            raise RefusedSchemaError(f"there is no table {name!r}")
        if kind[0] not in ("r", "p"):
            raise RefusedSchemaError(f"{name!r} is not a table (relkind {kind[0]!r})")
        own_types = self.owner.execute(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a"
            " JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
            " JOIN pg_type t ON t.oid = a.atttypid"
            " WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped"
            " AND t.typnamespace <> 'pg_catalog'::regnamespace ORDER BY a.attnum",
            (self.schema, name),
        ).fetchall()
        if own_types:
            column, type_name = own_types[0]
            raise RefusedSchemaError(
                f"{name}.{column} has the type {type_name}, which is not one of PostgreSQL's own: the lab's tables "
                "use built-in types (text, numeric, timestamptz, jsonb, boolean, bigint)"
            )

    def learner_role(self) -> dict[str, Any]:
        """The learner's role as the server sees it: its attributes and the roles it is a member of."""
        attributes = self.owner.execute(
            "SELECT rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls FROM pg_roles"
            " WHERE rolname = %s",
            (ROLE,),
        ).fetchone()
        member_of = self.owner.execute(
            "SELECT r.rolname FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid"
            " JOIN pg_roles u ON u.oid = m.member WHERE u.rolname = %s ORDER BY 1",
            (ROLE,),
        ).fetchall()
        names = ("superuser", "createrole", "createdb", "replication", "bypassrls")
        return dict(zip(names, attributes, strict=True)) | {"member_of": [role for (role,) in member_of]}

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
        """Relay <workdir>/.grader/pg/.s.PGSQL.5432 to the server, for the learner's kernel."""
        self._uid = uid
        sockets = folder.grader_folder(workdir) / SOCKET_DIR
        self.relay = Relay(self.db.url, sockets, admit=self._admit, on_death=self.kill_learner, sessions=MAX_SESSIONS)
        self.relay.folder.chmod(0o755)

    def _admit(self, client: socket.socket, startup: dict[str, str] | None) -> str:
        """Why this connection may not reach the server ("" if it may): the learner's kernel, as the role.

        A cancel request (`startup` None) carries no role: the kernel's own may go, no one else's.
        """
        if self._uid is not None:
            _, peer_uid, _ = struct.unpack("3i", client.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
            if peer_uid != self._uid:
                return f"a process of uid {peer_uid} is not the learner's kernel"
        if startup is None:
            return ""
        if startup.get("user") != ROLE:
            return f"only the role {ROLE} may connect here"
        if startup.get("replication"):
            return "no replication connections"
        return ""

    def close(self) -> None:
        if self.relay is not None:
            self.relay.close()  # the learner's sessions end with it
        self.reader.close()
        self.owner.close()
        self.db.close()
