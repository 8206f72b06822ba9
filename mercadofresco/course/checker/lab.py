"""The `Lab` a lab's hidden checks work with: the learner's names across the wire, and a world the checker owns.

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

The learner's kernel imports this room too (for `learner_side`), so what only the checker needs (moto, botocore's
clients, PostgreSQL's driver) is imported inside the functions that use it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import importlib.util
import json
import socket
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from mercadofresco.course.checker import aws_requests, connection, learner_side
from mercadofresco.course.checker.boundary import Boundary, BoundaryError, RemoteError
from mercadofresco.course.checker.codec import CheckerCodec, KernelFunction, Link, Opaque
from mercadofresco.course.protocol import CheckRow, learner_name, shown
from mercadofresco.runtime import settings

SIDE = "c"
FORWARDED_DOMAINS = ("checker.invalid", "amazonaws.com")  # https://<service>.<region>.<domain>/, nothing else
REASON_CHARS = 200
# The kernel's word for a learner function whose parameters cannot take a check's arguments (learner_side._takes)
ARGUMENTS_DIFFER = ("mercadofresco.course.checker.learner_side", "ArgumentsDiffer")
STORY_LINES, STORY_CHARS = 30, 160  # of a counterexample's story in a report
# What the kernel may ask of the checker during one check: the solutions' most is 1,502 calls (lab 1's
# mechanism_visibility, 7 December). A count, not a time: a loaded grader must not cut a slow correct check off
# (120 s of wall time once did, in CI). Past it the kernel is interrupted; past it and GRACE_CALLS, hung up on.
CALLS_PER_CHECK, GRACE_CALLS = 100_000, 1_000
# And a time: a kernel that calls once every 10 s with SIGINT blocked is neither silent nor past its calls (a
# hostile session held a grading slot for the notebook's whole budget so). Past this many of a cell's timeouts
# the kernel is interrupted; past one more, hung up on. Generous: a loaded grader must not cut a correct check.
CHECK_TIMEOUTS = 10
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


@dataclass(frozen=True)
class Check:
    """One hidden check: its id (the function is `check_<id>`), what the learner is told when it fails, its weight."""

    check: str
    hint: str
    points: int = 1


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
        self.check_ends: float | None = None  # the time.monotonic() past which the kernel is interrupted
        self.grace_seconds = 0.0  # past check_ends and this, hung up on
        self.over_budget = ""  # what the kernel was interrupted for, "" while it has not been

    # -- the checker's own world ------------------------------------------------------
    def reset_world(self) -> None:
        """Empty this process's moto: what an earlier check or the learner's code left is gone."""
        from moto.core.base_backend import BackendDict

        BackendDict.reset()

    def session(self) -> Any:
        from mercadofresco.runtime import endpoints

        if self._session is None:
            self._session = endpoints.make_session(settings.EndpointConfig())
        return self._session

    def client(self, service: str) -> Any:
        """A boto3 client of this process's moto (the checker reads its own state with it)."""
        from mercadofresco.runtime import endpoints

        if service not in self._clients:
            self._clients[service] = endpoints.make_client(self.session(), settings.EndpointConfig(), service)
        return self._clients[service]

    def dynamodb_item(self, table: str, key: dict) -> dict:
        """An item of this process's moto as GetItem returns it ({} when none), read from moto's backend.

        The same answer as `client("dynamodb").get_item`, without its cost: a request through boto3 and moto takes
        about 1 ms, and lab 1's properties read a record after each step of each play (some 1,300 reads, a third of
        the checker's time in one grading). Where the backend cannot answer (no such table), the request does.
        """
        from moto.dynamodb.models import dynamodb_backends

        from mercadofresco.runtime import moto_atomic

        try:
            with moto_atomic.LOCK:  # no write of the kernel's consumers is half done
                item = dynamodb_backends[aws_requests.MOTO_ACCOUNT][self.region].get_item(table, key)
                return {} if item is None else item.to_json()["Attributes"]
        except Exception:
            return self.client("dynamodb").get_item(TableName=table, Key=key).get("Item") or {}

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
        """Refuse a kernel's call once the check's budget of calls or time is spent; past the grace, hang up."""
        self.calls_this_check += 1
        late = 0.0 if self.check_ends is None else time.monotonic() - self.check_ends
        if self.call_budget is not None and self.calls_this_check > self.call_budget + GRACE_CALLS:
            self.stop(f"your code kept calling the checker past a check's {self.call_budget:,} calls, interrupted")
            raise BoundaryError(self.stopped)
        if late > self.grace_seconds:
            self.stop("your code kept the checker busy past a check's time limit, interrupted")
            raise BoundaryError(self.stopped)
        if self.call_budget is not None and self.calls_this_check > self.call_budget:
            self._interrupt_for(f"your code made more than {self.call_budget:,} calls during this check")
        if late > 0:
            self._interrupt_for("your code was still running past this check's time limit")

    def _interrupt_for(self, why: str) -> None:
        if not self.over_budget:
            self.over_budget = why
            self.interrupt()
        raise TimeoutError(f"{why}: interrupted")

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
        headers = aws_requests.one_of_each(headers)
        target = aws_requests.target_of(headers)
        service = self._service_of(url, target)
        content_type = next((value for key, value in headers.items() if key.lower() == "content-type"), "")
        if not content_type.startswith("application/x-amz-json-") or not isinstance(aws_requests.parsed(body), dict):
            # moto would read an Action= form body before X-Amz-Target: another action than the one noted
            raise PermissionError("the checker serves AWS's JSON protocol only (a JSON object, X-Amz-Target)")
        if service == "sqs":
            body = aws_requests.canonical_queue_url(body, self.region)
        body = aws_requests.json_only(body)  # last: what moto reads as a form is then nothing
        self.aws_bytes += len(body) + sum(len(key) + len(value) for key, value in headers.items())
        if self.aws_bytes > AWS_MB << 20:
            self.stop(f"your code sent more than {AWS_MB} MB to AWS (the checker's limit)")
            raise BoundaryError(self.stopped)
        real = f"https://{service}.{self.region}.amazonaws.com/"
        if self.before_aws is not None:  # a check plays its world around the learner's requests (lab 1's copies)
            self.before_aws(service, target.split(".")[-1], aws_requests.parsed(body))
        hook = self.aws_hooks.get(target.split(".")[-1])
        sent = aws_requests.without_long_poll(target, body)  # what moto gets (aws_calls keeps the request as it came)
        if hook is None:
            status, answer_headers, answer = aws_requests.moto_answer(method, real, headers, sent)
        else:
            served: dict = {}

            def serve(request: dict) -> tuple[int, dict]:
                status, served["headers"], answer = aws_requests.moto_answer(
                    method, real, headers, json.dumps(request).encode()
                )
                return status, json.loads(answer or b"{}")

            status, data = hook(json.loads(sent or b"{}"), serve)
            answer = json.dumps(data).encode()
            answer_headers = served.get("headers") or {"content-type": "application/x-amz-json-1.1"}
            answer_headers = {k: v for k, v in answer_headers.items() if k.lower() != "content-length"}
        self.aws_calls.append(aws_requests.noted_call(service, target, body, answer))
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
        timeout: float = connection.CONNECT_SECONDS,
        ended: Callable[[], bool] = lambda: False,
    ) -> None:
        """Accept the kernel's connection (`connection.accept_kernel`) and serve its calls on it."""
        sock = connection.accept_kernel(listener, uid, timeout, ended)
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
        lab.call_budget, lab.calls_this_check, lab.over_budget = CALLS_PER_CHECK, 0, ""
        lab.check_ends, lab.grace_seconds = started + CHECK_TIMEOUTS * seconds_each, seconds_each
        lab.aws_calls.clear()
        try:
            getattr(module, f"check_{check.check}")(lab)
            if lab.over_budget:  # whatever it answered after that, it answered past its budget
                raise AssertionError(lab.over_budget)
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
            lab.call_budget = lab.check_ends = None
        yield CheckRow(check.check, verdict, reason, story, round(time.monotonic() - started, 3))


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
