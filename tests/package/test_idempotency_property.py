"""Property: whatever the interleaving of two consumers, crashes and redeliveries, one charge per key at most,
and the key ends COMPLETADO or FALLIDO once the queue keeps redelivering.

Each consumer attempt runs in a thread that stops at every step (received, after_lock, after_charge,
after_complete); hypothesis decides who moves next, who dies, and when the clock jumps.
"""

import itertools
import threading
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mercadofresco import orders, world
from mercadofresco.clock import VirtualClock
from mercadofresco.models import gateway, lambda_poller
from mercadofresco.patterns import idempotency
from mercadofresco.patterns.idempotency import Estado, IdempotencyStore
from mercadofresco.shop import handlers

TIMEOUT = 10
numbers = itertools.count(1)


class SteppedAttempt:
    """One delivery of the message to one consumer, advanced a step at a time by the test."""

    def __init__(self, handler, body, clock, name):
        self.go = threading.Semaphore(0)
        self.arrived = threading.Semaphore(0)
        self.crash_next = False
        self.finished = False
        self.poller = lambda_poller.Poller(None, "", handler, clock, crashes=self)
        self.invocation = lambda_poller.Invocation(self.poller, name, 1)
        self.event = {"Records": [{"messageId": name, "receiptHandle": "", "body": body, "attributes": {}}]}
        self.thread = threading.Thread(target=self._run, args=(handler,), daemon=True)
        self.thread.start()
        self._wait()  # parked before its first step

    def reached(self, step):  # called from the consumer's thread (it is this attempt's CrashPlan)
        self.arrived.release()
        assert self.go.acquire(timeout=TIMEOUT), "the test never moved this consumer"
        if self.crash_next:
            raise lambda_poller.ConsumerCrash(step)

    def _run(self, handler):
        try:
            self.reached("received")
            handler(self.event, self.invocation)
        except lambda_poller.ConsumerCrash:
            pass
        finally:
            self.finished = True
            self.arrived.release()

    def _wait(self):
        assert self.arrived.acquire(timeout=TIMEOUT), "consumer thread stuck"

    def step(self):
        self.go.release()
        self._wait()

    def crash(self):
        self.crash_next = True
        self.step()

    def finish(self):
        while not self.finished:
            self.step()


actions = st.lists(
    st.one_of(
        st.tuples(st.just("step"), st.integers(0, 1)),
        st.tuples(st.just("crash"), st.integers(0, 1)),
        st.tuples(st.just("deliver"), st.integers(0, 1)),
        st.tuples(st.just("advance"), st.sampled_from([5, 61, 130])),
    ),
    max_size=25,
)


@pytest.fixture(scope="module")
def table(request):

    clock = VirtualClock().start()
    built = world.build(world.WorldConfig())
    yield built, clock
    built.close()
    clock.stop()


def play(aws, clock, schedule, declined, send_idempotency_key=True):
    """Run one schedule; return (charges seen at most at any moment, final charges, final estado)."""
    order = orders.Order(orders.order_id(next(numbers)), Decimal("48.20"))
    provider = gateway.PaymentGateway(clock, declined_orders={order.pedido_id} if declined else set())
    client = gateway.GatewayClient(provider, send_idempotency_key=send_idempotency_key)
    handler = handlers.IdempotentChargeOrders(client, IdempotencyStore(aws.dynamodb, clock))
    body = orders.order_body(order)
    active: dict[int, SteppedAttempt] = {}
    most = 0
    for action, value in schedule:
        if action == "advance":
            clock.advance(value)
            continue
        attempt = active.get(value)
        if action == "deliver" and (attempt is None or attempt.finished):
            active[value] = SteppedAttempt(handler, body, clock, f"consumidor-{value + 1}")
        elif attempt is not None and not attempt.finished:
            attempt.step() if action == "step" else attempt.crash()
        most = max(most, len(provider.ledger))

    for attempt in active.values():  # slow consumers still finish what they started
        attempt.finish()
    clave = idempotency.charge_key(order.pedido_id)
    for _ in range(5):  # the queue keeps redelivering until the consumer is done
        record = handler.store.get(clave)
        if record is not None and record.estado is not Estado.EN_CURSO:
            break
        clock.advance(130)
        SteppedAttempt(handler, body, clock, "redelivery").finish()
    return most, len(provider.ledger), handler.store.get(clave).estado


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(schedule=actions, declined=st.booleans())
def test_interleavings_never_charge_twice_and_always_settle(table, schedule, declined):
    most, charges, estado = play(*table, schedule, declined)
    assert most <= 1
    assert estado is (Estado.FALLIDO if declined else Estado.COMPLETADO)
    assert charges == (0 if declined else 1)


def test_the_property_can_fail_without_the_gateway_key(table):
    """The schedule hypothesis finds when the gateway's key is off: charge, die before COMPLETADO, redeliver."""
    schedule = [("deliver", 1), ("step", 1), ("step", 1), ("crash", 1)]
    assert play(*table, schedule, declined=False, send_idempotency_key=False)[1] == 2
    assert play(*table, schedule, declined=False, send_idempotency_key=True)[1] == 1
