"""The confirmation e-mail's link gets a token of its own (stored as its SHA-256, with an expiry);
the subscriber's `token` is left as it was, so the unsubscribe links of every edition already sent
keep unsubscribing, and it no longer confirms.

The confirmation e-mails already sent carry `token`. For the people still waiting to confirm who
were never confirmed nor unsubscribed (so `token` was only ever mailed to them in that e-mail, never
in an edition), that token becomes their confirmation token, good for NEWSLETTER_CONFIRM_TTL after
their e-mail. Whoever unsubscribed must subscribe again on the form: the links they hold (an
edition's, an older confirmation's) no longer subscribe anyone.
"""

import hashlib

from django.conf import settings
from django.db import migrations, models

CHUNK = 1000


def confirm_links_of_waiting_people(apps, schema_editor):
    Subscriber = apps.get_model("publishing_newsletter", "Subscriber")
    waiting = Subscriber.objects.filter(status="unconfirmed", confirmed_at=None, unsubscribed_at=None).order_by("id")
    batch = []
    for subscriber in waiting.only("id", "token", "created_at", "confirmation_sent_at").iterator(chunk_size=CHUNK):
        subscriber.confirm_token_hash = hashlib.sha256(subscriber.token.encode()).hexdigest()
        sent_at = subscriber.confirmation_sent_at or subscriber.created_at
        subscriber.confirm_expires_at = sent_at + settings.NEWSLETTER_CONFIRM_TTL
        batch.append(subscriber)
        if len(batch) >= CHUNK:
            Subscriber.objects.bulk_update(batch, ["confirm_token_hash", "confirm_expires_at"])
            batch = []
    Subscriber.objects.bulk_update(batch, ["confirm_token_hash", "confirm_expires_at"])


class Migration(migrations.Migration):
    dependencies = [
        ("publishing_newsletter", "0002_delivery_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="subscriber",
            name="confirm_expires_at",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name="subscriber",
            name="confirm_token_hash",
            field=models.CharField(blank=True, editable=False, max_length=64, null=True, unique=True),
        ),
        migrations.RunPython(confirm_links_of_waiting_people, migrations.RunPython.noop),
    ]
