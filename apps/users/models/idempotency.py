"""The answers kept for retried writes: an API key's `Idempotency-Key` on a write names one request,
and the answer it got is given again to the same request (apps/users/idempotency.py)."""

from django.db import models

from apps.core.fields import JSONField


class IdempotencyRecord(models.Model):
    """The answer to one write sent with an `Idempotency-Key`, kept for its API key until `expires_at`.

    A record is one (API key, method, path, key): `scope_digest` is their SHA-256, unique per key,
    so that a long path or key never outgrows an index entry."""

    # Deleted with its key by Django's cascade, but with no constraint in the database: a write may delete
    # the key that sent it (an admin deleting themselves), and its answer is still stored in that
    # transaction, which a constraint would then fail at commit. Such a record answers no one (the key is
    # gone; ids are never reused) and goes at the next sweep after it expires.
    api_key = models.ForeignKey(
        "accounts.ApiKey", on_delete=models.CASCADE, db_constraint=False, related_name="idempotency_records"
    )
    method = models.CharField(max_length=10)
    path = models.TextField()
    key = models.CharField(max_length=255)
    scope_digest = models.CharField(max_length=64, editable=False)
    fingerprint = models.CharField(
        max_length=64, help_text="SHA-256 of the request body as canonical JSON (or of no body)."
    )
    status = models.PositiveSmallIntegerField()
    body = models.BinaryField(blank=True)
    headers = JSONField(default=dict, blank=True, help_text="The answer's headers that a replay repeats.")
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["api_key", "scope_digest"], name="idempotency_record_one_per_request")
        ]
        verbose_name = "idempotency record"

    def __str__(self) -> str:
        return f"{self.method} {self.path} ({self.key})"
