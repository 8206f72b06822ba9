"""What a world creates outside this process, and how it goes away: a tag, a ledger, a cleanup command.

In the endpoint and aws modes every resource created through a world's clients
(by `world.build` or by an experiment: a FIFO queue, the stock table) carries
the tag `mercadofresco-workbook=<run id>`, added by a botocore hook on those
clients, and is noted in the world's `Ledger`. `World.close()` deletes what the
ledger holds; in aws mode it also runs when the Python process ends. What an
interrupted run left behind, the command (`cleanup_cli`) finds by its tag:

    python -m mercadofresco.runtime.cleanup_cli --mode aws         # lists what it would delete
    python -m mercadofresco.runtime.cleanup_cli --mode aws --yes   # deletes it

It never touches a resource without the tag. KMS keys cannot be deleted at
once: they are scheduled for deletion after 7 days (the shortest AWS allows).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from mercadofresco.errors import MercadoFrescoError
from mercadofresco.i18n import _

TAG_KEY = "mercadofresco-workbook"
KMS_DELETION_DAYS = 7
GONE = ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", "ResourceNotFoundException", "NotFound")


class NameInUseError(MercadoFrescoError):
    """A resource with one of the lesson's names exists and the workbook did not make it."""


# operation -> how its request carries tags
TAGGED_CREATES: dict[tuple[str, str], Callable[[str], dict[str, Any]]] = {
    ("sqs", "CreateQueue"): lambda run: {"tags": {TAG_KEY: run}},
    ("dynamodb", "CreateTable"): lambda run: {"Tags": [{"Key": TAG_KEY, "Value": run}]},
    ("sns", "CreateTopic"): lambda run: {"Tags": [{"Key": TAG_KEY, "Value": run}]},
    ("events", "CreateEventBus"): lambda run: {"Tags": [{"Key": TAG_KEY, "Value": run}]},
    ("events", "PutRule"): lambda run: {"Tags": [{"Key": TAG_KEY, "Value": run}]},
    ("kms", "CreateKey"): lambda run: {"Tags": [{"TagKey": TAG_KEY, "TagValue": run}]},
}


@dataclass
class Ledger:
    """The resources one world created, in order: (kind, identifier)."""

    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    created: list[tuple[str, str]] = field(default_factory=list)

    def attach(self, client: Any, service: str) -> None:
        """Tag what `client` creates and note it here."""
        for (tagged_service, operation), tags in TAGGED_CREATES.items():
            if tagged_service == service:
                client.meta.events.register(
                    f"provide-client-params.{service}.{operation}",
                    lambda params, tags=tags, **_: params.update(tags(self.run_id)),
                )
        client.meta.events.register(f"after-call.{service}", self._note)
        if service == "kms":
            client.meta.events.register("provide-client-params.kms.CreateAlias", self._note_alias)

    def _note(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        if "Error" in parsed:
            return
        found = {
            "CreateQueue": ("queue", parsed.get("QueueUrl")),
            "CreateTable": ("table", parsed.get("TableDescription", {}).get("TableName")),
            "CreateTopic": ("topic", parsed.get("TopicArn")),
            "CreateEventBus": ("bus", parsed.get("EventBusArn", "").rsplit("/", 1)[-1]),
            "PutRule": ("rule", parsed.get("RuleArn")),
            "CreateKey": ("key", parsed.get("KeyMetadata", {}).get("KeyId")),
        }.get(model.name)
        if found and found[1] and found not in self.created:
            self.created.append(found)

    def _note_alias(self, params: dict[str, Any], **_: Any) -> None:
        self.created.append(("alias", params["AliasName"]))


def delete(client: Callable[[str], Any], resources: list[tuple[str, str]]) -> list[str]:
    """Delete `resources` (newest first); return one line per resource. Already gone counts as deleted."""
    lines = []
    for kind, ident in reversed(resources):
        try:
            _delete_one(client, kind, ident)
            done = (
                _("scheduled {kind} {resource} for deletion in {days} days").format(
                    kind=kind, resource=ident, days=KMS_DELETION_DAYS
                )
                if kind == "key"
                else None
            )
            lines.append(done or _("deleted {kind} {resource}").format(kind=kind, resource=ident))
        except ClientError as exc:
            if exc.response["Error"]["Code"] not in GONE:
                raise
            lines.append(_("already gone: {kind} {resource}").format(kind=kind, resource=ident))
    return lines


def _delete_one(client: Callable[[str], Any], kind: str, ident: str) -> None:
    if kind == "queue":
        client("sqs").delete_queue(QueueUrl=ident)
    elif kind == "table":
        client("dynamodb").delete_table(TableName=ident)
    elif kind == "topic":
        client("sns").delete_topic(TopicArn=ident)
    elif kind == "rule":
        events = client("events")
        bus, rule = _bus_and_rule(ident)
        targets = events.list_targets_by_rule(Rule=rule, EventBusName=bus)["Targets"]
        if targets:
            events.remove_targets(Rule=rule, EventBusName=bus, Ids=[t["Id"] for t in targets])
        events.delete_rule(Name=rule, EventBusName=bus)
    elif kind == "bus":
        client("events").delete_event_bus(Name=ident)
    elif kind == "alias":
        client("kms").delete_alias(AliasName=ident)
    elif kind == "key":
        client("kms").schedule_key_deletion(KeyId=ident, PendingWindowInDays=KMS_DELETION_DAYS)
    else:
        raise ValueError(f"unknown resource kind {kind!r}")


def _bus_and_rule(rule_arn: str) -> tuple[str, str]:
    """arn:…:rule/bus-mercadofresco/regla-… → (bus, rule); a rule on the default bus has no bus part."""
    parts = rule_arn.split(":rule/", 1)[1].split("/")
    return (parts[0], parts[1]) if len(parts) == 2 else ("default", parts[0])


def refuse_names_in_use(clients: dict[str, Any], queue_names: tuple[str, ...], table_name: str) -> None:
    """In AWS, refuse to adopt a queue or table of the lesson's names that the workbook did not make."""
    sqs, dynamodb = clients["sqs"], clients["dynamodb"]
    for name in queue_names:
        try:
            url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
        except ClientError:
            continue
        if TAG_KEY not in sqs.list_queue_tags(QueueUrl=url).get("Tags", {}):
            raise NameInUseError(_in_use(_("queue {name}").format(name=name)))
    try:
        arn = dynamodb.describe_table(TableName=table_name)["Table"]["TableArn"]
    except ClientError:
        return
    if not any(tag["Key"] == TAG_KEY for tag in dynamodb.list_tags_of_resource(ResourceArn=arn).get("Tags", [])):
        raise NameInUseError(_in_use(_("table {name}").format(name=table_name)))


def _in_use(what: str) -> str:
    said = _(
        "your account already has a {what} that the workbook did not create (no {tag} tag); "
        "the workbook would change and delete it. Nothing was created. Use another region or account."
    )
    return said.format(what=what, tag=TAG_KEY)


def find_tagged(client: Callable[[str], Any], run_id: str | None = None) -> list[tuple[str, str]]:
    """Every resource carrying the workbook's tag (of one run, or of any), in creation-like order."""

    def ours(tags: dict[str, str]) -> bool:
        return TAG_KEY in tags and (run_id is None or tags[TAG_KEY] == run_id)

    found: list[tuple[str, str]] = []
    sqs, dynamodb, sns, events, kms = (client(s) for s in ("sqs", "dynamodb", "sns", "events", "kms"))
    for key in kms.list_keys()["Keys"]:
        tags = {t["TagKey"]: t["TagValue"] for t in kms.list_resource_tags(KeyId=key["KeyId"]).get("Tags", [])}
        if ours(tags) and kms.describe_key(KeyId=key["KeyId"])["KeyMetadata"]["KeyState"] != "PendingDeletion":
            found.append(("key", key["KeyId"]))
            aliases = kms.list_aliases(KeyId=key["KeyId"])["Aliases"]
            found += [("alias", alias["AliasName"]) for alias in aliases]
    for name in dynamodb.list_tables()["TableNames"]:
        arn = dynamodb.describe_table(TableName=name)["Table"]["TableArn"]
        if ours({t["Key"]: t["Value"] for t in dynamodb.list_tags_of_resource(ResourceArn=arn).get("Tags", [])}):
            found.append(("table", name))
    for url in sqs.list_queues().get("QueueUrls", []):
        if ours(sqs.list_queue_tags(QueueUrl=url).get("Tags", {})):
            found.append(("queue", url))
    for topic in sns.list_topics()["Topics"]:
        tags = sns.list_tags_for_resource(ResourceArn=topic["TopicArn"])["Tags"]
        if ours({t["Key"]: t["Value"] for t in tags}):
            found.append(("topic", topic["TopicArn"]))
    for bus in events.list_event_buses()["EventBuses"]:
        if ours({t["Key"]: t["Value"] for t in events.list_tags_for_resource(ResourceARN=bus["Arn"])["Tags"]}):
            found.append(("bus", bus["Name"]))
        for rule in events.list_rules(EventBusName=bus["Name"])["Rules"]:
            if ours({t["Key"]: t["Value"] for t in events.list_tags_for_resource(ResourceARN=rule["Arn"])["Tags"]}):
                found.append(("rule", rule["Arn"]))
    return found
