"""An edition and a confirmation e-mail as SpamAssassin scores them: the real messages the service
sends (the edition the publishing pipeline makes, as the mail server received its bytes), scored
with its local tests only (no network)."""

import re
import shutil
import subprocess

import pytest

from apps.posts.editor_status import post_publish_now
from apps.posts.services import post_create
from apps.publishing.newsletter.services import confirmations_send
from apps.publishing.services import channel_run
from tests.factories import NewsletterChannelFactory, SubscriberFactory
from tests.publishing.newsletter.conftest import subscribe

pytestmark = pytest.mark.django_db

SPAMASSASSIN = shutil.which("spamassassin")
needs_spamassassin = pytest.mark.skipif(
    SPAMASSASSIN is None, reason="needs Debian's spamassassin package (.ci/run installs it)"
)
BODY = """Hello readers. This spring we planted tomatoes, beans and a row of sunflowers along the
fence. Read [the planting notes](https://example.org/notes) for the dates.

## What comes next

- watering twice a week
- a first harvest in July
"""


@pytest.fixture
def letter(settings):
    settings.SITE_URL = "https://cps.example.com"
    settings.DEFAULT_FROM_EMAIL = "Field Notes <news@cps.example.com>"
    return NewsletterChannelFactory(title="Field Notes")


def spam_score(raw: bytes, home) -> tuple[float, str]:
    """SpamAssassin's score of the message and the tests it matched (local tests only)."""
    checked = subprocess.run(
        [SPAMASSASSIN, "--local", "--test-mode"],
        input=raw,
        capture_output=True,
        check=True,
        timeout=120,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
    )
    report = checked.stdout.decode(errors="replace")
    [score] = re.findall(r"Content analysis details:\s+\((-?[0-9.]+) points", report)
    return float(score), report[report.index("Content analysis details") :]


@needs_spamassassin
def test_an_edition_with_its_preview_line_scores_at_most_one_point(smtp_server, letter, tmp_path):
    subscribe(letter, 1)
    post = post_create(channel=letter, title="Spring in the garden", body=BODY, teaser="Tomatoes, beans and sunflowers")
    post_publish_now(post_id=post.pk)
    channel_run(letter.pk)
    [received] = smtp_server.received
    html = received.message.get_body(("html",)).get_content()
    assert re.findall(r'<div class="preheader"[^>]*>([^<]*)</div>', html) == ["Tomatoes, beans and sunflowers"]

    score, report = spam_score(received.raw, tmp_path)

    assert score <= 1.0, report
    assert "FONT_INVIS" not in report and "LOW_CONTRAST" not in report, report


@needs_spamassassin
def test_the_confirmation_email_scores_nothing(smtp_server, letter, tmp_path):
    waiting = SubscriberFactory(channel=letter, status="unconfirmed")
    confirmations_send(subscriber_ids=[waiting.pk])
    [received] = smtp_server.received

    score, report = spam_score(received.raw, tmp_path)

    assert score <= 0, report
