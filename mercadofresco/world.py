"""MercadoFresco's AWS resources, with the lesson's names, built inside moto.

`build()` returns a `World`: boto3 clients and the names and URLs of the queue
`cola-mercadofresco-pedidos` and its DLQ `mercadofresco-pedidos-fallidos`, the
table `mercadofresco-idempotencia`, the bus `bus-mercadofresco` and the topic
`mercadofresco-pedido-confirmado`. Notebook 00 draws it.

Three modes, chosen by configuration (`WorldConfig.endpoint`, a
`runtime.settings.EndpointConfig`, or the MERCADOFRESCO_* variables that
`runtime.settings` reads):

- "memory": moto in this process (the default; offline, nothing leaves the machine);
- "endpoint": any endpoint URL, e.g. a moto server or LocalStack on this machine;
- "aws": real AWS, only with allow_real_aws=True. It creates real, billed resources.

The mock modes use fake credentials and refuse an endpoint that is real AWS.
Outside memory mode every resource a world's clients create is tagged and noted
(`runtime.cleanup.Ledger`) and `World.close()` deletes it; in aws mode `build()`
first prints what it will create and its list price (`runtime.billing`), refuses names your
account already uses for something else, and deletes its resources when the
process ends.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.exceptions import ClientError, EndpointConnectionError
from moto import mock_aws
from moto.moto_api._internal import mock_random

from mercadofresco import queues
from mercadofresco.errors import MercadoFrescoError, check_range
from mercadofresco.i18n import _

# -- the lesson's names (kept in `names`, which imports nothing; re-exported here) ------
from mercadofresco.names import (  # noqa: F401
    ALERTS_TOPIC,
    BUS,
    BUS_RULE,
    FANOUT_QUEUES,
    IDEMPOTENCY_TABLE,
    KMS_ALIAS,
    METRICS_NAMESPACE,
    ORDER_SOURCE,
    ORDERS_DLQ,
    ORDERS_QUEUE,
    TOPIC,
    WAREHOUSE_QUEUE,
)
from mercadofresco.runtime import billing, cleanup, endpoints, moto_atomic, moto_speedups
from mercadofresco.runtime.settings import EndpointConfig

MAX_VISIBILITY_SECONDS = 43_200  # SQS: 12 hours
MIN_RETENTION_SECONDS, MAX_RETENTION_SECONDS = 60, 1_209_600  # SQS: 1 minute to 14 days
DAY = 86_400
MOTO_SEED = 705  # lesson 07-05: moto's own generator (MessageIds, receipt handles) starts here in every world


class WorldConfigError(MercadoFrescoError, ValueError):
    """A world setting is out of range or the modes disagree."""


@dataclass(frozen=True)
class WorldConfig:
    """Where the world lives (`endpoint`) and how its queues are configured."""

    endpoint: EndpointConfig = field(default_factory=EndpointConfig)
    visibility_timeout_seconds: int = 120  # the incident's value (exercise 1)
    max_receive_count: int = 4
    retention_seconds: int = 4 * DAY
    dlq_retention_seconds: int = 14 * DAY

    def __post_init__(self) -> None:
        check_range(
            "visibility_timeout_seconds", self.visibility_timeout_seconds, 0, MAX_VISIBILITY_SECONDS, WorldConfigError
        )
        check_range("max_receive_count", self.max_receive_count, 1, 1000, WorldConfigError)
        check_range(
            "retention_seconds", self.retention_seconds, MIN_RETENTION_SECONDS, MAX_RETENTION_SECONDS, WorldConfigError
        )
        check_range(
            "dlq_retention_seconds",
            self.dlq_retention_seconds,
            MIN_RETENTION_SECONDS,
            MAX_RETENTION_SECONDS,
            WorldConfigError,
        )

    @classmethod
    def from_env(cls, **overrides: Any) -> WorldConfig:
        """The endpoint the MERCADOFRESCO_* settings name (`runtime.settings`), the queues' defaults or `overrides`."""
        return cls(endpoint=EndpointConfig.from_env(), **overrides)


@dataclass
class World:
    """The clients and resource names of one MercadoFresco world."""

    config: WorldConfig
    session: boto3.Session
    orders: queues.QueuePair
    topic_arn: str
    alerts_topic_arn: str
    fanout_queue_urls: dict[str, str]
    warehouse_queue_url: str
    table_name: str = IDEMPOTENCY_TABLE
    bus_name: str = BUS
    _clients: dict[str, Any] = field(default_factory=dict, repr=False)
    _mock: Any = field(default=None, repr=False)
    ledger: cleanup.Ledger | None = field(default=None, repr=False)
    moto_speedups: moto_speedups.Speedups | None = field(default=None, repr=False)  # memory mode only

    def client(self, service: str) -> Any:
        """A boto3 client for `service`, pointed at this world's endpoint."""
        if service not in self._clients:
            self._clients[service] = endpoints.make_client(self.session, self.config.endpoint, service, self.ledger)
        return self._clients[service]

    @property
    def sqs(self) -> Any:
        return self.client("sqs")

    @property
    def dynamodb(self) -> Any:
        return self.client("dynamodb")

    def reset_orders_queue(
        self, visibility_timeout_seconds: int | None = None, max_receive_count: int | None = None
    ) -> queues.QueuePair:
        """Delete and re-create the orders queue and its DLQ, empty, with new settings.

        For the mock modes: real SQS refuses to re-create a queue name for 60 s
        after deleting it (QueueDeletedRecently).
        """
        visibility = (
            self.config.visibility_timeout_seconds if visibility_timeout_seconds is None else visibility_timeout_seconds
        )
        receives = self.config.max_receive_count if max_receive_count is None else max_receive_count
        check_range("visibility_timeout_seconds", visibility, 0, MAX_VISIBILITY_SECONDS, WorldConfigError)
        check_range("max_receive_count", receives, 1, 1000, WorldConfigError)
        self.sqs.delete_queue(QueueUrl=self.orders.url)
        self.sqs.delete_queue(QueueUrl=self.orders.dlq_url)
        self.orders = queues.create_queue_pair(
            self.sqs,
            ORDERS_QUEUE,
            ORDERS_DLQ,
            visibility_timeout_seconds=visibility,
            max_receive_count=receives,
            retention_seconds=self.config.retention_seconds,
            dlq_retention_seconds=self.config.dlq_retention_seconds,
        )
        return self.orders

    def close(self) -> list[str]:
        """Stop the in-process mock (memory mode), or delete what this world created; say what went."""
        if self.moto_speedups is not None:  # moto's own SQS code is back
            self.moto_speedups.undo()
            self.moto_speedups = None
        if self._mock is not None:
            self._mock.stop()
            self._mock = None
        if not self.ledger or not self.ledger.created:
            return []
        atexit.unregister(self._close_at_exit)
        gone = cleanup.delete(self.client, self.ledger.created)
        self.ledger.created.clear()
        return gone

    def _close_at_exit(self) -> None:
        try:
            self.close()
        except Exception as exc:  # the server may be gone already; say what is left and how to remove it
            said = _("could not delete this run's resources ({error}); `{command}` removes what carries the tag")
            print(
                "[mercadofresco] " + said.format(error=exc, command="python -m mercadofresco.runtime.cleanup_cli"),
                file=sys.stderr,
            )

    def __enter__(self) -> World:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _already_there(exc: ClientError, *codes: str) -> bool:
    """True if `exc` only says the resource exists (a server that outlived a previous build)."""
    return exc.response["Error"]["Code"] in codes


def _create_key_alias(kms: Any) -> None:
    key_id = kms.create_key(Description="MercadoFresco datos")["KeyMetadata"]["KeyId"]
    try:
        kms.create_alias(AliasName=KMS_ALIAS, TargetKeyId=key_id)
    except ClientError as exc:
        if not _already_there(exc, "AlreadyExistsException"):
            raise
        kms.schedule_key_deletion(KeyId=key_id, PendingWindowInDays=7)  # keep the alias's existing key


def create_idempotency_table(dynamodb: Any) -> None:
    """Create `mercadofresco-idempotencia` (key `clave`, TTL on `expira_en`, KMS); fine if it already exists."""
    try:
        _create_table_once(dynamodb)
    except ClientError as exc:
        if not _already_there(exc, "ResourceInUseException"):
            raise


def _create_table_once(dynamodb: Any) -> None:
    dynamodb.create_table(
        TableName=IDEMPOTENCY_TABLE,
        KeySchema=[{"AttributeName": "clave", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "clave", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        SSESpecification={"Enabled": True, "SSEType": "KMS", "KMSMasterKeyId": KMS_ALIAS},
    )
    # Real DynamoDB refuses TTL settings while the table is still CREATING (moto answers ACTIVE at once).
    dynamodb.get_waiter("table_exists").wait(TableName=IDEMPOTENCY_TABLE)
    # DynamoDB deletes expired items late (up to days) and moto never does: the code compares expira_en itself.
    dynamodb.update_time_to_live(
        TableName=IDEMPOTENCY_TABLE, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expira_en"}
    )


def _create_topic_fanout(session_client: Any, sqs: Any) -> tuple[str, dict[str, str]]:
    topic_arn = session_client.create_topic(Name=TOPIC)["TopicArn"]
    urls = {}
    for name in FANOUT_QUEUES:
        url = sqs.create_queue(QueueName=name)["QueueUrl"]
        arn = queues.queue_arn(sqs, url)
        sqs.set_queue_attributes(
            QueueUrl=url, Attributes={"Policy": queues.send_policy(arn, topic_arn, "sns.amazonaws.com")}
        )
        session_client.subscribe(
            TopicArn=topic_arn, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"}
        )
        urls[name] = url
    return topic_arn, urls


def _create_bus_rule(events: Any, sqs: Any) -> str:
    try:
        events.create_event_bus(Name=BUS)
    except ClientError as exc:
        if not _already_there(exc, "ResourceAlreadyExistsException"):
            raise
    pattern = {"source": [ORDER_SOURCE], "detail-type": ["PedidoConfirmado"]}
    rule_arn = events.put_rule(Name=BUS_RULE, EventBusName=BUS, EventPattern=json.dumps(pattern))["RuleArn"]
    url = sqs.create_queue(QueueName=WAREHOUSE_QUEUE)["QueueUrl"]
    arn = queues.queue_arn(sqs, url)
    sqs.set_queue_attributes(
        QueueUrl=url, Attributes={"Policy": queues.send_policy(arn, rule_arn, "events.amazonaws.com")}
    )
    events.put_targets(Rule=BUS_RULE, EventBusName=BUS, Targets=[{"Id": "almacen", "Arn": arn}])
    return url


def build(config: WorldConfig | None = None) -> World:
    """Create MercadoFresco's resources and return the world that holds them.

    In memory mode this starts moto in this process, with `moto_speedups` so
    that deep queues stay fast; in every mode this process's moto writes
    DynamoDB items one at a time (`moto_atomic`). Call `World.close()` (or use
    `with world.build() as aws:`) to stop it. Elsewhere `close()` deletes
    what the world created; a world built from the environment (as every
    notebook builds it), and any world in aws mode, also does that when the
    Python process ends. A world configured by hand is yours to close.
    """
    delete_at_exit = config is None
    config = config or WorldConfig.from_env()
    endpoint = config.endpoint
    mock = speedups = None
    moto_atomic.apply()  # this process's moto, in memory or a server in a thread of it, writes as DynamoDB does
    if endpoint.mode == "memory":
        mock = mock_aws()
        mock.start()
        mock_random.seed(MOTO_SEED)  # MessageIds and receipt handles the same on every run, as the rest is
        speedups = moto_speedups.apply()
    ledger = None if endpoint.mode == "memory" else cleanup.Ledger()
    try:
        with _collector_paused():
            built = _build_resources(config, mock, ledger)
    except BaseException as exc:
        if mock is not None:
            speedups.undo()
            mock.stop()  # a half-built world must not leave moto patched in
        if ledger is not None:  # nor resources nobody will use (an interrupt, a refusal, an error)
            session = endpoints.make_session(endpoint)
            cleanup.delete(lambda service: endpoints.make_client(session, endpoint, service), ledger.created)
        if isinstance(exc, EndpointConnectionError):
            said = _(
                "nothing answers at {url}: start a server there ({command}), or unset {variable} to run in this process"
            )
            raise WorldConfigError(
                said.format(url=endpoint.endpoint_url, command="moto_server -p PORT", variable="MERCADOFRESCO_MODE")
            ) from exc
        raise
    if ledger is not None and (delete_at_exit or endpoint.mode == "aws"):
        atexit.register(built._close_at_exit)  # the kernel ends: what this notebook created goes with it
    built.moto_speedups = speedups
    if delete_at_exit:
        _spare_the_collector()
    return built


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No automatic garbage collection while the world is built (as it was, after).

    The first build in a process loads botocore's service models and moto's backends: some 120,000
    objects that live as long as the process, and a notebook's imports have made as many before them.
    Each full collection the build triggers walks all of them and frees nothing; in a kernel that was
    two full collections, 0.25 s of a 0.53 s build.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _spare_the_collector() -> None:
    """Leave what the kernel has loaded so far out of Python's full garbage collections (`gc.freeze`).

    A notebook's imports, moto's backends and botocore's service models are a few hundred thousand
    objects that live as long as the kernel; each full collection walks them all again. Frozen, the
    collections an experiment triggers walk only what it made: notebook 11's experiments take 11 % less
    CPU. Only for a world built from the environment (once per notebook), never in tests' own worlds.
    """
    gc.freeze()


def _build_resources(config: WorldConfig, mock: Any, ledger: cleanup.Ledger | None) -> World:
    endpoint = config.endpoint
    session = endpoints.make_session(endpoint)
    clients = {
        name: endpoints.make_client(session, endpoint, name, ledger)
        for name in ("sqs", "dynamodb", "sns", "events", "kms")
    }
    if endpoint.mode == "aws":
        cleanup.refuse_names_in_use(
            clients, (ORDERS_QUEUE, ORDERS_DLQ, WAREHOUSE_QUEUE, *FANOUT_QUEUES), IDEMPOTENCY_TABLE
        )
        print(billing.plan_text(endpoint.region, ledger.run_id), end="", file=sys.stderr, flush=True)
    sqs = clients["sqs"]

    _create_key_alias(clients["kms"])
    create_idempotency_table(clients["dynamodb"])
    orders = queues.create_queue_pair(
        sqs,
        ORDERS_QUEUE,
        ORDERS_DLQ,
        visibility_timeout_seconds=config.visibility_timeout_seconds,
        max_receive_count=config.max_receive_count,
        retention_seconds=config.retention_seconds,
        dlq_retention_seconds=config.dlq_retention_seconds,
    )
    topic_arn, fanout_urls = _create_topic_fanout(clients["sns"], sqs)
    alerts_arn = clients["sns"].create_topic(Name=ALERTS_TOPIC)["TopicArn"]
    warehouse_url = _create_bus_rule(clients["events"], sqs)
    return World(
        config=config,
        session=session,
        orders=orders,
        topic_arn=topic_arn,
        alerts_topic_arn=alerts_arn,
        fanout_queue_urls=fanout_urls,
        warehouse_queue_url=warehouse_url,
        _clients=clients,
        _mock=mock,
        ledger=ledger,
    )
