"""Our idempotency beside Powertools for AWS Lambda's, on the same moto table (notebook 04).

Powertools' `idempotent_function` implements the same pattern with a decorator.
It stores its own attributes (status INPROGRESS/COMPLETED, expiration,
in_progress_expiration in milliseconds, data) next to ours in
`mercadofresco-idempotencia`, keyed by a hash of the payload in `clave`. One
difference matters for the lesson: on any exception Powertools deletes the
record, while the lesson keeps FALLIDO for a permanent failure.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyAlreadyInProgressError

from mercadofresco import world
from mercadofresco.clock import Stopwatch, Task, VirtualClock, Waiter, together
from mercadofresco.i18n import T_, _
from mercadofresco.lessons.keys_and_table import ORDER, empty_table, results
from mercadofresco.models import gateway
from mercadofresco.patterns import idempotency

Charge = Callable[..., dict[str, Any]]  # charge(order={"pedido_id": ...}) -> {"referencia_cobro": ...}
FUNCTION_TIMEOUT_MILLIS = 300_000


class LambdaContext:
    """Just enough of Lambda's context for Powertools to set its in-progress expiry."""

    def get_remaining_time_in_millis(self) -> int:
        return FUNCTION_TIMEOUT_MILLIS


def _gateway_call(provider: gateway.PaymentGateway, pedido_id: str, waiter: Waiter) -> dict[str, Any]:
    made = provider.charge(pedido_id, ORDER.importe, waiter=waiter)
    return {"referencia_cobro": made.referencia_cobro, "importe": str(made.importe)}


def powertools_charge(aws: world.World, provider: gateway.PaymentGateway, clock: VirtualClock) -> Charge:
    """A charge wrapped by Powertools' idempotent_function, keyed on pedido_id, 24 h expiry."""
    persistence = DynamoDBPersistenceLayer(table_name=aws.table_name, key_attr="clave", boto3_client=aws.dynamodb)
    config = IdempotencyConfig(event_key_jmespath="pedido_id", expires_after_seconds=24 * 3600)
    config.register_lambda_context(LambdaContext())  # its lock: the invocation's remaining time

    @idempotent_function(data_keyword_argument="order", persistence_store=persistence, config=config)
    def charge(order: dict[str, Any], waiter: Waiter | None = None) -> dict[str, Any]:
        return _gateway_call(provider, order["pedido_id"], waiter or Stopwatch(clock))

    return charge


def our_charge(aws: world.World, provider: gateway.PaymentGateway, clock: VirtualClock) -> Charge:
    """The same charge through our run_once and the three-state table."""
    store = idempotency.IdempotencyStore(aws.dynamodb, clock)

    def charge(order: dict[str, Any], waiter: Waiter | None = None) -> dict[str, Any]:
        clave = idempotency.charge_key(order["pedido_id"])
        call = functools.partial(_gateway_call, provider, order["pedido_id"], waiter or Stopwatch(clock))
        return idempotency.run_once(store, clave, call, gateway.is_permanent_failure)

    return charge


BUSY_ERRORS = (idempotency.AlreadyInProgressError, IdempotencyAlreadyInProgressError)


def parallel(make: Callable[..., Charge], aws: world.World, clock: VirtualClock, copies: int = 50) -> dict[str, Any]:
    """`copies` consumers charge the same order at the same virtual instant (see `clock.together`).

    Those that find the operation in progress back off, then try once more
    after the first one finished, as the queue would redeliver them.
    """
    provider = gateway.PaymentGateway(clock)
    charge = make(aws, provider, clock)
    order = {"pedido_id": ORDER.pedido_id}

    def attempt(task: Task) -> dict[str, Any] | None:
        try:
            return charge(order=order, waiter=task)
        except BUSY_ERRORS:
            return None

    first = results(together(clock, [attempt] * copies))
    retried = results(together(clock, [attempt] * first.count(None)))
    answers = [answer for answer in first + retried if answer]
    return {
        "charges": len(provider.ledger),
        "distinct_answers": len({a["referencia_cobro"] for a in answers}),
        "answers": len(answers),
    }


def declined_then_duplicate(charge: Charge, provider: gateway.PaymentGateway) -> dict[str, Any]:
    """The card is declined; then the same message comes again. Does the gateway get called again?"""
    provider.declined_orders.add(ORDER.pedido_id)
    order = {"pedido_id": ORDER.pedido_id}
    outcomes = []
    for _delivery in range(2):
        try:
            charge(order=order)
            outcomes.append(T_("charged"))
        except gateway.CardDeclinedError:
            outcomes.append(T_("gateway said 402"))
        except idempotency.AlreadyFailedError:
            outcomes.append(T_("FALLIDO kept: not called"))
    return {"gateway_calls": provider.calls, "outcomes": outcomes}


def behaviour_table(aws: world.World, clock: VirtualClock, ours: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The same experiments on both implementations, side by side.

    `ours`: what `keys_and_table.parallel_duplicates` returned, if the notebook has just run the lesson's
    50-copy race on our store (the same race as `parallel(our_charge, ...)`); it is not run again, and
    the state is read from the record it left.
    """
    rows = []
    for name, make in ((T_("ours"), our_charge), ("powertools", powertools_charge)):
        if name == "ours" and ours is not None:
            par, states = ours, [_state_left_by_the_race(aws)]
        else:
            empty_table(aws)
            par = parallel(make, aws, clock)
            states = sorted(_states(aws))
        empty_table(aws)
        provider = gateway.PaymentGateway(clock)
        declined = declined_then_duplicate(make(aws, provider, clock), provider)
        rows.append(
            {
                "implementation": name,
                "50 parallel: charges": par["charges"],
                "distinct answers": par["distinct_answers"],
                "states seen": "/".join(states),
                "declined card: gateway calls": declined["gateway_calls"],
                "2nd attempt": declined["outcomes"][1],
            }
        )
    return rows


def _state_left_by_the_race(aws: world.World) -> str:
    clave = idempotency.charge_key(ORDER.pedido_id)
    item = aws.dynamodb.get_item(TableName=aws.table_name, Key={"clave": {"S": clave}}).get("Item")
    if item is None:
        said = _("ours: no record {clave} in the table; run keys_and_table.parallel_duplicates first")
        raise ValueError(said.format(clave=clave))
    return item["estado"]["S"]


def _states(aws: world.World) -> set[str]:
    items = aws.dynamodb.scan(TableName=aws.table_name)["Items"]
    return {(item.get("estado") or item.get("status"))["S"] for item in items}


def operations_per_charge(aws: world.World, clock: VirtualClock, keys: int = 20) -> list[dict[str, Any]]:
    """DynamoDB operations each implementation makes per new charge, by type (counted on the client).

    Ours writes PutItem (EN_CURSO) + PutItem (COMPLETADO); Powertools PutItem
    (INPROGRESS) + UpdateItem (COMPLETED). On moto an UpdateItem costs about twice
    a PutItem (it parses an update expression), so a calls-per-second ratio
    measured on moto is partly moto's cost per operation type, not the design.
    """
    seen: list[str] = []

    def count(model: Any, **_: Any) -> None:
        seen.append(model.name)

    aws.dynamodb.meta.events.register("before-call.dynamodb.*", count)
    rows = []
    try:
        for name, make in (("ours", our_charge), ("powertools", powertools_charge)):
            empty_table(aws)
            charge = make(aws, gateway.PaymentGateway(clock), clock)
            seen.clear()
            for number in range(keys):
                charge(order={"pedido_id": f"PED-2026-{number:06d}"})
            rows.append({"implementation": name} | {op: seen.count(op) / keys for op in set(seen)})
    finally:
        aws.dynamodb.meta.events.unregister("before-call.dynamodb.*", count)
    operations = sorted({op for row in rows for op in row} - {"implementation"})
    return [{"implementation": row["implementation"]} | {op: row.get(op, 0.0) for op in operations} for row in rows]


def calls_per_second(charge: Charge, keys: int = 500) -> float:
    """Distinct orders per second of real time (a measurement: it varies from run to run)."""
    started = time.perf_counter()
    for number in range(keys):
        charge(order={"pedido_id": f"PED-2026-{number:06d}"})
    return keys / (time.perf_counter() - started)
