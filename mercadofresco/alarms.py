"""CloudWatch alarms that moto stores but never evaluates, evaluated here (notebooks 09-11).

moto keeps an alarm's definition and its state, and `set_alarm_state` works,
but nothing ever compares a metric with the threshold, and nothing notifies
the alarm's SNS action. `evaluate` does both, as a model of what CloudWatch
does: the caller computes the value the alarm watches (a breaker's openings,
the messages in a DLQ, the age of its oldest message), `evaluate` compares it
with the rule, sets the alarm's state in moto, and on a change to ALARM
publishes to `alertas-mercadofresco`, as the alarm's action would.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from mercadofresco.errors import MercadoFrescoError

COMPARISONS = {
    "GreaterThanThreshold": lambda value, threshold: value > threshold,
    "GreaterThanOrEqualToThreshold": lambda value, threshold: value >= threshold,
}


class AlarmNotDefinedError(MercadoFrescoError):
    """The alarm was evaluated before `define` created it."""


@dataclass(frozen=True)
class AlarmRule:
    """One alarm: which metric, how it is compared, over what period, and who hears about it."""

    name: str
    namespace: str
    metric_name: str
    threshold: float
    period_seconds: int = 300
    comparison: str = "GreaterThanThreshold"
    statistic: str = "Maximum"
    dimensions: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.comparison not in COMPARISONS:
            raise ValueError(f"comparison must be one of {', '.join(COMPARISONS)}; got {self.comparison!r}")
        if not 10 <= self.period_seconds <= 86_400:
            raise ValueError(f"period_seconds must be between 10 and 86400; got {self.period_seconds}")

    def breached_by(self, value: float) -> bool:
        """True if `value` puts the alarm in ALARM."""
        return COMPARISONS[self.comparison](value, self.threshold)


@dataclass(frozen=True)
class Evaluation:
    """What one evaluation saw and decided."""

    alarm: str
    value: float
    state: str
    changed: bool
    at: dt.datetime


def define(cloudwatch: Any, rule: AlarmRule, topic_arn: str) -> None:
    """Create (or replace) the alarm in CloudWatch, with `topic_arn` as its action."""
    cloudwatch.put_metric_alarm(
        AlarmName=rule.name,
        Namespace=rule.namespace,
        MetricName=rule.metric_name,
        Dimensions=[{"Name": name, "Value": value} for name, value in rule.dimensions],
        Statistic=rule.statistic,
        Period=rule.period_seconds,
        EvaluationPeriods=1,
        Threshold=rule.threshold,
        ComparisonOperator=rule.comparison,
        AlarmActions=[topic_arn],
        OKActions=[topic_arn],
        TreatMissingData="notBreaching",
    )


def state_of(cloudwatch: Any, name: str) -> str:
    """The alarm's state as CloudWatch (moto) holds it: OK, ALARM or INSUFFICIENT_DATA."""
    alarms = cloudwatch.describe_alarms(AlarmNames=[name])["MetricAlarms"]
    if not alarms:
        raise AlarmNotDefinedError(f"no alarm named {name!r}; call alarms.define first")
    return alarms[0]["StateValue"]


def evaluate(cloudwatch: Any, sns: Any, rule: AlarmRule, value: float, now: dt.datetime) -> Evaluation:
    """Compare `value` with the rule, set the alarm's state, and notify its action on a change."""
    alarms = cloudwatch.describe_alarms(AlarmNames=[rule.name])["MetricAlarms"]
    if not alarms:
        raise AlarmNotDefinedError(f"no alarm named {rule.name!r}; call alarms.define first")
    before = alarms[0]["StateValue"]
    state = "ALARM" if rule.breached_by(value) else "OK"
    if state != before:
        reason = f"{rule.metric_name} = {value:g} ({rule.comparison} {rule.threshold:g}) at {now:%a %H:%M:%S}"
        data = json.dumps({"value": value, "threshold": rule.threshold})
        cloudwatch.set_alarm_state(AlarmName=rule.name, StateValue=state, StateReason=reason, StateReasonData=data)
        topics = alarms[0]["AlarmActions"] if state == "ALARM" else alarms[0]["OKActions"]
        for topic_arn in topics:
            sns.publish(TopicArn=topic_arn, Subject=f"{state}: {rule.name}", Message=f"{state}: {rule.name}: {reason}")
    return Evaluation(rule.name, value, state, state != before, now)


def subscribe_inbox(sns: Any, sqs: Any, topic_arn: str, queue_name: str = "cola-mercadofresco-guardia") -> str:
    """A queue subscribed to `topic_arn` (raw delivery): the on-call inbox a notebook can read."""
    url = sqs.create_queue(QueueName=queue_name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"})
    return url


def read_inbox(sqs: Any, inbox_url: str) -> list[str]:
    """Every notification waiting in the inbox (read and deleted: these are copies for the reader)."""
    seen = []
    while True:
        messages = sqs.receive_message(QueueUrl=inbox_url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get(
            "Messages", []
        )
        if not messages:
            return seen
        for message in messages:
            seen.append(message["Body"])
            sqs.delete_message(QueueUrl=inbox_url, ReceiptHandle=message["ReceiptHandle"])
