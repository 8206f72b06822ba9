"""PostgreSQL for the outbox (notebook 13, lab 3): an embedded server by default, any server by URL.

The lesson's orders live in Aurora PostgreSQL (`aurora-mf-escritor`). `FOR UPDATE
SKIP LOCKED` and partial indexes are PostgreSQL's, so the workbook runs a real one:

- by default `start()` runs an embedded server from the `pgserver` package in a
  directory made for it (`mercadofresco-pg-*`, a fresh temporary directory in /dev/shm
  where it has room, else in the system's temporary directory), initialised fresh
  each time (about 0.5 s) and deleted by `close()`, when Python exits, or, if the
  process is killed (a kernel that stops answering), by a small watcher process;
- with MERCADOFRESCO_DATABASE_URL set (any `postgresql://` URL) it uses that server.

Either way the workbook works in a schema of its own (`mercadofresco` unless told
otherwise), dropped and created again by `start()`, so every run starts empty and
never touches another table. The embedded server is a throwaway: it runs with
`fsync` off (a power cut may lose it; atomic commits and row locks are unchanged).

As root, pgserver runs `useradd pgserver` once and adds read/traverse permission for
others to every parent of its data directory: that is why the directory is a
fresh temporary one and never a shared path. It then starts the server with
`subprocess.run(user="pgserver")`, which changes the user but keeps root's group:
`_own_group_only` makes it drop root's groups too (a narrow fix of pgserver 0.1.4).
"""

from __future__ import annotations

import atexit
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import psycopg
from psycopg import sql

from mercadofresco.errors import MercadoFrescoError
from mercadofresco.i18n import _
from mercadofresco.runtime import settings

DATABASE_URL_ENV = settings.DATABASE_URL
SCHEMES = ("postgresql", "postgres")
DEFAULT_SCHEMA = "mercadofresco"
SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
CONNECT_TIMEOUT_SECONDS = 5
# A throwaway server: durability off, locks and atomic commits as usual.
DATA_DIR_MB = 64  # room for one embedded server's files: 38 MB after initdb, then the WAL of a notebook's work
SHM_FREE_MB = 256  # /dev/shm is used when it has this much free (Docker's and Binder's 64 MB is too small)
EMBEDDED_SETTINGS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
# The watcher: blocks on a pipe from the process that started the server; when that process is gone (closed, or
# killed like a kernel that does not answer), the pipe ends, and the watcher stops the server and deletes its files.
WATCHER = """
import os, shutil, signal, sys
import psutil
sys.stdin.buffer.read()
pid_file = os.path.join(sys.argv[1], "data", "postmaster.pid")
try:
    pid = int(open(pid_file).readline())
    os.kill(pid, signal.SIGINT)  # PostgreSQL's fast shutdown
    psutil.Process(pid).wait(timeout=10)
except (OSError, ValueError, psutil.Error):
    pass
shutil.rmtree(sys.argv[1], ignore_errors=True)
"""


class DatabaseError(MercadoFrescoError):
    """The database could not be reached or started."""


class DatabaseConfigError(DatabaseError, ValueError):
    """MERCADOFRESCO_DATABASE_URL (or the url given) is not a PostgreSQL server we can reach."""


class Database:
    """One PostgreSQL server (embedded or by URL) and the schema this run works in."""

    def __init__(
        self, url: str, schema: str, server: Any = None, directory: Path | None = None, watcher: Any = None
    ) -> None:
        if not SCHEMA_NAME.match(schema):
            said = _("{name} must be a lowercase SQL name like {example}; got {value}")
            raise DatabaseConfigError(said.format(name="schema", example=repr(DEFAULT_SCHEMA), value=repr(schema)))
        self.url = url
        self.schema = schema
        self.embedded = server is not None
        self._server = server
        self._directory = directory
        self._watcher = watcher

    def connect(self, autocommit: bool = False) -> psycopg.Connection:
        """A new psycopg connection to this database, its search_path set to the run's schema."""
        try:
            return psycopg.connect(
                self.url,
                autocommit=autocommit,
                connect_timeout=CONNECT_TIMEOUT_SECONDS,
                options=f"-c search_path={self.schema}",
            )
        except psycopg.Error as exc:
            raise DatabaseError(_("cannot connect to {where}: {error}").format(where=_where(self), error=exc)) from exc

    @property
    def directory(self) -> Path | None:
        """The embedded server's folder (its data files); None for a server reached by URL."""
        return self._directory

    def server_pid(self) -> int | None:
        """The embedded server's main process (postmaster); None for a server reached by URL."""
        return None if self._server is None else self._server.get_pid()

    def reset(self) -> None:
        """Drop the run's schema with everything in it, and create it empty."""
        with psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS) as conn:
            name = sql.Identifier(self.schema)
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(name))
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(name))

    def close(self) -> None:
        """Stop the embedded server and delete its directory (a URL's server is left alone)."""
        if self._server is not None:
            self._server.cleanup()
            self._server = None
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None
        if self._watcher is not None:
            self._watcher.stdin.close()  # nothing left to watch: it finds no server and exits
            self._watcher.wait(timeout=30)
            self._watcher = None

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Database({_where(self)}, schema={self.schema!r})"


def _where(db: Database) -> str:
    return _("the embedded PostgreSQL server") if db.embedded else f"{DATABASE_URL_ENV}={_safe(db.url)}"


def _safe(url: str) -> str:
    """The URL without its password, for messages."""
    parsed = urlparse(url)
    if parsed.password:
        return url.replace(f":{parsed.password}@", ":***@", 1)
    return url


def check_url(url: str) -> None:
    """Raise DatabaseConfigError, naming MERCADOFRESCO_DATABASE_URL, unless `url` looks like postgresql://…"""
    parsed = urlparse(url)
    if parsed.scheme not in SCHEMES or not (parsed.hostname or "host=" in parsed.query):
        said = _(
            "{variable} must be a PostgreSQL URL such as {example}; got {value}. Unset it to use the embedded server."
        )
        raise DatabaseConfigError(
            said.format(
                variable=DATABASE_URL_ENV,
                example="postgresql://user:password@host:5432/dbname",
                value=repr(_safe(url)),
            )
        )


def start(url: str | None = None, schema: str = DEFAULT_SCHEMA) -> Database:
    """A database to work in, with an empty `schema`: `url`, else MERCADOFRESCO_DATABASE_URL, else embedded."""
    url = url or settings.read().database_url
    db = Database(url, schema) if url else _start_embedded(schema)
    try:
        if url:
            check_url(url)
        db.reset()
    except psycopg.Error as exc:
        db.close()
        if db.embedded:
            raise DatabaseError(_("the embedded PostgreSQL server does not answer: {error}").format(error=exc)) from exc
        said = _("cannot reach the PostgreSQL server of {variable}={url}: {error}")
        fix = _("Fix or unset {variable} (unset, the workbook starts an embedded server).")
        raise DatabaseConfigError(
            said.format(variable=DATABASE_URL_ENV, url=repr(_safe(url or "")), error=exc).strip()
            + " "
            + fix.format(variable=DATABASE_URL_ENV)
        ) from exc
    except BaseException:
        db.close()
        raise
    return db


def start_in_background(url: str | None = None, schema: str = DEFAULT_SCHEMA) -> Future[Database]:
    """`start` in a thread of its own: initdb (mostly waiting on a subprocess) overlaps whatever runs meanwhile.

    Call `.result()` on the returned future to get the Database (or the error `start` raised).
    """
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mercadofresco-db")
    future = executor.submit(start, url, schema)
    executor.shutdown(wait=False)  # the thread ends with `start`
    return future


def _scratch_dir() -> str | None:
    """Memory (/dev/shm) where it has room for a few servers, else None: the system's temporary directory.

    initdb and the final delete are 4-20 times faster in memory, but Docker and Binder give /dev/shm 64 MB:
    one server's files start at 38 MB and grow, and a notebook and a lab may each run one.
    """
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK | os.X_OK)):
        return None
    return str(shm) if shutil.disk_usage(shm).free >= SHM_FREE_MB << 20 else None


def _check_room(folder: str) -> None:
    """Refuse, with what it needs, a folder too full for a server's files (initdb would fail halfway)."""
    free = shutil.disk_usage(folder).free >> 20
    if free < DATA_DIR_MB:
        said = _(
            "the embedded PostgreSQL server needs about {needed} MB free for its files, and {folder} has {free} MB. "
            "Free some space there, point {tmpdir} at a folder with room, or set {variable} to a server of your own."
        )
        raise DatabaseError(
            said.format(needed=DATA_DIR_MB, folder=folder, free=free, tmpdir="TMPDIR", variable=DATABASE_URL_ENV)
        )


def _own_group_only(command: Any) -> Any:
    """pgserver's `command(args, pgdata, user=...)`, run in that user's own group with no other group.

    As root, pgserver starts initdb and the server with `subprocess.run(user="pgserver")`: that changes the
    uid only, so the server ran in group root (gid 0), and SQL that reached the OS (COPY ... PROGRAM, had a
    role ever got there) would have had root's group. Measured with pgserver 0.1.4.
    """
    if getattr(command, "own_group_only", False):
        return command

    def run(args: list[str], pgdata: Path | None = None, **kwargs: Any) -> str:
        if kwargs.get("user"):
            kwargs.setdefault("group", pwd.getpwnam(kwargs["user"]).pw_gid)
            kwargs.setdefault("extra_groups", [])
        return command(args, pgdata=pgdata, **kwargs)

    run.own_group_only = True  # type: ignore[attr-defined]
    return run


def _start_embedded(schema: str) -> Database:
    """Initialise and start a pgserver instance in a fresh temporary directory."""
    with warnings.catch_warnings():
        # pgserver reads the runtime directory at import; platformdirs warns when XDG_RUNTIME_DIR is unusable.
        warnings.simplefilter("ignore", UserWarning)
        import pgserver  # imported here: a notebook without the outbox never pays for it
        from pgserver import postgres_server

    if os.geteuid() == 0:  # the server runs as pgserver's own user: in its own group too (see _own_group_only)
        postgres_server.initdb = _own_group_only(postgres_server.initdb)
        postgres_server.pg_ctl = _own_group_only(postgres_server.pg_ctl)

    scratch = _scratch_dir()
    _check_room(scratch or tempfile.gettempdir())
    directory = Path(tempfile.mkdtemp(prefix="mercadofresco-pg-", dir=scratch))
    server = None
    try:
        server = pgserver.get_server(directory / "data", cleanup_mode="delete")
        watcher = subprocess.Popen(
            [sys.executable, "-c", WATCHER, str(directory)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C or a kernel interrupt aimed at us does not reach it
        )
        db = Database(server.get_uri(), schema, server, directory, watcher)
        with psycopg.connect(db.url, autocommit=True) as conn:
            for name, value in EMBEDDED_SETTINGS.items():
                conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), sql.Literal(value)))
            conn.execute("SELECT pg_reload_conf()")
    except Exception as exc:
        if server is not None:
            server.cleanup()
        shutil.rmtree(directory, ignore_errors=True)
        said = _("could not start the embedded PostgreSQL server in {folder}: {error}")
        raise DatabaseError(said.format(folder=directory, error=exc)) from exc
    atexit.register(db.close)  # runs before pgserver's own handler: stop, then delete the directory
    return db
