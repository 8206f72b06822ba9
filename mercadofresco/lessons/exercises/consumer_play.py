"""Playing one of exercise 1's worlds against the learner's consumer, as Lambda's poller and the gateway would.

`Play` hands the learner's handler each delivery of a world (`consumer_world`):
one record a batch, or several arriving at one instant; a copy that arrives
inside another's work is delivered right there, at one of its steps or just
before one of its DynamoDB requests. A failed delivery (reported in
batchItemFailures, raised, or died) comes back after the queue's visibility
timeout, up to maxReceiveCount receives, then goes to the DLQ. The gateway
(`ScriptedGateway`) meets what the world says, call by call.

Along the way the play holds the lab's own rules, and writes down any it sees
broken (`Log.broken`): the consumer reaches each step where the lab says
(`after_lock` with its claim written, `after_charge` once the gateway answered,
`after_complete` with COMPLETADO written), a consumer that died runs no more
code, each charge spends the invocation's own time, a transient failure
releases the claim, and a message is acknowledged only once its order is done.
It tells what happened as a story, a line a step (`Log.lines`), and leaves the
table as it found it (`forget`).
"""

from __future__ import annotations

import datetime as dt
import functools
import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

from mercadofresco import i18n, orders, world
from mercadofresco.clock import VirtualClock
from mercadofresco.i18n import _, ngettext
from mercadofresco.lessons.exercises.consumer_world import (
    ATTEMPTS,
    LATE_SECONDS,
    MAX_RECEIVES,
    POISON,
    READ_TIMEOUT_SECONDS,
    SLOW_SECONDS,
    TTL_SECONDS,
    VISIBILITY_SECONDS,
    World,
    met,
)
from mercadofresco.models import gateway, lambda_poller


class Bench(Protocol):
    """Where a world is played: a clock, a DynamoDB client, and the learner's `build_handler` (two benches: the
    notebook's own moto, and the hidden checks' own, the learner's code in another process)."""

    clock: VirtualClock
    dynamodb: Any

    def build_handler(self, client: gateway.GatewayClient) -> Callable[..., Any]: ...

    def record(self, clave: str) -> dict:
        """The idempotency table's item for `clave` as GetItem returns it ({} when there is none), read by the
        bench itself: not a request of the learner's code."""

    def before_dynamodb(self, hook: Callable[[str, dict], None] | None) -> None:
        """Call `hook(action, request)` before each DynamoDB request of the learner's code (None: stop)."""


# -- the play ----------------------------------------------------------------------------------------------
@dataclass
class Log:
    """What a play did, as the bench saw it: the story, where each copy ended, the rules the consumer broke."""

    start: dt.datetime
    lines: list[str] = field(default_factory=list)
    arrived: set[int] = field(default_factory=set)  # copies delivered at least once (one inside another may never be)
    acknowledged: set[int] = field(default_factory=set)
    dead_lettered: set[int] = field(default_factory=set)
    broken: list[str] = field(default_factory=list)

    def say(self, at: dt.datetime, text: str) -> None:
        self.lines.append(f"+{i18n.number((at - self.start).total_seconds(), 'g')} s  {text}")


class ScriptedGateway(gateway.PaymentGateway):
    """The payment gateway, each call meeting what the world says, telling the log what it did."""

    def __init__(self, play: Play) -> None:
        super().__init__(play.clock)
        self.play, self.script = play, list(play.world.gateway_calls)
        self.asked: dict[str, list[str]] = {}  # by order: how each call went ("charged", "declined", "503"…)

    def charge(self, pedido_id: str, importe: Decimal, **options: Any) -> gateway.Charge:
        meets = self.script.pop(0) if self.script else "ok"
        seconds = {"slow": SLOW_SECONDS, "late": LATE_SECONDS}.get(meets, gateway.BASELINE_LATENCY_SECONDS)
        self.latency = gateway.LatencyProfile(baseline_seconds=seconds)
        faults = {"503": gateway.Fault.UNAVAILABLE, "429": gateway.Fault.THROTTLED, "lost": gateway.Fault.RESPONSE_LOST}
        if meets in faults:
            self.fail_next(faults[meets])
        name = self.play.name_of(pedido_id)
        if options.get("waiter") in (None, self.clock):  # GatewayClient passes its gateway's clock without one
            said = _("the charge of {order} did not pass the consumer's context (its own time)")
            self.play.log.broken.append(said.format(order=name))
        started, made, how = (options.get("waiter") or self.clock).now(), len(self.ledger), meets
        try:
            return super().charge(pedido_id, importe, **options)
        except gateway.CardDeclinedError:
            how = "declined"
            raise
        finally:
            charged = (
                _("charges {amount} € ({reference})").format(
                    amount=i18n.number(importe), reference=self.ledger[-1].referencia_cobro
                )
                if len(self.ledger) > made
                else ""
            )
            declined = _("declines the card (402)") if how == "declined" else ""
            said = ", ".join(p for p in (charged, declined, met(how)) if p)
            self.asked.setdefault(pedido_id, []).append("charged" if charged else how)
            did = _("the gateway {did} for {order}").format(did=said or _("charges nothing"), order=name)
            self.play.log.say(started, did)


class Steps(lambda_poller.CrashPlan):
    """The consumer's crash hook for one delivery: the lab's rules at each step, copies arriving there, a death."""

    def __init__(self, play: Play, copy: int, receive: int, alone: bool) -> None:
        super().__init__()
        self.play, self.copy, self.receive, self.alone = play, copy, receive, alone
        self.passed: list[str] = []  # the steps the consumer said it reached, in order

    def reached(self, step: str) -> None:
        self.passed.append(step)
        if self.alone:  # a batch's steps cannot be told apart: its copies arrive alone in other worlds
            self.play.at_step(self.copy, step)
        self.play.arrive_inside(self.copy, self.receive, step)
        if self.receive == 1 and (self.copy, step) in self.play.world.dies:
            self.crashed_at.append(step)
            dies = _("{copy}: its consumer dies at {step}").format(copy=self.play.who(self.copy), step=step)
            self.play.log.say(self.play.now_of(self.copy), dies)
            raise lambda_poller.ConsumerCrash(step)


@dataclass
class Running:
    """A delivery under way: its copies and receive numbers, its context, how many DynamoDB requests it made."""

    batch: list[tuple[int, int]]
    context: lambda_poller.Invocation
    steps: Steps
    requests: int = 0


class Play:
    """One world played against the learner's handler on a bench."""

    def __init__(self, world_: World, bench: Bench, first_order: int) -> None:
        self.world, self.bench, self.clock = world_, bench, bench.clock
        self.log = Log(self.clock.now())
        self.orders = [
            orders.Order(orders.order_id(first_order + n), Decimal("48.20")) for n in range(len(world_.kinds))
        ]
        self.gateway = ScriptedGateway(self)
        kinds = dict(zip((o.pedido_id for o in self.orders), world_.kinds, strict=True))
        self.gateway.declined_orders = {pedido for pedido, kind in kinds.items() if kind == "declined"}
        self.client = gateway.GatewayClient(
            self.gateway,
            read_timeout_seconds=READ_TIMEOUT_SECONDS,
            max_attempts=ATTEMPTS,
            send_idempotency_key=world_.key_sent,
        )
        self.inside: dict[tuple[int, str], list[int]] = {}  # (copy, point) -> the copies that arrive there
        for number, (_order, arrival) in enumerate(world_.copies):
            if arrival.inside is not None:
                self.inside.setdefault((arrival.inside, arrival.point), []).append(number)
        self.running: list[Running] = []
        self.deliveries = 0  # every delivery so far, a nested one included
        self.due: list[tuple[dt.datetime, int, int]] = []  # (when, copy, receive): deliveries to come
        self.handler: Callable[..., Any] | None = None
        self.hook_on = False  # True while the learner's code runs: the bench's own reads are not its requests
        self.claves: set[str] = set()  # every key the play wrote or the learner's code asked to write: forgotten after

    # -- names, as the story says them
    def who(self, copy: int) -> str:
        return _("copy {copy} of order {order}").format(copy=copy + 1, order=self.world.copies[copy][0] + 1)

    def name_of(self, pedido_id: str) -> str:
        number = next((n for n, order in enumerate(self.orders) if order.pedido_id == pedido_id), None)
        return (
            pedido_id
            if number is None
            else _("order {order} ({pedido_id})").format(order=number + 1, pedido_id=pedido_id)
        )

    def order_of(self, copy: int) -> orders.Order:
        return self.orders[self.world.copies[copy][0]]

    def kind_of(self, copy: int) -> str:
        return self.world.kinds[self.world.copies[copy][0]]

    def now_of(self, copy: int) -> dt.datetime:
        found = next((run for run in reversed(self.running) if any(c == copy for c, _ in run.batch)), None)
        return found.context.now() if found else self.clock.now()

    def estado(self, order: orders.Order) -> str | None:
        """The order's record, read by the bench (not a request of the learner's code)."""
        hook, self.hook_on = self.hook_on, False
        try:
            item = self.bench.record(f"cobro:{order.pedido_id}")
        finally:
            self.hook_on = hook
        return item.get("estado", {}).get("S")

    # -- the play
    def run(self) -> Log:
        self.seed_the_table()
        self.handler = self.bench.build_handler(self.client)
        self.bench.before_dynamodb(self.before_request)
        self.hook_on = True
        try:
            at = self.clock.now()
            for number, (_order, arrival) in enumerate(self.world.copies):
                if arrival.inside is None:
                    at += dt.timedelta(seconds=arrival.seconds)
                    heapq.heappush(self.due, (at, number, 1))
            while self.due:
                at, copy, receive = heapq.heappop(self.due)
                batch = [(copy, receive)]
                while self.due and self.due[0][0] == at and self.batchable(copy) and self.batchable(self.due[0][1]):
                    batch.append(heapq.heappop(self.due)[1:])  # arriving at the same instant: one batch
                self.clock.advance_to(max(at, self.clock.now()))
                self.deliver_and_queue(batch)
            for (copy, point), arriving in self.inside.items():
                for number in arriving:
                    never = _("{copy} never arrived: {host} never reached {point}").format(
                        copy=self.who(number), host=self.who(copy), point=_point(point)
                    )
                    self.log.say(self.clock.now(), never)
        finally:
            self.bench.before_dynamodb(None)
            self.hook_on = False
        return self.log

    def forget(self) -> None:
        """Delete every record the play wrote: the next play starts from the table as this one found it."""
        for clave in self.claves:
            self.bench.dynamodb.delete_item(TableName=world.IDEMPOTENCY_TABLE, Key={"clave": {"S": clave}})

    def batchable(self, copy: int) -> bool:
        """A copy that may share a batch: nothing arrives inside it and its consumer does not die."""
        return not any(host == copy for host, _ in self.inside) and not any(c == copy for c, _ in self.world.dies)

    def seed_the_table(self) -> None:
        now, order = int(self.clock.timestamp()), self.orders[0].pedido_id
        records = {
            "expired": (f"cobro:{order}", -60),
            "other_operation": (f"envio:{order}", TTL_SECONDS),
            "bare_key": (order, TTL_SECONDS),
        }
        for kind in self.world.old_records:
            clave, expires = records[kind]
            self.claves.add(clave)
            item = {"clave": {"S": clave}, "estado": {"S": "COMPLETADO"}, "resultado": {"S": "ch_antiguo"}}
            self.bench.dynamodb.put_item(
                TableName=world.IDEMPOTENCY_TABLE, Item=item | {"expira_en": {"N": str(now + expires)}}
            )
            held = _("the table already holds {clave} COMPLETADO, expira_en {seconds} s")
            self.log.say(self.clock.now(), held.format(clave=clave, seconds=i18n.number(expires, "+d")))

    def deliver_and_queue(self, batch: list[tuple[int, int]]) -> None:
        """Deliver `batch` now; each failed copy comes back after the visibility timeout, or goes to the DLQ."""
        started = self.clock.now()
        for copy, receive in self.deliver(batch):
            if receive < MAX_RECEIVES:
                heapq.heappush(self.due, (started + dt.timedelta(seconds=VISIBILITY_SECONDS), copy, receive + 1))
            else:
                self.log.dead_lettered.add(copy)
                gone = _("{copy} goes to the DLQ after {receives} receives").format(
                    copy=self.who(copy), receives=receive
                )
                self.log.say(self.clock.now(), gone)

    def deliver(self, batch: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """One invocation of the learner's handler with `batch`; the copies that failed."""
        records = [self.record(copy, receive) for copy, receive in batch]
        self.deliveries += 1
        deliveries_before = self.deliveries
        copy, receive = batch[0]
        steps = Steps(self, copy, receive, alone=len(batch) == 1)
        poller = lambda_poller.Poller(None, "", self.handler, self.clock, crashes=steps)
        context = lambda_poller.Invocation(poller, f"consumer-{copy + 1}", receive)
        self.log.arrived |= {c for c, _ in batch}
        names = [_("{copy} (receive {receive})").format(copy=self.who(c), receive=r) for c, r in batch]
        copies = functools.reduce(
            lambda first, second: _("{first} and {second}").format(first=first, second=second), names
        )
        delivered = ngettext("{copies} is delivered", "{copies} are delivered", len(batch)).format(copies=copies)
        self.log.say(self.clock.now(), delivered)
        self.running.append(Running(batch, context, steps))
        asked_before = len(self.gateway.asked.get(self.order_of(copy).pedido_id, []))
        estado_before = self.estado(self.order_of(copy))
        try:
            answer = self.handler({"Records": records}, context) or {}  # None: the whole batch succeeded
            failed = {c for c, _ in batch if _failed(answer, f"m-{c + 1}")}
            if steps.crashed_at:  # the crash hook raised, and the handler still returned
                went_on = _(
                    "{copy}'s consumer died at {step}, and the handler "
                    "went on: a process that died runs no more code (never catch ConsumerCrash)"
                )
                self.log.broken.append(went_on.format(copy=self.who(copy), step=steps.crashed_at[0]))
            outcome = {c: _("reported failed: it comes back") for c in failed}
        except lambda_poller.ConsumerCrash:
            failed, outcome = {c for c, _r in batch}, dict.fromkeys((c for c, _r in batch), _("died: it comes back"))
        except Exception as error:  # the learner's handler raised: Lambda retries the whole batch
            failed = {c for c, _r in batch}
            raised = _("the handler raised {error}: it comes back").format(error=type(error).__name__)
            outcome = dict.fromkeys(failed, raised)
        finally:
            self.running.pop()
        for each, _receive in batch:
            ended = outcome.get(each) or _("acknowledged: its message is deleted")
            self.log.say(context.now(), _("{copy}: {outcome}").format(copy=self.who(each), outcome=ended))
            if each not in failed:
                self.acknowledged(each)
            elif len(batch) == 1 and not steps.crashed_at:
                self.released(each, asked_before)
        if len(batch) == 1 and not steps.crashed_at and self.deliveries == deliveries_before:
            self.said_each_step(copy, steps, asked_before, estado_before)  # what it did was its own: none nested
        return [(c, r) for c, r in batch if c in failed]

    def said_each_step(self, copy: int, steps: Steps, asked_before: int, estado_before: str | None) -> None:
        """The lab's rule the other way round: a consumer that went past a step said so (context.crashes.reached),
        or the checks could never stop it there. A delivery that asked the gateway had claimed the order; one that
        wrote COMPLETADO had claimed, charged and completed."""
        if self.kind_of(copy) in POISON:
            return
        order = self.order_of(copy)
        should = ["after_lock"] if self.gateway.asked.get(order.pedido_id, [])[asked_before:] else []
        if estado_before != "COMPLETADO" and self.estado(order) == "COMPLETADO":
            should = ["after_lock", "after_charge", "after_complete"]
        missed = [step for step in should if step not in steps.passed]
        if missed:
            went_past = _(
                "{copy}'s consumer went past {step} without calling context.crashes.reached"
                '("{step}"): the checks could never stop it there'
            )
            self.log.broken.append(went_past.format(copy=self.who(copy), step=missed[0]))

    def released(self, copy: int, asked_before: int) -> None:
        """A delivery whose gateway calls all met a transient failure, reported failed: its claim must be gone."""
        order = self.order_of(copy)
        asked = self.gateway.asked.get(order.pedido_id, [])[asked_before:]
        if asked and all(how in ("503", "429") for how in asked) and self.estado(order) == "EN_CURSO":
            kept = _(
                "{copy} met a transient failure ({failure}) and kept its claim "
                "cobro:{pedido_id} EN_CURSO: a transient failure releases it"
            )
            self.log.broken.append(kept.format(copy=self.who(copy), failure=asked[-1], pedido_id=order.pedido_id))

    def record(self, copy: int, receive: int) -> dict:
        kind = self.kind_of(copy)
        body = POISON[kind] if kind in POISON else orders.order_body(self.order_of(copy))
        message_id = f"m-{copy + 1}"
        attributes = {"ApproximateReceiveCount": str(receive)}
        return {
            "messageId": message_id,
            "receiptHandle": f"{message_id}-{receive}",
            "body": body,
            "attributes": attributes,
            "eventSource": "aws:sqs",
        }

    def acknowledged(self, copy: int) -> None:
        """A copy's message is deleted: its order must be done (COMPLETADO, or FALLIDO for a declined card)."""
        self.log.acknowledged.add(copy)
        if self.kind_of(copy) in POISON:
            return
        estado = self.estado(self.order_of(copy))
        if estado not in ("COMPLETADO", "FALLIDO"):
            acknowledged = _(
                "{copy} was acknowledged while its record cobro:{pedido_id} was {estado}: it will never come back"
            )
            self.log.broken.append(
                acknowledged.format(copy=self.who(copy), pedido_id=self.order_of(copy).pedido_id, estado=estado)
            )

    def at_step(self, copy: int, step: str) -> None:
        """The lab's rule for each step: where the consumer calls context.crashes.reached(step)."""
        order = self.order_of(copy)
        estado, charged = self.estado(order), "charged" in self.gateway.asked.get(order.pedido_id, [])
        wrong = {
            "after_lock": estado != "EN_CURSO"
            and _("its claim cobro:{pedido_id} is {estado}, not EN_CURSO").format(
                pedido_id=order.pedido_id, estado=estado
            ),
            "after_charge": (not charged and _("the gateway has charged nothing yet"))
            or (estado == "COMPLETADO" and _("COMPLETADO is already written")),
            "after_complete": estado != "COMPLETADO"
            and _("cobro:{pedido_id} is {estado}, not COMPLETADO").format(pedido_id=order.pedido_id, estado=estado),
        }.get(step)
        if wrong:
            reached = _("{copy} reached {step}, but {wrong}")
            self.log.broken.append(reached.format(copy=self.who(copy), step=step, wrong=wrong))

    def before_request(self, action: str, request: dict) -> None:
        if not (self.running and self.hook_on):
            return
        run = self.running[-1]
        run.requests += 1
        copy, receive = run.batch[0]
        self.say_request(copy, run.context.now(), action, request)
        if len(run.batch) > 1:  # nothing arrives inside a batch: its time is its own records' work
            self.lock_from_the_claim(run.context.now(), action, request)
        self.arrive_inside(copy, receive, f"call {run.requests}", action)

    def lock_from_the_claim(self, at: dt.datetime, action: str, request: Any) -> None:
        """The lab's rule for the lock: LOCK_SECONDS from the claim, in the invocation's time. In a batch the records
        are claimed one after another; a claim whose lock ends less than one delivery's attempts from now was timed
        from an earlier moment (the batch's start), and a second consumer may take the order while it is charged."""
        clave, estado, lock = _item_written(action, request)
        if estado != "EN_CURSO" or lock is None:
            return
        left = lock - at.timestamp()
        if left < READ_TIMEOUT_SECONDS * ATTEMPTS:
            name = self.name_of(str(clave).removeprefix("cobro:"))
            short = _(
                "the claim of {order} in a batch holds its lock {seconds} s from the claim, less than one delivery's "
                "attempts ({attempts} s): was it timed from the batch's start?"
            )
            self.log.broken.append(
                short.format(order=name, seconds=i18n.number(left, "g"), attempts=READ_TIMEOUT_SECONDS * ATTEMPTS)
            )

    def say_request(self, copy: int, at: dt.datetime, action: str, request: Any) -> None:
        """A line of the story for a write of the learner's code: what it asks DynamoDB to write or delete."""
        item = request.get("Item") if isinstance(request, dict) else None
        key = (item or (request.get("Key") if isinstance(request, dict) else None)) or {}
        clave = key.get("clave", {}).get("S") if isinstance(key, dict) and isinstance(key.get("clave"), dict) else None
        if action not in ("PutItem", "UpdateItem", "DeleteItem") or not isinstance(clave, str):
            return
        self.claves.add(clave)
        if action == "DeleteItem":
            self.log.say(at, _("{copy} deletes {clave}").format(copy=self.who(copy), clave=clave))
            return
        _clave, estado, lock = _item_written(action, request)
        if estado and lock is not None:
            until = i18n.number(lock - int(self.log.start.timestamp()), "g")
            what = _("{clave} {estado}, lock until +{seconds} s").format(clave=clave, estado=estado, seconds=until)
        else:
            what = f"{clave} {estado}" if estado else clave
        verb = _("{copy} tries to write {what}") if request.get("ConditionExpression") else _("{copy} writes {what}")
        self.log.say(at, verb.format(copy=self.who(copy), what=what)[:160])

    def arrive_inside(self, copy: int, receive: int, point: str, action: str = "") -> None:
        """Deliver now the copies that arrive inside `copy`'s first delivery at `point`."""
        if receive != 1:
            return
        host = next(run for run in reversed(self.running) if any(c == copy for c, _ in run.batch))
        for arriving in self.inside.pop((copy, point), []):
            seconds = self.world.copies[arriving][1].seconds
            self.clock.advance_to(max(self.clock.now(), host.context.now() + dt.timedelta(seconds=seconds)))
            host.context.wait((self.clock.now() - host.context.now()).total_seconds())  # the host waited as long
            where = (
                _("just before its {action}").format(action=action)
                if action
                else _("{seconds} s after its {point}").format(seconds=i18n.number(seconds, "g"), point=_point(point))
            )
            arrives = _("{copy} arrives while {host} is at work, {where}")
            self.log.say(self.clock.now(), arrives.format(copy=self.who(arriving), host=self.who(copy), where=where))
            self.deliver_and_queue([(arriving, 1)])


def _point(point: str) -> str:
    """A point of a delivery as the story says it: a step as the lab names it, "call 2" in the learner's language."""
    kind, _space, count = point.partition(" ")
    return _("call {number}").format(number=count) if kind == "call" and count else point


def _item_written(action: str, request: Any) -> tuple[str | None, str | None, float | None]:
    """What a PutItem of the learner's code writes, read as data whatever its shape: clave, estado, caduca_bloqueo
    (a finite number of seconds, or None)."""
    item = request.get("Item") if action == "PutItem" and isinstance(request, dict) else None
    if not isinstance(item, dict):
        return None, None, None

    def attribute(name: str, kind: str) -> Any:
        value = item.get(name)
        return value.get(kind) if isinstance(value, dict) else None

    try:
        lock: float | None = float(attribute("caduca_bloqueo", "N"))
    except (TypeError, ValueError):
        lock = None
    if lock is not None and not math.isfinite(lock):
        lock = None
    return attribute("clave", "S"), attribute("estado", "S"), lock


def _failed(answer: Any, message_id: str) -> bool:
    """Whether Lambda takes `message_id` as failed from the handler's answer (partial batch response).

    An answer that is not a partial batch response fails the whole batch, as Lambda does with an invalid one.
    """
    items = answer.get("batchItemFailures", []) if isinstance(answer, dict) else None
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        return True
    return message_id in {str(item.get("itemIdentifier")) for item in items}
