"""Idempotency: domain keys and the three-state table `mercadofresco-idempotencia` (notebooks 02-04).

The queue delivers at least once; the exactly-once *effect* is built here. A key
names one logical operation (`cobro:PED-2026-084417`), never a message. Before
the work, ONE conditional write marks the key EN_CURSO with a lock that expires
(`caduca_bloqueo`); after it, the record becomes COMPLETADO with its `resultado`,
so a duplicate returns the same answer instead of running again. A transient
failure releases the key so a retry may run; a permanent one (a declined card)
is kept as FALLIDO and not retried. Records live 24 h (`expira_en`, epoch
seconds). DynamoDB's TTL deletes late, and moto never does, so the code checks
`expira_en` itself.

Powertools' idempotency utility deletes the record on any failure; the lesson
keeps FALLIDO for permanent failures. Notebook 04 compares both.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from mercadofresco.errors import MercadoFrescoError
from mercadofresco.i18n import _
from mercadofresco.names import IDEMPOTENCY_TABLE

if TYPE_CHECKING:  # only for the hint: importing the pattern does not import the clock's moto and boto3
    from mercadofresco.clock import VirtualClock

DEFAULT_TTL_SECONDS = 24 * 3600  # covers a DLQ reprocessed in the afternoon, not the queue's 4-day retention
DEFAULT_LOCK_SECONDS = 60  # longer than one attempt takes, shorter than the queue's visibility timeout


class Estado(Enum):
    """The three states of a record."""

    EN_CURSO = "EN_CURSO"
    COMPLETADO = "COMPLETADO"
    FALLIDO = "FALLIDO"


# -- keys: which operation, on what ---------------------------------------------------
def charge_key(pedido_id: str) -> str:
    """One charge per order."""
    return f"cobro:{pedido_id}"


def email_key(pedido_id: str) -> str:
    """One confirmation email per order."""
    return f"correo-confirmacion:{pedido_id}"


def reservation_key(pedido_id: str, sku: str) -> str:
    """One stock movement per order line."""
    return f"reserva:{pedido_id}:{sku}"


def content_key(operation: str, payload: dict[str, Any]) -> str:
    """When there is no natural id: a hash of the canonical content (sorted keys, no spaces)."""
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return f"{operation}:{hashlib.sha256(canonical.encode()).hexdigest()[:32]}"


# -- data and errors --------------------------------------------------------------------
@dataclass(frozen=True)
class Record:
    """One item of mercadofresco-idempotencia, with the item's own names."""

    clave: str
    estado: Estado
    expira_en: int
    caduca_bloqueo: int
    resultado: dict[str, Any] | None = None


class IdempotencyError(MercadoFrescoError):
    """Base of the idempotency errors."""


class AlreadyInProgressError(IdempotencyError):
    """Another consumer holds the key (EN_CURSO, lock not expired): back off and try later."""

    def __init__(self, clave: str, caduca_bloqueo: int) -> None:
        super().__init__(_("{key} is EN_CURSO until {until}").format(key=clave, until=caduca_bloqueo))
        self.clave = clave
        self.caduca_bloqueo = caduca_bloqueo


class AlreadyFailedError(IdempotencyError):
    """The operation failed permanently before (FALLIDO): retrying will not change it."""

    def __init__(self, clave: str, resultado: dict[str, Any] | None) -> None:
        super().__init__(_("{key} is FALLIDO: {result}").format(key=clave, result=resultado))
        self.clave = clave
        self.resultado = resultado


class StoreError(IdempotencyError):
    """DynamoDB refused or failed a call that was not a condition check."""


# -- the store: loads and saves, never decides ----------------------------------------------
class IdempotencyStore:
    """The table `mercadofresco-idempotencia`, through boto3."""

    def __init__(
        self,
        dynamodb: Any,
        clock: VirtualClock,
        table_name: str = IDEMPOTENCY_TABLE,
        ttl_seconds: int = DEFAULT_TTL_SECONDS,
        lock_seconds: int = DEFAULT_LOCK_SECONDS,
    ) -> None:
        if not 1 <= lock_seconds < ttl_seconds:
            said = _("lock_seconds must be at least 1 and below ttl_seconds ({ttl}); got {value}")
            raise ValueError(said.format(ttl=ttl_seconds, value=lock_seconds))
        self.dynamodb = dynamodb
        self.clock = clock
        self.table_name = table_name
        self.ttl_seconds = ttl_seconds
        self.lock_seconds = lock_seconds

    def acquire(self, clave: str) -> Record | None:
        """Mark `clave` EN_CURSO for us; return None if we got it, or the record that stopped us."""
        now = int(self.clock.timestamp())
        # free = never seen | record expired (TTL deletes late) | EN_CURSO whose lock ran out
        free = "attribute_not_exists(clave) OR expira_en < :now OR (estado = :en_curso AND caduca_bloqueo < :now)"
        item = {
            "clave": {"S": clave},
            "estado": {"S": Estado.EN_CURSO.value},
            "expira_en": {"N": str(now + self.ttl_seconds)},
            "caduca_bloqueo": {"N": str(now + self.lock_seconds)},
        }
        try:
            self.dynamodb.put_item(
                TableName=self.table_name,
                Item=item,
                ConditionExpression=free,
                ExpressionAttributeValues={":now": {"N": str(now)}, ":en_curso": {"S": Estado.EN_CURSO.value}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise StoreError(f"acquire {clave}: {exc}") from exc
            # Not an error: the answer. Someone holds or finished this operation.
            return _record(exc.response.get("Item") or self._get_item(clave))
        return None

    def complete(self, clave: str, resultado: dict[str, Any]) -> None:
        """Record the result; duplicates will get it back."""
        self._put(clave, Estado.COMPLETADO, resultado)

    def fail(self, clave: str, reason: dict[str, Any]) -> None:
        """Record a permanent failure; duplicates will not run again."""
        self._put(clave, Estado.FALLIDO, reason)

    def release(self, clave: str) -> None:
        """Forget an EN_CURSO after a transient failure, so a retry may run now."""
        try:
            self.dynamodb.delete_item(TableName=self.table_name, Key={"clave": {"S": clave}})
        except ClientError as exc:
            raise StoreError(f"release {clave}: {exc}") from exc

    def get(self, clave: str) -> Record | None:
        """The record for `clave`, or None."""
        item = self._get_item(clave)
        return _record(item) if item else None

    def _put(self, clave: str, estado: Estado, resultado: dict[str, Any]) -> None:
        now = int(self.clock.timestamp())
        item = {
            "clave": {"S": clave},
            "estado": {"S": estado.value},
            "resultado": {"S": json.dumps(resultado, sort_keys=True, default=str)},
            "expira_en": {"N": str(now + self.ttl_seconds)},
            "caduca_bloqueo": {"N": str(now)},
        }
        try:
            self.dynamodb.put_item(TableName=self.table_name, Item=item)
        except ClientError as exc:
            raise StoreError(
                _("save {state} for {key}: {error}").format(state=estado.value, key=clave, error=exc)
            ) from exc

    def _get_item(self, clave: str) -> dict[str, Any]:
        try:
            response = self.dynamodb.get_item(
                TableName=self.table_name, Key={"clave": {"S": clave}}, ConsistentRead=True
            )
        except ClientError as exc:
            raise StoreError(f"get {clave}: {exc}") from exc
        return response.get("Item", {})


def _record(item: dict[str, Any]) -> Record:
    resultado = item.get("resultado", {}).get("S")
    return Record(
        clave=item["clave"]["S"],
        estado=Estado(item["estado"]["S"]),
        expira_en=int(item["expira_en"]["N"]),
        caduca_bloqueo=int(item["caduca_bloqueo"]["N"]),
        resultado=json.loads(resultado) if resultado else None,
    )


# -- the handler side: decides ----------------------------------------------------------------
def run_once(
    store: IdempotencyStore,
    clave: str,
    operation: Callable[[], dict[str, Any]],
    is_permanent: Callable[[Exception], bool],
    checkpoint: Callable[[str], None] = lambda step: None,
) -> dict[str, Any]:
    """Run `operation` at most once per `clave` and return its result, the first time and every time after.

    `checkpoint(step)` is called at "after_lock" and "after_complete", so a
    test or notebook can make the process die exactly there.
    """
    existing = store.acquire(clave)
    if existing is not None:
        if existing.estado is Estado.COMPLETADO:
            return existing.resultado or {}
        if existing.estado is Estado.FALLIDO:
            raise AlreadyFailedError(clave, existing.resultado)
        raise AlreadyInProgressError(clave, existing.caduca_bloqueo)
    checkpoint("after_lock")
    try:
        resultado = operation()
    except Exception as exc:
        if is_permanent(exc):
            store.fail(clave, {"error": type(exc).__name__, "detail": str(exc)})
        else:
            store.release(clave)
        raise
    store.complete(clave, resultado)
    checkpoint("after_complete")
    return resultado
