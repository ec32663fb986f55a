"""Webhook signing secrets stored encrypted, as the publishing credentials are: the clear secrets of
existing endpoints are encrypted with the newest of FERNET_KEYS (and decrypted back on the way down)."""

from django.db import migrations, models

import apps.webhooks.models
from apps.core import crypto

BATCH = 500


def encrypt_clear_secrets(apps, schema_editor) -> None:
    endpoints = apps.get_model("webhooks", "WebhookEndpoint")
    _convert(endpoints, "secret", "secret_encrypted", crypto.encrypt)
    _convert(endpoints, "previous_secret", "previous_secret_encrypted", crypto.encrypt)
    _check_constraints_now(schema_editor)


def decrypt_to_clear_secrets(apps, schema_editor) -> None:
    # A secret no key of FERNET_KEYS opens stops the way down (CredentialUnreadable): an endpoint
    # left with a made-up secret would sign for no receiver without anyone knowing.
    endpoints = apps.get_model("webhooks", "WebhookEndpoint")
    _convert(endpoints, "secret_encrypted", "secret", crypto.decrypt)
    _convert(endpoints, "previous_secret_encrypted", "previous_secret", crypto.decrypt)
    _check_constraints_now(schema_editor)


def _convert(endpoints, source: str, target: str, convert) -> None:
    changed = []
    for endpoint in endpoints.objects.exclude(**{source: ""}).only("pk", source).iterator(chunk_size=BATCH):
        setattr(endpoint, target, convert(getattr(endpoint, source)))
        changed.append(endpoint)
    endpoints.objects.bulk_update(changed, [target], batch_size=BATCH)


def _check_constraints_now(schema_editor) -> None:
    # PostgreSQL refuses to drop a column of a table whose updated rows still have deferred
    # foreign-key checks queued in the transaction ("pending trigger events"): run them now.
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):
    dependencies = [
        ("webhooks", "0009_breaker_probes"),
    ]

    operations = [
        migrations.AddField(
            model_name="webhookendpoint",
            name="secret_encrypted",
            field=models.TextField(default=apps.webhooks.models.new_encrypted_secret, editable=False),
        ),
        migrations.AddField(
            model_name="webhookendpoint",
            name="previous_secret_encrypted",
            field=models.TextField(blank=True, editable=False),
        ),
        migrations.RunPython(encrypt_clear_secrets, decrypt_to_clear_secrets, elidable=False),
        migrations.RemoveField(model_name="webhookendpoint", name="secret"),
        migrations.RemoveField(model_name="webhookendpoint", name="previous_secret"),
    ]
