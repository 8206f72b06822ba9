"""Class 210's closing parts against this workbook (notebook 18): its checklist, what to watch, its three failures.

- `run_checklist`: the class's fifteen items, each judged by the settings
  checker (`patterns.consumer_config`), by evidence an experiment of the
  notebook produced, or marked "not checked here" with the reason;
- `watch_rules` / `define_watch`: "what to watch" as CloudWatch alarms on
  CloudShop's queues and function, defined in moto's CloudWatch (which stores
  alarms and never evaluates them; `models.alarm_evaluation` does that part);
- `three_failures`: the class's three failures beside the figure the
  notebook measured for each;
- `Measured`, `before_after`, `evidence`: what the notebook's experiments
  measured, read into class 210's before/after table and into the evidence
  `run_checklist` judges its other items by.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mercadofresco import alarms, world
from mercadofresco.lessons.cloudshop import case, dead_letters
from mercadofresco.patterns import consumer_config
from mercadofresco.sims.mass_redrive import MassRedriveResult

WATCH_TOPIC = "cloudshop-guardia"
CONSUMERS_NAMESPACE = "CloudShop/Consumidores"  # the two signals AWS publishes no metric for


@dataclass(frozen=True)
class Item:
    """One line of class 210's checklist and how this workbook judges it."""

    text: str
    key: str  # a consumer_config rule, or the key of the evidence the notebook passes in


CHECKLIST = (
    Item("the bus for one-to-many, the queue to absorb", "bus_one_to_many"),
    Item("a queue between the bus and the function, no direct link", "queue_between"),
    Item("events are facts with data, versioned and validated", "facts_with_data"),
    Item("visibility covers the longest batch", "visibility >= timeout x batch"),
    Item("maxReceiveCount decided, not a default", "3 <= maxReceiveCount <= 5"),
    Item("partial batch failure on", "partial batch response"),
    Item("long polling on", "long polling"),
    Item("every operation with an effect is idempotent", "idempotent"),
    Item("the producer generates the idempotency key", "producer_key"),
    Item("the key record tells EN_CURSO from COMPLETADO", "in_progress_vs_done"),
    Item("an age alarm on the DLQ", "age_alarm"),
    Item("the failure's reason is kept with the message", "reason_kept"),
    Item("the redrive procedure exists and has been run", "procedure_run"),
    Item("the redrive is rate-limited", "rate_limited"),
    Item("poison messages discarded with a record", "poison_discarded"),
)
RULES = {finding.rule for finding in consumer_config.check(consumer_config.ConsumerSettings("x", 1, 1, 1))}
CLASS_210_RESULTS = (  # what class 210 reports, before -> after
    ("duplicate emails", "1,840 -> 0"),
    ("duplicate stock discounts", "340 -> 0"),
    ("messages in the DLQ", "41,200 -> max 92"),
    ("oldest message in the DLQ", "13 days -> 41 min"),
    ("messages expired and lost", "almost 41,200 -> 0"),
    ("redrives that caused an incident", "1 of 1 -> 0 of 7"),
    ("messages discarded with a record", "0 -> 214"),
)


@dataclass(frozen=True)
class Measured:
    """What notebook 18's experiments measured, as its closing tables read it."""

    emails: list[dict[str, Any]]  # case.duplicate_emails, a row for each of case.EMAIL_DESIGNS
    stock: dict[int, case.StockRun]  # case.stock_discounts by visibility: 30 s and 300 s
    letters: list[dead_letters.DeadLetter]  # billing's DLQ
    kinds: list[dict[str, Any]]  # dead_letters.breakdown of the letters
    expiring: list[dict[str, Any]]  # dead_letters.expiring: a row a day from the discovery
    alarm_times: list[dict[str, Any]]  # dead_letters.alarm_times, in the order of dead_letters.alarm_rules
    hasty: MassRedriveResult  # the redrive all at once, at class 210's ramp
    hasty_standard: MassRedriveResult  # all at once, on a standard mapping
    paced: MassRedriveResult  # paced, MaximumConcurrency 40

    def duplicates(self, design: str) -> int:
        """The extra emails customers got in the campaign through `design` (one of case.EMAIL_DESIGNS)."""
        return next(row for row in self.emails if row["design"] == design)["duplicates"]

    def stock_duplicated(self, visibility: int) -> int:
        """The stock discounts repeated with a visibility timeout of `visibility` seconds."""
        return self.stock[visibility].summary()["duplicated"]

    def lost_in_48h(self) -> int:
        """The messages retention deletes within two days of the discovery."""
        return sum(row["expire"] for row in self.expiring[:2])

    def age_alarm_fires(self) -> str:
        """How long after the first dead letter the DLQ's age alarm (oldest > 1 h, to on-call) fires."""
        return self.alarm_times[1]["fires_after_first_message"]

    def to_discard(self) -> int:
        """The messages to discard with a record: those whose data is wrong."""
        return next(row for row in self.kinds if row["kind"] == "data")["messages"]


def run_checklist(
    settings: list[consumer_config.ConsumerSettings], evidence: dict[str, tuple[bool | None, str]]
) -> list[dict[str, Any]]:
    """Each item: "kept", "BROKEN" or "not checked here", and why.

    Settings items are checked on every consumer in `settings`; the others read
    `evidence[key]`, a verdict (None: not checked here) and the figure or reason
    behind it. An item with neither is reported as missing evidence.
    """
    rows = []
    for item in CHECKLIST:
        if item.key in RULES:
            findings = [f for s in settings for f in consumer_config.check(s) if f.rule == item.key]
            verdict: bool | None = all(f.ok for f in findings)
            why = f"settings checker: {sum(f.ok for f in findings)} of {len(findings)} consumers keep it"
        else:
            verdict, why = evidence.get(item.key, (None, "no evidence passed in"))
        word = "not checked here" if verdict is None else "kept" if verdict else "BROKEN"
        rows.append({"item": item.text, "verdict": word, "evidence": why})
    return rows


def watch_rules(queue: str, dlq: str, function: str) -> list[tuple[str, alarms.AlarmRule]]:
    """Class 210's "what to watch", one alarm each; thresholds on the source queue are our choice."""

    def sqs(name: str, metric: str, threshold: float, on: str) -> alarms.AlarmRule:
        return alarms.AlarmRule(name, "AWS/SQS", metric, threshold, 300, dimensions=(("QueueName", on),))

    return [
        (
            "age of the oldest message in the queue",
            sqs(f"{queue}-antiguedad", "ApproximateAgeOfOldestMessage", 300, queue),
        ),
        ("queue depth", sqs(f"{queue}-profundidad", "ApproximateNumberOfMessagesVisible", 1_000, queue)),
        (
            "messages in the DLQ, by age: on-call",
            sqs(f"{dlq}-antiguedad-1h", "ApproximateAgeOfOldestMessage", 3_600, dlq),
        ),
        (
            "messages in the DLQ, by age: escalate",
            sqs(f"{dlq}-antiguedad-7d", "ApproximateAgeOfOldestMessage", 7 * 86_400, dlq),
        ),
        (
            "failed invocations of the consumer",
            alarms.AlarmRule(
                f"{function}-errores",
                "AWS/Lambda",
                "Errors",
                0,
                300,
                statistic="Sum",
                dimensions=(("FunctionName", function),),
            ),
        ),
        (
            "repeated receives of one message (custom metric)",
            alarms.AlarmRule(
                f"{function}-recepciones-repetidas",
                CONSUMERS_NAMESPACE,
                "MensajesRecibidosMasDeUnaVez",
                0,
                300,
                statistic="Sum",
                dimensions=(("FunctionName", function),),
            ),
        ),
        (
            "delay from the fact to its processing (custom metric)",
            alarms.AlarmRule(
                f"{function}-retraso",
                CONSUMERS_NAMESPACE,
                "RetrasoProcesoSegundos",
                300,
                300,
                dimensions=(("FunctionName", function),),
            ),
        ),
    ]


def define_watch(aws: world.World, queue: str, dlq: str, function: str) -> list[dict[str, Any]]:
    """Define the watch alarms in CloudWatch (moto), to `cloudshop-guardia`; return them as CloudWatch holds them."""
    topic_arn = aws.client("sns").create_topic(Name=WATCH_TOPIC)["TopicArn"]
    cloudwatch = aws.client("cloudwatch")
    rules = watch_rules(queue, dlq, function)
    for _, rule in rules:
        alarms.define(cloudwatch, rule, topic_arn)
    held = {
        a["AlarmName"]: a for a in cloudwatch.describe_alarms(AlarmNames=[r.name for _, r in rules])["MetricAlarms"]
    }
    return [
        {
            "watch": label,
            "alarm": rule.name,
            "metric": f"{held[rule.name]['Namespace']} {held[rule.name]['MetricName']}",
            "threshold": held[rule.name]["Threshold"],
            "state": held[rule.name]["StateValue"],
        }
        for label, rule in rules
    ]


def three_failures(duplicated_at_30s: int, orders: int, charged_twice: int, lost_in_48h: int) -> list[dict[str, Any]]:
    """Class 210's three failures, each with the figure this workbook measured for it."""
    return [
        {
            "failure": "visibility shorter than the processing",
            "gives": "duplicates",
            "measured": f"{duplicated_at_30s} of {orders} stock discounts repeated at 30 s (notebook 18)",
        },
        {
            "failure": "no idempotency",
            "gives": "duplicates with an effect",
            "measured": f"{charged_twice} customers charged twice by a redrive (notebook 11's experiment)",
        },
        {
            "failure": "a DLQ without an alarm or a redrive",
            "gives": "silent loss",
            "measured": f"{lost_in_48h:,} messages expire within 48 h of the discovery (notebook 18)",
        },
    ]


def before_after(measured: Measured) -> list[dict[str, Any]]:
    """Class 210's before and after, each beside what this notebook's models of the same problem gave."""
    direct, _, marked = (measured.duplicates(design) for design in case.EMAIL_DESIGNS)
    campaign = measured.emails[0]["events"]
    hasty, standard, paced = measured.hasty.back_in_dlq, measured.hasty_standard.back_in_dlq, measured.paced.back_in_dlq
    models = {
        "duplicate emails": f"{direct} of {campaign} -> {marked} of {campaign}",
        "duplicate stock discounts": f"{measured.stock_duplicated(30)} of 10 -> {measured.stock_duplicated(300)} of 10",
        "messages in the DLQ": f"{len(measured.letters):,} (input) -> not modelled",
        "oldest message in the DLQ": f"13 d 1 h (input) -> age alarm at {measured.age_alarm_fires()}",
        "messages expired and lost": f"{measured.lost_in_48h():,} within 48 h -> 0 if redriven",
        "redrives that caused an incident": f"hasty: {hasty:,} (class 210's ramp), {standard} (standard mapping) "
        f"back in the DLQ -> paced: {paced}",
        "messages discarded with a record": f"{measured.to_discard()} to discard in this incident",
    }
    return [{"what": what, "class_210": said, "models": models[what]} for what, said in CLASS_210_RESULTS]


def evidence(measured: Measured, watch: list[dict[str, Any]]) -> dict[str, tuple[bool | None, str]]:
    """The evidence `run_checklist` judges the items that are not settings by: a verdict (None: not checked here)
    and the figure or reason behind it. `watch` is the alarms `define_watch` defined."""
    _, queue_key, marked = (measured.duplicates(design) for design in case.EMAIL_DESIGNS)
    age_alarm = any(
        row["metric"].endswith("ApproximateAgeOfOldestMessage") and "fallidos" in row["alarm"] for row in watch
    )
    paced = measured.paced.back_in_dlq
    return {
        "bus_one_to_many": (None, "a design choice; here one rule feeds one queue"),
        "queue_between": (marked == 0, f"bus -> queue -> function: {marked} duplicates"),
        "facts_with_data": (None, "this replay's events carry only pedido_id (a reference, not the data)"),
        "idempotent": (
            False,
            f"email: {marked} duplicates with its key; inventario still runs ADD stock -1 without one "
            f"(visibility 300 s stopped its {measured.stock_duplicated(30)} duplicates; a redrive would not)",
        ),
        "producer_key": (True, "correo-confirmacion:{pedido_id}, pedido_id from the producer's event"),
        "in_progress_vs_done": (
            queue_key > marked,
            f"EN_CURSO until the wait: {queue_key} duplicates; COMPLETADO first: {marked}",
        ),
        "age_alarm": (age_alarm, f"oldest > 1 h fires {measured.age_alarm_fires()} after the first dead letter"),
        "reason_kept": (
            all(letter.reason.attributes() for letter in measured.letters),
            f"all {len(measured.letters):,} carry their FailureReason as message attributes",
        ),
        "procedure_run": (None, "class 210's rehearsal; notebook 11 runs MercadoFresco's runbook"),
        "rate_limited": (paced == 0, f"paced: {paced} back in the DLQ"),
        "poison_discarded": (None, f"{measured.to_discard()} to discard; notebook 11 runs dlq.discard with its record"),
    }
