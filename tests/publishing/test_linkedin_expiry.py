"""The daily look at LinkedIn access about to end (beat's publishing.linkedin_expiry): access that can
renew itself is renewed; otherwise the account's admins are told once per expiry, and access that has
ended (or that LinkedIn will no longer renew) asks for a reconnection. LinkedIn not answering loses
nothing: the next run tries again."""

from datetime import timedelta

import pytest
from django.core import mail
from django.urls import reverse
from django.utils import timezone

from apps.core import crypto
from apps.publishing.linkedin.models import LinkedInConnection
from apps.publishing.linkedin.services import connection_check, connection_save
from apps.publishing.linkedin.tasks import linkedin_expiry
from tests.conftest import admin_session
from tests.factories import AccountFactory, AdminUserFactory, ChannelFactory, UserFactory

pytestmark = pytest.mark.django_db

DAY = 86400


def connect(linkedin, channel=None, *, days: float, refresh: bool) -> LinkedInConnection:
    """The channel (a new LinkedIn one by default) connected with access that ends in `days` days."""
    channel = channel or ChannelFactory(platform="linkedin", title="Ada's feed")
    token = linkedin.issue_token(expires_in=round(days * DAY), refresh=refresh)
    connection_save(channel=channel, token=token, connected_by="tests")
    return LinkedInConnection.objects.get(channel=channel)


@pytest.fixture
def daily(django_capture_on_commit_callbacks):
    """Run the beat task as beat's worker does: outside a transaction, so what it hands to
    on_commit (the reconnect e-mail) happens."""

    def run() -> dict[str, int]:
        with django_capture_on_commit_callbacks(execute=True):
            return linkedin_expiry()

    return run


@pytest.fixture
def clock(monkeypatch):
    """Move "now" (django.utils.timezone.now) by a timedelta from the real time."""

    real_now = timezone.now

    def move(by: timedelta) -> None:
        at = real_now() + by
        monkeypatch.setattr(timezone, "now", lambda: at)

    return move


def page_url(connection: LinkedInConnection) -> str:
    return reverse("admin:publishing_linkedin_linkedinconnection_change", args=[connection.pk])


def test_the_beat_schedule_checks_linkedin_access_daily_with_a_registered_task(settings):
    from config.celery import app

    entry = settings.CELERY_BEAT_SCHEDULE["publishing.linkedin_expiry"]
    assert entry == {"task": "publishing.linkedin_expiry", "schedule": 86400.0}
    assert app.conf.beat_schedule["publishing.linkedin_expiry"] == entry
    app.loader.import_default_modules()  # what a worker does at start: find every app's tasks
    assert app.tasks["publishing.linkedin_expiry"].name == linkedin_expiry.name == "publishing.linkedin_expiry"


def test_access_ending_in_three_days_with_a_refresh_token_is_renewed_without_an_email(linkedin, daily):
    connection = connect(linkedin, days=3, refresh=True)
    AdminUserFactory(account=connection.channel.account)
    refresh_token, access_token = connection.refresh_token(), connection.access_token()

    assert daily() == {"renewed": 1, "warned": 0, "lost": 0}

    [grant] = linkedin.token_requests
    assert grant["grant_type"] == "refresh_token" and grant["refresh_token"] == refresh_token
    connection.refresh_from_db()
    assert connection.access_token() != access_token
    assert timedelta(days=59) < connection.expires_at - timezone.now() <= timedelta(days=60)
    assert connection.refresh_token() == refresh_token and connection.needs_reconnect is False
    assert mail.outbox == []
    # LinkedIn takes the renewed access.
    assert connection_check(connection=connection).startswith("Connected to LinkedIn as Ada Lovelace")


def test_access_ending_in_three_days_without_a_refresh_token_emails_the_accounts_admins_once_per_expiry(
    linkedin, daily, clock, settings
):
    connection = connect(linkedin, days=3, refresh=False)
    account = connection.channel.account
    admins = [AdminUserFactory(account=account), AdminUserFactory(account=account)]
    UserFactory(account=account)  # an editor
    AdminUserFactory(account=account, status="suspended")
    AdminUserFactory(account=AccountFactory())  # another account's admin

    assert daily() == {"renewed": 0, "warned": 1, "lost": 0}

    [message] = mail.outbox
    assert sorted(message.to) == sorted(admin.email for admin in admins)
    assert "Ada's feed" in message.subject and f"{connection.expires_at:%Y-%m-%d}" in message.subject
    assert f"“Ada's feed” (Ada Lovelace) ends on {connection.expires_at:%Y-%m-%d %H:%M} UTC" in message.body
    assert f"{settings.SITE_URL}{page_url(connection)}" in message.body
    # The link opens the connection's page, where an admin reconnects.
    page = admin_session(admins[0]).get(page_url(connection))
    assert page.status_code == 200 and "Reconnect LinkedIn" in page.content.decode()
    assert linkedin.token_requests == []

    # The next day: the same expiry, told already.
    clock(timedelta(days=1))
    assert daily() == {"renewed": 0, "warned": 0, "lost": 0}
    assert len(mail.outbox) == 1

    # Reconnected (new access for 60 days): nothing to tell, until the new end comes near.
    first_expiry = connection.expires_at
    connection = connect(linkedin, connection.channel, days=60, refresh=False)
    assert daily() == {"renewed": 0, "warned": 0, "lost": 0}
    clock(timedelta(days=1 + 57))
    assert daily() == {"renewed": 0, "warned": 1, "lost": 0}
    assert len(mail.outbox) == 2
    assert connection.expires_at > first_expiry + timedelta(days=50)
    assert f"ends on {connection.expires_at:%Y-%m-%d %H:%M} UTC" in mail.outbox[1].body


@pytest.mark.parametrize("refresh", [True, False], ids=["with a refresh token", "without"])
def test_access_ending_in_ten_days_is_left_alone(linkedin, daily, refresh):
    connection = connect(linkedin, days=10, refresh=refresh)
    AdminUserFactory(account=connection.channel.account)

    assert daily() == {"renewed": 0, "warned": 0, "lost": 0}

    assert linkedin.token_requests == [] and mail.outbox == []
    after = LinkedInConnection.objects.get(pk=connection.pk)
    assert (after.access_token(), after.expires_at, after.warned_for_expiry) == (
        connection.access_token(),
        connection.expires_at,
        None,
    )


def test_expired_access_without_a_refresh_token_asks_for_a_reconnection_once(linkedin, daily, settings):
    connection = connect(linkedin, days=3, refresh=False)
    admin = AdminUserFactory(account=connection.channel.account)
    LinkedInConnection.objects.filter(pk=connection.pk).update(expires_at=timezone.now() - timedelta(hours=1))

    assert daily() == {"renewed": 0, "warned": 0, "lost": 1}
    assert daily() == {"renewed": 0, "warned": 0, "lost": 0}

    connection.refresh_from_db()
    assert connection.needs_reconnect and connection.reconnect_reason == "The access LinkedIn granted has expired."
    [message] = mail.outbox
    assert message.to == [admin.email]
    assert message.subject == "Reconnect LinkedIn: the channel “Ada's feed” cannot publish"
    assert "The access LinkedIn granted has expired." in message.body
    assert f"{settings.SITE_URL}{page_url(connection)}" in message.body


def test_linkedin_refusing_the_refresh_asks_for_a_reconnection_with_its_reason_once(linkedin, daily):
    connection = connect(linkedin, days=3, refresh=True)
    admin = AdminUserFactory(account=connection.channel.account)
    LinkedInConnection.objects.filter(pk=connection.pk).update(
        refresh_token_encrypted=crypto.encrypt("AQX-not-a-refresh-token-linkedin-gave")
    )

    assert daily() == {"renewed": 0, "warned": 0, "lost": 1}
    assert daily() == {"renewed": 0, "warned": 0, "lost": 0}

    assert [grant["refresh_token"] for grant in linkedin.token_requests] == ["AQX-not-a-refresh-token-linkedin-gave"]
    connection.refresh_from_db()
    assert connection.needs_reconnect
    assert connection.reconnect_reason.startswith("LinkedIn refused to renew the access")
    assert "The provided refresh token is invalid" in connection.reconnect_reason
    [message] = mail.outbox
    assert message.to == [admin.email] and message.subject.startswith("Reconnect LinkedIn:")
    assert connection.reconnect_reason in message.body


@pytest.mark.parametrize("days", [3, -1], ids=["ending in three days", "ended an hour ago"])
def test_linkedin_not_answering_the_refresh_loses_nothing_and_the_next_run_renews(linkedin, daily, settings, days):
    settings.PUBLISH_TIMEOUT = 1
    connection = connect(linkedin, days=3, refresh=True)
    AdminUserFactory(account=connection.channel.account)
    if days < 0:
        LinkedInConnection.objects.filter(pk=connection.pk).update(expires_at=timezone.now() - timedelta(hours=1))
    connection.refresh_from_db()
    linkedin.hang(60, path="/oauth/v2/accessToken", times=1)

    assert daily() == {"renewed": 0, "warned": 0, "lost": 0}

    unanswered = LinkedInConnection.objects.get(pk=connection.pk)
    assert unanswered.needs_reconnect is False and unanswered.reconnect_reason == ""
    assert unanswered.access_token() == connection.access_token() and unanswered.expires_at == connection.expires_at
    assert unanswered.can_refresh() and mail.outbox == []

    assert daily() == {"renewed": 1, "warned": 0, "lost": 0}

    # Asked twice; the first request, unanswered, was never carried out.
    asked = linkedin.calls("POST", "/oauth/v2/accessToken")
    assert [call.body["grant_type"] for call in asked] == ["refresh_token", "refresh_token"]
    assert [grant["grant_type"] for grant in linkedin.token_requests] == ["refresh_token"]
    renewed = LinkedInConnection.objects.get(pk=connection.pk)
    assert renewed.expires_at - timezone.now() > timedelta(days=59) and not renewed.needs_reconnect
    assert mail.outbox == []
