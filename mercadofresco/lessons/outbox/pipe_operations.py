"""Operating the Streams answer (notebook 13): a stopped pipe loses what the stream trims, a bad record blocks.

The pipe `pipe-mf-carritos-abandonados` is created through moto's Pipes API with
a DLQ and a retry limit; `models.stream_pipe` moves the records (moto moves none)
and trims what is older than 24 hours. Two runs on the virtual clock:

- `stopped_pipe`: carts are abandoned all along, the pipe stops for some hours and
  comes back (and dies once right after its first batch, so that batch goes out
  twice); every period the lag alarm looks at the age of the oldest undelivered record;
- `poison_record`: one cart whose event the bus refuses at every attempt (injected: its
  Detail is cut short, not valid JSON, which moto refuses as EventBridge does, entry by
  entry, with `MalformedDetail`), with and without a retry limit.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from mercadofresco import alarms, names, world
from mercadofresco.clock import VirtualClock
from mercadofresco.errors import check_range
from mercadofresco.i18n import _, number
from mercadofresco.lessons.outbox import streams
from mercadofresco.lessons.outbox.experiments import BusTap
from mercadofresco.models import alarm_evaluation, stream_pipe

PIPE_NAME = "pipe-mf-carritos-abandonados"
PIPE_DLQ = "mercadofresco-pipe-carritos-fallidos"
LAG_ALARM = "mercadofresco-pipe-carritos-antiguedad"
LAG_ALARM_SECONDS = 3_600  # an hour behind: 23 hours left before the stream starts deleting
ROLE_ARN = "arn:aws:iam::123456789012:role/mercadofresco-pipes"
POISONED_CART = 2  # poison_record: the cart whose event the bus refuses every time


@dataclass(frozen=True)
class PipeOutage:
    """How long the pipe is down, how often carts are abandoned, how long and how often we look."""

    down_hours: float = 30.0
    carts_per_hour: int = 1
    watch_hours: int = 36
    period_minutes: int = 180
    stops_at_hour: float = 1.0

    def __post_init__(self) -> None:
        check_range("down_hours", self.down_hours, 0, 72)
        check_range("carts_per_hour", self.carts_per_hour, 1, 6)
        check_range("watch_hours", self.watch_hours, self.stops_at_hour + self.down_hours + 1, 96)
        check_range("period_minutes", self.period_minutes, 10, 360)


def create_pipe(aws: world.World, stream_arn: str, retries: int = 3, batch_size: int = 10) -> stream_pipe.StreamPipe:
    """Create the pipe (moto's API: DLQ, retry limit, batch size) and the model that moves its records."""
    pipes = aws.client("pipes")
    if PIPE_NAME in [pipe["Name"] for pipe in pipes.list_pipes()["Pipes"]]:
        pipes.delete_pipe(Name=PIPE_NAME)
    dlq_url = aws.sqs.create_queue(QueueName=PIPE_DLQ)["QueueUrl"]
    dlq_arn = aws.sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    bus_arn = aws.client("events").describe_event_bus(Name=names.BUS)["Arn"]
    parameters: dict[str, Any] = {"StartingPosition": "TRIM_HORIZON", "BatchSize": batch_size}
    parameters["MaximumRetryAttempts"] = retries  # -1, the default: retry until the record expires
    parameters["DeadLetterConfig"] = {"Arn": dlq_arn}
    pipes.create_pipe(
        Name=PIPE_NAME,
        RoleArn=ROLE_ARN,
        Source=stream_arn,
        Target=bus_arn,
        SourceParameters={"DynamoDBStreamParameters": parameters},
    )
    return stream_pipe.StreamPipe(
        pipes, streams.streams_client(aws), BusTap(aws.client("events")), aws.sqs, PIPE_NAME, stream_arn, _entry
    )


def _entry(record: dict[str, Any]) -> dict[str, Any] | None:
    """The CarritoAbandonado of an ABANDONADO insert, None for any other change."""
    image = record["dynamodb"].get("NewImage", {})
    if record["eventName"] != "INSERT" or image.get("estado", {}).get("S") != "ABANDONADO":
        return None
    detail = {"carrito_id": image["carrito_id"]["S"], "evento_id": record["dynamodb"]["SequenceNumber"]}
    return {
        "Source": names.ORDER_SOURCE,
        "DetailType": streams.CART_ABANDONED,
        "Detail": json.dumps(detail),
        "EventBusName": names.BUS,
    }


def _abandon(aws: world.World, number: int) -> None:
    item = {"carrito_id": {"S": f"CAR-2026-{number:06d}"}, "estado": {"S": "ABANDONADO"}}
    aws.dynamodb.put_item(TableName=streams.CARTS_TABLE, Item=item)


def lag_rule(period_seconds: int) -> alarms.AlarmRule:
    """The lag alarm: the oldest record the pipe has not delivered is more than an hour old."""
    return alarms.AlarmRule(
        LAG_ALARM, names.METRICS_NAMESPACE, "PipeCarritosAntiguedadSegundos", LAG_ALARM_SECONDS, period_seconds
    )


def stopped_pipe(aws: world.World, clock: VirtualClock, config: PipeOutage = PipeOutage()) -> dict[str, Any]:
    """Carts all along, the pipe down `down_hours`; one row per period and what was delivered, twice, or lost."""
    pipe = create_pipe(aws, streams.create_carts_table(aws.dynamodb))
    cloudwatch, sns = aws.client("cloudwatch"), aws.client("sns")
    rule = lag_rule(config.period_minutes * 60)
    alarms.define(cloudwatch, rule, aws.alerts_topic_arn)
    start, period = clock.now(), dt.timedelta(minutes=config.period_minutes)
    stop, restart = (
        start + dt.timedelta(hours=h) for h in (config.stops_at_hour, config.stops_at_hour + config.down_hours)
    )
    spacing, written, rows, died, running = dt.timedelta(hours=1) / config.carts_per_hour, 0, [], False, True
    for step in range(1, int(config.watch_hours * 60 / config.period_minutes) + 1):
        until = start + step * period
        while start + written * spacing < until:  # each cart at its own instant: the stream stamps it
            clock.advance_to(start + written * spacing)
            written += 1
            _abandon(aws, written)
        clock.advance_to(until)
        running = _set_state(pipe, not stop <= clock.now() < restart, running)
        try:
            pipe.poll(clock.now(), die_after_publish=clock.now() >= restart and not died)
        except stream_pipe.PipeDied:
            died = True
        age = pipe.iterator_age_seconds(clock.now())
        state = alarm_evaluation.evaluate(cloudwatch, sns, rule, age, clock.now()).state
        rows.append({"hour": step * config.period_minutes / 60, "age_hours": round(age / 3_600, 2), "alarm": state})
    seen = Counter(detail["carrito_id"] for detail in pipe.events.accepted)
    return {
        "rows": rows,
        "carts written": written,
        "events on the bus": sum(seen.values()),
        "carts announced": len(seen),
        "announced twice": sum(1 for count in seen.values() if count > 1),
        "lost": written - len(seen),  # trimmed before the pipe delivered them
        "lag alarm at hour": next((row["hour"] for row in rows if row["alarm"] == "ALARM"), None),
    }


def _set_state(pipe: stream_pipe.StreamPipe, running: bool, now_running: bool) -> bool:
    if now_running != running:
        (pipe.pipes.start_pipe if running else pipe.pipes.stop_pipe)(Name=pipe.name)
    return running


def poison_record(
    aws: world.World, clock: VirtualClock, retries: int, carts: int = 8, hours: int = 26
) -> dict[str, Any]:
    """One cart an hour, a poll every 2 hours; cart 2's event has a Detail that is not JSON, so the bus refuses it."""
    pipe = create_pipe(aws, streams.create_carts_table(aws.dynamodb), retries=retries, batch_size=1)
    pipe.to_entry = _cut_short  # moto answers cart 2's entry with MalformedDetail, at every attempt
    dlq_url = aws.sqs.get_queue_url(QueueName=PIPE_DLQ)["QueueUrl"]
    dlq_before = _visible(aws, dlq_url)
    start, delivered_at = clock.now(), {}
    for hour in range(hours):
        if hour < carts:  # cart n is abandoned at hour n - 1
            _abandon(aws, hour + 1)
        clock.advance_to(start + dt.timedelta(hours=hour + 1))
        if hour % 2:
            pipe.poll(clock.now())
            for detail in pipe.events.accepted:
                delivered_at.setdefault(int(detail["carrito_id"][-6:]), hour + 1)
    waits = [delivered_at[n] - (n - 1) for n in range(3, carts + 1) if n in delivered_at]
    return {
        "MaximumRetryAttempts": retries,
        "carts behind it delivered": _("{delivered} of {carts}").format(
            delivered=number(len(waits)), carts=number(carts - 2)
        ),
        "longest wait behind it (h)": max(waits) if waits else None,
        "refused cart to the DLQ": _visible(aws, dlq_url) - dlq_before,
        "refused cart lost (trimmed)": len(pipe.expired),
    }


def _cut_short(record: dict[str, Any]) -> dict[str, Any] | None:
    """`_entry`, but cart 2's Detail ends halfway (injected): not valid JSON, which no retry can mend."""
    entry = _entry(record)
    if entry is not None and json.loads(entry["Detail"])["carrito_id"] == f"CAR-2026-{POISONED_CART:06d}":
        entry["Detail"] = entry["Detail"][: len(entry["Detail"]) // 2]
    return entry


def _visible(aws: world.World, queue_url: str) -> int:
    attributes = aws.sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"])
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])
