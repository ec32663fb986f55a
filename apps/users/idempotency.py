"""Retried writes that do nothing twice: the answer to a write an API key sent with an
`Idempotency-Key` is kept for that key, method, path and `Idempotency-Key` for IDEMPOTENCY_KEY_TTL,
and the same request again gets it instead of running again.

The HTTP side (apps/api/idempotency.py) runs the write and stores its answer in one transaction, so
both are committed or neither is; this module is what it asks the database: the per-request lock,
the look-up, the insert, and the sweep of expired records. It is that side's store
(settings.IDEMPOTENCY_STORE), so the HTTP layer imports no app."""

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from django.conf import settings
from django.db import IntegrityError, connection
from django.utils import timezone

from apps.users.models import IdempotencyRecord

# Expired records deleted per statement by the sweep: each batch is a short transaction.
SWEEP_BATCH = 1000


@dataclass(frozen=True)
class RequestScope:
    """What a record is kept under: one API key's `Idempotency-Key` on one method and path."""

    api_key_id: int
    method: str
    path: str
    key: str

    @cached_property
    def digest(self) -> str:
        named = "\n".join((self.method, self.path, self.key))
        return hashlib.sha256(named.encode("utf-8", "surrogateescape")).hexdigest()

    @cached_property
    def lock_id(self) -> int:
        """A signed 64-bit number for PostgreSQL's advisory locks, from the key's id and the digest."""
        named = f"{self.api_key_id}:{self.digest}".encode()
        return int.from_bytes(hashlib.sha256(named).digest()[:8], "big", signed=True)


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    headers: dict[str, str]


def record_answer(record: IdempotencyRecord) -> Answer:
    # PostgreSQL hands a bytea column back as a memoryview.
    return Answer(status=record.status, body=bytes(record.body), headers=dict(record.headers))


class RequestKeyTaken(Exception):
    """Another request stored its answer under the same scope first (a race the lock did not see)."""


NO_BODY = hashlib.sha256(b"").hexdigest()


def _file_digest(value) -> str:
    """An uploaded file of a multipart body (an upload) as the SHA-256 of its bytes, read in chunks."""
    if not hasattr(value, "chunks"):
        raise TypeError(f"{type(value).__name__} is not part of a request body")
    digest = hashlib.sha256()
    for chunk in value.chunks():
        digest.update(chunk)
    value.seek(0)
    return f"file:{digest.hexdigest()}"


def body_fingerprint(data, *, has_body: bool) -> str:
    """The request body compared as parsed JSON: key order and whitespace do not count; a file of a
    multipart body counts by its bytes. No body at all is a value of its own, different from `{}`."""
    if not has_body:
        return NO_BODY
    canonical = json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False, default=_file_digest
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def request_lock(scope: RequestScope) -> bool:
    """Inside a transaction: whether this request may run, held until the transaction ends; False while
    another holds it. PostgreSQL only; SQLite's transactions take the write lock when they begin
    (config/settings/database.py), so there requests with one key run one after the other instead."""
    if connection.vendor != "postgresql":
        return True
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [scope.lock_id])
        return bool(cursor.fetchone()[0])


def record_find(scope: RequestScope, *, now: datetime | None = None) -> IdempotencyRecord | None:
    """The answer kept for the scope, or None; an expired record counts as none and is deleted."""
    record = IdempotencyRecord.objects.filter(api_key_id=scope.api_key_id, scope_digest=scope.digest).first()
    if record is not None and record.expires_at <= (now or timezone.now()):
        record.delete()
        return None
    return record


def record_store(scope: RequestScope, *, fingerprint: str, answer: Answer, now: datetime | None = None) -> None:
    """Keep the answer for IDEMPOTENCY_KEY_TTL. Raises RequestKeyTaken when the scope has a record
    already, for the caller to roll its whole transaction back."""
    now = now or timezone.now()
    try:
        # No savepoint: the caller rolls its whole transaction back on RequestKeyTaken.
        IdempotencyRecord.objects.create(
            api_key_id=scope.api_key_id,
            method=scope.method,
            path=scope.path,
            key=scope.key,
            scope_digest=scope.digest,
            fingerprint=fingerprint,
            status=answer.status,
            body=answer.body,
            headers=answer.headers,
            created_at=now,
            expires_at=now + settings.IDEMPOTENCY_KEY_TTL,
        )
    except IntegrityError as exc:
        raise RequestKeyTaken from exc


def records_sweep(*, now: datetime | None = None, batch: int = SWEEP_BATCH) -> int:
    """Delete the expired records, `batch` at a time; the number deleted."""
    now = now or timezone.now()
    deleted = 0
    while True:
        ids = list(IdempotencyRecord.objects.filter(expires_at__lte=now).values_list("pk", flat=True)[:batch])
        if not ids:
            return deleted
        count, _ = IdempotencyRecord.objects.filter(pk__in=ids).delete()
        deleted += count
