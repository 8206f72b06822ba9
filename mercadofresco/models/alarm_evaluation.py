"""CloudWatch's alarm evaluation, which moto lacks, as a model (notebooks 09-11).

moto keeps an alarm's definition and its state, and `set_alarm_state` works,
but nothing ever compares a metric with the threshold, and nothing notifies
the alarm's SNS action. `evaluate` does both, as CloudWatch would: the caller
computes the value the alarm watches, `evaluate` compares it with the rule,
sets the alarm's state in moto, and on a change publishes to
`alertas-mercadofresco`, as the alarm's action would.

- `OpenAlarm`: the breaker's openings as a metric in MercadoFresco/Tienda and an
  alarm on them;
- `check_dlq_alarms`: the two DLQ alarms, their values computed from the queue
  because moto publishes no AWS/SQS metrics (the age from the original send
  time, not from the move to the DLQ as AWS's metric counts it).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from mercadofresco import alarms, queues, world
from mercadofresco.alarms import AlarmNotDefinedError, AlarmRule, Evaluation
from mercadofresco.i18n import _, moment, number
from mercadofresco.patterns import dlq
from mercadofresco.patterns.breaker import OPENED_METRIC  # not breaker_store: that one imports redis (0.15 s)


def evaluate(cloudwatch: Any, sns: Any, rule: AlarmRule, value: float, now: dt.datetime) -> Evaluation:
    """Compare `value` with the rule, set the alarm's state, and notify its action on a change."""
    found = cloudwatch.describe_alarms(AlarmNames=[rule.name])["MetricAlarms"]
    if not found:
        said = _("no alarm named {name}; call {define} first")
        raise AlarmNotDefinedError(said.format(name=repr(rule.name), define="alarms.define"))
    before = found[0]["StateValue"]
    state = "ALARM" if rule.breached_by(value) else "OK"
    if state != before:
        reason = _("{metric} = {value} ({comparison} {threshold}) at {time}").format(
            metric=rule.metric_name, value=number(value, "g"), comparison=rule.comparison,
            threshold=number(rule.threshold, "g"), time=moment(now, "%a %H:%M:%S"),
        )  # fmt: skip
        data = json.dumps({"value": value, "threshold": rule.threshold})
        cloudwatch.set_alarm_state(AlarmName=rule.name, StateValue=state, StateReason=reason, StateReasonData=data)
        topics = found[0]["AlarmActions"] if state == "ALARM" else found[0]["OKActions"]
        for topic_arn in topics:
            sns.publish(TopicArn=topic_arn, Subject=f"{state}: {rule.name}", Message=f"{state}: {rule.name}: {reason}")
    return Evaluation(rule.name, value, state, state != before, now)


def oldest_age_seconds(sqs: Any, dlq_url: str, now: dt.datetime) -> float:
    """Age of the oldest message, counted from the order's original send time, read with inspect; 0 if empty.

    AWS's ApproximateAgeOfOldestMessage on a DLQ counts from when the message
    reached the DLQ (standard queues keep the original enqueue time only for
    retention), so the two agree only when a message spends no time in the
    source queue before it is dead-lettered. Every inspection is a receive: on a
    live queue it spends one of a message's maxReceiveCount and hides it for 5 s.
    """
    samples = dlq.inspect(sqs, dlq_url, max_messages=1_000)
    return max(0.0, (now - samples[0].sent_at).total_seconds()) if samples else 0.0


def check_dlq_alarms(
    aws: world.World, dlq_url: str, now: dt.datetime, dlq_name: str = world.ORDERS_DLQ
) -> dict[str, Any]:
    """Evaluate both DLQ alarms at `now` from what the queue holds: the values seen and each alarm's state."""
    count_rule, age_rule = dlq.alarm_rules(dlq_name)
    visible = queues.queue_counts(aws.sqs, dlq_url)["visible"]
    age = oldest_age_seconds(aws.sqs, dlq_url, now)
    cloudwatch, sns = aws.client("cloudwatch"), aws.client("sns")
    return {
        "visible": visible,
        "oldest_minutes": round(age / 60, 1),
        "count": evaluate(cloudwatch, sns, count_rule, visible, now).state,
        "age": evaluate(cloudwatch, sns, age_rule, age, now).state,
    }


# -- observability ----------------------------------------------------------------------
class OpenAlarm:
    """Publishes a metric on every opening and evaluates the alarm that tells alertas-mercadofresco."""

    def __init__(self, cloudwatch: Any, sns: Any, topic_arn: str, breaker_name: str, period_seconds: int = 60) -> None:
        self.cloudwatch = cloudwatch
        self.sns = sns
        self.rule = alarms.AlarmRule(
            name=f"mercadofresco-breaker-{breaker_name}-abierto",
            namespace=world.METRICS_NAMESPACE,
            metric_name=OPENED_METRIC,
            threshold=0,
            period_seconds=period_seconds,
            statistic="Sum",
            dimensions=(("Breaker", breaker_name),),
        )
        self.evaluations: list[alarms.Evaluation] = []
        alarms.define(cloudwatch, self.rule, topic_arn)

    def opened(self, now: dt.datetime) -> alarms.Evaluation:
        """Record one opening at `now`, then evaluate the alarm."""
        self.cloudwatch.put_metric_data(
            Namespace=world.METRICS_NAMESPACE,
            MetricData=[
                {
                    "MetricName": self.rule.metric_name,
                    "Dimensions": [{"Name": n, "Value": v} for n, v in self.rule.dimensions],
                    "Timestamp": now,
                    "Value": 1.0,
                    "Unit": "Count",
                }
            ],
        )
        return self.evaluate(now)

    def openings(self, now: dt.datetime) -> float:
        """Openings recorded in the alarm's period ending at `now` (read back from CloudWatch)."""
        points = self.cloudwatch.get_metric_statistics(
            Namespace=world.METRICS_NAMESPACE,
            MetricName=self.rule.metric_name,
            Dimensions=[{"Name": n, "Value": v} for n, v in self.rule.dimensions],
            StartTime=now - dt.timedelta(seconds=self.rule.period_seconds),
            EndTime=now + dt.timedelta(seconds=1),
            Period=self.rule.period_seconds,
            Statistics=["Sum"],
        )["Datapoints"]
        return sum(point["Sum"] for point in points)

    def evaluate(self, now: dt.datetime) -> alarms.Evaluation:
        """What CloudWatch would do at `now`: compare the openings in the period with the threshold."""
        evaluation = evaluate(self.cloudwatch, self.sns, self.rule, self.openings(now), now)
        self.evaluations.append(evaluation)
        return evaluation
