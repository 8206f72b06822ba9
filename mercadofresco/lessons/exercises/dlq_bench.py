"""Exercise 2's bench in this process: where `dlq_properties` plays its worlds on a notebook's own moto.

Each world gets a queue pair of its own (new names, the lesson's visibility
and RedrivePolicy), so the notebook's queues are never touched; the learner's
functions see a world whose `orders` is that pair, and an SQS client that
notes the calls they make (botocore's events), as the hidden checks note the
calls they serve.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Mapping
from typing import Any

from mercadofresco import queues, world
from mercadofresco.clock import VirtualClock
from mercadofresco.i18n import _
from mercadofresco.lessons.dlq import incidents
from mercadofresco.lessons.exercises.dlq_properties import ScriptDied
from mercadofresco.models import gateway
from mercadofresco.runtime import endpoints

_WORLDS = itertools.count(1)  # queue names are never reused in a process: moto keeps a queue's messages


class NotebookDlqBench:
    """A bench on `aws`'s moto and `clock`, with the learner's functions by name from `functions` (looked up at
    each call, so a function defined again is the one played)."""

    def __init__(self, aws: world.World, clock: VirtualClock, functions: Mapping) -> None:
        self.world_of, self.clock, self.functions = aws, clock, functions
        self.sqs = endpoints.make_client(aws.session, aws.config.endpoint, "sqs")  # a client of its own to watch
        self.sqs.meta.events.register("before-parameter-build.sqs", self._note)
        self.calls: list[tuple[str, dict, dt.datetime]] = []
        self.dies_at: int | None = None  # the send to the source queue at which the learner's process dies
        self.dead = False
        self.source_url = self.dlq_url = ""
        self.aws: world.World | None = None

    def _note(self, model: Any, params: dict, **_kwargs: Any) -> None:
        if self.dead:
            raise ScriptDied(_("the process had already died"))
        sending = model.name in ("SendMessage", "SendMessageBatch") and params.get("QueueUrl") == self.source_url
        if sending and self.dies_at is not None:
            self.dies_at -= 1
            if self.dies_at == 0:  # this send never reaches SQS
                self.dead = True
                raise ScriptDied(_("the redrive's process died at this send"))
        self.calls.append((model.name, dict(params), self.clock.now()))
        if model.name == "ReceiveMessage":  # on a frozen clock moto's long poll never ends: noted, then answered now
            params["WaitTimeSeconds"] = 0

    def fresh(self) -> None:
        for url in (self.source_url, self.dlq_url):  # the last world's queues go: a moto with hundreds is slow
            if url:
                self.sqs.delete_queue(QueueUrl=url)
        if self.clock.now() < incidents.SUNDAY_2204:
            self.clock.advance_to(incidents.SUNDAY_2204)
        name = f"mundos-{next(_WORLDS)}"
        pair = queues.create_queue_pair(
            self.sqs, f"cola-{name}", f"{name}-fallidos", visibility_timeout_seconds=120, max_receive_count=4
        )
        self.source_url, self.dlq_url = pair.url, pair.dlq_url
        clients = {"sqs": self.sqs}
        self.aws = world.World(self.world_of.config, self.world_of.session, pair, "", "", {}, "", _clients=clients)
        self.calls.clear()

    def inspect(self, max_messages: int) -> Any:
        return self.functions["inspect_dlq"](self.sqs, self.dlq_url, max_messages)

    def contain(self) -> Any:
        return self.functions["contain"](self.aws, self.clock)

    def classify(self) -> Any:
        return self.functions["classify_dlq"](self.sqs, self.dlq_url)

    def redrive(self, max_per_second: int, dies_at_send: int | None) -> tuple[Any, bool]:
        self.dies_at, self.dead = dies_at_send, False
        try:
            answer = self.functions["redrive_dlq"](self.aws, self.clock, max_per_second)
        except (Exception, ScriptDied) as error:  # it raised, or its process died: the world is judged either way
            answer = error
        finally:
            self.dies_at, died, self.dead = None, self.dead, False
        return answer, died

    def runbook(self) -> tuple[Any, dict[str, int]]:
        provider = gateway.PaymentGateway(self.clock)
        try:
            answer = self.functions["runbook"](self.aws, self.clock, gateway.GatewayClient(provider))
        except Exception as error:  # it stopped: what a runbook does when it must not go on
            answer = error
        return answer, dict(provider.charges_per_order())

    def receives(self) -> list[tuple[str, dict]]:
        return [(params.get("QueueUrl", ""), params) for name, params, _at in self.calls if name == "ReceiveMessage"]

    def attachments(self) -> list[tuple[dt.datetime, str]]:
        found = []
        for name, params, at in self.calls:
            if name == "GetQueueAttributes" and "QueueArn" in (params.get("AttributeNames") or ()):
                found.append((at, params.get("QueueUrl", "")))
        return found

    def sends(self) -> list[tuple[dt.datetime, str, int]]:
        found = []
        for name, params, at in self.calls:
            if name in ("SendMessage", "SendMessageBatch"):
                found.append((at, params.get("QueueUrl", ""), len(params.get("Entries", [None]))))
        return found
