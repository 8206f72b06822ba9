"""The learner's kernel at grading time: it answers the checker's calls, and reaches the world only as a consumer would.

After nbval has run the learner's cells, the grader sends one cell of its own:

    from mercadofresco.course.checker import learner_side; learner_side.serve(globals(), "/…/.boundary")

and the kernel answers calls (`course.checker.boundary`) until the checker hangs up:
the value of a name the lab asks for, a call of one of the learner's
functions (or of a function one of them returned, such as a handler). The
arguments are plain data and stand-ins for what the checker owns:

- a world (`aws`) whose boto3 clients send every request to the checker's moto,
- the checker's clock, gateway client, Lambda context and crash hook, each a
  small proxy whose methods are calls to the checker (`RemoteClock`, …);
- lab 3's bus and callbacks, proxies too; objects of the package the checks
  let through (its idempotency store), rebuilt here from their fields; and
  real psycopg connections to the checker's PostgreSQL, as a role that may use
  the lab's schema only (`pg_link`).

The other way, the checker may call the learner's functions and the kernel's
own waiters (a task of a poller the learner's code runs here: the checker's
gateway waits in the caller's time), and read a queue's age from its moto.

Nothing here decides a verdict. Learner code can change any of it: the worst
it can do is answer wrongly, and a wrong answer fails the check.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import importlib
import inspect
import socket
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from mercadofresco.course.checker.boundary import Boundary, Codec, RemoteError, Tag

SIDE = "k"
MAIN_LANE = "c1"  # the checker's main thread: its calls run in the kernel's main thread, where an interrupt lands
FORWARDED_DOMAIN = "checker.invalid"  # the clients' host: no network reaches it, the checker answers it
CALL_TIMEOUT_SECONDS = 3_600.0  # the checker keeps the time; the kernel just waits for it


class _Remote:
    """A proxy for one of the checker's objects: each method in CALLS is a call across the boundary.

    CALLS is the one list of what the kernel may ask of that kind of object: the checker refuses anything else
    (`checker.lab.EXPOSED` is read from these classes).
    """

    CALLS: frozenset[str] = frozenset()

    def __init__(self, kernel: LearnerSide, ref: int, attributes: dict) -> None:
        self._kernel, self._ref = kernel, ref
        for name, value in attributes.items():
            setattr(self, name, value)

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return self._kernel.call_checker("method", self, method, list(args), kwargs)


class _RemoteTime(_Remote):
    """The checker's time as the kernel reads and spends it: its clock, or a Lambda invocation's context."""

    def now(self) -> dt.datetime:
        return self._call("now")

    def wait(self, seconds: float) -> None:
        return self._call("wait", seconds)


class RemoteClock(_RemoteTime):
    """The checker's virtual clock: every read and move happens there (moto and the gateway follow it)."""

    CALLS = frozenset({"advance", "advance_to", "need", "now", "seconds_since_start", "timestamp", "wait"})

    running = True
    real_time = False

    def start(self) -> RemoteClock:
        return self

    def stop(self) -> None:
        """The checker's clock is the checker's to stop."""

    def __enter__(self) -> RemoteClock:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def timestamp(self) -> float:
        return self._call("timestamp")

    def seconds_since_start(self) -> float:
        return self._call("seconds_since_start")

    def advance(self, seconds: float) -> dt.datetime:
        return self._call("advance", seconds)

    def advance_to(self, instant: dt.datetime) -> dt.datetime:
        return self._call("advance_to", instant)

    def need(self, seconds: float, what: str) -> None:
        return self._call("need", seconds, what)


class RemoteGateway(_Remote):
    """The checker's payment gateway (the provider's side): its ledger is the checker's, which the checks read."""

    CALLS = frozenset({"calls", "charge", "fail_next", "ledger", "set_latency"})

    @property
    def ledger(self) -> list:
        return self._call("ledger")

    @property
    def calls(self) -> int:
        return self._call("calls")

    def charge(
        self,
        pedido_id: str,
        importe: Any,
        *,
        idempotency_key: str | None = None,
        read_timeout_seconds: float = 30.0,
        waiter: Any = None,
    ) -> Any:
        keywords = {"idempotency_key": idempotency_key, "read_timeout_seconds": read_timeout_seconds}
        return self._call("charge", pedido_id, importe, waiter=waiter, **keywords)

    def fail_next(self, fault: Any, times: int = 1, retry_after_seconds: float = 5.0) -> None:
        return self._call("fail_next", fault, times, retry_after_seconds)

    def set_latency(self, latency: Any) -> None:
        return self._call("set_latency", latency)

    def charges_per_order(self) -> Counter:
        """How many times each order was charged (from the checker's ledger)."""
        return Counter(charge.pedido_id for charge in self.ledger)

    def charges_for(self, pedido_id: str) -> list:
        """Every charge made for one order (from the checker's ledger)."""
        return [charge for charge in self.ledger if charge.pedido_id == pedido_id]


class RemoteGatewayClient(_Remote):
    """The checker's gateway client: a charge reaches the checker's gateway, whose ledger the checks read."""

    CALLS = frozenset({"charge"})

    def charge(self, pedido_id: str, importe: Any, clave: str | None = None, waiter: Any = None) -> Any:
        return self._call("charge", pedido_id, importe, clave, waiter)


class RemoteCrashes(_Remote):
    """The checker's crash hook: `reached(step)` may end the consumer there (ConsumerCrash)."""

    CALLS = frozenset({"reached"})

    def reached(self, step: str) -> None:
        return self._call("reached", step)


class RemoteInvocation(_RemoteTime):
    """The checker's Lambda context for one invocation."""

    CALLS = frozenset({"elapsed_seconds", "get_remaining_time_in_millis", "now", "record", "wait"})

    @property
    def elapsed_seconds(self) -> float:
        return self._call("elapsed_seconds")

    def get_remaining_time_in_millis(self) -> int:
        return self._call("get_remaining_time_in_millis")

    def record(self, event: str, pedido_id: str = "", detail: str = "") -> None:
        return self._call("record", event, pedido_id, detail)


class RemoteBus(_Remote):
    """The checker's event bus (lab 3): it records what it accepts, and may end the process around a call."""

    CALLS = frozenset({"put_events"})

    def put_events(self, **request: Any) -> dict:
        return self._call("put_events", **request)


class RemoteCallback(_Remote):
    """One of the checker's functions (lab 3's `prepare`): calling it runs it there."""

    CALLS = frozenset({"__call__"})

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("__call__", *args, **kwargs)


PROXIES = {"clock": RemoteClock, "gateway": RemoteGateway, "gateway_client": RemoteGatewayClient}
PROXIES |= {"crashes": RemoteCrashes}
PROXIES |= {"invocation": RemoteInvocation, "bus": RemoteBus, "callback": RemoteCallback}


class LearnerCodec(Codec):
    """The kernel's side: functions go out as references; the checker's objects come in as proxies."""

    def __init__(self, kernel: LearnerSide) -> None:
        self.kernel = kernel
        self.functions: dict[int, Callable] = {}

    def encode_object(self, value: Any) -> Any:
        if isinstance(value, _Remote):
            return {Tag.REF: value._ref}
        if isinstance(value, enum.Enum):  # the package's enums (gateway.Fault) cross by name
            return {Tag.ENUM: type(value).__qualname__, "module": type(value).__module__, "name": value.name}
        if _is_waiter(value):  # the kernel's own Lambda context or task, handed to the checker's gateway
            return {Tag.WAITER: self.keep(value)}
        if callable(value) and not isinstance(value, type):  # a function, a handler object: the checker calls it
            return {Tag.FN: self.keep(value)}
        if isinstance(value, Mapping):
            return self.kernel.encode(dict(value))
        if isinstance(value, (list, tuple)):
            return self.kernel.encode(list(value))
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
            kind = type(value)
            return {Tag.OBJ: kind.__qualname__, "module": kind.__module__, "fields": self.kernel.encode(fields)}
        return {Tag.OPAQUE: type(value).__qualname__[:80]}

    def keep(self, value: Any) -> int:
        """A number the checker can call `value` by."""
        number = len(self.functions) + 1
        self.functions[number] = value
        return number

    def decode_object(self, tagged: dict) -> Any:
        if Tag.REF in tagged:
            kind = PROXIES.get(tagged.get("kind"))
            if kind is None:
                raise ValueError(f"unknown kind {tagged.get('kind')!r}")
            return kind(self.kernel, tagged[Tag.REF], self.kernel.decode(tagged.get("attributes", {})))
        if Tag.WORLD in tagged:
            return self.kernel.world(tagged[Tag.WORLD])
        if Tag.AWS in tagged:
            return self.kernel.aws_client(tagged[Tag.AWS])
        if Tag.PG in tagged:
            return self.kernel.pg_link(tagged[Tag.PG], str(tagged["conninfo"]))
        if Tag.FN in tagged:
            return self.functions[tagged[Tag.FN]]
        if Tag.ENUM in tagged:  # one of the package's enums
            kind = _package_class(str(tagged.get("module")), str(tagged[Tag.ENUM]))
            if not (isinstance(kind, type) and issubclass(kind, enum.Enum)):
                raise ValueError(f"unknown enum {tagged['$enum']!r}")
            return kind[str(tagged["name"])]
        if Tag.OBJ in tagged:  # one of the package's objects (a Charge, a store): rebuilt from its fields
            return _package_class(str(tagged.get("module")), str(tagged[Tag.OBJ]))(
                **self.kernel.decode(tagged["fields"])
            )
        raise ValueError(f"unknown value {sorted(tagged)[:3]}")


class LearnerSide:
    """The kernel's end of the wire, serving the learner's names from `namespace`."""

    def __init__(self, namespace: dict, sock: socket.socket) -> None:
        self.namespace = namespace
        self.codec = LearnerCodec(self)
        self.done = threading.Event()
        self._session: Any = None
        self._clients: dict[str, Any] = {}
        self._links: dict[int, Any] = {}
        self.wire = Boundary(
            sock, self.handle, self.codec, SIDE, CALL_TIMEOUT_SECONDS, main_lane=MAIN_LANE, peer="the checker"
        )

    def encode(self, value: Any) -> Any:
        from mercadofresco.course.checker.boundary import encode

        return encode(value, self.codec)

    def decode(self, data: Any) -> Any:
        from mercadofresco.course.checker.boundary import decode

        return decode(data, self.codec)

    # -- what the checker may ask ----------------------------------------------------
    def handle(self, name: str, args: list) -> Any:
        if name == "value":
            (key,) = args
            if key not in self.namespace:
                raise NameError(f"`{key}` is not defined: run every cell and keep the names the lab asks for")
            return self.namespace[key]
        if name == "call":
            number, positional, keywords = args
            function = self.codec.functions[number]
            _takes(function, positional, keywords)
            return function(*positional, **keywords)
        if name == "waiter":  # the checker's gateway waits in the caller's time (a task of the kernel's poller)
            number, method, positional = args
            if method not in ("now", "wait"):
                raise ValueError(f"a waiter answers now and wait; not {method!r}")
            return getattr(self.codec.functions[number], method)(*positional)
        if name == "bye":
            self.done.set()
            return None
        raise ValueError(f"the kernel answers value, call and bye; not {name!r}")

    def call_checker(self, name: str, *args: Any) -> Any:
        """A call to the checker; the checker's exceptions come back as the package's own classes."""
        try:
            return self.wire.call(name, *args)
        except RemoteError as error:
            raise _rebuilt(error, self.wire.current_lane()) from None

    # -- the world, as a consumer reaches it -------------------------------------------
    def world(self, described: dict) -> Any:
        """A World like the checker's, whose every AWS request is sent to the checker's moto."""
        from mercadofresco import queues, world

        config = world.WorldConfig(**described["config"])
        session = self.session(config.endpoint)
        orders = queues.QueuePair(**described["orders"])
        plain = {key: described[key] for key in ("topic_arn", "alerts_topic_arn", "warehouse_queue_url")}
        clients = {service: self.aws_client(service) for service in described["services"]}
        aws = world.World(
            config, session, orders, fanout_queue_urls=dict(described["fanout_queue_urls"]), _clients=clients, **plain
        )
        aws.table_name, aws.bus_name = described["table_name"], described["bus_name"]
        return aws

    def pg_link(self, number: int, conninfo: str) -> Any:
        """A psycopg connection (autocommit) to the checker's database, as the learner's role; one per link."""
        if number not in self._links:
            import psycopg

            self._links[number] = psycopg.connect(conninfo, autocommit=True)
        return self._links[number]

    def aws_client(self, service: str) -> Any:
        """A boto3 client whose requests go to the checker; its made-up host (.invalid) reaches nothing else."""
        if service not in self._clients:
            from botocore.config import Config

            from mercadofresco.runtime import endpoints
            from mercadofresco.runtime.settings import EndpointConfig

            config = EndpointConfig()
            botocore_config = Config(signature_version=endpoints.MOTO_SIGNATURE, retries={"max_attempts": 1})
            endpoints.botocore.auth.AUTH_TYPE_MAPS.setdefault(endpoints.MOTO_SIGNATURE, endpoints.MotoOnlySigner)
            url = f"https://{service}.{config.region}.{FORWARDED_DOMAIN}"
            self._clients[service] = self.session(config).client(service, endpoint_url=url, config=botocore_config)
            # A model that reads moto's own state (lab 2's age of a queue) asks the checker, whose moto it is.
            client = self._clients[service]
            endpoints.keep_moto_elsewhere(client, lambda model, *args: self.call_checker("model", model, *args))
        return self._clients[service]

    def session(self, config: Any) -> Any:
        """One boto3 session whose clients hand each prepared request to the checker instead of the network."""
        if self._session is None:
            from mercadofresco.runtime import endpoints

            self._session = endpoints.make_session(config)
            events = self._session._session.get_component("event_emitter")
            events.register_first("before-send", self._send_to_checker)
        return self._session

    def _send_to_checker(self, request: Any, **_: Any) -> Any:
        from botocore.awsrequest import AWSResponse
        from botocore.compat import HTTPHeaders
        from moto.core.botocore_stubber import MockRawResponse

        body = request.body
        if hasattr(body, "read"):
            body = body.read()
        body = body.encode() if isinstance(body, str) else bytes(body or b"")
        headers = {key: (v.decode() if isinstance(v, bytes) else str(v)) for key, v in request.headers.items()}
        status, answer_headers, answer = self.call_checker("aws", request.method, request.url, headers, body)
        return AWSResponse(request.url, status, HTTPHeaders(answer_headers), MockRawResponse(answer))


class ArgumentsDiffer(TypeError):
    """The learner's function cannot take what the check gives it: its parameters are not the lab's."""


def _takes(function: Callable[..., Any], positional: list, keywords: dict) -> None:
    """Raise ArgumentsDiffer if `function`'s parameters cannot take these arguments (before it runs at all)."""
    try:
        signature = inspect.signature(function, follow_wrapped=False)  # a decorator's own parameters are what it takes
    except (TypeError, ValueError):  # no signature to read: the call itself will say
        return
    try:
        signature.bind(*positional, **keywords)
    except TypeError as exc:
        raise ArgumentsDiffer(str(exc)) from None


def _is_waiter(value: Any) -> bool:
    """Something that keeps time for a caller (`now()`, `wait(seconds)`), such as a Lambda context or a task."""
    return (
        not isinstance(value, type) and callable(getattr(value, "now", None)) and callable(getattr(value, "wait", None))
    )


def _package_class(module_name: str, qualname: str) -> Any:
    """The package's class `module_name.qualname`, or None (only the package's own classes are rebuilt)."""
    if not module_name.startswith("mercadofresco."):
        return None
    try:
        found: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    return found if isinstance(found, type) else None


def _rebuilt(error: RemoteError, lane: str | None) -> BaseException:
    """The package's exception the checker raised (a declined card, a crash), so learner code can catch it."""
    details = error.error
    kind = _package_class(str(details.get("module", "")), str(details.get("type", "")))
    if not (isinstance(kind, type) and issubclass(kind, BaseException)):
        return error
    exc = kind.__new__(kind)
    BaseException.__init__(exc, error.message)
    for key, value in dict(details.get("attributes", {})).items():
        setattr(exc, key, value)
    exc.boundary_token = details.get("token")
    exc.boundary_lane = lane
    return exc


def serve(namespace: dict, path: str) -> None:
    """Connect to the checker at `path` and answer its calls until it hangs up."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    side = LearnerSide(namespace, sock)
    try:
        side.wire.serve_lane(MAIN_LANE, side.done)
    finally:
        side.wire.close()
