"""Bounces, complaints and unsubscribes that an e-mail provider reports through django-anymail's
tracking webhooks: each suppresses its address once however often it arrives, a hard bounce fails
its delivery, a temporary failure changes nothing, and the webhook takes only signed calls."""

import base64
import json
from datetime import UTC, datetime

import pytest
from anymail.signals import AnymailTrackingEvent, tracking
from anymail.webhooks.postmark import PostmarkTrackingWebhookView
from django.test import Client

from apps.publishing.newsletter.models import (
    Delivery,
    DeliveryState,
    Edition,
    Subscriber,
    Suppression,
    SuppressionReason,
    TrackingEvent,
    email_hash,
)
from apps.publishing.newsletter.services import suppression_lift
from apps.webhooks.models import EventKind
from tests.conftest import settings_loaded
from tests.factories import NewsletterChannelFactory, PostFactory, SubscriberFactory
from tests.ops.test_production_settings import PRODUCTION, UNSET, start_up_errors

pytestmark = pytest.mark.django_db

WHEN = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
SECRET = "postmark:s3cret-Pa55"


@pytest.fixture
def newsletter(db):
    return NewsletterChannelFactory(title="Weekly Letter")


def sent_edition(channel, subscribers) -> Edition:
    """An edition whose send is over: every subscriber's record `sent`, with its own Message-ID."""
    edition = Edition.objects.create(
        post_id=PostFactory(channel=channel).pk,
        channel=channel,
        job_id=1,
        subject="Issue 1",
        html="<p>1</p>",
        text="1",
        total=len(subscribers),
        sent=len(subscribers),
        finished_at=WHEN,
    )
    Delivery.objects.bulk_create(
        Delivery(
            edition=edition,
            subscriber=subscriber,
            state=DeliveryState.SENT,
            message_id=f"<{edition.pk}.{subscriber.pk}@cps.example.com>",
            settled_at=WHEN,
        )
        for subscriber in subscribers
    )
    return edition


def message_id(edition, subscriber) -> str:
    return Delivery.objects.get(edition=edition, subscriber=subscriber).message_id


def report(esp_name="Postmark", **fields) -> None:
    """Send anymail's tracking signal as its webhook views do, for one event."""
    event = AnymailTrackingEvent(**{"timestamp": WHEN, "esp_event": {}, **fields})
    tracking.send(sender=PostmarkTrackingWebhookView, event=event, esp_name=esp_name)


def suppressions(email: str) -> list[tuple]:
    return list(
        Suppression.objects.filter(email_hash=email_hash(email)).values_list("account_id", "channel_id", "reason")
    )


def counts(edition) -> dict:
    edition.refresh_from_db()
    return edition.recipients()


# --- through the signal ---------------------------------------------------------------------------


def test_a_hard_bounce_delivered_twice_suppresses_the_address_once_and_fails_its_delivery(newsletter):
    ada, bob = SubscriberFactory(channel=newsletter), SubscriberFactory(channel=newsletter)
    edition = sent_edition(newsletter, [ada, bob])
    bounce = {
        "event_type": "bounced",
        "event_id": "4323372036854775807",
        "recipient": ada.email.upper(),
        "message_id": message_id(edition, ada).strip("<>"),
        "reject_reason": "bounced",
        "description": "The server was unable to deliver your message",
        "mta_response": "550 5.1.1 No such user",
        "esp_event": {"RecordType": "Bounce", "Type": "HardBounce"},
    }

    report(**bounce)
    report(**bounce)

    assert suppressions(ada.email) == [(newsletter.account_id, None, SuppressionReason.BOUNCE)]
    assert "550 5.1.1 No such user" in Suppression.objects.get().detail
    assert TrackingEvent.objects.count() == 1
    failed = Delivery.objects.get(subscriber=ada)
    assert (failed.state, failed.error) == (DeliveryState.FAILED, Suppression.objects.get().detail)
    assert Delivery.objects.get(subscriber=bob).state == DeliveryState.SENT
    assert counts(edition) == {"total": 2, "pending": 0, "sent": 1, "failed": 1, "suppressed": 0, "uncertain": 0}


def test_a_complaint_delivered_twice_suppresses_the_address_once_and_changes_no_count(newsletter):
    ada = SubscriberFactory(channel=newsletter)
    edition = sent_edition(newsletter, [ada])
    complaint = {
        "event_type": "complained",
        "event_id": "c-1",
        "recipient": ada.email,
        "message_id": message_id(edition, ada),
        "esp_event": {"RecordType": "SpamComplaint"},
    }

    report(**complaint)
    report(**complaint)

    assert suppressions(ada.email) == [(newsletter.account_id, None, SuppressionReason.COMPLAINT)]
    assert TrackingEvent.objects.count() == 1
    assert Delivery.objects.get().state == DeliveryState.SENT
    assert counts(edition)["sent"] == 1


def test_a_bounce_delivered_again_after_an_admin_lifted_it_does_not_suppress_the_address_again(newsletter):
    ada = SubscriberFactory(channel=newsletter)
    bounce = {"event_type": "bounced", "event_id": "b-1", "recipient": ada.email, "message_id": None}
    report(**bounce)
    suppression_lift(suppression=Suppression.objects.get(), reason="The mailbox exists again", by="admin@example.com")

    report(**bounce)

    assert suppressions(ada.email) == []


def test_a_complaint_after_a_bounce_keeps_the_suppression_and_fails_the_delivery_once(newsletter):
    ada = SubscriberFactory(channel=newsletter)
    edition = sent_edition(newsletter, [ada])
    common = {"recipient": ada.email, "message_id": message_id(edition, ada)}

    report(event_type="bounced", event_id="b-1", **common)
    report(event_type="bounced", event_id="b-2", **common)  # the provider's second bounce for the message
    report(event_type="complained", event_id="c-1", **common)

    assert [reason for _, _, reason in suppressions(ada.email)] == [SuppressionReason.BOUNCE]
    assert counts(edition)["failed"] == 1
    assert counts(edition)["sent"] == 0


@pytest.mark.parametrize(
    ("esp_name", "fields"),
    [
        ("Postmark", {"event_type": "bounced", "esp_event": {"RecordType": "Bounce", "Type": "SoftBounce"}}),
        ("Amazon SES", {"event_type": "bounced", "esp_event": {"bounce": {"bounceType": "Transient"}}}),
        ("Brevo", {"event_type": "bounced", "esp_event": {"event": "soft_bounce"}}),
        ("Mailjet", {"event_type": "bounced", "esp_event": {"event": "bounce", "hard_bounce": False}}),
        ("SendGrid", {"event_type": "bounced", "esp_event": {"event": "bounce", "type": "blocked"}}),
        ("SparkPost", {"event_type": "bounced", "esp_event": {"msys": {"message_event": {"bounce_class": "22"}}}}),
        ("Mailgun", {"event_type": "bounced", "reject_reason": "blocked"}),
        ("Postmark", {"event_type": "deferred"}),
        ("Postmark", {"event_type": "delivered"}),
        ("Postmark", {"event_type": "rejected", "reject_reason": "blocked"}),
    ],
)
def test_a_temporary_failure_or_a_block_of_the_sender_suppresses_nothing(newsletter, esp_name, fields):
    ada = SubscriberFactory(channel=newsletter)
    edition = sent_edition(newsletter, [ada])

    report(esp_name, event_id="e-1", recipient=ada.email, message_id=message_id(edition, ada), **fields)

    assert suppressions(ada.email) == []
    assert not TrackingEvent.objects.exists()
    assert Delivery.objects.get().state == DeliveryState.SENT


@pytest.mark.parametrize(
    ("esp_name", "raw"),
    [
        ("Amazon SES", {"bounce": {"bounceType": "Permanent"}}),
        ("Mailjet", {"event": "bounce", "hard_bounce": True}),
        ("SparkPost", {"msys": {"message_event": {"bounce_class": "10"}}}),
        ("Mailgun", {}),
    ],
)
def test_each_providers_hard_bounce_suppresses_the_address(newsletter, esp_name, raw):
    ada = SubscriberFactory(channel=newsletter)
    sent_as = message_id(sent_edition(newsletter, [ada]), ada)

    report(esp_name, event_type="bounced", event_id="e-1", recipient=ada.email, message_id=sent_as, esp_event=raw)

    assert suppressions(ada.email) == [(newsletter.account_id, None, SuppressionReason.BOUNCE)]


def test_a_rejection_by_the_providers_own_suppression_list_is_taken_over(newsletter):
    ada, bob = SubscriberFactory(channel=newsletter), SubscriberFactory(channel=newsletter)
    edition = sent_edition(newsletter, [ada, bob])
    for delivery in Delivery.objects.all():  # recorded as the provider's own id, reported in angle brackets
        Delivery.objects.filter(pk=delivery.pk).update(message_id=delivery.message_id.strip("<>"))

    for subscriber, reason in [(ada, "bounced"), (bob, "spam")]:
        sent_as = f"<{message_id(edition, subscriber)}>"
        report("SendGrid", event_type="rejected", reject_reason=reason, recipient=subscriber.email, message_id=sent_as)

    assert suppressions(ada.email) == [(newsletter.account_id, None, SuppressionReason.BOUNCE)]
    assert suppressions(bob.email) == [(newsletter.account_id, None, SuppressionReason.COMPLAINT)]
    assert counts(edition)["failed"] == 1


def test_an_event_without_an_id_counts_once_per_moment(newsletter):
    ada = SubscriberFactory(channel=newsletter)
    edition = sent_edition(newsletter, [ada])
    Delivery.objects.update(message_id="")  # a message the provider reports without an id we know
    bounce = {"event_type": "bounced", "event_id": None, "recipient": ada.email, "message_id": None}

    report(**bounce)
    report(**bounce)
    report(**{**bounce, "timestamp": datetime(2026, 3, 9, 9, 30, tzinfo=UTC)})

    assert TrackingEvent.objects.count() == 2
    assert suppressions(ada.email) == [(newsletter.account_id, None, SuppressionReason.BOUNCE)]
    assert counts(edition)["sent"] == 1


def test_a_bounce_of_a_message_of_no_edition_suppresses_the_address_in_every_account_that_has_it(newsletter):
    other = NewsletterChannelFactory()
    SubscriberFactory(channel=newsletter, email="ada@example.com")
    SubscriberFactory(channel=other, email="ada@example.com")
    SubscriberFactory(channel=other, email="bob@example.com")

    report(event_type="bounced", event_id="b-1", recipient="Ada@Example.com", message_id="<confirmation@cps>")

    assert sorted(suppressions("ada@example.com")) == sorted(
        [(newsletter.account_id, None, SuppressionReason.BOUNCE), (other.account_id, None, SuppressionReason.BOUNCE)]
    )
    assert suppressions("bob@example.com") == []


def test_a_provider_unsubscribe_unsubscribes_the_person_from_that_newsletter_only(newsletter, emitted):
    other = NewsletterChannelFactory(account=newsletter.account, team=newsletter.team)
    ada = SubscriberFactory(channel=newsletter, email="ada@example.com")
    SubscriberFactory(channel=other, email="ada@example.com")
    edition = sent_edition(newsletter, [ada])
    unsubscribe = {
        "event_type": "unsubscribed",
        "event_id": "u-1",
        "recipient": ada.email,
        "message_id": message_id(edition, ada),
    }

    report(**unsubscribe)
    report(**unsubscribe)

    assert Subscriber.objects.get(pk=ada.pk).status == "unsubscribed"
    assert Subscriber.objects.get(channel=other).status == "confirmed"
    assert suppressions(ada.email) == [(newsletter.account_id, newsletter.pk, SuppressionReason.UNSUBSCRIBED)]
    assert [body["data"]["subscriber"]["id"] for body in emitted(EventKind.SUBSCRIBER_UNSUBSCRIBED)] == [ada.pk]


def test_an_erased_subscribers_bounce_still_suppresses_the_address_in_the_account(newsletter):
    ada = SubscriberFactory(channel=newsletter, email="ada@example.com")
    edition = sent_edition(newsletter, [ada])
    sent_as = message_id(edition, ada)
    ada.delete()

    report(event_type="complained", event_id="c-1", recipient="ada@example.com", message_id=sent_as)

    assert suppressions("ada@example.com") == [(newsletter.account_id, None, SuppressionReason.COMPLAINT)]


# --- through the webhook --------------------------------------------------------------------------

POSTMARK_BOUNCE = {
    "RecordType": "Bounce",
    "ID": 692560173,
    "Type": "HardBounce",
    "TypeCode": 1,
    "Name": "Hard bounce",
    "Description": "The server was unable to deliver your message (ex: unknown user, mailbox not found).",
    "Details": "smtp;550 5.1.1 The email account that you tried to reach does not exist.",
    "BouncedAt": "2026-03-02T09:30:00Z",
    "Inactive": True,
    "CanActivate": True,
    "MessageStream": "outbound",
}
WEBHOOK = "/newsletter/anymail/postmark/tracking/"


def post_bounce(body: dict, **headers):
    return Client().post(WEBHOOK, data=json.dumps(body), content_type="application/json", **headers)


def basic(credentials: str) -> dict:
    return {"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(credentials.encode()).decode()}


def test_postmarks_bounce_webhook_with_the_secret_suppresses_the_address_once(settings, newsletter):
    settings.ANYMAIL = {"WEBHOOK_SECRET": [SECRET]}
    ada = SubscriberFactory(channel=newsletter)
    edition = sent_edition(newsletter, [ada])
    body = {**POSTMARK_BOUNCE, "Email": ada.email, "MessageID": message_id(edition, ada).strip("<>")}

    answers = [post_bounce(body, **basic(SECRET)).status_code for _ in range(2)]

    assert answers == [200, 200]
    assert suppressions(ada.email) == [(newsletter.account_id, None, SuppressionReason.BOUNCE)]
    assert counts(edition)["failed"] == 1


@pytest.mark.parametrize("credentials", [None, "postmark:wrong", "other:s3cret-Pa55"])
def test_the_webhook_refuses_a_call_without_the_secret_and_suppresses_nothing(settings, newsletter, credentials):
    settings.ANYMAIL = {"WEBHOOK_SECRET": [SECRET]}
    ada = SubscriberFactory(channel=newsletter)

    response = post_bounce({**POSTMARK_BOUNCE, "Email": ada.email}, **(basic(credentials) if credentials else {}))

    assert response.status_code == 400
    assert suppressions(ada.email) == []


def test_anymails_inbound_mail_webhooks_are_not_served(settings):
    settings.ANYMAIL = {"WEBHOOK_SECRET": [SECRET]}

    response = Client().post("/newsletter/anymail/postmark/inbound/", data={}, **basic(SECRET))

    assert response.status_code == 404


# --- settings -------------------------------------------------------------------------------------

SHOW = "import json, config.settings as s; print(json.dumps([s.ANYMAIL, s.NEWSLETTER_TRACKING_WEBHOOKS]))"


def start(**env):
    return settings_loaded(SHOW, env, unset=(*UNSET, "ANYMAIL_"))


def test_anymail_settings_come_from_the_environment_with_their_types():
    result = start(
        ANYMAIL_POSTMARK_SERVER_TOKEN="$tok-1",
        ANYMAIL_WEBHOOK_SECRET="a:b, c:d:e",
        ANYMAIL_IGNORE_RECIPIENT_STATUS="True",
        ANYMAIL_SEND_DEFAULTS='{"tags": ["newsletter"]}',
        ANYMAIL_REQUESTS_TIMEOUT="12.5",
        ANYMAIL_RESEND_SIGNING_SECRET="",
    )

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        {
            "POSTMARK_SERVER_TOKEN": "$tok-1",
            "WEBHOOK_SECRET": ["a:b", "c:d:e"],
            "IGNORE_RECIPIENT_STATUS": True,
            "SEND_DEFAULTS": {"tags": ["newsletter"]},
            "REQUESTS_TIMEOUT": 12.5,
        },
        True,
    ]


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"ANYMAIL_WEBHOOK_SECRET": "no-password"}, "ANYMAIL_WEBHOOK_SECRET must be user:password"),
        ({"ANYMAIL_WEBHOOK_SECRET": "a:b,"}, "ANYMAIL_WEBHOOK_SECRET must be user:password"),
        ({"ANYMAIL_SEND_DEFAULTS": "{tags: 1}"}, "ANYMAIL_SEND_DEFAULTS must be valid JSON"),
        ({"ANYMAIL_REQUESTS_TIMEOUT": "soon"}, "ANYMAIL_REQUESTS_TIMEOUT must be a positive number"),
    ],
)
def test_a_malformed_anymail_setting_stops_the_start_up(env, named):
    result = start(**env)

    assert result.returncode != 0
    assert named in result.stderr


def test_production_does_not_start_with_a_providers_backend_without_the_webhooks_secret():
    provider = "anymail.backends.postmark.EmailBackend"

    assert start_up_errors(EMAIL_BACKEND=provider, ANYMAIL={"WEBHOOK_SECRET": [SECRET]}) == []
    [error] = start_up_errors(EMAIL_BACKEND=provider, ANYMAIL={"POSTMARK_SERVER_TOKEN": "t"})
    assert error.startswith("cps.E005 ANYMAIL_WEBHOOK_SECRET (user:password) must be set")


def test_production_serves_the_tracking_webhooks_only_once_their_secret_is_set():
    without = start(**PRODUCTION)
    provider = start(
        **PRODUCTION, EMAIL_BACKEND="anymail.backends.postmark.EmailBackend", ANYMAIL_WEBHOOK_SECRET=SECRET
    )

    assert json.loads(without.stdout)[1] is False, without.stderr
    assert json.loads(provider.stdout)[1] is True, provider.stderr
