"""A PostgreSQL session that can die at any statement boundary, as the process holding it would.

A relay is a Unix socket that stands in front of a PostgreSQL server: clients
connect to it (`conninfo`) as they would to the server, and it forwards every
byte both ways. It also counts the statements the clients send (a simple
query, or an extended query up to its Sync). Armed with `die_at(n)`, the
client that tries to send statement n + 1 finds its connection gone: the relay
ends every session it carries, so the server rolls back whatever transaction
was open, exactly as it does when a process dies; until `revive()` it admits
nobody. So "the process died after the first INSERT" is `die_at(1)` around a
call that runs `BEGIN`-less INSERTs, and "before COMMIT" is one statement
before the COMMIT.

`admit(client, params)` may refuse a connection by its startup parameters
(user, database) or its peer (a caller may admit one process's user only,
as one role); a cancel request, which names no user, is admitted or not with
`params` None. `on_death()` runs when the relay kills its sessions. At most
`sessions` connections are relayed at once (one more is closed at once), and a
client has STARTUP_SECONDS to say who it is. PostgreSQL's wire protocol:
https://www.postgresql.org/docs/current/protocol-flow.html
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Callable
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from mercadofresco.i18n import _

PORT = 5432
PROTOCOL_3 = 196608
SSL_REQUEST, GSSENC_REQUEST, CANCEL_REQUEST = 80877103, 80877104, 80877102
MAX_STARTUP_BYTES = 10_000
MAX_REFUSALS_KEPT = 100  # why connections were turned away, the first ones
STARTUP_SECONDS = 5.0  # for a client to send its startup message; one that says nothing is closed


class Relay:
    """A socket in `folder` that relays PostgreSQL sessions to the server at `url`, and can end them all."""

    def __init__(
        self,
        url: str,
        folder: Path,
        admit: Callable[[socket.socket, dict[str, str] | None], str] | None = None,
        on_death: Callable[[], None] | None = None,
        sessions: int = 64,
    ) -> None:
        params = conninfo_to_dict(url)
        self.params = {key: params[key] for key in ("dbname", "user") if key in params}
        self.upstream = str(Path(params.get("host", "/tmp")) / f".s.PGSQL.{params.get('port', PORT)}")
        self.folder = folder
        self.admit = admit or (lambda client, startup: "")
        self.on_death = on_death or (lambda: None)
        self.statements = 0  # sent by the clients since the relay was armed
        self.limit: int | None = None
        self.dead = False
        self.deaths = 0
        self.refused: list[str] = []  # why a connection was turned away
        self._open = threading.BoundedSemaphore(sessions)  # a slot for each connection relayed (or starting)
        self.most_sessions = sessions
        self._sessions: set[socket.socket] = set()
        self._lock = threading.Lock()
        folder.mkdir(exist_ok=True)
        path = folder / f".s.PGSQL.{PORT}"
        path.unlink(missing_ok=True)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        path.chmod(0o777)  # who may connect is `admit`'s to say
        self._listener.listen(16)
        threading.Thread(target=self._accept, args=(self._listener,), daemon=True, name="database-relay").start()

    def conninfo(self, **params: str | int) -> str:
        """What a client connects with: the server's database and user unless `params` say otherwise."""
        return make_conninfo(**(self.params | {"host": str(self.folder), "port": PORT} | params))

    def die_at(self, statements: int | None) -> None:
        """End every session when a client tries to send statement `statements` + 1 (None: never)."""
        with self._lock:
            self.statements, self.limit = 0, statements

    def die(self) -> None:
        """End every session now (`on_death` first, so it is done when a client hears), and admit nobody until
        `revive`."""
        with self._lock:
            self.dead, self.limit = True, None
            self.deaths += 1
            sessions, self._sessions = list(self._sessions), set()
        self.on_death()
        for each in sessions:
            with contextlib.suppress(OSError):
                each.shutdown(socket.SHUT_RDWR)

    def revive(self) -> None:
        with self._lock:
            self.dead = False

    def close(self) -> None:
        self._listener.close()
        self.die()

    # -- the sessions ----------------------------------------------------------------------------
    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _address = listener.accept()
            except OSError:
                return  # closed
            if not self._open.acquire(blocking=False):  # a thread each: never more than `sessions` of them
                self._refuse(f"more than {self.most_sessions} connections at once")
                client.close()
                continue
            threading.Thread(target=self._session, args=(client,), daemon=True).start()

    def _session(self, client: socket.socket) -> None:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            client.settimeout(STARTUP_SECONDS)
            why, startup = self._startup(client)
            client.settimeout(None)
            if not why and self.dead:
                why = _("the process that held this connection has died; a new one starts with the next call")
            if why:
                self._refuse(why)
                client.sendall(_error_message(why))
                return
            server.connect(self.upstream)
            server.sendall(startup)
            with self._lock:
                self._sessions |= {client, server}
            threading.Thread(target=_copy, args=(server, client), daemon=True).start()
            self._forward(client, server)
        except OSError:
            pass
        finally:
            for each in (client, server):
                with contextlib.suppress(OSError):
                    each.shutdown(socket.SHUT_RDWR)
                each.close()
            with self._lock:
                self._sessions -= {client, server}
            self._open.release()

    def _refuse(self, why: str) -> None:
        if len(self.refused) < MAX_REFUSALS_KEPT:
            self.refused.append(why)

    def _startup(self, client: socket.socket) -> tuple[str, bytes]:
        """(why it may not connect, or "") and the startup packet to forward."""
        while True:
            packet = _read_packet(client)
            if packet is None:
                return "the connection ended before its startup message", b""
            (code,) = struct.unpack("!i", packet[4:8])
            if code in (SSL_REQUEST, GSSENC_REQUEST):
                client.sendall(b"N")  # no encryption on a local socket; the client goes on in clear
                continue
            if code == CANCEL_REQUEST:  # carries a backend's secret key: only that backend's own client knows it
                return self.admit(client, None), packet
            if code != PROTOCOL_3:
                return "only protocol 3.0 is spoken here", b""
            parts = packet[8:].split(b"\0")
            startup = {
                key.decode(errors="replace"): value.decode(errors="replace")
                for key, value in zip(parts[0::2], parts[1::2], strict=False)
                if key
            }
            return self.admit(client, startup), packet

    def _forward(self, client: socket.socket, server: socket.socket) -> None:
        """Client to server, a message at a time, counting statements and dying where armed."""
        buffer, in_statement = b"", False
        while chunk := client.recv(65536):
            buffer += chunk
            while len(buffer) >= 5:
                (length,) = struct.unpack("!i", buffer[1:5])
                if len(buffer) < 1 + length:
                    break
                kind, message, buffer = buffer[:1], buffer[: 1 + length], buffer[1 + length :]
                if kind != b"X" and not in_statement and self._dies_here():
                    self.die()
                    return
                in_statement = kind not in (b"Q", b"S", b"X")
                if kind in (b"Q", b"S"):
                    with self._lock:
                        self.statements += 1
                server.sendall(message)

    def _dies_here(self) -> bool:
        with self._lock:
            return self.dead or (self.limit is not None and self.statements >= self.limit)


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
    """A PostgreSQL ErrorResponse, so the client says why it could not connect."""
    fields = b"SFATAL\0C28000\0M" + why.encode()[:500] + b"\0\0"
    return b"E" + struct.pack("!i", len(fields) + 4) + fields


def _copy(source: socket.socket, target: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while chunk := source.recv(65536):
            target.sendall(chunk)
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_RDWR)
