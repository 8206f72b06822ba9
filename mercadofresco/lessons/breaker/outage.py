"""Twenty consumers against a payment gateway that is down, and what to do while the breaker is open (notebook 09).

`run_outage` is a model in virtual time (simpy on the shared clock): each
consumer takes an order, asks its breaker, and calls the gateway model if
allowed. With per-process breakers every consumer must collect its own
`failure_threshold` failures before it stops; with one shared breaker the
first `failure_threshold` failures stop everyone. The gateway counts the calls
that still reach it.

While the breaker is open each operation has its own plan:
`charge_or_refuse` fails fast with a message for the customer,
`erp_notice_during_outage` puts the ERP notice back with
ChangeMessageVisibility(300) instead of calling the ERP on every receive, and
`email_provider` switches the confirmation to a secondary provider.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from mercadofresco import i18n, orders, world
from mercadofresco.clock import ClockedEnvironment, Stopwatch, VirtualClock
from mercadofresco.errors import check_range
from mercadofresco.i18n import T_, _
from mercadofresco.models import alarm_evaluation
from mercadofresco.models import gateway as gw
from mercadofresco.patterns import breaker_store, idempotency
from mercadofresco.patterns.breaker import BreakerPolicy, CircuitBreaker, State

MODES = (T_("per_process"), T_("shared"))  # keys; a table shows them in the learner's words
CUSTOMER_MESSAGE = "No hemos podido confirmar el pago ahora mismo. Inténtalo de nuevo en unos minutos."
ERP_QUEUE = "cola-mercadofresco-erp"
DEFER_SECONDS = 300


@dataclass(frozen=True)
class OutageConfig:
    """Twenty consumers, a gateway down for `down_seconds`, and the breakers' policy (the lesson's by default)."""

    consumers: int = 20
    breaker: BreakerPolicy = field(default_factory=BreakerPolicy)
    down_seconds: float = 180.0
    run_seconds: float = 220.0
    pause_seconds: float = 1.0  # between two orders of the same consumer

    def __post_init__(self) -> None:
        check_range("consumers", self.consumers, 1, 200)
        if not 0 <= self.down_seconds <= self.run_seconds <= 3_600:
            said = _("need 0 <= down_seconds <= run_seconds <= 3600; got {down_seconds}, {run_seconds}")
            raise ValueError(
                said.format(down_seconds=i18n.number(self.down_seconds), run_seconds=i18n.number(self.run_seconds))
            )


def panel_config(failure_threshold: int, open_seconds: float, consumers: int) -> OutageConfig:
    """The outage with the widget's numbers: `consumers` consumers, breakers opening after `failure_threshold`."""
    return OutageConfig(consumers, BreakerPolicy(failure_threshold, open_seconds))


@dataclass
class OutageRun:
    """What the gateway saw: one row per call that reached it, and the fast failures."""

    mode: str
    config: OutageConfig
    calls: list[dict[str, Any]] = field(default_factory=list)  # second, consumer, ok
    fast_failures: int = 0
    transitions: list[tuple[float, State, State]] = field(default_factory=list)

    @property
    def gateway_calls(self) -> int:
        return len(self.calls)

    def calls_while_down(self) -> int:
        """Calls that reached the gateway while it could only fail."""
        return sum(1 for call in self.calls if call["second"] < self.config.down_seconds)

    def summary(self) -> dict[str, Any]:
        return {
            "breaker": self.mode,
            "calls_while_down": self.calls_while_down(),
            "calls_after_recovery": self.gateway_calls - self.calls_while_down(),
            "fast_failures": self.fast_failures,
        }


def run_outage(
    clock: VirtualClock, mode: str, config: OutageConfig | None = None, alarm: alarm_evaluation.OpenAlarm | None = None
) -> OutageRun:
    """Run `config.consumers` consumers against a gateway that is down for `down_seconds`."""
    if mode not in MODES:
        said = _("mode must be one of {modes}; got {mode}")
        raise ValueError(said.format(modes=", ".join(MODES), mode=repr(mode)))
    config = config or OutageConfig()
    env = ClockedEnvironment(clock)
    provider = gw.PaymentGateway(clock)
    run = OutageRun(mode, config)
    if mode == "shared":
        one = breaker_store.SharedBreaker(breaker_store.embedded_store(), config.breaker, alarm=alarm)
        breakers = [one] * config.consumers
    else:
        breakers = [CircuitBreaker(config.breaker) for _ in range(config.consumers)]
    for number, guard in enumerate(breakers, start=1):
        env.process(_consumer(env, f"consumidor-{number:02d}", guard, provider, run))
    env.run(until=config.run_seconds)
    for guard in {id(b): b for b in breakers}.values():
        run.transitions.extend(guard.transitions)
    run.transitions.sort(key=lambda t: t[0])
    return run


def _consumer(env: ClockedEnvironment, name: str, guard: Any, provider: gw.PaymentGateway, run: OutageRun):
    clock, number = env.clock, 0
    while True:
        number += 1
        if not guard.allow(clock.timestamp()):
            run.fast_failures += 1  # the customer hears CUSTOMER_MESSAGE at once
            yield env.timeout(run.config.pause_seconds)
            continue
        if env.now < run.config.down_seconds:
            provider.fail_next(gw.Fault.UNAVAILABLE)
        watch, started = Stopwatch(clock), env.now
        try:
            provider.charge(
                f"PED-2026-{number:06d}", Decimal("48.20"), idempotency_key=f"{name}:{number}", waiter=watch
            )
            ok = True
        except gw.GatewayError:
            ok = False
        yield env.timeout(watch.elapsed_seconds)
        run.calls.append({"second": round(started, 3), "consumer": name, "ok": ok})
        (guard.record_success if ok else guard.record_failure)(clock.timestamp())
        yield env.timeout(run.config.pause_seconds)


# -- what to do while the breaker is open, per operation --------------------------------
def charge_or_refuse(guard: Any, client: gw.GatewayClient, order: orders.Order, now: float) -> dict[str, Any]:
    """The charge cannot be degraded: if the breaker is open, refuse at once and tell the customer.

    A declined card (402) is the gateway working: it is not counted as a failure.
    """
    if not guard.allow(now):
        return {"pedido_id": order.pedido_id, "cobrado": False, "mensaje": CUSTOMER_MESSAGE}
    try:
        charge = client.charge(order.pedido_id, order.importe, idempotency.charge_key(order.pedido_id))
    except gw.GatewayError as exc:
        if gw.is_permanent_failure(exc):
            guard.record_success(now)  # the gateway answered: a trial that got a 402 proves it is up
        else:
            guard.record_failure(now)
        return {"pedido_id": order.pedido_id, "cobrado": False, "mensaje": f"{type(exc).__name__}"}
    guard.record_success(now)
    return {"pedido_id": order.pedido_id, "cobrado": True, "mensaje": charge.referencia_cobro}


def email_provider(guard: Any, now: float) -> str:
    """The confirmation email degrades: the secondary provider while the primary's breaker is open."""
    return "primario" if guard.allow(now) else "secundario"


def erp_notice_during_outage(
    aws: world.World, clock: VirtualClock, defer: bool, outage_seconds: int = 720, poll_seconds: int = 10
) -> dict[str, Any]:
    """One ERP notice through an ERP outage: call and fail on every receive, or defer 300 s while open.

    The ERP queue's visibility timeout is 30 s, so a consumer that just fails
    sees the notice again every 30 s and spends a receive each time.
    """
    check_range("outage_seconds", outage_seconds, 60, 3_600)
    sqs, url = aws.sqs, aws.fanout_queue_urls[ERP_QUEUE]
    sqs.purge_queue(QueueUrl=url)
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "30"})
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"pedido_id": "PED-2026-084417", "aviso": "confirmado"}))
    erp_down_until = clock.timestamp() + outage_seconds
    guard = CircuitBreaker(BreakerPolicy(failure_threshold=1, open_seconds=outage_seconds))
    guard.record_failure(clock.timestamp())  # the ERP's breaker opened as the outage began
    started, erp_calls, receives = clock.timestamp(), 0, 0
    while clock.timestamp() - started < 4 * outage_seconds:
        messages = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0, MessageSystemAttributeNames=["All"])
        for message in messages.get("Messages", []):
            receives = int(message["Attributes"]["ApproximateReceiveCount"])
            if defer and not guard.allow(clock.timestamp()):
                sqs.change_message_visibility(
                    QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=DEFER_SECONDS
                )
                continue
            erp_calls += 1
            if clock.timestamp() >= erp_down_until:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
                return {"defer": defer, "receives": receives, "erp_calls": erp_calls, "delivered": True}
        clock.advance(poll_seconds)
    return {"defer": defer, "receives": receives, "erp_calls": erp_calls, "delivered": False}
