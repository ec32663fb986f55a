import pytest

from apps.publishing.newsletter.models import Subscriber
from tests.publishing.newsletter.smtp_server import SmtpServer


@pytest.fixture
def smtp_server(settings):
    """A real SMTP server (smtp_server.py) that Django's mail settings point at, sending unpaced."""
    with SmtpServer() as server:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_USE_TLS = server.host, server.port, False
        settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
        settings.EMAIL_TIMEOUT = 5
        settings.NEWSLETTER_SEND_RATE = 0
        yield server


def subscribe(channel, count: int, *, status: str = "confirmed", prefix: str = "reader") -> list[Subscriber]:
    """`count` subscribers of the channel at once: {prefix}0@example.com, {prefix}1@example.com..."""
    return Subscriber.objects.bulk_create(
        Subscriber(channel=channel, email=f"{prefix}{n}@example.com", name=f"Reader {n}", status=status)
        for n in range(count)
    )
