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
from mercadofresco.i18n import T_, _, number
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
    Item(T_("the bus for one-to-many, the queue to absorb"), "bus_one_to_many"),
    Item(T_("a queue between the bus and the function, no direct link"), "queue_between"),
    Item(T_("events are facts with data, versioned and validated"), "facts_with_data"),
    Item(T_("visibility covers the longest batch"), "visibility >= timeout x batch"),
    Item(T_("maxReceiveCount decided, not a default"), "3 <= maxReceiveCount <= 5"),
    Item(T_("partial batch failure on"), "partial batch response"),
    Item(T_("long polling on"), "long polling"),
    Item(T_("every operation with an effect is idempotent"), "idempotent"),
    Item(T_("the producer generates the idempotency key"), "producer_key"),
    Item(T_("the key record tells EN_CURSO from COMPLETADO"), "in_progress_vs_done"),
    Item(T_("an age alarm on the DLQ"), "age_alarm"),
    Item(T_("the failure's reason is kept with the message"), "reason_kept"),
    Item(T_("the redrive procedure exists and has been run"), "procedure_run"),
    Item(T_("the redrive is rate-limited"), "rate_limited"),
    Item(T_("poison messages discarded with a record"), "poison_discarded"),
)
RULES = {finding.rule for finding in consumer_config.check(consumer_config.ConsumerSettings("x", 1, 1, 1))}
CLASS_210_RESULTS = (  # what class 210 reports, before -> after (the first is a key of `before_after`'s models)
    (T_("duplicate emails"), T_("1,840 -> 0")),
    (T_("duplicate stock discounts"), "340 -> 0"),
    (T_("messages in the DLQ"), T_("41,200 -> max 92")),
    (T_("oldest message in the DLQ"), T_("13 days -> 41 min")),
    (T_("messages expired and lost"), T_("almost 41,200 -> 0")),
    (T_("redrives that caused an incident"), T_("1 of 1 -> 0 of 7")),
    (T_("messages discarded with a record"), "0 -> 214"),
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
            why = _("settings checker: {kept} of {count} consumers keep it").format(
                kept=number(sum(f.ok for f in findings)), count=number(len(findings))
            )
        else:
            verdict, why = evidence.get(item.key, (None, T_("no evidence passed in")))
        word = T_("not checked here") if verdict is None else T_("kept") if verdict else T_("BROKEN")
        rows.append({"item": item.text, "verdict": word, "evidence": why})
    return rows


def watch_rules(queue: str, dlq: str, function: str) -> list[tuple[str, alarms.AlarmRule]]:
    """Class 210's "what to watch", one alarm each; thresholds on the source queue are our choice."""

    def sqs(name: str, metric: str, threshold: float, on: str) -> alarms.AlarmRule:
        return alarms.AlarmRule(name, "AWS/SQS", metric, threshold, 300, dimensions=(("QueueName", on),))

    return [
        (
            T_("age of the oldest message in the queue"),
            sqs(f"{queue}-antiguedad", "ApproximateAgeOfOldestMessage", 300, queue),
        ),
        (T_("queue depth"), sqs(f"{queue}-profundidad", "ApproximateNumberOfMessagesVisible", 1_000, queue)),
        (
            T_("messages in the DLQ, by age: on-call"),
            sqs(f"{dlq}-antiguedad-1h", "ApproximateAgeOfOldestMessage", 3_600, dlq),
        ),
        (
            T_("messages in the DLQ, by age: escalate"),
            sqs(f"{dlq}-antiguedad-7d", "ApproximateAgeOfOldestMessage", 7 * 86_400, dlq),
        ),
        (
            T_("failed invocations of the consumer"),
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
            T_("repeated receives of one message (custom metric)"),
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
            T_("delay from the fact to its processing (custom metric)"),
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
    for _label, rule in rules:
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
            "failure": T_("visibility shorter than the processing"),
            "gives": T_("duplicates"),
            "measured": _("{repeated} of {orders} stock discounts repeated at 30 s (notebook 18)").format(
                repeated=number(duplicated_at_30s), orders=number(orders)
            ),
        },
        {
            "failure": T_("no idempotency"),
            "gives": T_("duplicates with an effect"),
            "measured": _("{count} customers charged twice by a redrive (notebook 11's experiment)").format(
                count=number(charged_twice)
            ),
        },
        {
            "failure": T_("a DLQ without an alarm or a redrive"),
            "gives": T_("silent loss"),
            "measured": _("{count} messages expire within 48 h of the discovery (notebook 18)").format(
                count=number(lost_in_48h, ",")
            ),
        },
    ]


def before_after(measured: Measured) -> list[dict[str, Any]]:
    """Class 210's before and after, each beside what this notebook's models of the same problem gave."""
    direct, _queue_key, marked = (measured.duplicates(design) for design in case.EMAIL_DESIGNS)
    campaign = measured.emails[0]["events"]
    hasty, standard, paced = measured.hasty.back_in_dlq, measured.hasty_standard.back_in_dlq, measured.paced.back_in_dlq
    models = {
        "duplicate emails": _("{direct} of {campaign} -> {marked} of {campaign}").format(
            direct=number(direct), marked=number(marked), campaign=number(campaign)
        ),
        "duplicate stock discounts": _("{at_30} of 10 -> {at_300} of 10").format(
            at_30=number(measured.stock_duplicated(30)), at_300=number(measured.stock_duplicated(300))
        ),
        "messages in the DLQ": _("{count} (input) -> not modelled").format(count=number(len(measured.letters), ",")),
        "oldest message in the DLQ": _("13 d 1 h (input) -> age alarm at {after}").format(
            after=measured.age_alarm_fires()
        ),
        "messages expired and lost": _("{count} within 48 h -> 0 if redriven").format(
            count=number(measured.lost_in_48h(), ",")
        ),
        "redrives that caused an incident": _(
            "hasty: {hasty} (class 210's ramp), {standard} (standard mapping) back in the DLQ -> paced: {paced}"
        ).format(hasty=number(hasty, ","), standard=number(standard), paced=number(paced)),
        "messages discarded with a record": _("{count} to discard in this incident").format(
            count=number(measured.to_discard())
        ),
    }
    return [{"what": what, "class_210": said, "models": models[what]} for what, said in CLASS_210_RESULTS]


def evidence(measured: Measured, watch: list[dict[str, Any]]) -> dict[str, tuple[bool | None, str]]:
    """The evidence `run_checklist` judges the items that are not settings by: a verdict (None: not checked here)
    and the figure or reason behind it. `watch` is the alarms `define_watch` defined."""
    _direct, queue_key, marked = (measured.duplicates(design) for design in case.EMAIL_DESIGNS)
    age_alarm = any(
        row["metric"].endswith("ApproximateAgeOfOldestMessage") and "fallidos" in row["alarm"] for row in watch
    )
    paced = measured.paced.back_in_dlq
    return {
        "bus_one_to_many": (None, T_("a design choice; here one rule feeds one queue")),
        "queue_between": (marked == 0, _("bus -> queue -> function: {count} duplicates").format(count=number(marked))),
        "facts_with_data": (None, T_("this replay's events carry only pedido_id (a reference, not the data)")),
        "idempotent": (
            False,
            _(
                "email: {marked} duplicates with its key; inventario still runs ADD stock -1 without one "
                "(visibility 300 s stopped its {stopped} duplicates; a redrive would not)"
            ).format(marked=number(marked), stopped=number(measured.stock_duplicated(30))),
        ),
        "producer_key": (True, T_("correo-confirmacion:{pedido_id}, pedido_id from the producer's event")),
        "in_progress_vs_done": (
            queue_key > marked,
            _("EN_CURSO until the wait: {waiting} duplicates; COMPLETADO first: {marked}").format(
                waiting=number(queue_key), marked=number(marked)
            ),
        ),
        "age_alarm": (
            age_alarm,
            _("oldest > 1 h fires {after} after the first dead letter").format(after=measured.age_alarm_fires()),
        ),
        "reason_kept": (
            all(letter.reason.attributes() for letter in measured.letters),
            _("all {count} carry their FailureReason as message attributes").format(
                count=number(len(measured.letters), ",")
            ),
        ),
        "procedure_run": (None, T_("class 210's rehearsal; notebook 11 runs MercadoFresco's runbook")),
        "rate_limited": (paced == 0, _("paced: {count} back in the DLQ").format(count=number(paced))),
        "poison_discarded": (
            None,
            _("{count} to discard; notebook 11 runs dlq.discard with its record").format(
                count=number(measured.to_discard())
            ),
        ),
    }
