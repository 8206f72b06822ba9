"""MercadoFresco's CloudWatch alarms: a rule, its definition in CloudWatch, and the on-call inbox (notebooks 09-11).

`AlarmRule` is one alarm as data; `define` creates it with `alertas-mercadofresco`
as its action; `state_of` reads its state back. moto stores alarms but never
evaluates them: `models.alarm_evaluation` does that part, as a labelled model.
`subscribe_inbox` / `read_inbox` give the notebooks a queue to read the alerts from.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from mercadofresco.errors import MercadoFrescoError, check_range
from mercadofresco.i18n import _

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
            said = _("{name} must be one of {choices}; got {value}")
            raise ValueError(
                said.format(name="comparison", choices=", ".join(COMPARISONS), value=repr(self.comparison))
            )
        check_range("period_seconds", self.period_seconds, 10, 86_400)

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
        raise AlarmNotDefinedError(
            _("no alarm named {name}; call {define} first").format(name=repr(name), define="alarms.define")
        )
    return alarms[0]["StateValue"]


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
