"""Section 17's common mistakes that no earlier section measured (notebook 17).

Most mistakes reuse earlier experiments (`keys_and_table`, `retry.experiments`,
`sims.recovery`); the ones here are new:

- `lock_blocks_for`: how long a consumer that dies holding EN_CURSO blocks the
  order, read from the record and confirmed by probes one second either side;
- `declined_and_throttled`: retrying a declined card (402) wastes calls and
  delays the answer; a 429 is the 4xx that deserves a retry, after Retry-After;
- `inspect_by_deleting`: looking at a DLQ by receiving and deleting loses what you looked at;
- `ordering_cost`: one MessageGroupId for everything against one per order, on a FIFO queue;
- `dual_write`: a crash between COMMIT and publish, counted (a model with no
  database; notebook 13 runs the real outbox on PostgreSQL);
- `table_growth`: the table without a TTL, from the cost model of notebook 03.

The self-check at the end of notebook 17 is `lessons.quiz`.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from typing import Any

from mercadofresco import i18n, orders, queues, world
from mercadofresco.clock import VirtualClock
from mercadofresco.errors import check_range
from mercadofresco.i18n import T_, _
from mercadofresco.lessons import keys_and_table
from mercadofresco.lessons.dlq import incidents, redrive
from mercadofresco.models import gateway as gw
from mercadofresco.models import lambda_poller, move_task
from mercadofresco.patterns import backoff, dlq, idempotency, retry, retry_rules

ORDER = keys_and_table.ORDER  # PED-2026-084417, 48.20 €


# -- a lock without expiry ---------------------------------------------------------------------
def lock_blocks_for(aws: world.World, clock: VirtualClock, lock_expires: bool) -> dict[str, Any]:
    """A consumer takes cobro:PED-2026-084417 and dies. When can anyone charge the order again?

    The answer is read from the stored record (the acquire condition frees a key
    when its lock or the record expires), then checked: a second consumer is
    refused one second before that instant and succeeds one second after.
    """
    keys_and_table.empty_table(aws)
    store_class = idempotency.IdempotencyStore if lock_expires else keys_and_table.NoLockExpiryStore
    store = store_class(aws.dynamodb, clock)
    clave = idempotency.charge_key(ORDER.pedido_id)
    died_at = int(clock.timestamp())
    store.acquire(clave)  # ... and the process dies here: no complete, no release
    record = store.get(clave)
    free_at = min(record.caduca_bloqueo, record.expira_en)
    clock.advance(free_at - died_at - 1)
    refused = store.acquire(clave) is not None
    clock.advance(2)
    taken = store.acquire(clave) is None
    return {
        "lock_expires": lock_expires,
        "blocked_seconds": free_at - died_at,
        "blocked_hours": round((free_at - died_at) / 3600, 2),
        "refused_1s_before": refused,
        "taken_1s_after": taken,
    }


# -- retrying business 4xx ----------------------------------------------------------------------
def retry_everything(error: BaseException, idempotent: bool, now: dt.datetime | None = None) -> retry_rules.Decision:
    """WRONG: every error deserves another attempt (a declined card too)."""
    return retry_rules.Decision(retry_rules.Verdict.RETRY, "retry everything")


def never_retry_4xx(error: BaseException, idempotent: bool, now: dt.datetime | None = None) -> retry_rules.Decision:
    """WRONG the other way: every 4xx refused, the 429 too."""
    status = getattr(error, "status", None)
    if isinstance(status, int) and 400 <= status < 500:
        return retry_rules.Decision(retry_rules.Verdict.DO_NOT_RETRY, f"{status}: a 4xx")
    return retry_rules.classify(error, idempotent, now)


CLASSIFIERS = {
    T_("retry everything"): retry_everything,  # keys stay English (a widget and the tests name them); T_: shown
    T_("never retry 4xx"): never_retry_4xx,
    T_("classify"): retry_rules.classify,
}


def declined_and_throttled(clock: VirtualClock, classifier: str, max_attempts: int = 5) -> list[dict[str, Any]]:
    """A declined card (402) and a throttled call (429, Retry-After 7 s) under one classifier."""
    if classifier not in CLASSIFIERS:
        said = _("classifier must be one of {classifiers}; got {classifier}")
        raise ValueError(said.format(classifiers=", ".join(CLASSIFIERS), classifier=repr(classifier)))
    check_range("max_attempts", max_attempts, 1, 20)
    policy = retry.RetryPolicy(backoff.Exponential(base=0.5, cap=30), max_attempts, CLASSIFIERS[classifier])
    rows = []
    for case in (T_("402 card declined"), T_("429, Retry-After 7 s")):
        provider = gw.PaymentGateway(clock, declined_orders={ORDER.pedido_id} if case.startswith("402") else set())
        if case.startswith("429"):
            provider.fail_next(gw.Fault.THROTTLED, retry_after_seconds=7)
        client = gw.GatewayClient(provider, policy=policy)
        started = clock.seconds_since_start()
        try:
            client.charge(ORDER.pedido_id, ORDER.importe, idempotency.charge_key(ORDER.pedido_id))
            outcome = T_("charged")
        except gw.GatewayError as exc:
            outcome = _("gave up: {error}").format(error=type(exc).__name__)
        rows.append(
            {
                "error": case,
                "classifier": classifier,
                "gateway_calls": provider.calls,
                "wasted_calls": provider.calls - 1,
                "seconds_to_answer": round(clock.seconds_since_start() - started, 2),
                "outcome": outcome,
            }
        )
    return rows


# -- redriving before the fix --------------------------------------------------------------------
def redrive_before_fix(aws: world.World, clock: VirtualClock, count: int = 10) -> list[dict[str, Any]]:
    """`count` version-2 orders in the DLQ; redrive into the consumer that reads version 1 only, then after the fix."""
    check_range("count", count, 1, 50)
    pair = aws.reset_orders_queue(visibility_timeout_seconds=120, max_receive_count=4)
    reason = dlq.FailureReason("MalformedOrderError", "version 2, this consumer expects 1", "1.4.0", 4, pair.url)
    for number in range(count):
        body = incidents.version2_body(orders.order_id(920_000 + number), Decimal("48.20"))
        dlq.dead_letter_copy(aws.sqs, pair.dlq_url, body, reason, int(clock.timestamp() * 1000))
    client = gw.GatewayClient(gw.PaymentGateway(clock))
    rows = []
    for label, versions in ((T_("before the fix (reads 1)"), (1,)), (T_("after the fix (reads 1 and 2)"), (1, 2))):
        clock.advance(dlq.INSPECT_VISIBILITY_SECONDS + 1)
        task = move_task.start_message_move_task(aws.sqs, clock, pair.dlq_url, pair.url, 10)
        poller = redrive.consume(aws.sqs, pair.url, clock, client, versions)
        rows.append(
            {
                "redrive": label,
                **move_task.verify(aws.sqs, pair.dlq_url, task, redrive.deleted_count(poller)),
                "charges": len(client.gateway.ledger),
            }
        )
    return rows


# -- inspecting a DLQ by deleting ----------------------------------------------------------------
def inspect_by_deleting(aws: world.World, clock: VirtualClock, deleting: bool, count: int = 20) -> dict[str, Any]:
    """Look at 10 messages of a DLQ holding `count`; deleting what you read, or with `dlq.inspect`."""
    check_range("count", count, 10, 100)
    url = aws.sqs.create_queue(QueueName="mercadofresco-pedidos-fallidos-inspeccion")["QueueUrl"]
    bodies = [orders.order_body(orders.Order(orders.order_id(900_000 + n), Decimal("48.20"))) for n in range(count)]
    orders.send_entries(aws.sqs, url, [{"MessageBody": body} for body in bodies])
    if deleting:  # the mistake: receive, print, delete "to get them out of the way"
        for message in aws.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)["Messages"]:
            aws.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    else:
        dlq.inspect(aws.sqs, url, max_messages=10)
    clock.advance(dlq.INSPECT_VISIBILITY_SECONDS + 1)
    left = queues.queue_counts(aws.sqs, url)["visible"]
    aws.sqs.delete_queue(QueueUrl=url)
    return {
        "way": T_("receive and delete") if deleting else "dlq.inspect",
        "before": count,
        "after": left,
        "lost": count - left,
    }


# -- global order "just in case" ------------------------------------------------------------------
def ordering_cost(aws: world.World, clock: VirtualClock, one_group: bool, order_count: int = 12) -> dict[str, Any]:
    """`order_count` orders on a FIFO queue, 4 consumers, 2 s of work each: one group for all, or one per order."""
    check_range("order_count", order_count, 2, 40)
    name = "cola-mercadofresco-pedidos-orden.fifo"
    url = aws.sqs.create_queue(QueueName=name, Attributes={"FifoQueue": "true", "VisibilityTimeout": "60"})["QueueUrl"]
    entries = []
    for number in range(order_count):
        order = orders.Order(orders.order_id(910_000 + number), Decimal("48.20"))
        group = "todos" if one_group else order.pedido_id
        entries.append(
            {
                "MessageBody": orders.order_body(order),
                "MessageGroupId": group,
                "MessageDeduplicationId": order.pedido_id,
            }
        )
    orders.send_entries(aws.sqs, url, entries)

    def work(event: dict[str, Any], context: lambda_poller.Invocation) -> dict[str, Any]:
        context.wait(2.0 * len(event["Records"]))
        return {"batchItemFailures": []}

    config = lambda_poller.PollerConfig(batch_size=1, max_concurrency=4, max_idle_poll_seconds=20)
    poller = lambda_poller.Poller(aws.sqs, url, work, clock, config)
    timeline = poller.run_until_idle(3_600)
    aws.sqs.delete_queue(QueueUrl=url)
    deletes = [row["seconds"] for row in timeline if row["event"] == "deleted"]
    return {
        "groups": T_("one for all") if one_group else T_("one per order"),
        "orders": order_count,
        "consumers": 4,
        "seconds_to_drain": max(deletes),
        "orders_per_minute": round(60 * len(deletes) / max(deletes), 1),
    }


# -- the dual write -----------------------------------------------------------------------------
def dual_write(order_count: int = 9_000, crash_probability: float = 1 / 900, seed: int = 0) -> list[dict[str, Any]]:
    """A model, no database: the process dies between COMMIT and publish with `crash_probability`.

    Dual write: the order is committed, then published; a death in between
    leaves an order without its event and no trace. Same transaction (the
    outbox's idea): the order and its pending event commit together, and a
    publisher that runs later publishes every pending row (twice, if it dies
    between publishing and marking: a duplicate the consumers absorb).
    """
    check_range("order_count", order_count, 1, 1_000_000)
    check_range("crash_probability", crash_probability, 0, 1)
    rows = []
    for design in (T_("dual write"), T_("same transaction + publisher")):
        rng = random.Random(seed)  # both designs meet the same crashes
        committed, published, pending = 0, [], []
        for number in range(order_count):
            committed += 1
            if design == "dual write":
                if rng.random() >= crash_probability:
                    published.append(number)
            else:
                pending.append(number)  # committed with the order, in the same transaction
                rng.random()
        for number in pending:  # the publisher, later: publish, then mark (it may die in between)
            published.append(number)
            if rng.random() < crash_probability:
                published.append(number)  # it died before marking: the next run publishes it again
        rows.append(
            {
                "design": design,
                "orders_committed": committed,
                "events_missing": committed - len(set(published)),
                "events_duplicated": len(published) - len(set(published)),
            }
        )
    return rows


# -- a table without TTL ------------------------------------------------------------------------
def table_growth(months: int, ttl_hours: float | None) -> dict[str, Any]:
    """Records alive after `months` with a TTL (one TTL's worth) or without (everything ever written)."""
    check_range("months", months, 1, 120)
    with_ttl = keys_and_table.monthly_cost(ttl_hours if ttl_hours else 24)
    records_per_hour = with_ttl["live_records"] / (ttl_hours if ttl_hours else 24)
    live = with_ttl["live_records"] if ttl_hours else round(records_per_hour * 24 * 30 * months)
    cost = keys_and_table.monthly_cost(live / records_per_hour)
    return {
        "ttl": f"{i18n.number(ttl_hours, 'g')} h" if ttl_hours else T_("none"),
        "months": months,
        "live_records": live,
        "storage_usd_per_month": cost["storage_usd"],
    }
