"""Sections 6 and 7's experiments on moto and the gateway model (notebooks 06 and 07).

- `timeout_retries`: a retried timeout charges twice without an Idempotency-Key, once with it;
- `classifier_table` / `botocore_table`: our classifier on every error class, and
  botocore's own retryable codes read from the installed botocore next to ours;
- `layer_calls`: orders through `cola-mercadofresco-pedidos` in moto, a consumer
  that runs a modelled Step Functions Retry around the gateway client's SDK
  attempts; counts what reaches the gateway. The workflow layer is a model
  (moto's Step Functions sleeps in real time); its Retry is a `retry.RetryPolicy`.
"""

from __future__ import annotations

import functools
import json
import random
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import botocore
from botocore.exceptions import ClientError, ConnectTimeoutError, ReadTimeoutError
from botocore.retries import quota, standard

from mercadofresco import orders, world
from mercadofresco.clock import VirtualClock
from mercadofresco.errors import check_range
from mercadofresco.i18n import N_, T_, _
from mercadofresco.lessons import rehearsal
from mercadofresco.lessons.delivery import experiments as delivery
from mercadofresco.models import gateway as gw
from mercadofresco.models import lambda_poller
from mercadofresco.patterns import backoff, idempotency, retry, retry_budget, retry_layers, retry_rules

AMOUNT = Decimal("48.20")
PEDIDO = "PED-2026-084417"


# -- section 6: what to retry -------------------------------------------------------------
def timeout_retries(clock: VirtualClock, send_key: bool, policy: retry.RetryPolicy | None = None) -> dict[str, Any]:
    """One charge whose first call outlives the 30 s read timeout (45 s, for half a minute), then retried."""
    provider = gw.PaymentGateway(clock, latency=gw.spike_at(clock.now(), minutes=0.5, latency_seconds=45))
    client = gw.GatewayClient(
        provider, read_timeout_seconds=30, max_attempts=1 if policy else 3, send_idempotency_key=send_key, policy=policy
    )
    try:
        client.charge(PEDIDO, AMOUNT, idempotency.charge_key(PEDIDO))
        outcome = T_("charged, answer received")
    except gw.GatewayError as exc:
        outcome = _("gave up: {error}").format(error=type(exc).__name__)
    return {
        "client": T_("disciplined (classify)") if policy else T_("naive SDK, 3 attempts"),
        "idempotency_key": send_key,
        "attempts": client.attempts,
        "charges": len(provider.charges_for(PEDIDO)),
        "outcome": outcome,
    }


def _aws(code: str, status: int, retry_after: str | None = None) -> ClientError:
    headers = {"retry-after": retry_after} if retry_after else {}
    return ClientError(
        {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": headers}}, "PutItem"
    )


def error_examples() -> list[tuple[str, BaseException]]:
    """One example of every error class the workbook meets, with a short label."""
    return [
        (T_("gateway 503"), gw.GatewayUnavailableError("503 Service Unavailable")),
        (T_("gateway 429, Retry-After 7"), gw.ThrottledError(7)),
        (T_("gateway 402 card declined"), gw.CardDeclinedError("402")),
        (T_("gateway read timeout"), gw.GatewayTimeoutError(30)),
        (T_("gateway response lost"), gw.ResponseLostError("connection reset")),
        (T_("DynamoDB ConditionalCheckFailed"), _aws("ConditionalCheckFailedException", 400)),
        (T_("DynamoDB throughput exceeded"), _aws("ProvisionedThroughputExceededException", 400)),
        (T_("AWS ThrottlingException, Retry-After 3"), _aws("ThrottlingException", 400, "3")),
        (T_("AWS 500 InternalServerError"), _aws("InternalServerError", 500)),
        (T_("AWS 400 ValidationException"), _aws("ValidationException", 400)),
        (T_("AWS 404 ResourceNotFound"), _aws("ResourceNotFoundException", 404)),
        (T_("HTTP 409 conflict"), _aws("Conflict", 409)),
        (T_("connect timeout (never sent)"), ConnectTimeoutError(endpoint_url="https://pasarela")),
        (T_("read timeout (botocore)"), ReadTimeoutError(endpoint_url="https://pasarela")),
    ]


def classifier_table() -> list[dict[str, Any]]:
    """`retry_rules.classify` on every example, without and with an idempotency key."""
    rows = []
    for label, error in error_examples():
        plain, keyed = retry_rules.classify(error, idempotent=False), retry_rules.classify(error, idempotent=True)
        rows.append(
            {
                "error": label,
                "no key": plain.verdict.name,
                "with key": keyed.verdict.name,
                "wait at least": keyed.not_before_seconds,
                "why": (keyed if keyed.verdict is not plain.verdict else plain).said,
            }
        )
    return rows


def botocore_codes() -> dict[str, set[str]]:
    """Error codes and statuses botocore retries: its legacy `_retry.json` and its standard mode's lists."""
    data = json.loads((Path(botocore.__file__).parent / "data" / "_retry.json").read_text())
    legacy = set()
    for rule in data["definitions"].values():
        response = rule["applies_when"].get("response", {})
        legacy.add(response.get("service_error_code") or str(response.get("http_status_code")))
    standard_codes = set(standard.TransientRetryableChecker._TRANSIENT_ERROR_CODES)
    standard_codes |= set(standard.ThrottledRetryableChecker._THROTTLED_ERROR_CODES)
    standard_codes |= {str(s) for s in standard.TransientRetryableChecker._TRANSIENT_STATUS_CODES}
    standard_codes |= {str(s) for s in standard.ThrottlingStatusCodeChecker._THROTTLING_STATUS_CODES}
    return {"legacy": legacy - {"None"}, "standard": standard_codes}


def botocore_table() -> list[dict[str, Any]]:
    """Every code botocore retries, whether each of its modes does, and what our classifier says."""
    codes = botocore_codes()
    rows = []
    for code in sorted(codes["legacy"] | codes["standard"], key=lambda c: (c.isdigit(), c)):
        error = _aws("", int(code)) if code.isdigit() else _aws(code, 400)
        rows.append(
            {
                "code or status": code,
                "legacy": T_("retry") if code in codes["legacy"] else "-",
                "standard": T_("retry") if code in codes["standard"] else "-",
                "ours": retry_rules.classify(error, idempotent=True).verdict.name,
            }
        )
    return rows


def budget_comparison(failure_rates: list[float], calls: int = 1000, seed: int = 0) -> list[dict[str, Any]]:
    """Retries granted when a share of calls fails (one retry wanted per failure): our 10 % budget vs botocore's quota.

    botocore's side is its own `RetryQuota` with its standard mode's costs, read
    from the installed botocore: a retry costs `_RETRY_COST`, a success without
    retries gives back `_NO_RETRY_INCREMENT`, a retried success gives back its cost.
    """
    rows = []
    for rate in failure_rates:
        check_range(_("each of failure_rates"), rate, 0, 1)
        rng = random.Random(seed)
        ours, theirs = retry_budget.RetryBudget(0.1), quota.RetryQuota()
        cost, refund = standard.RetryQuotaChecker._RETRY_COST, standard.RetryQuotaChecker._NO_RETRY_INCREMENT
        wanted = botocore_granted = 0
        for _call in range(calls):
            ours.record_call()
            if rng.random() >= rate:
                theirs.release(refund)
                continue
            wanted += 1
            ours.try_retry()
            if theirs.acquire(cost):
                botocore_granted += 1
                if rng.random() >= rate:
                    theirs.release(cost)
        rows.append(
            {
                "failure_rate": rate,
                "calls": calls,
                "failed_calls": wanted,
                "ours_retries": ours.retries,
                "botocore_retries": botocore_granted,
            }
        )
    return rows


def botocore_quota() -> dict[str, int]:
    """botocore's standard-mode retry quota, as installed."""
    return {
        "initial_capacity": quota.RetryQuota.INITIAL_CAPACITY,
        "retry_cost": standard.RetryQuotaChecker._RETRY_COST,
        "throttling_retry_cost": standard.RetryQuotaChecker._THROTTLING_RETRY_COST,
        "success_refund": standard.RetryQuotaChecker._NO_RETRY_INCREMENT,
    }


# -- section 7: where to retry ------------------------------------------------------------
def botocore_attempts() -> list[dict[str, Any]]:
    """How many attempts botocore makes for "max_attempts 2", depending on where it is set (read from botocore).

    In a client's Config(retries=...) `max_attempts` counts retries, in every mode;
    AWS_MAX_ATTEMPTS and the config file's max_attempts count attempts. botocore
    turns both into `total_max_attempts`, which is what it enforces.
    """
    import boto3
    import botocore.session
    from botocore.config import Config

    settings = [
        (
            "Config(retries={'max_attempts': 2, 'mode': 'standard'})",
            Config(retries={"max_attempts": 2, "mode": "standard"}),
            None,
        ),
        (
            "Config(retries={'max_attempts': 2, 'mode': 'legacy'})",
            Config(retries={"max_attempts": 2, "mode": "legacy"}),
            None,
        ),
        (
            "Config(retries={'total_max_attempts': 2})",
            Config(retries={"total_max_attempts": 2, "mode": "standard"}),
            None,
        ),
        (T_("AWS_MAX_ATTEMPTS=2 or max_attempts = 2 in ~/.aws/config"), None, 2),
    ]
    rows = []
    for where, config, store_value in settings:
        core = botocore.session.get_session()
        if store_value is not None:
            core.set_config_variable("max_attempts", store_value)  # what AWS_MAX_ATTEMPTS sets
        session = boto3.Session(
            aws_access_key_id="x", aws_secret_access_key="x", region_name="eu-south-2", botocore_session=core
        )
        client = session.client("sqs", config=config, endpoint_url="http://127.0.0.1:9")  # never called
        rows.append(
            {
                "where max_attempts 2 is set": where,
                "attempts botocore makes": client.meta.config.retries["total_max_attempts"],
            }
        )
    return rows


def workflow_retry(max_attempts: int = 4) -> retry.RetryPolicy:
    """A Step Functions Retry as a policy: IntervalSeconds 1, BackoffRate 2, MaxAttempts 3 (= 4 attempts)."""
    return retry.RetryPolicy(backoff.Exponential(base=0.5, cap=60), max_attempts=max_attempts)


@dataclass
class ChargeViaWorkflow:
    """A consumer that runs each order through a modelled workflow whose Retry wraps the SDK's attempts.

    With `catch_failures` the workflow's Catch records the failed order and the
    message is deleted: the queue's maxReceiveCount is then only a safety net.
    """

    client: gw.GatewayClient
    workflow: retry.RetryPolicy
    catch_failures: bool = False
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    caught: list[str] = field(default_factory=list)

    def __call__(self, event: dict[str, Any], context: lambda_poller.Invocation) -> dict[str, Any]:
        failures = []
        for record in event["Records"]:
            order = orders.parse_order(record["body"])
            execution = retry.Retrier(self.workflow, self.rng)
            try:
                execution.call(functools.partial(self._charge, order, context), context, idempotent=True)
            except gw.GatewayError as exc:
                context.record("workflow_failed", order.pedido_id, type(exc).__name__)
                if self.catch_failures:
                    self.caught.append(order.pedido_id)
                else:
                    failures.append({"itemIdentifier": record["messageId"]})
        return {"batchItemFailures": failures}

    def _charge(self, order: orders.Order, context: lambda_poller.Invocation) -> gw.Charge:
        """The workflow's task: one charge through the client's SDK attempts."""
        return self.client.charge(order.pedido_id, order.importe, idempotency.charge_key(order.pedido_id), context)


@rehearsal.rehearsed(N_("the layers' calls counted"))
def layer_calls(
    aws: world.World,
    clock: VirtualClock,
    order_count: int = 10,
    sdk_attempts: int = 5,
    max_receive_count: int = 4,
    workflow_attempts: int = 4,
    catch_failures: bool = False,
) -> dict[str, Any]:
    """Send orders while the gateway is down and count every call that reaches it, next to the calculator."""
    check_range("order_count", order_count, 1, 1000, why=_("each gateway call is a virtual-clock wait"))
    aws.reset_orders_queue(visibility_timeout_seconds=400, max_receive_count=max_receive_count)
    provider = gw.PaymentGateway(clock)
    provider.fail_every_call(gw.Fault.UNAVAILABLE)  # down for the whole experiment
    sdk = retry.RetryPolicy(backoff.NoBackoff(), max_attempts=sdk_attempts)
    client = gw.GatewayClient(provider, policy=sdk)
    handler = ChargeViaWorkflow(client, workflow_retry(workflow_attempts), catch_failures)
    batch = [orders.Order(orders.order_id(84417 + i), AMOUNT) for i in range(order_count)]
    # Up to 5 consumers, never more than the orders (but Lambda's minimum of 2): a consumer with nothing to
    # take only adds empty receives (a third of a second for one order), never a gateway call.
    consumers = min(5, max(2, order_count))
    config = lambda_poller.PollerConfig(max_concurrency=consumers, max_idle_poll_seconds=20)
    run = delivery.run_orders(aws, clock, client, batch, config, max_seconds=6 * 3600, handler=handler)
    receives = 1 if catch_failures else max_receive_count
    layers = [
        retry_layers.Layer("SDK", sdk_attempts),
        retry_layers.Layer("queue", receives),
        retry_layers.Layer("workflow", workflow_attempts),
    ]
    expected = retry_layers.worst_case(layers, order_count)
    return {
        "orders": order_count,
        "gateway_calls": provider.calls,
        "calls_per_order": provider.calls / order_count,
        "calculator": expected["formula"],
        "calculator_per_order": expected["per_order"],
        "in_dlq": run.in_dlq,
        "caught_by_workflow": len(handler.caught),
    }
