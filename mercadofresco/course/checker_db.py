"""The checker's PostgreSQL (lab 3): the grader's own server, which the learner's kernel reaches as a limited role.

The checker starts an embedded server (`database.start`) in the grader's
process. The learner's code gets real psycopg connections to it, made in the
kernel, through a socket in the learner's working copy that this module
relays to the server:

- the relay admits only the learner's kernel (the peer's uid, SO_PEERCRED),
  and only a startup message for the learner's role (`ROLE`), which may use
  the lab's schema and nothing else: the server's owner stays the grader's;
- the checker reads its verdicts as the owner, on its own connection, after
  checking that the learner's tables are tables (`tables_are_tables`), so no
  view or rule of the learner's runs when it reads.

A process death, as a check injects it (`die`), terminates every backend of
the learner's role before the death reaches the kernel: the server rolls back
whatever transaction was open, as it would for a process that is gone. Until
the check says the process is back (`revive`), the relay admits nobody.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from mercadofresco import database

ROLE = "mf_learner"
SOCKET_DIR = ".pg"  # in the learner's working copy; libpq looks for .s.PGSQL.<port> in it
PORT = 5432
PROTOCOL_3 = 196608
SSL_REQUEST, GSSENC_REQUEST, CANCEL_REQUEST = 80877103, 80877104, 80877102
MAX_STARTUP_BYTES = 10_000
STATEMENT_TIMEOUT_MS = 30_000  # a learner's query that never ends is stopped by the server


class LabDatabase:
    """The grader's PostgreSQL for one learner's checks: the owner's connection, the learner's role, the relay."""

    def __init__(self, schema: str = "lab3_grader") -> None:
        self.db = database.start(schema=schema)
        self.schema = schema
        params = conninfo_to_dict(self.db.url)
        self.upstream = str(Path(params.get("host", "/tmp")) / f".s.PGSQL.{params.get('port', PORT)}")
        self.dbname = params.get("dbname", "postgres")
        self.dead = False
        self.refused: list[str] = []  # why the relay turned a connection away
        self._listener: socket.socket | None = None
        self._uid: int | None = None
        self.socket_dir: Path | None = None
        self.owner = self.db.connect(autocommit=True)
        self.owner.execute(sql.SQL("SET search_path = pg_catalog, {}").format(sql.Identifier(schema)))
        self.owner.execute(
            sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE").format(sql.Identifier(ROLE))
        )
        self.owner.execute(sql.SQL("REVOKE ALL ON SCHEMA public FROM PUBLIC"))
        self.owner.execute(
            sql.SQL("ALTER ROLE {} SET statement_timeout = {}").format(
                sql.Identifier(ROLE), sql.Literal(STATEMENT_TIMEOUT_MS)
            )
        )
        self.reset()

    # -- the checker's side ------------------------------------------------------------------
    def reset(self) -> None:
        """An empty schema for the next check; the learner's role may create tables in it, and only there."""
        self.kill_learner()
        self.owner.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema)))
        self.owner.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(self.schema)))
        self.owner.execute(
            sql.SQL("GRANT USAGE, CREATE ON SCHEMA {} TO {}").format(sql.Identifier(self.schema), sql.Identifier(ROLE))
        )

    def as_learner(self) -> psycopg.Connection:
        """A connection of the checker's as the learner's role (to run the learner's SQL text with its rights)."""
        return psycopg.connect(
            host=str(Path(self.upstream).parent),
            dbname=self.dbname,
            user=ROLE,
            autocommit=True,
            options=f"-c search_path={self.schema}",
        )

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
        """End every backend of the learner's role (their open transactions roll back)."""
        self.owner.execute(
            "SELECT pg_catalog.pg_terminate_backend(pid, 5000) FROM pg_catalog.pg_stat_activity WHERE usename = %s",
            (ROLE,),
        )

    def die(self) -> None:
        """The process running the learner's code died: its connections end, and no new one is admitted."""
        self.dead = True
        self.kill_learner()

    def revive(self) -> None:
        """A new process: the relay admits connections again."""
        self.dead = False

    def conninfo(self, settings: tuple[tuple[str, str], ...] = ()) -> str:
        """What the learner's kernel connects with (through the relay in its working copy)."""
        options = " ".join(f"-c {name}={value}" for name, value in (("search_path", self.schema), *settings))
        return make_conninfo(
            host=str(self.socket_dir), port=PORT, dbname=self.dbname, user=ROLE, connect_timeout=5, options=options
        )

    # -- the relay ----------------------------------------------------------------------------------
    def serve(self, workdir: Path, uid: int | None) -> None:
        """Listen at <workdir>/.pg/.s.PGSQL.5432 for the learner's kernel."""
        self.socket_dir = workdir / SOCKET_DIR
        self.socket_dir.mkdir(exist_ok=True)
        self.socket_dir.chmod(0o755)
        path = self.socket_dir / f".s.PGSQL.{PORT}"
        path.unlink(missing_ok=True)
        self._uid = uid
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        path.chmod(0o777)
        self._listener.listen(16)
        threading.Thread(target=self._accept, args=(self._listener,), daemon=True, name="checker-db-relay").start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._admit, args=(client,), daemon=True).start()

    def _admit(self, client: socket.socket) -> None:
        try:
            why, packet = self._startup(client)
            if why:
                self.refused.append(why)
                client.sendall(_error_message(why))
                client.close()
                return
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.connect(self.upstream)
            server.sendall(packet)
        except OSError:
            client.close()
            return
        threading.Thread(target=_pump, args=(server, client), daemon=True).start()
        _pump(client, server)

    def _startup(self, client: socket.socket) -> tuple[str, bytes]:
        """("", the startup packet to forward) for a connection that may reach the server, else (why, b"")."""
        if self._uid is not None:
            _, peer_uid, _ = struct.unpack("3i", client.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
            if peer_uid != self._uid:
                return f"a process of uid {peer_uid} is not the learner's kernel", b""
        while True:
            packet = _read_packet(client)
            if packet is None:
                return "the connection ended before its startup message", b""
            (code,) = struct.unpack("!i", packet[4:8])
            if code in (SSL_REQUEST, GSSENC_REQUEST):
                client.sendall(b"N")  # no encryption on a local socket; the client goes on in clear
                continue
            if code == CANCEL_REQUEST:
                return "", packet  # carries a backend's secret key: only that backend's own client knows it
            if code != PROTOCOL_3:
                return "only protocol 3.0 is spoken here", b""
            parts = packet[8:].split(b"\0")
            params = dict(zip(parts[0::2], parts[1::2], strict=False))
            if params.get(b"user") != ROLE.encode():
                return f"only the role {ROLE} may connect here", b""
            if params.get(b"replication"):
                return "no replication connections", b""
            if self.dead:
                return "the process that held this connection has died; a new one starts with the next call", b""
            return "", packet

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        with contextlib.suppress(psycopg.Error):
            self.kill_learner()
            self.owner.close()
        self.db.close()


def _read_packet(client: socket.socket) -> bytes | None:
    """One startup-phase message: Int32 length (itself included), then the rest."""
    head = _read_exactly(client, 4)
    if head is None:
        return None
    (length,) = struct.unpack("!i", head)
    if not 8 <= length <= MAX_STARTUP_BYTES:
        return None
    rest = _read_exactly(client, length - 4)
    return None if rest is None else head + rest


def _read_exactly(client: socket.socket, count: int) -> bytes | None:
    data = b""
    while len(data) < count:
        chunk = client.recv(count - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _error_message(why: str) -> bytes:
    """A PostgreSQL ErrorResponse, so psycopg says why it could not connect."""
    fields = b"SFATAL\0C28000\0M" + why.encode()[:500] + b"\0\0"
    return b"E" + struct.pack("!i", len(fields) + 4) + fields


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            target.sendall(chunk)
    except OSError:
        pass
    finally:
        for each in (source, target):
            with contextlib.suppress(OSError):
                each.shutdown(socket.SHUT_RDWR)
        source.close()
