"""The embedded default's e-mail: nothing is sent; each message is printed and written to var/mail/
as an .eml file of its own, which a mail client (here the `email` package) reads as the message it
is: a newsletter's edition as the pipeline makes it, its confirmation e-mail, any other e-mail."""

import email
import os
import subprocess
import sys
from email.policy import default as default_policy

import pytest
from django.conf import settings
from django.core.mail import send_mail

from apps.posts.editor_status import post_publish_now
from apps.posts.services import post_create
from apps.publishing.newsletter.services import confirmations_send
from apps.publishing.services import channel_run
from tests.conftest import settings_loaded
from tests.factories import NewsletterChannelFactory, SubscriberFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def mail_folder(settings, tmp_path):
    settings.EMAIL_BACKEND = "apps.core.mail_files.EmailBackend"
    settings.EMAIL_FILE_PATH = tmp_path / "mail"
    settings.SITE_URL = "https://cps.example.com"
    return settings.EMAIL_FILE_PATH


def written(folder) -> list[email.message.EmailMessage]:
    """The messages in the folder, oldest first, as a mail client opens them."""
    return [email.message_from_bytes(path.read_bytes(), policy=default_policy) for path in sorted(folder.glob("*.eml"))]


def test_each_edition_of_a_newsletter_is_a_file_per_recipient_with_their_own_unsubscribe_link(mail_folder, capsys):
    letter = NewsletterChannelFactory(title="Field Notes")
    first, second = SubscriberFactory(channel=letter), SubscriberFactory(channel=letter)
    post = post_create(channel=letter, title="Spring issue", body="Hello, *readers*.")

    post_publish_now(post_id=post.pk)
    channel_run(letter.pk)

    messages = written(mail_folder)
    assert sorted(message["To"] for message in messages) == sorted(f"{s.name} <{s.email}>" for s in (first, second))
    for message in messages:
        assert message["Subject"] == "Spring issue"
        assert [part.get_content_type() for part in message.iter_parts()] == ["text/plain", "text/html"]
        reader = first if first.email in message["To"] else second
        assert f"/newsletter/unsubscribe/{reader.token}/" in message["List-Unsubscribe"]
    assert [path.suffix for path in mail_folder.iterdir()] == [".eml", ".eml"]  # nothing half-written left
    # Printed too, as before: the worker's output still shows each message.
    assert capsys.readouterr().out.count("Subject: Spring issue") == 2


def test_a_confirmation_e_mail_and_any_other_e_mail_are_files_too(mail_folder):
    waiting = SubscriberFactory(status="unconfirmed", email="reader@example.com")

    confirmations_send(subscriber_ids=[waiting.pk])
    send_mail("Your invitation", "Open the link.", None, ["new.member@example.com"])

    by_address = {message["To"]: message for message in written(mail_folder)}
    confirmation, invitation = by_address["reader@example.com"], by_address["new.member@example.com"]
    assert "https://cps.example.com/newsletter/confirm/" in confirmation.get_content()
    assert invitation["Subject"] == "Your invitation"
    assert invitation.get_content().strip() == "Open the link."


def test_the_embedded_default_writes_e_mails_under_var_mail_unless_told_elsewhere():
    show = "import config.settings as s; print(s.EMAIL_BACKEND, s.EMAIL_FILE_PATH.relative_to(s.BASE_DIR))"

    default = settings_loaded(show, {}, unset=("EMAIL_", "ENVIRONMENT"))
    elsewhere = settings_loaded(show, {"EMAIL_FILE_PATH": "var/elsewhere"}, unset=("EMAIL_", "ENVIRONMENT"))

    assert default.stdout.split() == ["apps.core.mail_files.EmailBackend", "var/mail"]
    assert elsewhere.stdout.split() == ["apps.core.mail_files.EmailBackend", "var/elsewhere"]


def test_make_run_says_where_the_e_mails_are_when_they_are_not_sent():
    rendered = subprocess.run(
        ["make", "-n", "run", f"PY={sys.executable}"], cwd=settings.BASE_DIR, capture_output=True, text=True, check=True
    )
    [line] = [line for line in rendered.stdout.splitlines() if "EMAIL_FILE_PATH" in line]
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("EMAIL_", "ENVIRONMENT"))}

    def said(**env) -> str:
        run = subprocess.run(
            ["/bin/sh", "-c", line], cwd=settings.BASE_DIR, env={**environment, **env}, capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
        return run.stdout

    assert said() == (
        "E-mails are not sent (no EMAIL_BACKEND set): each is written to var/mail/ as an .eml file, which a mail "
        "client opens, and printed by the worker.\n"
    )
    assert said(EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend") == ""
