"""The sender's own SMTP transaction (smtp_transaction.sendmail) for a prepared message, dot-stuffed once per
edition: a real SMTP server (smtp_server.py) receives what smtplib's sendmail() delivers of the same
message, and refusals raise the errors smtplib raises, which mail_errors interprets."""

import re
import smtplib

import pytest

from apps.publishing.newsletter import message
from apps.publishing.newsletter.mail_errors import verdict_of
from apps.publishing.newsletter.services import newsletter_of
from apps.publishing.newsletter.smtp_transaction import sendmail
from tests.factories import NewsletterChannelFactory

pytestmark = pytest.mark.django_db

# Lines beginning with a period, in both parts: SMTP doubles the period on the wire and the server
# takes it off again (RFC 5321 4.5.2); a line of a single period would otherwise end the message.
TEXT = f".hidden line\n..two periods\n.\nLeave: {message.UNSUBSCRIBE_MARK}\n"
HTML = f"<p>one</p>\n.not a tag\n<a href='{message.UNSUBSCRIBE_MARK}'>leave</a>\n"
READER = message.Recipient(email="ada.lovelace+news@example.com", name="Ada", token="tok-1")


@pytest.fixture
def prepared():
    newsletter = newsletter_of(NewsletterChannelFactory())
    edition = message.Rendered(subject="Dots", html=HTML, text=TEXT)
    return message.Prepared(edition=edition, newsletter=newsletter)


def without_id_and_date(data: bytes) -> bytes:
    return re.sub(rb"(?m)^(Message-ID|Date): .*\r\n", b"", data)


def test_a_prepared_message_arrives_byte_for_byte_as_smtplibs_sendmail_delivers_it(smtp_server, prepared):
    stuffed, plain = prepared.serialize(READER, stuffed=True), prepared.serialize(READER)
    assert stuffed.data != plain.data  # the template's lines were stuffed: what is tested

    with smtplib.SMTP(smtp_server.host, smtp_server.port) as smtp:
        sendmail(smtp, stuffed)
        smtp.sendmail(plain.from_address, [plain.to_address], plain.data)

    ours, smtplibs = smtp_server.received
    assert ours.raw == stuffed.data.replace(b"\r\n..", b"\r\n.")
    assert without_id_and_date(ours.raw) == without_id_and_date(smtplibs.raw)
    assert (ours.mail_from, ours.rcpt_tos) == (smtplibs.mail_from, smtplibs.rcpt_tos)
    assert ours.rcpt_tos == (READER.email,)
    assert ".hidden line\r\n..two periods\r\n.\r\n" in ours.message.get_body(("plain",)).get_content()


def both_raise(error: type[Exception], smtp, prepared) -> tuple:
    """What our exchange and smtplib's `sendmail()` raise, in turn on one connection, for READER."""
    with pytest.raises(error) as ours:
        sendmail(smtp, prepared.serialize(READER, stuffed=True))
    plain = prepared.serialize(READER)
    with pytest.raises(error) as smtplibs:
        smtp.sendmail(plain.from_address, [plain.to_address], plain.data)
    return ours, smtplibs


@pytest.mark.parametrize(("refusal", "verdict"), [(550, "bounce"), (451, "retry")], ids=["for good", "for now"])
def test_a_refused_recipient_raises_what_smtplib_raises_and_the_connection_goes_on(
    smtp_server, prepared, refusal, verdict
):
    smtp_server.refuse(READER.email, refusal)

    with smtplib.SMTP(smtp_server.host, smtp_server.port) as smtp:
        ours, smtplibs = both_raise(smtplib.SMTPRecipientsRefused, smtp, prepared)
        other = message.Recipient(email="grace@example.com", name="", token="tok-2")
        sendmail(smtp, prepared.serialize(other, stuffed=True))

    assert ours.value.recipients == smtplibs.value.recipients
    assert verdict_of(ours.value).kind == verdict
    assert [item.rcpt_tos for item in smtp_server.received] == [("grace@example.com",)]


def test_a_refused_message_raises_what_smtplib_raises(smtp_server, prepared):
    smtp_server.refuse_message("554 5.7.1 Message refused")

    with smtplib.SMTP(smtp_server.host, smtp_server.port) as smtp:
        ours, smtplibs = both_raise(smtplib.SMTPDataError, smtp, prepared)

    assert (ours.value.smtp_code, ours.value.smtp_error) == (smtplibs.value.smtp_code, smtplibs.value.smtp_error)
    assert verdict_of(ours.value).kind == "failed"


def test_a_token_beginning_with_a_period_is_never_put_in_stuffed_bytes(prepared):
    # Where an encoding wrapped a line just before it, it would begin a line that needs stuffing.
    dotted = message.Recipient(email="ada@example.com", name="", token=".tok")

    assert prepared.serialize(dotted, stuffed=True) is None
    assert prepared.serialize(dotted) is not None
    assert prepared.serialize(READER, stuffed=True) is not None
