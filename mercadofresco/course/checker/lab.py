"""The trusted side of grading: a world the checker owns, and the hidden checks run against it.

The grader's own process (the nbval runner, the grader's user) is the checker.
After nbval has run a learner's cells, it opens a Unix socket in the learner's
working copy, asks the kernel to connect (`course.checker.learner_side.serve`) and runs
the lab's hidden checks (`solutions/checks/labN.py`, plain functions an
instructor can read) one by one. Everything a verdict is read from lives here:
the virtual clock, moto's backends (started in this process), the payment
gateway and its ledger, the Lambda poller. The kernel reaches them only as a
consumer would: its boto3 requests arrive here as HTTP requests for moto
(`Lab.serve_aws`), and the clock, the gateway client, the Lambda context and
the crash hook are proxies whose allowed methods are listed in `EXPOSED`.

A check passes when its own assertions hold on this state and on the values
the learner's functions returned, judged as data. Nothing the kernel says
about a check counts; a kernel that dies, hangs or answers out of turn fails
the call it was in, and every check after it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import enum
import importlib.util
import json
import os
import socket
import struct
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from mercadofresco.course.checker import folder, learner_side
from mercadofresco.course.checker.boundary import Boundary, BoundaryError, Codec, RemoteError, Tag, encode
from mercadofresco.course.protocol import CheckRow, learner_name, shown
from mercadofresco.runtime import settings

SIDE = "c"
CONNECT_SECONDS = 15.0  # the kernel's answer to the grader's serve cell (imports included)
SERVE_CELL_ENDED = (
    "the kernel did not connect: it ended the grader's last cell without running it"
    " (does a cell of yours change how the kernel compiles or runs code?)"
)
CONNECT_POLL_SECONDS = 0.2  # how often the wait for that answer looks whether the serve cell has ended
FORWARDED_DOMAINS = ("checker.invalid", "amazonaws.com")  # https://<service>.<region>.<domain>/, nothing else
REASON_CHARS = 200
# The kernel's word for a learner function whose parameters cannot take a check's arguments (learner_side._takes)
ARGUMENTS_DIFFER = ("mercadofresco.course.checker.learner_side", "ArgumentsDiffer")
STORY_LINES, STORY_CHARS = 30, 160  # of a counterexample's story in a report
# What the kernel may ask of the checker during one check: the solutions' most is 1,502 calls (lab 1's
# mechanism_visibility, 7 December). A count, not a time: a loaded grader must not cut a slow correct check off
# (120 s of wall time once did, in CI). Past it the kernel is interrupted; past it and GRACE_CALLS, hung up on.
CALLS_PER_CHECK, GRACE_CALLS = 100_000, 1_000
MOTO_ACCOUNT = "123456789012"  # moto's account: the queue URLs it writes
AWS_MB = 16  # what the learner's code may send to the checker's moto in all (the solutions: 0.08-0.26 MB)
# What the kernel may call on each kind of the checker's objects (anything else is refused): its proxy's CALLS.
EXPOSED = {kind: proxy.CALLS for kind, proxy in learner_side.PROXIES.items()}


class Failed(AssertionError):
    """A check's property did not hold: why (one line), and the smallest world that shows it (`story`, lines)."""

    def __init__(self, why: str, story: list[str] | tuple[str, ...] = ()) -> None:
        super().__init__(why)
        self.story = list(story)


class ProcessDied(BaseException):
    """The process running the learner's code died here (a check's fault): no `except Exception` of theirs runs."""


class Callback:
    """One of the checker's functions, which the learner's code may call (lab 3's `prepare`)."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)


@dataclass(frozen=True)
class Link:
    """A PostgreSQL connection the learner's kernel opens to the checker's database, as the learner's role."""

    number: int
    settings: tuple[tuple[str, str], ...] = ()  # e.g. (("lock_timeout", "200ms"),)


@dataclass(frozen=True)
class Check:
    """One hidden check: its id (the function is `check_<id>`), what the learner is told when it fails, its weight."""

    check: str
    hint: str
    points: int = 1


class KernelFunction:
    """One of the learner's functions (or one a learner function returned): calling it is a call to the kernel."""

    def __init__(self, lab: Lab, number: int) -> None:
        self.lab, self.number = lab, number

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.lab.wire.call("call", self.number, list(args), kwargs)


class KernelWaiter:
    """A waiter of the kernel's (a task of the learner's own poller): the checker's gateway waits in its time."""

    def __init__(self, lab: Lab, number: int) -> None:
        self.lab, self.number = lab, number

    def now(self) -> dt.datetime:
        instant = self.lab.wire.call("waiter", self.number, "now", [])
        if type(instant) is not dt.datetime or instant.tzinfo is None:
            raise AssertionError(f"a waiter of your code said the time is {type(instant).__name__}, not a datetime")
        return instant

    def wait(self, seconds: float) -> None:
        self.lab.wire.call("waiter", self.number, "wait", [seconds])


@dataclass(frozen=True)
class Opaque:
    """A value the kernel could not send as data (an object of the learner's own class): never a right answer."""

    type_name: str


class CheckerCodec(Codec):
    """The checker's side: its objects go out as references to proxies; the kernel's functions come in as calls."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.refs: dict[int, tuple[str, Any]] = {}

    def encode_object(self, value: Any) -> dict:
        if isinstance(value, enum.Enum) and type(value).__module__.startswith("mercadofresco."):
            return {Tag.ENUM: type(value).__qualname__, "module": type(value).__module__, "name": value.name}
        kind = self.lab.kind_of(value)
        if kind == "world":
            return {Tag.WORLD: self.lab.describe_world(value)}
        if kind == "aws":
            return {Tag.AWS: value.meta.service_model.service_name}
        if kind == "kernel_function":
            return {Tag.FN: value.number}
        if kind == "pg_link":
            return {Tag.PG: value.number, "conninfo": self.lab.database.conninfo(value.settings)}
        if kind is None and (_is_package_data(value) or type(value) in self.lab.rebuilt):  # rebuilt from its fields
            names = self.lab.rebuilt.get(type(value)) or [field.name for field in dataclasses.fields(value)]
            fields = {name: getattr(value, name) for name in names}  # a client goes as $aws, a clock as a proxy
            return {Tag.OBJ: type(value).__qualname__, "module": type(value).__module__, "fields": encode(fields, self)}
        if kind is None:
            raise TypeError(f"a {type(value).__name__} cannot be handed to the learner's code")
        number = next((n for n, (_, obj) in self.refs.items() if obj is value), len(self.refs) + 1)
        self.refs[number] = (kind, value)
        return {Tag.REF: number, "kind": kind, "attributes": encode(self.lab.attributes_of(kind, value), self)}

    def decode_object(self, tagged: dict) -> Any:
        if Tag.REF in tagged:
            ref = tagged[Tag.REF]
            if type(ref) is not int or ref not in self.refs:
                raise BoundaryError("a reference the checker never handed out")
            return self.refs[ref][1]
        for tag, kind in ((Tag.FN, KernelFunction), (Tag.WAITER, KernelWaiter)):
            if tag in tagged:
                if type(tagged[tag]) is not int:
                    raise BoundaryError("a malformed reference to the kernel's code")
                return kind(self.lab, tagged[tag])
        if Tag.ENUM in tagged:  # one of the package's enums the checks accept (lab 1's gateway.Fault)
            kind = self.lab.accepted.get(f"{tagged.get('module')}.{tagged['$enum']}")
            if kind is None or not issubclass(kind, enum.Enum) or tagged.get("name") not in kind.__members__:
                raise BoundaryError("a value of an enum the checker does not take")
            return kind[tagged["name"]]
        if Tag.OBJ in tagged:
            fields = self.lab.wire_decode(tagged.get("fields"))
            if type(fields) is not dict:
                raise BoundaryError("a malformed object")
            kind = self.lab.accepted.get(f"{tagged.get('module')}.{tagged['$obj']}")
            if kind is not None:  # one of the package's plain data classes the checks accept, rebuilt as itself
                try:
                    return kind(**fields)
                except (TypeError, ValueError) as exc:
                    raise BoundaryError(f"a {kind.__name__} that cannot be built ({type(exc).__name__})") from None
            return fields | {"__type__": str(tagged[Tag.OBJ])[:80]}
        if Tag.OPAQUE in tagged:
            return Opaque(str(tagged[Tag.OPAQUE])[:80])
        raise BoundaryError(f"unknown value {sorted(tagged)[:3]}")


class Lab:
    """What a hidden check works with: the learner's names across the boundary, and the checker's own world."""

    def __init__(
        self, services: tuple[str, ...] = ("sqs", "dynamodb"), workdir: Path | None = None, uid: int | None = None
    ) -> None:
        self.services = services
        self.workdir, self.uid = workdir, uid
        self.database: Any = None  # a lab_database.LabDatabase, for a lab that asks for one
        self.rebuilt: dict[type, tuple[str, ...]] = {}  # package classes the kernel rebuilds from these fields
        self.accepted: dict[str, type] = {}  # package data classes and enums rebuilt here from the kernel's data
        # Models the kernel's package asks this process to answer: the poller's two questions, and a lab's own.
        self.models: dict[str, Callable[..., Any]] = {
            "nothing_to_receive": self._nothing_to_receive,
            "queue_is_empty": self._queue_is_empty,
        }
        self.aws_hooks: dict[str, Callable[[dict, Callable], tuple[int, dict]]] = {}  # action -> model (serve_aws)
        self.before_aws: Callable[[str, str, Any], None] | None = None  # (service, action, request): a check's eye
        self._links = 0
        self.codec = CheckerCodec(self)
        self.wire: Boundary | None = None  # set by `connect`
        self.aws_calls: list[dict] = []  # every AWS request the kernel made, as the checker served it
        self.aws_bytes = 0  # what the kernel has sent to this process's moto in all (AWS_MB at most)
        self.stopped = ""  # why the checker stopped the learner's code (a limit of its own), "" while it has not
        self.region = settings.REGION  # the region of the kernel's clients (learner_side.aws_client)
        self._kinds: list[tuple[type, str]] = []
        self._session: Any = None
        self._clients: dict[str, Any] = {}
        self.interrupt: Callable[[], None] = lambda: None  # how to interrupt the kernel (set by the grader)
        # The calls the kernel may make during one check (run_checks): the wire's timeout counts silence only, and
        # a kernel that keeps calling (clock.now() in a loop) is never silent.
        self.call_budget: int | None = None
        self.calls_this_check = 0
        self._interrupted_at_budget = False

    # -- the checker's own world ------------------------------------------------------
    def reset_world(self) -> None:
        """Empty this process's moto: what an earlier check or the learner's code left is gone."""
        from moto.core.base_backend import BackendDict

        BackendDict.reset()

    def session(self) -> Any:
        from mercadofresco.runtime import endpoints
        from mercadofresco.runtime.settings import EndpointConfig

        if self._session is None:
            self._session = endpoints.make_session(EndpointConfig())
        return self._session

    def client(self, service: str) -> Any:
        """A boto3 client of this process's moto (the checker reads its own state with it)."""
        from mercadofresco.runtime import endpoints
        from mercadofresco.runtime.settings import EndpointConfig

        if service not in self._clients:
            self._clients[service] = endpoints.make_client(self.session(), EndpointConfig(), service)
        return self._clients[service]

    def start_database(self, schema: str = "lab3_grader") -> Any:
        """The checker's own PostgreSQL, which the kernel reaches through a socket in its working copy."""
        from mercadofresco.course.checker import lab_database

        self.database = lab_database.LabDatabase(schema)
        self.database.serve(self.workdir, self.uid)
        return self.database

    def link(self, **settings: str) -> Link:
        """A new connection for the learner's code (a new process's, after a death), with server `settings`."""
        self._links += 1
        return Link(self._links, tuple(sorted(settings.items())))

    # -- the kernel's names ------------------------------------------------------
    def value(self, name: str) -> Any:
        """The value the learner gave `name` (a function comes back as a `KernelFunction`)."""
        try:
            value = self.wire.call("value", name)
        except RemoteError as error:
            raise AssertionError(f"`{name}` could not be read ({learner_name(error.type_name)})") from None
        if isinstance(value, Opaque):  # an object of the learner's own class could claim to equal anything
            raise AssertionError(
                f"`{name}` is a {learner_name(value.type_name)} object, not plain data (text, numbers, lists)"
            )
        return value

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Call the learner's function `name` with `args` (plain data and the checker's own objects)."""
        return self.function(name)(*args, **kwargs)

    def function(self, name: str) -> Callable[..., Any]:
        """The learner's function `name`, to call many times (one read across the boundary)."""
        function = self.value(name)
        if not isinstance(function, KernelFunction):
            raise AssertionError(f"`{name}` is not a function")

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                result = function(*args, **kwargs)
            except RemoteError as error:
                if (error.error.get("module"), error.error.get("type")) != ARGUMENTS_DIFFER:
                    raise
                given = f"{len(args)} positional" + "".join(f", {key}=" for key in kwargs)
                raise AssertionError(
                    f"`{name}` cannot take the checks' arguments ({given}): its parameters differ from the lab's"
                    " cell (an earlier release's lab?): copy its def line from a fresh lab"
                ) from None
            if isinstance(result, Opaque):
                raise AssertionError(
                    f"what {name} returns is a {learner_name(result.type_name)} object, not plain data"
                )
            return result

        call.__name__ = name
        return call

    def expose(self, kind: str, *classes: type) -> None:
        """Let objects of `classes` reach the kernel as proxies of `kind` (one of EXPOSED)."""
        if kind not in EXPOSED:
            raise ValueError(f"kind must be one of {sorted(EXPOSED)}; got {kind!r}")
        self._kinds += [(cls, kind) for cls in classes]

    def rebuild(self, cls: type, *fields: str) -> None:
        """Let objects of the package's class `cls` reach the kernel as a copy made from `fields` (their clients
        and clocks still the checker's)."""
        self.rebuilt[cls] = fields

    def accept(self, *classes: type) -> None:
        """Let values of the package's `classes` (frozen dataclasses, enums) come in from the kernel as themselves."""
        for cls in classes:
            if not cls.__module__.startswith("mercadofresco.") or not (
                issubclass(cls, enum.Enum) or dataclasses.is_dataclass(cls)
            ):
                raise ValueError(f"only the package's data classes and enums are accepted; not {cls!r}")
            self.accepted[f"{cls.__module__}.{cls.__qualname__}"] = cls

    def answer(self, model: str, function: Callable[..., Any]) -> None:
        """Answer the kernel's package when its model `model` asks this process's moto (`endpoints.moto_elsewhere`)."""
        self.models[model] = function

    def _nothing_to_receive(self, queue_url: Any) -> bool:
        """A receive on `queue_url` would find nothing in this process's moto (the kernel's poller skips it)."""
        from mercadofresco.runtime import moto_speedups

        with contextlib.suppress(ValueError):
            return type(queue_url) is str and moto_speedups.nothing_to_receive(self.client("sqs"), queue_url)
        return False

    def _queue_is_empty(self, queue_url: Any) -> bool | None:
        """`queue_url` holds nothing at all in this process's moto; None when that is not certain."""
        from mercadofresco.runtime import moto_speedups

        with contextlib.suppress(ValueError):
            return moto_speedups.is_empty(self.client("sqs"), queue_url) if type(queue_url) is str else None
        return None

    def kind_of(self, value: Any) -> str | None:
        from mercadofresco import world

        if isinstance(value, world.World):
            return "world"
        if isinstance(value, KernelFunction):
            return "kernel_function"
        if isinstance(value, Link):
            return "pg_link"
        if isinstance(value, Callback):
            return "callback"
        if hasattr(value, "meta") and hasattr(getattr(value, "meta", None), "service_model"):
            return "aws"
        return next((kind for cls, kind in self._kinds if isinstance(value, cls)), None)

    def attributes_of(self, kind: str, value: Any) -> dict:
        """The plain attributes a proxy carries (read once, never written back)."""
        if kind == "clock":
            return {"start_at": value.start_at}
        if kind == "gateway_client":
            fields = ("read_timeout_seconds", "max_attempts", "send_idempotency_key")
            return {name: getattr(value, name) for name in fields}
        if kind == "gateway":
            return {"clock": value.clock}
        if kind == "invocation":
            return {"consumer": value.consumer, "aws_request_id": value.aws_request_id, "crashes": value.crashes}
        return {}

    def describe_world(self, aws: Any) -> dict:
        from dataclasses import asdict

        config = {key: value for key, value in asdict(aws.config).items() if "seconds" in key}  # the queues'
        config |= {"max_receive_count": aws.config.max_receive_count}
        plain = ("topic_arn", "alerts_topic_arn", "warehouse_queue_url", "table_name", "bus_name")
        return {
            "config": config,
            "orders": asdict(aws.orders),
            "fanout_queue_urls": dict(aws.fanout_queue_urls),
            "services": list(self.services),
        } | {key: getattr(aws, key) for key in plain}

    def wire_decode(self, data: Any) -> Any:
        from mercadofresco.course.checker.boundary import decode

        return decode(data, self.codec)

    # -- serving the kernel ------------------------------------------------------------
    def handle(self, name: str, args: list) -> Any:
        self._within_the_budget()
        if name == "aws":
            return self.serve_aws(*args)
        if name == "method":
            target, method, positional, keywords = args
            return self._method(target, method, positional, keywords)
        if name == "model" and args and args[0] in self.models:  # a model reading this process's moto
            return self.models[args[0]](*args[1:])
        raise PermissionError(f"the checker serves aws, method and model calls; not {name!r}")

    def _within_the_budget(self) -> None:
        """Refuse a kernel's call once the check's budget of calls is spent; past the grace too, hang up."""
        self.calls_this_check += 1
        if self.call_budget is None or self.calls_this_check <= self.call_budget:
            return
        if self.calls_this_check > self.call_budget + GRACE_CALLS:
            self.stop(f"your code kept calling the checker past a check's {self.call_budget:,} calls, interrupted")
            raise BoundaryError(self.stopped)
        if not self._interrupted_at_budget:
            self._interrupted_at_budget = True
            self.interrupt()
        raise TimeoutError(f"your code made more than {self.call_budget:,} calls during one check: interrupted")

    def _method(self, target: Any, method: Any, positional: Any, keywords: Any) -> Any:
        kind = next((k for k, obj in self.codec.refs.values() if obj is target), None)
        if kind is None or method not in EXPOSED[kind] or type(positional) is not list or type(keywords) is not dict:
            raise PermissionError(f"{method!r} is not something the learner's code may call here")
        attribute = getattr(target, method)
        return attribute(*positional, **keywords) if callable(attribute) else attribute

    def serve_aws(self, method: str, url: str, headers: dict, body: bytes) -> list:
        """One AWS request from the kernel, answered by this process's moto; the call is kept in `aws_calls`.

        Only the lab's services are served, each at its whole host as AWS names it (`sqs.us-east-1.amazonaws.com`,
        or the kernel's `.checker.invalid` for it) and at `/`, with the service's own X-Amz-Target: moto routes by
        URL pattern, and would serve another service for a host that merely starts with a lab's. A hook for the
        action (`aws_hooks`, set by a lab's checks: a model of what moto does not do) gets the request as data and
        a way to serve a request to moto, and returns the status and the answer.
        """
        if method != "POST" or type(headers) is not dict or type(body) is not bytes or type(url) is not str:
            raise PermissionError("not an AWS request")
        headers = {str(key): str(value) for key, value in headers.items()}
        target = headers.get("X-Amz-Target", "")
        service = self._service_of(url, target)
        content_type = next((value for key, value in headers.items() if key.lower() == "content-type"), "")
        if not content_type.startswith("application/x-amz-json-") or not isinstance(_parsed(body), dict):
            # moto would read an Action= form body before X-Amz-Target: another action than the one noted
            raise PermissionError("the checker serves AWS's JSON protocol only (a JSON object, X-Amz-Target)")
        if service == "sqs":
            body = _canonical_queue_url(body, self.region)
        body = _json_only(body)  # last: what moto reads as a form is then nothing
        self.aws_bytes += len(body) + sum(len(key) + len(value) for key, value in headers.items())
        if self.aws_bytes > AWS_MB << 20:
            self.stop(f"your code sent more than {AWS_MB} MB to AWS (the checker's limit)")
            raise BoundaryError(self.stopped)
        real = f"https://{service}.{self.region}.amazonaws.com/"
        if self.before_aws is not None:  # a check plays its world around the learner's requests (lab 1's copies)
            self.before_aws(service, target.split(".")[-1], _parsed(body))
        hook = self.aws_hooks.get(target.split(".")[-1])
        sent = _without_long_poll(target, body)  # what moto gets (aws_calls keeps the request as it came)
        if hook is None:
            status, answer_headers, answer = _moto(method, real, headers, sent)
        else:
            served: dict = {}

            def serve(request: dict) -> tuple[int, dict]:
                status, served["headers"], answer = _moto(method, real, headers, json.dumps(request).encode())
                return status, json.loads(answer or b"{}")

            status, data = hook(json.loads(sent or b"{}"), serve)
            answer = json.dumps(data).encode()
            answer_headers = served.get("headers") or {"content-type": "application/x-amz-json-1.1"}
            answer_headers = {k: v for k, v in answer_headers.items() if k.lower() != "content-length"}
        self.aws_calls.append(_aws_call(service, target, body, answer))
        return [int(status), answer_headers, answer]

    def _service_of(self, url: str, target: str) -> str:
        """The lab service `url` and `target` name, or PermissionError: the whole host, the path, the target."""
        parsed = urlparse(url)
        hosts = {f"{name}.{self.region}.{domain}": name for name in self.services for domain in FORWARDED_DOMAINS}
        service = hosts.get(parsed.hostname or "")
        if parsed.scheme != "https" or service is None or parsed.port or parsed.path not in ("", "/") or parsed.query:
            shown_host = shown(parsed.hostname or url, 60)
            raise PermissionError(f"the lab's world has no {shown_host} (it has {', '.join(self.services)})")
        prefix = self.client(service).meta.service_model.metadata.get("targetPrefix")
        if (target.split(".")[0] if target else None) != prefix:
            raise PermissionError(f"{shown(target, 60) or 'a request'} is not a call of {service}")
        return service

    def stop(self, reason: str) -> None:
        """Stop the learner's code for `reason` (a limit of the checker's): the connection ends, no check runs after."""
        self.stopped = self.stopped or reason
        if self.wire is not None:
            self.wire.close(self.stopped)

    # -- life cycle ------------------------------------------------------------------
    def connect(
        self,
        listener: socket.socket,
        uid: int | None,
        timeout: float = CONNECT_SECONDS,
        ended: Callable[[], bool] = lambda: False,
    ) -> None:
        """Accept the kernel's connection (from the learner's user only, when there is one).

        `ended()` is true once the kernel has finished the serve cell: it will not connect any more (a learner's
        compiler or audit hook emptied the cell), so the grader says so then instead of after `timeout`.
        """
        deadline = time.monotonic() + timeout
        listener.settimeout(CONNECT_POLL_SECONDS)
        while True:
            try:
                sock, _ = listener.accept()
                break
            except TimeoutError:
                if ended():
                    raise BoundaryError(SERVE_CELL_ENDED) from None
                if time.monotonic() >= deadline:
                    raise BoundaryError(f"the kernel did not connect within {timeout:g} s") from None
        sock.settimeout(None)
        if uid is not None:
            _, peer_uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
            if peer_uid != uid:
                sock.close()
                raise BoundaryError(f"a process of uid {peer_uid}, not the learner's kernel, connected")
        self.wire = Boundary(sock, self.handle, self.codec, SIDE, peer="your kernel")

    def hang_up(self) -> None:
        if self.wire is not None:
            with contextlib.suppress(BoundaryError, RemoteError):
                self.wire.timeout_seconds = 2
                self.wire.call("bye")
            self.wire.close()

    def close(self) -> None:
        """Stop what the checks started (the database)."""
        if self.database is not None:
            self.database.close()
            self.database = None


def _moto(method: str, url: str, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
    """A request answered by this process's moto: status, headers, body."""
    from botocore.awsrequest import AWSPreparedRequest
    from botocore.compat import HTTPHeaders
    from moto.core.models import botocore_stubber

    request = AWSPreparedRequest(str(method), url, HTTPHeaders(), body, stream_output=False)
    for key, value in headers.items():
        request.headers[key] = value
    answer = botocore_stubber.process_request(request)
    if answer is None:
        raise PermissionError(f"moto does not serve {url}")
    status, answer_headers, answer_body = answer
    answer_body = answer_body.encode() if isinstance(answer_body, str) else bytes(answer_body)
    return int(status), {str(k): str(v) for k, v in dict(answer_headers).items()}, answer_body


def _is_package_data(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and type(value).__module__.startswith("mercadofresco.")


def _without_long_poll(target: str, body: bytes) -> bytes:
    """A ReceiveMessage answered at once: WaitTimeSeconds 0 whatever the request or the queue says.

    moto's long poll waits until the clock passes its end, and a check's clock is frozen: on an empty queue it
    would hold the checker forever (measured: a 3 s poll had not returned after 120 s). Nothing else runs in the
    checker's world during a call, so a wait could only ever end empty: answering at once is the same answer.
    """
    if target != "AmazonSQS.ReceiveMessage":
        return body
    request = _parsed(body)
    if not isinstance(request, dict):
        return body
    return json.dumps(dict(request, WaitTimeSeconds=0)).encode()


def _json_only(body: bytes) -> bytes:
    """The same JSON object, written again with no `&` or `=` outside an escape. moto parses every body as a form
    too, whatever its content type, and runs the form's Action first: `"&Action=ReceiveMessage&"` inside a JSON
    string once ran a long poll under an X-Amz-Target of GetQueueAttributes, which the checker had let through."""
    text = json.dumps(_parsed(body), separators=(",", ":"))  # & and = occur only inside strings: \u escapes there
    return text.replace("&", "\\u0026").replace("=", "\\u003d").encode()


def _canonical_queue_url(body: bytes, region: str) -> bytes:
    """The request with its QueueUrl as SQS writes it: moto resolves a queue by the URL's last part alone, so
    `cola-x` and `https://elsewhere/1/cola-x` reach the queue `https://sqs.<region>.amazonaws.com/<account>/cola-x`
    is; the checks, which compare URLs, see every request to one queue under that one URL."""
    request = _parsed(body)
    url = request.get("QueueUrl") if isinstance(request, dict) else None
    if type(url) is not str:
        return body
    canonical = f"https://sqs.{region}.amazonaws.com/{MOTO_ACCOUNT}/{url.rstrip('/').rsplit('/', 1)[-1]}"
    return body if url == canonical else json.dumps(dict(request, QueueUrl=canonical)).encode()


def _parsed(data: bytes) -> Any:
    try:
        return json.loads(data) if data else None
    except ValueError:
        return None


def _aws_call(service: str, target: str, request: bytes, answer: bytes) -> dict:
    action = target.split(".")[-1] if target else ""
    at = dt.datetime.now(dt.UTC)  # the checker's virtual clock, under a check
    return {"service": service, "action": action, "request": _parsed(request), "answer": _parsed(answer), "at": at}


# -- the checks of one lab -------------------------------------------------------------------
def load_checks(path: Path) -> Any:
    """The checks module at `path` (solutions/checks/labN.py): its CHECKS and a `check_<id>` per check."""
    spec = importlib.util.spec_from_file_location(f"mercadofresco_checks_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    for check in module.CHECKS:
        if not callable(getattr(module, f"check_{check.check}", None)):
            raise ValueError(f"{path.name}: CHECKS names {check.check!r} but there is no check_{check.check}()")
    return module


def run_checks(module: Any, lab: Lab, seconds_each: float, only: tuple[str, ...] = ()) -> Iterator[CheckRow]:
    """Run each check (or those in `only`); yield one row per check: its id, the verdict, the reason it failed."""
    gone = ""
    for check in (c for c in module.CHECKS if not only or c.check in only):
        if gone:
            yield CheckRow(check.check, False, shown(f"not run: {gone}", REASON_CHARS))
            continue
        started = time.monotonic()
        verdict, reason, story = False, "", ()
        lab.wire.timeout_seconds = seconds_each
        lab.call_budget, lab.calls_this_check, lab._interrupted_at_budget = CALLS_PER_CHECK, 0, False
        lab.aws_calls.clear()
        try:
            getattr(module, f"check_{check.check}")(lab)
            if lab._interrupted_at_budget:  # whatever it answered after that, it answered past its budget
                raise AssertionError(f"your code made more than {CALLS_PER_CHECK:,} calls during this check")
            verdict = True
        except AssertionError as exc:
            reason = shown(f"AssertionError: {exc or 'a check did not hold'}", REASON_CHARS)
            story = tuple(shown(line, STORY_CHARS) for line in getattr(exc, "story", [])[:STORY_LINES])
        except BoundaryError as exc:
            stopped = lab.stopped or lab.wire.refused  # a limit of the checker's, or what the kernel sent
            if stopped:  # the checker hung up: nothing after this can run
                gone = f"the checker stopped your code during {check.check}: {stopped}"
                reason = shown(f"the check did not finish: {stopped}", REASON_CHARS)
            elif lab.wire.closed:  # the kernel died or hung up: nothing after this can run
                gone = f"the kernel was gone during {check.check}"
                reason = shown(f"the check did not finish: the kernel was gone ({exc})", REASON_CHARS)
            else:  # it did not answer in time: interrupt it, as nbval interrupts a cell, and go on
                why = f"Timeout of {seconds_each:g} seconds exceeded waiting for your code (interrupted)"
                reason = why if "no answer within" in str(exc) else shown(f"{why}: {exc}", REASON_CHARS)
                lab.interrupt()
        except RemoteError as error:
            reason = f"{learner_name(error.type_name)}: raised by your code"
        except Exception as exc:  # the check itself could not run on what the learner's code gave it
            reason = shown(f"{type(exc).__name__}: the check could not run on it ({exc})", REASON_CHARS)
        except BaseException as exc:  # a ConsumerCrash or the like that escaped: the check fails, grading goes on
            reason = shown(f"{type(exc).__name__}: the check was stopped by it", REASON_CHARS)
        finally:
            lab.call_budget = None
        yield CheckRow(check.check, verdict, reason, story, round(time.monotonic() - started, 3))


def listen(workdir: Path, uid: int | None) -> tuple[socket.socket, Path]:
    """A Unix socket in the grader's folder of the working copy, which the learner's kernel may connect to."""
    path = folder.grader_folder(workdir) / "boundary"
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    os.chmod(path, 0o777)  # in the grader's own folder; who may talk is the peer's uid's to say (connect)
    listener.listen(1)
    return listener, path


def serve_source(path: Path) -> str:
    """The one cell the grader sends after the learner's: connect to the checker and answer its calls."""
    return (
        "from mercadofresco.course.checker import learner_side as _learner_side\n"
        f"_learner_side.serve(globals(), {str(path)!r})"
    )


@contextlib.contextmanager
def world_of_the_checker() -> Iterator[Callable[[], None]]:
    """moto in this process, for the length of one learner's checks; yields a reset between checks."""
    from moto import mock_aws
    from moto.core.base_backend import BackendDict

    from mercadofresco.runtime import moto_atomic, moto_speedups

    moto_atomic.apply()  # the kernel's consumers write the idempotency table from threads of this process
    mock = mock_aws()
    mock.start()
    speedups = moto_speedups.apply()
    try:
        yield BackendDict.reset
    finally:
        speedups.undo()
        mock.stop()
