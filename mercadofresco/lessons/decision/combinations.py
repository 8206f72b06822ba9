"""Two of the three combinations that solve most cases, on moto, and the one to avoid, as a model (notebook 15).

- `sns_to_sqs`: fan-out with durability. `mercadofresco-pedido-confirmado` fans
  out to `cola-mercadofresco-correo` and `cola-mercadofresco-erp`; a consumer
  that is down loses nothing, its copy waits in its queue.
- `eventbridge_to_sqs`: routing by content. Rules on `bus-mercadofresco` pick
  events by source, type and detail; each target is a queue.
- (the third, EventBridge -> Step Functions, is `workflow_start`.)
- `direct_vs_queued`: SNS straight to a function versus SNS -> SQS -> function
  during an ERP outage, as a model of Lambda's asynchronous retries, with and
  without the function's own dead-letter queue.
- `throttle_knobs`: the three places the lesson names to limit our own pace
  toward a third party, each set on moto where it applies (stored, not
  enforced; `sims.throttle` models what they do).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mercadofresco import queues, world
from mercadofresco.clock import VirtualClock
from mercadofresco.errors import check_range
from mercadofresco.i18n import T_, _, number
from mercadofresco.sims import throttle

HOME_RULE = "regla-mercadofresco-envio-domicilio"
DELIVERY_QUEUE = "cola-mercadofresco-reparto"
ROLE_ARN = "arn:aws:iam::123456789012:role/mercadofresco-eventos"
THIRD_PARTY_ENDPOINT = "https://erp.mercadofresco.example/avisos"
LAMBDA_ASYNC_RETRY_DELAYS = (60, 120)  # Lambda retries an asynchronous event twice: after 1 minute, then 2 more
ERP_CALL_SECONDS = throttle.ThrottleConfig().call_seconds  # one notice to the ERP, as notebook 14's model has it


def order_event(pedido_id: str, envio: str = "domicilio") -> dict[str, Any]:
    """A PedidoConfirmado entry for put_events on bus-mercadofresco."""
    detail = {"pedido_id": pedido_id, "importe": "48.20", "envio": envio, "version": 1}
    return {
        "Source": world.ORDER_SOURCE,
        "DetailType": "PedidoConfirmado",
        "Detail": json.dumps(detail),
        "EventBusName": world.BUS,
    }


def drain(sqs: Any, url: str) -> list[str]:
    """Receive and delete everything visible in a queue; return the bodies."""
    bodies = []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages"):
        for message in messages:
            bodies.append(message["Body"])
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return bodies


# -- SNS -> SQS ------------------------------------------------------------------------------
def sns_to_sqs(aws: world.World, clock: VirtualClock) -> list[dict[str, Any]]:
    """Publish once; the ERP consumer reads its copy, the email consumer is down for two hours."""
    sqs = aws.sqs
    aws.client("sns").publish(TopicArn=aws.topic_arn, Message=json.dumps({"pedido_id": "PED-2026-084417"}))
    rows = [{"moment": T_("after one publish")} | _fanout_counts(aws)]
    drain(sqs, aws.fanout_queue_urls["cola-mercadofresco-erp"])
    rows.append({"moment": T_("ERP consumer read its copy")} | _fanout_counts(aws))
    clock.advance(2 * 3_600)
    rows.append({"moment": T_("two hours later, email still down")} | _fanout_counts(aws))
    bodies = drain(sqs, aws.fanout_queue_urls["cola-mercadofresco-correo"])
    back = _("email back: read {count}").format(count=number(len(bodies)))
    rows.append({"moment": back} | _fanout_counts(aws))
    return rows


def _fanout_counts(aws: world.World) -> dict[str, int]:
    return {name: queues.queue_counts(aws.sqs, url)["visible"] for name, url in aws.fanout_queue_urls.items()}


# -- EventBridge -> SQS -> consumer --------------------------------------------------------------
def add_home_delivery_rule(aws: world.World) -> str:
    """A rule that routes by content: only PedidoConfirmado with envio = domicilio reach cola-mercadofresco-reparto."""
    events, sqs = aws.client("events"), aws.sqs
    pattern = {"source": [world.ORDER_SOURCE], "detail-type": ["PedidoConfirmado"], "detail": {"envio": ["domicilio"]}}
    events.put_rule(Name=HOME_RULE, EventBusName=world.BUS, EventPattern=json.dumps(pattern))
    url = sqs.create_queue(QueueName=DELIVERY_QUEUE)["QueueUrl"]
    events.put_targets(
        Rule=HOME_RULE, EventBusName=world.BUS, Targets=[{"Id": "reparto", "Arn": queues.queue_arn(sqs, url)}]
    )
    return url


def eventbridge_to_sqs(aws: world.World) -> list[dict[str, Any]]:
    """Three events on the bus; what each queue's consumer receives."""
    delivery_url = add_home_delivery_rule(aws)
    entries = [
        order_event("PED-2026-084417", "domicilio"),
        order_event("PED-2026-084418", "recogida"),
        {"Source": world.ORDER_SOURCE, "DetailType": "CarritoAbandonado", "Detail": "{}", "EventBusName": world.BUS},
    ]
    failed = aws.client("events").put_events(Entries=entries)["FailedEntryCount"]
    rows = []
    for name, url in ((world.WAREHOUSE_QUEUE, aws.warehouse_queue_url), (DELIVERY_QUEUE, delivery_url)):
        received = [json.loads(body) for body in drain(aws.sqs, url)]
        rows.append(
            {
                "queue": name,
                "received": [f"{e['detail-type']} {e['detail'].get('pedido_id')}" for e in received],
                "failed_entries": failed,
            }
        )
    return rows


# -- SNS straight to a function, against SNS -> SQS -> function: a model ------------------------------
@dataclass(frozen=True)
class Outage:
    """Orders confirmed every `every_seconds`; the ERP is down from `down_from` for `down_seconds`."""

    orders: int = 60
    every_seconds: int = 60
    down_from: int = 900
    down_seconds: int = 1_800
    visibility_timeout_seconds: int = 300
    max_receive_count: int = 4

    def __post_init__(self) -> None:
        check_range("orders", self.orders, 1, 10_000)
        check_range("every_seconds", self.every_seconds, 1, 3_600)
        check_range("down_seconds", self.down_seconds, 0, 86_400)
        check_range("max_receive_count", self.max_receive_count, 1, 1_000)

    def down(self, second: float) -> bool:
        return self.down_from <= second < self.down_from + self.down_seconds


def direct_vs_queued(outage: Outage | None = None) -> list[dict[str, Any]]:
    """What each path does with the orders confirmed around an ERP outage (a model, no AWS calls).

    Direct: Lambda's asynchronous invocation tries at t, t + 60 s and t + 180 s,
    then discards the event, unless the function has a dead-letter queue or an
    on-failure destination (neither is there by default), where it lands
    instead. Queued: the queue retries every visibility timeout, parks the
    message in the DLQ after maxReceiveCount receives, and a redrive after the fix delivers it.
    """
    outage = outage or Outage()
    sent = [n * outage.every_seconds for n in range(outage.orders)]
    direct_tries = [0, LAMBDA_ASYNC_RETRY_DELAYS[0], sum(LAMBDA_ASYNC_RETRY_DELAYS)]
    queued_tries = [k * outage.visibility_timeout_seconds for k in range(outage.max_receive_count)]
    rows = []
    for path, tries, rescue in (
        (T_("SNS -> function (defaults)"), direct_tries, "lost"),
        (T_("SNS -> function with its own DLQ"), direct_tries, "dlq"),
        (T_("SNS -> SQS -> function"), queued_tries, "dlq"),
    ):
        outcome = [next((k for k, d in enumerate(tries) if not outage.down(t + d)), None) for t in sent]
        failed = sum(1 for k in outcome if k is None)
        rows.append(
            {
                "path": path,
                "orders": outage.orders,
                "first_try": outcome.count(0),
                "after_retries": sum(1 for k in outcome if k),
                "retried_for_min": tries[-1] / 60,
                "lost": failed if rescue == "lost" else 0,
                "in_a_dlq": failed if rescue == "dlq" else 0,
            }
        )
    return rows


# -- our own rate limit toward a third party, set in the three places -------------------------------
def throttle_knobs(aws: world.World, rate_per_second: int) -> dict[str, Any]:
    """Set our own limit toward the ERP where the lesson names it, on moto, each where it applies; read it back.

    - an EventBridge API destination: InvocationRateLimitPerSecond, a rate;
    - SNS: throttlePolicy.maxReceivesPerSecond, which SNS honours only for
      HTTP/S subscriptions, so it goes on an HTTPS subscription of the ERP's
      endpoint (removed afterwards: moto would POST every later publish to it);
    - a Step Functions Map: MaxConcurrency caps iterations in flight, not a
      rate, so it is set to the calls in flight that stay within the rate.
    """
    events, sns, sfn = aws.client("events"), aws.client("sns"), aws.client("stepfunctions")
    connection = events.create_connection(
        Name="conexion-erp",
        AuthorizationType="API_KEY",
        AuthParameters={"ApiKeyAuthParameters": {"ApiKeyName": "x-api-key", "ApiKeyValue": "ficticia"}},
    )
    events.create_api_destination(
        Name="destino-erp",
        ConnectionArn=connection["ConnectionArn"],
        InvocationEndpoint=THIRD_PARTY_ENDPOINT,
        HttpMethod="POST",
        InvocationRateLimitPerSecond=rate_per_second,
    )
    subscription = sns.subscribe(
        TopicArn=aws.topic_arn, Protocol="https", Endpoint=THIRD_PARTY_ENDPOINT, ReturnSubscriptionArn=True
    )["SubscriptionArn"]
    policy = {"throttlePolicy": {"maxReceivesPerSecond": rate_per_second}}  # a subscription's DeliveryPolicy
    sns.set_subscription_attributes(
        SubscriptionArn=subscription, AttributeName="DeliveryPolicy", AttributeValue=json.dumps(policy)
    )
    delivery = json.loads(sns.get_subscription_attributes(SubscriptionArn=subscription)["Attributes"]["DeliveryPolicy"])
    sns.unsubscribe(SubscriptionArn=subscription)  # invariant: the world's topic keeps only SQS subscribers
    in_flight = throttle.concurrency_for_rate(rate_per_second, ERP_CALL_SECONDS)
    item = {"Avisar": {"Type": "Pass", "End": True}}
    notify = {"Type": "Map", "MaxConcurrency": in_flight, "ItemsPath": "$.lineas", "End": True}
    processor = {"ProcessorConfig": {"Mode": "INLINE"}, "StartAt": "Avisar", "States": item}
    definition = {"StartAt": "AvisarLineas", "States": {"AvisarLineas": notify | {"ItemProcessor": processor}}}
    machine = sfn.create_state_machine(
        name="mercadofresco-avisar-erp", definition=json.dumps(definition), roleArn=ROLE_ARN
    )
    stored = json.loads(sfn.describe_state_machine(stateMachineArn=machine["stateMachineArn"])["definition"])
    max_concurrency = stored["States"]["AvisarLineas"]["MaxConcurrency"]
    return {
        "EventBridge API destination: InvocationRateLimitPerSecond": events.describe_api_destination(
            Name="destino-erp"
        )["InvocationRateLimitPerSecond"],
        "SNS HTTPS subscription: throttlePolicy.maxReceivesPerSecond": delivery["throttlePolicy"][
            "maxReceivesPerSecond"
        ],
        "Step Functions Map: MaxConcurrency": max_concurrency,
        f"  calls a second it allows at {ERP_CALL_SECONDS:g} s a call": throttle.rate_for_concurrency(
            max_concurrency, ERP_CALL_SECONDS
        ),
    }
