"""The checker's side of the wire's codec: its objects go out as references to proxies, the kernel's come in.

What may cross is decided here: the checker's world, clients, clocks, gateways and the like go to the kernel as a
reference and a kind (`learner_side.PROXIES`); the package's data classes as their fields; anything else is
refused. From the kernel come plain data, references the checker handed out, the kernel's functions and waiters
(called back across the wire), the package's enums and data classes a lab accepts, and `Opaque` for the rest.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from mercadofresco.course.checker.boundary import BoundaryError, Codec, Tag, decode, encode


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


class KernelFunction:
    """One of the learner's functions (or one a learner function returned): calling it is a call to the kernel."""

    def __init__(self, lab: Any, number: int) -> None:  # a checker.lab.Lab, connected
        self.lab, self.number = lab, number

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.lab.wire.call("call", self.number, list(args), kwargs)


class KernelWaiter:
    """A waiter of the kernel's (a task of the learner's own poller): the checker's gateway waits in its time."""

    def __init__(self, lab: Any, number: int) -> None:  # a checker.lab.Lab, connected
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

    def __init__(self, lab: Any) -> None:  # the checker.lab.Lab whose registries (kinds, rebuilt, accepted) it reads
        self.lab = lab
        self.refs: dict[int, tuple[str, Any]] = {}

    def encode_object(self, value: Any) -> dict:
        if isinstance(value, enum.Enum) and type(value).__module__.startswith("mercadofresco."):
            return {Tag.ENUM: type(value).__qualname__, "module": type(value).__module__, "name": value.name}
        kind = self.kind_of(value)
        if kind == "world":
            return {Tag.WORLD: self.describe_world(value)}
        if kind == "aws":
            return {Tag.AWS: value.meta.service_model.service_name}
        if kind == "kernel_function":
            return {Tag.FN: value.number}
        if kind == "pg_link":
            return {Tag.PG: value.number, "conninfo": self.lab.database.conninfo(value.settings)}
        if kind is None and (is_package_data(value) or type(value) in self.lab.rebuilt):  # rebuilt from its fields
            names = self.lab.rebuilt.get(type(value)) or [field.name for field in dataclasses.fields(value)]
            fields = {name: getattr(value, name) for name in names}  # a client goes as $aws, a clock as a proxy
            return {Tag.OBJ: type(value).__qualname__, "module": type(value).__module__, "fields": encode(fields, self)}
        if kind is None:
            raise TypeError(f"a {type(value).__name__} cannot be handed to the learner's code")
        number = next((n for n, (_, obj) in self.refs.items() if obj is value), len(self.refs) + 1)
        self.refs[number] = (kind, value)
        return {Tag.REF: number, "kind": kind, "attributes": encode(self.attributes_of(kind, value), self)}

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
            fields = self.decode_data(tagged.get("fields"))
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

    def kind_of(self, value: Any) -> str | None:
        """How `value` crosses the wire: a kind of proxy, one of the tagged kinds, or None (as data, or refused)."""
        from mercadofresco import world  # the world's modules: the kernel, which imports this room, needs none

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
        return next((kind for cls, kind in self.lab._kinds if isinstance(value, cls)), None)

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
        """The checker's world as the kernel builds clients for it: its queues' settings, names and services."""
        config = {key: value for key, value in asdict(aws.config).items() if "seconds" in key}  # the queues'
        config |= {"max_receive_count": aws.config.max_receive_count}
        plain = ("topic_arn", "alerts_topic_arn", "warehouse_queue_url", "table_name", "bus_name")
        return {
            "config": config,
            "orders": asdict(aws.orders),
            "fanout_queue_urls": dict(aws.fanout_queue_urls),
            "services": list(self.lab.services),
        } | {key: getattr(aws, key) for key in plain}

    def decode_data(self, data: Any) -> Any:
        """Plain data from the kernel, its tagged objects decoded by this codec."""
        return decode(data, self)


def is_package_data(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and type(value).__module__.startswith("mercadofresco.")
