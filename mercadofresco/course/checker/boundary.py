"""The wire between the grader's checker and a learner's kernel: JSON lines over one Unix socket, calls both ways.

The checker (`course.checker`, a process of the grader's) owns the world; the
learner's kernel (`course.checker.learner_side`) only answers calls. Each message is
one JSON object on one line:

    {"lane": "c1", "id": 7, "call": "learner", "args": [...]}      a call
    {"lane": "c1", "id": 7, "result": ...}                         its answer
    {"lane": "c1", "id": 7, "error": {"type": ..., "message": ...}}  or the exception it raised

A lane is one thread of the side that opened it. Inside a lane calls nest like
a stack: the checker calls the learner's handler, the handler calls the
gateway, the gateway's crash hook calls the handler again. Lanes run side by
side (the poller's consumers are threads): a message goes to the thread that
owns its lane, and a call on a lane nobody owns yet gets a thread from a pool
until that call is answered. At most MAX_LANES of the other side's lanes are
served at once: one more, and the connection closes.

Values cross as plain data only (`encode`, `decode`): JSON, plus tagged
Decimals, datetimes, sets, tuples and dicts with other keys. Anything else is
the side's business (`Codec.encode_object`, `Codec.decode_object`): a proxy
reference, a function the other side may call back. An answer that breaks
these rules, or comes out of turn, fails the call, never the other way round.
Anything the reader cannot read (a line too long, nested too deep) closes the
connection at once, and every call waiting on it, or made after, fails with the
reason. An exception handed across carries a token of the side that raised it
("c7", "k7"), so neither side takes the other's exception for one of its own.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import itertools
import json
import queue
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

MAX_LINE = 16 << 20  # one message; the largest answer of a lab (a timeline of 12 orders) is ~40 KB
MAX_LANES = 32  # the other side's lanes served at once (lab 1's poller runs 4 consumers; a lab needs at most ~10)
CLOSED = object()  # put in every lane's queue when the other side is gone


class Tag:
    """The tags of the objects the two codecs send, each spelled here once and read on both sides of the wire."""

    REF = "$ref"  # one of the checker's objects, to the kernel as a proxy of its kind: {"$ref": 3, "kind": "clock"}
    FN = "$fn"  # one of the kernel's functions (a handler the checks call back), or one of the checker's
    WAITER = "$waiter"  # one of the kernel's waiters (an object with wait()), called back across the wire
    ENUM = "$enum"  # one of the package's enums (lab 1's gateway.Fault)
    OBJ = "$obj"  # one of the package's data classes (a Charge), rebuilt from its fields
    OPAQUE = "$opaque"  # anything else of the kernel's: its type's name, nothing more
    WORLD = "$world"  # the checker's world, described so the kernel builds clients that reach it
    AWS = "$aws"  # a boto3 client of the checker's moto
    PG = "$pg"  # a connection to lab 3's database, through the checker's relay


class BoundaryError(BaseException):
    """The other side is gone, did not answer in time, or answered with something that is not an answer.

    A BaseException, as the poller's ConsumerCrash is: code that catches Exception (a check's model of a
    handler error, the learner's own handler) must not take a dead or silent kernel for an answer.
    """


class LaneLimitError(Exception):
    """The other side opened more lanes at once than MAX_LANES: the reader ends the connection."""


class RemoteError(Exception):
    """The other side's code raised; `type_name` and `message` say what, as it reported it."""

    def __init__(self, type_name: str, message: str, error: dict) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name, self.message, self.error = type_name, message, error


class Codec:
    """How one side turns its own objects into references and back (plain data needs none)."""

    def encode_object(self, value: Any) -> dict:
        raise TypeError(f"a {type(value).__name__} object cannot cross the boundary")

    def decode_object(self, tagged: dict) -> Any:
        raise BoundaryError(f"unknown value {sorted(tagged)[:3]}")


def encode(value: Any, codec: Codec, depth: int = 0) -> Any:
    """`value` as JSON-ready data; objects that are not plain data go through `codec`."""
    if depth > 40:
        raise TypeError("the value is nested too deep")
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if kind is Decimal:
        return {"$decimal": str(value)}
    if kind is dt.datetime:
        return {"$datetime": value.isoformat()}
    if kind is dt.date:
        return {"$date": value.isoformat()}
    if kind is dt.timedelta:
        return {"$timedelta": value.total_seconds()}
    if kind is bytes:
        return {"$bytes": base64.b64encode(value).decode()}
    if kind in (list, tuple, set, frozenset):
        items = [encode(item, codec, depth + 1) for item in value]
        return items if kind is list else {"$" + ("tuple" if kind is tuple else "set"): items}
    if kind is dict:
        if all(type(key) is str and not key.startswith("$") for key in value):
            return {key: encode(item, codec, depth + 1) for key, item in value.items()}
        return {"$dict": [[encode(k, codec, depth + 1), encode(v, codec, depth + 1)] for k, v in value.items()]}
    return codec.encode_object(value)


def decode(data: Any, codec: Codec, depth: int = 0) -> Any:
    """The value `encode` made; anything it could not have made raises BoundaryError."""
    if depth > 40:
        raise BoundaryError("the value is nested too deep")
    if data is None or type(data) in (bool, int, float, str):
        return data
    if type(data) is list:
        return [decode(item, codec, depth + 1) for item in data]
    if type(data) is not dict:
        raise BoundaryError(f"not plain data: {type(data).__name__}")
    tags = [key for key in data if key.startswith("$")]
    if not tags:
        return {key: decode(item, codec, depth + 1) for key, item in data.items()}
    try:
        return _decode_tagged(data, tags[0], codec, depth)
    except BoundaryError:
        raise
    except (TypeError, ValueError, ArithmeticError) as exc:
        raise BoundaryError(f"a malformed {tags[0]} value ({type(exc).__name__})") from None


def _decode_tagged(data: dict, tag: str, codec: Codec, depth: int) -> Any:
    value = data[tag]
    if tag == "$decimal":
        return Decimal(str(value))
    if tag == "$datetime":
        return dt.datetime.fromisoformat(value)
    if tag == "$date":
        return dt.date.fromisoformat(value)
    if tag == "$timedelta":
        return dt.timedelta(seconds=float(value))
    if tag == "$bytes":
        return base64.b64decode(value, validate=True)
    if tag in ("$tuple", "$set"):
        items = [decode(item, codec, depth + 1) for item in _list(value)]
        return tuple(items) if tag == "$tuple" else set(items)
    if tag == "$dict":
        return {decode(k, codec, depth + 1): decode(v, codec, depth + 1) for k, v in _list(value)}
    return codec.decode_object(data)


def _list(value: Any) -> list:
    if type(value) is not list:
        raise BoundaryError("expected a list")
    return value


class Boundary:
    """One side of the wire: `call` the other side; serve its calls with `handle(name, args)`."""

    def __init__(
        self,
        sock: socket.socket,
        handle: Callable[[str, list], Any],
        codec: Codec,
        side: str,
        timeout_seconds: float = 60.0,
        main_lane: str | None = None,
        peer: str = "the other side",
    ) -> None:
        self.codec, self.side, self.timeout_seconds, self.peer = codec, side, timeout_seconds, peer
        self.closed = ""  # why the other side is gone; "" while it is there
        self.refused = ""  # why this side hung up on the other (what it sent), "" if it did not
        self.out_of_turn = 0  # answers nobody was waiting for (dropped)
        self._sock, self._handle = sock, handle
        self._reader = sock.makefile("rb")
        self._send_lock = threading.Lock()
        self._lanes: dict[str, queue.Queue] = {}
        self._lanes_lock = threading.Lock()
        self._mine = threading.local()
        self._ids = itertools.count(1)
        self._lane_numbers = itertools.count(1)
        self._thrown: dict[str, dict[str, BaseException]] = {}  # exceptions we raised into a lane, by token
        self._pool = ThreadPoolExecutor(MAX_LANES, thread_name_prefix=f"boundary-{side}-lane")
        if main_lane is not None:  # served by the thread that calls `serve_lane` (an interrupt reaches it)
            self._lanes[main_lane] = queue.Queue()
        threading.Thread(target=self._read, daemon=True, name=f"boundary-{side}").start()

    # -- calling -------------------------------------------------------------------
    def call(self, name: str, *args: Any) -> Any:
        """Call `name` on the other side and wait for its answer, serving its calls meanwhile."""
        if self.closed:
            raise BoundaryError(self.closed)
        lane = self._my_lane()
        number = next(self._ids)
        self._send({"lane": lane, "id": number, "call": name, "args": encode(list(args), self.codec)})
        return self._wait(lane, number)

    def current_lane(self) -> str | None:
        """The lane this thread is on, if it has one."""
        return getattr(self._mine, "lane", None)

    def close(self, reason: str = "closed by this side") -> None:
        """Hang up: every call still waiting on either side fails (with `reason` on this side)."""
        self.closed = self.closed or reason
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()

    def _my_lane(self) -> str:
        lane = getattr(self._mine, "lane", None)
        if lane is None:
            lane = self._mine.lane = f"{self.side}{next(self._lane_numbers)}"
            with self._lanes_lock:
                self._lanes[lane] = queue.Queue()
        return lane

    def _wait(self, lane: str, number: int) -> Any:
        inbox = self._lanes[lane]
        deadline = time.monotonic() + self.timeout_seconds  # silence: no answer, and no call of the other side's
        while True:
            try:
                message = inbox.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise BoundaryError(f"no answer within {self.timeout_seconds:g} s") from None
            if message is CLOSED:
                inbox.put(CLOSED)  # for the calls further down this lane's stack, which wait next
                raise BoundaryError(self.closed or "the other side is gone")
            if "call" in message:
                self._serve(lane, message)
                deadline = time.monotonic() + self.timeout_seconds  # the other side is at work on this call
            elif message.get("id") != number:
                self.out_of_turn += 1  # an answer to a call that is not the one waiting: dropped, still silence
            elif "error" in message:
                raise self._error(lane, message["error"])
            elif "result" in message:
                return decode(message["result"], self.codec)
            else:
                raise BoundaryError("an answer with neither a result nor an error")

    def _error(self, lane: str, error: Any) -> BaseException:
        if type(error) is not dict:
            return BoundaryError("a malformed error")
        token = error.get("token")
        thrown = self._thrown.get(lane, {})
        if type(token) is str and token in thrown:  # our own exception, come back through the other side's code
            return thrown.pop(token)
        return RemoteError(str(error.get("type", "Error"))[:80], str(error.get("message", ""))[:2000], error)

    # -- serving ---------------------------------------------------------------------
    def _serve(self, lane: str, message: dict) -> None:
        number = message.get("id")
        try:
            name, args = message["call"], decode(message.get("args", []), self.codec)
            if type(name) is not str or type(args) is not list:
                raise BoundaryError("a malformed call")
            result = self._handle(name, args)
            reply = {"lane": lane, "id": number, "result": encode(result, self.codec)}
        except BaseException as exc:  # handed to the caller, never lost; a crash hook's ConsumerCrash included
            reply = {"lane": lane, "id": number, "error": self.describe(lane, exc)}
        self._send(reply)

    def describe(self, lane: str, exc: BaseException) -> dict:
        """What the other side learns of an exception raised here: its class, text, plain attributes, a token."""
        token = getattr(exc, "boundary_token", None)
        if getattr(exc, "boundary_lane", None) != lane or type(token) is not str:
            token = f"{self.side}{next(self._ids)}"  # ours: the other side's tokens start with its own letter
            self._thrown.setdefault(lane, {})[token] = exc
        attributes = {}
        for key, value in vars(exc).items() if hasattr(exc, "__dict__") else ():
            if not key.startswith("boundary_") and (value is None or type(value) in (bool, int, float, str)):
                attributes[key] = value
        kind = type(exc)
        return {
            "type": kind.__qualname__,
            "module": kind.__module__,
            "message": str(exc)[:2000],
            "attributes": attributes,
            "token": token,
        }

    def serve_lane(self, lane: str, stop: threading.Event) -> None:
        """Serve the calls of `lane` in this thread until `stop` is set or the other side is gone.

        Meant for a process's main thread: an interrupt (SIGINT) raised while it waits for the next call is
        ignored, and one raised inside a call ends that call with KeyboardInterrupt, as in a notebook cell.
        """
        self._mine.lane = lane
        inbox = self._lanes[lane]
        while not stop.is_set():
            try:
                message = inbox.get(timeout=0.5)
            except queue.Empty:
                continue
            except KeyboardInterrupt:
                continue
            if not self._take(lane, message):
                return

    def _take(self, lane: str, message: Any) -> bool:
        """Serve a call, count an answer nobody waits for; False once the other side is gone."""
        if message is CLOSED:
            return False
        if "call" in message:
            self._serve(lane, message)
        else:
            self.out_of_turn += 1
        return True

    def _lane_worker(self, lane: str) -> None:
        """Serve a lane the other side opened, in a thread of the pool, until its calls are done; then forget it.

        Calls nested inside a call are served further down this thread's stack (`_wait`); a later call on the
        lane finds no inbox and is handed to the pool again.
        """
        self._mine.lane = lane
        inbox = self._lanes[lane]
        try:
            while True:
                with self._lanes_lock:  # the reader puts under this lock: nothing arrives while we look
                    if inbox.empty():
                        del self._lanes[lane]
                        return
                    message = inbox.get_nowait()
                if not self._take(lane, message):
                    return
        finally:
            self._mine.lane = None

    # -- the wire ----------------------------------------------------------------------
    def _send(self, message: dict) -> None:
        data = json.dumps(message, separators=(",", ":"), allow_nan=False).encode() + b"\n"
        if len(data) > MAX_LINE:
            raise BoundaryError(f"a message of {len(data):,} bytes is over the limit ({MAX_LINE:,})")
        with self._send_lock:
            try:
                self._sock.sendall(data)
            except OSError as exc:
                raise BoundaryError(f"the other side is gone ({exc.strerror or exc})") from None

    def _read(self) -> None:
        """The reader thread: route every message; anything it cannot read ends the connection, with why."""
        try:
            while not self.closed:
                line = self._reader.readline(MAX_LINE + 1)
                if not line:
                    self.closed = self.closed or f"{self.peer} closed the connection"
                elif len(line) > MAX_LINE:
                    self._refuse(f"{self.peer} sent a message of more than {MAX_LINE:,} bytes (the limit)")
                else:
                    self._route(line)
        except OSError as exc:
            self.closed = self.closed or f"the connection broke ({type(exc).__name__})"
        except LaneLimitError:
            self._refuse(f"{self.peer} opened more than {MAX_LANES} lanes at once (the limit)")
        except Exception as exc:  # RecursionError (a reply nested too deep), MemoryError's kin: never a dead reader
            self._refuse(f"{self.peer} sent a message that cannot be read ({type(exc).__name__})")
        finally:
            self.closed = self.closed or "the connection ended"
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)  # the other side learns at once, too
            with self._lanes_lock:
                for inbox in self._lanes.values():
                    inbox.put(CLOSED)

    def _refuse(self, why: str) -> None:
        self.refused = self.refused or why
        self.closed = self.closed or why

    def _route(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:  # not JSON: dropped (JSON nested too deep raises RecursionError: the reader ends)
            self.out_of_turn += 1
            return
        lane = message.get("lane") if type(message) is dict else None
        if type(lane) is not str or len(lane) > 40 or type(message.get("id")) is not int:
            self.out_of_turn += 1
            return
        with self._lanes_lock:
            inbox = self._lanes.get(lane)
            if inbox is None:
                if "call" not in message or lane.startswith(self.side):
                    self.out_of_turn += 1  # an answer on a lane we never opened
                    return
                if sum(not name.startswith(self.side) for name in self._lanes) >= MAX_LANES:
                    raise LaneLimitError(lane)
                inbox = self._lanes[lane] = queue.Queue()
                self._pool.submit(self._lane_worker, lane)  # never waits: the pool has a thread for every lane
            inbox.put(message)
