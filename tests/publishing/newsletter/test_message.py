"""An edition as mailed: the parts rendered once (message.render), each recipient's message
(message.compose) read back with the `email` package, as a mail client reads it."""

import email
import re
from datetime import UTC, datetime
from email.policy import default as default_policy
from email.utils import getaddresses, parseaddr
from smtplib import quoteaddr
from urllib.parse import urlsplit

import pytest
from django.core.mail.message import sanitize_address

from apps.core.destinations import Document
from apps.core.markdown import render_markdown
from apps.publishing.newsletter import message
from apps.publishing.newsletter.models import Delivery, Edition, Subscriber
from apps.publishing.newsletter.services import newsletter_of
from tests.blog.test_html_validity import JAVA, VNU_JAR, validation_errors
from tests.factories import NewsletterChannelFactory, SubscriberFactory

pytestmark = pytest.mark.django_db

BODY = """Hello *readers*. Read [the changelog](https://example.org/changes?from=1&to=2#latest) and
<https://example.net/raw>.

## What changed

- one
- two

> A quote.
"""


@pytest.fixture(autouse=True)
def _site(settings):
    settings.SITE_URL = "https://cps.example.com"
    settings.DEFAULT_FROM_EMAIL = "Content Publishing <news@cps.example.com>"


def document(body: str = BODY, *, title: str = "Issue 12: what changed", teaser: str = "") -> Document:
    return Document(post_id=1, title=title, slug="issue-12", body=body, teaser=teaser, published_at=datetime.now(UTC))


def newsletter(**fields):
    channel = NewsletterChannelFactory(title="Weekly Notes", **fields)
    return newsletter_of(channel)


def recipient(number: int = 1, name: str = "") -> message.Recipient:
    return message.Recipient(email=f"reader{number}@example.com", name=name, token=f"token-of-reader-{number}")


def mailed(letter) -> email.message.EmailMessage:
    """The message as a mail client reads it."""
    return email.message_from_bytes(letter.message().as_bytes(), policy=default_policy)


def parts(parsed) -> tuple[str, str]:
    text, html = (part.get_content() for part in parsed.iter_parts())
    return text, html


def composed(letter_of, rendered=None, *, number: int = 1, **kwargs):
    rendered = rendered or message.render(channel=letter_of.channel, document=document())
    return mailed(message.compose(edition=rendered, newsletter=letter_of, recipient=recipient(number), **kwargs))


def test_a_message_is_multipart_alternative_with_the_text_part_first_then_the_html():
    parsed = composed(newsletter())

    assert parsed.get_content_type() == "multipart/alternative"
    assert [part.get_content_type() for part in parsed.iter_parts()] == ["text/plain", "text/html"]
    assert parsed["Subject"] == "Issue 12: what changed"
    assert parsed["To"] == "reader1@example.com"


def test_it_comes_from_the_sender_name_at_the_default_from_address_and_replies_go_to_the_reply_to():
    letter_of = newsletter()
    letter_of.sender_name, letter_of.reply_to = "Ada from Weekly", "ada@example.org"

    parsed = composed(letter_of)

    assert parseaddr(str(parsed["From"])) == ("Ada from Weekly", "news@cps.example.com")
    assert parsed["Reply-To"] == "ada@example.org"


def test_without_a_sender_name_it_comes_from_the_channel_title_with_no_reply_to():
    parsed = composed(newsletter())

    assert parseaddr(str(parsed["From"])) == ("Weekly Notes", "news@cps.example.com")
    assert parsed["Reply-To"] is None


def test_each_recipient_gets_their_own_unsubscribe_address_in_the_headers_and_both_parts():
    letter_of = newsletter()
    rendered = message.render(channel=letter_of.channel, document=document())
    first, second = composed(letter_of, rendered, number=1), composed(letter_of, rendered, number=2)

    mailings = [(first, "token-of-reader-1", "token-of-reader-2"), (second, "token-of-reader-2", "token-of-reader-1")]
    for parsed, own, other in mailings:
        url = f"https://cps.example.com/newsletter/unsubscribe/{own}/"
        # RFC 2369, the one-click (RFC 8058) address first.
        # (Folded onto the next line: a client unfolds it to a space before the first address.)
        assert parsed["List-Unsubscribe"].strip() == f"<{url}>, <mailto:news@cps.example.com?subject=unsubscribe-{own}>"
        assert parsed["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        text, html = parts(parsed)
        assert f"Unsubscribe: {url}" in text
        assert f'href="{url}"' in html
        assert other not in parsed.as_string()
        assert message.UNSUBSCRIBE_MARK not in parsed.as_string()


def test_every_message_has_its_own_message_id_on_the_site_domain():
    letter_of = newsletter()
    rendered = message.render(channel=letter_of.channel, document=document())

    ids = [composed(letter_of, rendered, number=number)["Message-ID"] for number in range(50)]

    assert len(set(ids)) == 50
    assert all(re.fullmatch(r"<[^@<>\s]+@cps\.example\.com>", found) for found in ids)


def test_the_list_id_names_the_channel_even_in_other_scripts():
    letter_of = newsletter()
    plain = composed(letter_of)
    letter_of.channel.title = "Hebdo: café, crème"

    accented = composed(letter_of)

    host = f"channel-{letter_of.channel.pk}.cps.example.com"
    assert plain["List-Id"] == f"Weekly Notes <{host}>"
    assert accented["List-Id"] == f"Hebdo: café, crème <{host}>"


def test_the_recipient_name_is_in_the_to_header_on_one_line():
    letter_of = newsletter()
    rendered = message.render(channel=letter_of.channel, document=document())
    letter = message.compose(edition=rendered, newsletter=letter_of, recipient=recipient(name="Zoë\nO'Brien, Jr."))

    assert getaddresses([str(mailed(letter)["To"])]) == [("Zoë O'Brien, Jr.", "reader1@example.com")]


def test_the_html_is_styled_inline_with_no_stylesheet_to_fetch_and_links_in_the_accent_colour():
    _, html = parts(composed(newsletter(accent_color="#aa3300")))

    assert "<link" not in html
    # Only the @media rules stay in a <style> block, for the clients that read one.
    # (Outlook's own rule is in a conditional comment, which only Outlook reads.)
    (style,) = re.findall(r"<style>(.*?)</style>", re.sub(r"<!--.*?-->", "", html, flags=re.DOTALL), re.DOTALL)
    assert style.strip().startswith("@media")
    assert style.strip().endswith("}\n}")
    assert re.search(r'<body style="[^"]*margin: 0', html)
    assert re.search(r'<p style="[^"]+">Hello <em>readers</em>', html)
    assert re.search(r'<a href="https://example\.org/changes[^"]*"[^>]* style="color: #aa3300;', html)
    assert re.search(r'<table class="container" role="presentation" style="[^"]*max-width: 600px', html)


def test_the_only_image_is_the_channel_logo_and_none_without_one():
    _, with_logo = parts(composed(newsletter(logo_url="https://cdn.example.com/logo.png")))
    _, without = parts(composed(newsletter()))

    assert re.findall(r"<img [^>]*>", without) == []
    (logo,) = re.findall(r"<img [^>]*>", with_logo)
    assert 'src="https://cdn.example.com/logo.png"' in logo
    assert 'width="48"' in logo
    assert 'height="48"' in logo


def test_links_are_exactly_as_in_the_post_and_the_footer_links_to_the_archive_page():
    letter_of = newsletter()
    channel = letter_of.channel
    _, html = parts(composed(letter_of))

    hrefs = re.findall(r'href="([^"]*)"', html)
    assert hrefs == [
        channel.url,
        "https://example.org/changes?from=1&amp;to=2#latest",
        "https://example.net/raw",
        channel.url,
        "https://cps.example.com/newsletter/unsubscribe/token-of-reader-1/",
        channel.post_url("issue-12"),
    ]
    assert channel.post_url("issue-12").startswith("https://cps.example.com/blog/")
    assert ">View in browser</a>" in html
    assert re.search(r"You get this e-mail because you subscribed to <a [^>]*>Weekly Notes</a>\.", html)


def test_unsafe_html_in_the_body_is_stripped_as_on_the_blog():
    body = (
        'Fine.\n\n<script>alert("x")</script><img src="https://x.example/a.png" alt="A" onerror="steal()">'
        '<a href="javascript:steal()">click</a><iframe src="https://evil.example/"></iframe>'
        '<form action="https://evil.example/"><input name="p"></form>\n'
    )
    letter_of = newsletter()
    text, html = parts(composed(letter_of, message.render(channel=letter_of.channel, document=document(body))))

    for unsafe in ("<script", "alert(", "onerror", "steal()", "javascript:", "<iframe", "<form", "<input"):
        assert unsafe not in html
    assert "Fine.\n\nclick\n" in text
    assert "steal" not in text
    # The image the author put in stays, as on the blog.
    assert re.search(r'<img src="https://x\.example/a\.png" alt="A"', render_markdown(body))
    assert re.search(r'<img src="https://x\.example/a\.png" alt="A"', html)


def test_the_text_part_has_the_words_of_the_body_with_their_links_and_the_footer():
    letter_of = newsletter()
    body = BODY + "\nSee [^1] and [me](mailto:ada@example.org).\n\n[^1]: A [note](https://example.org/n).\n"
    text, _ = parts(composed(letter_of, message.render(channel=letter_of.channel, document=document(body))))

    assert text.startswith("Issue 12: what changed\n\nHello readers. Read the changelog ")
    assert "the changelog (https://example.org/changes?from=1&to=2#latest) and https://example.net/raw." in text
    assert "What changed\n\none\ntwo\n\nA quote." in text
    # A footnote's reference leads within the text: no address; a mail link shows its own.
    assert "See [1] and me (mailto:ada@example.org)." in text
    assert "A note (https://example.org/n). ↩︎" in text
    assert "<" not in text.replace("<https", "")
    assert "You get this e-mail because you subscribed to Weekly Notes" in text
    assert f"View in browser: {letter_of.channel.post_url('issue-12')}" in text


def test_the_teaser_is_the_inbox_preview_line_and_nothing_else_is_hidden():
    letter_of = newsletter()
    rendered = message.render(channel=letter_of.channel, document=document(teaser="Three things this week"))

    _, html = parts(composed(letter_of, rendered))

    assert re.findall(r'<div class="preheader" style="display: none;[^"]*">([^<]*)</div>', html) == [
        "Three things this week"
    ]
    assert html.count("display: none") == 1


def test_a_test_message_is_marked_in_its_subject_and_keeps_the_real_layout():
    letter_of = newsletter()
    rendered = message.render(channel=letter_of.channel, document=document())

    test = composed(letter_of, rendered, test=True)
    real = composed(letter_of, rendered)

    assert test["Subject"] == "[Test] Issue 12: what changed"
    assert parts(test) == parts(real)


def test_a_long_paragraph_keeps_every_word_and_the_parts_need_no_quoted_printable():
    words = [f"word{number}" for number in range(600)]
    body = " ".join(words) + "\n\n```\nshort code\n```\n"
    letter_of = newsletter()
    rendered = message.render(channel=letter_of.channel, document=document(body))

    raw = message.compose(edition=rendered, newsletter=letter_of, recipient=recipient()).message().as_bytes()
    parsed = email.message_from_bytes(raw, policy=default_policy)

    assert [part["Content-Transfer-Encoding"] for part in parsed.iter_parts()] == ["7bit", "8bit"]
    assert max(len(line) for line in raw.splitlines()) <= 998
    text, html = parts(parsed)
    assert " ".join(words) in " ".join(text.split())
    paragraph = re.search(r"<p\s+style=\"[^\"]*\">(word0 .*?)</p>", html, re.DOTALL)[1]
    assert paragraph.split() == words


def test_an_edition_as_frozen_in_the_database_composes_the_same_message():
    letter_of = newsletter()
    rendered = message.render(channel=letter_of.channel, document=document())
    edition = Edition.objects.create(
        post_id=1, channel=letter_of.channel, job_id=1, subject=rendered.subject, html=rendered.html, text=rendered.text
    )
    edition.refresh_from_db()

    assert parts(composed(letter_of, edition)) == parts(composed(letter_of, rendered))


def test_a_preview_shows_the_message_with_a_link_that_unsubscribes_nobody():
    letter_of = newsletter()

    shown = message.preview(channel=letter_of.channel, document=document())

    assert message.UNSUBSCRIBE_MARK not in shown.html + shown.text
    assert 'href="https://cps.example.com/newsletter/unsubscribe/test/"' in shown.html
    assert "Unsubscribe: https://cps.example.com/newsletter/unsubscribe/test/" in shown.text


def test_send_test_mails_that_address_only_and_records_nothing(smtp_server, client):
    letter_of = newsletter()
    subscriber = SubscriberFactory(channel=letter_of.channel)
    rendered = message.render(channel=letter_of.channel, document=document())

    message.send_test(edition_or_rendered=rendered, newsletter=letter_of, to_email="editor@example.com")

    (received,) = smtp_server.received
    assert received.rcpt_tos == ("editor@example.com",)
    assert received.message["Subject"] == "[Test] Issue 12: what changed"
    assert not Edition.objects.exists()
    assert not Delivery.objects.exists()
    # Its unsubscribe link, one-click as a mail client posts it, changes nobody.
    (unsubscribe,) = re.findall(r"<(https://[^>]+)>", received.message["List-Unsubscribe"])
    response = client.post(urlsplit(unsubscribe).path, "List-Unsubscribe=One-Click", content_type="text/plain")
    assert response.status_code == 200
    assert Subscriber.objects.get(pk=subscriber.pk).status == "confirmed"


@pytest.mark.skipif(JAVA is None or VNU_JAR is None or not VNU_JAR.is_file(), reason="needs Java and vnu.jar")
def test_the_html_part_is_valid_html(tmp_path):
    letter_of = newsletter(logo_url="https://cdn.example.com/logo.png")
    body = BODY + "\n| a | b |\n|:-|-:|\n| 1 | 2 |\n\n```python\nprint(1)\n```\n\nA note.[^1]\n\n[^1]: The note.\n"
    rendered = message.render(channel=letter_of.channel, document=document(body, teaser="This week"))
    _, html = parts(composed(letter_of, rendered))

    assert validation_errors({"edition": html.encode()}, tmp_path) == []


@pytest.mark.parametrize(
    "person",
    [
        message.Recipient(email="ada@example.com", name="", token="tok-1"),
        message.Recipient(email="zoe+news@example.com", name="Zoë Ångström", token="Zq_-9"),
        message.Recipient(email="long@example.com", name="A name " * 20, token="t" * 40),
        message.Recipient(email="quote@example.com", name='Ada "the first", Countess', token="q"),
        message.Recipient(email="jürgen@bücher.example", name="Jürgen", token="idn"),
    ],
    ids=["no name", "accented name", "long name", "name with quotes and comma", "international address"],
)
def test_a_prepared_message_is_byte_for_byte_what_the_mail_api_serializes_for_that_recipient(person):
    letter_of = newsletter(accent_color="#aa3300")
    edition = message.render(channel=letter_of.channel, document=document(BODY * 3, title="Ünïcode issue"))
    prepared = message.Prepared(edition=edition, newsletter=letter_of)
    assert prepared.template is not None  # the marks came through: the fast path is what is tested

    fast = prepared.serialize(person)
    # Django's own serialization of the same message (its Message-ID and Date as the fast one's).
    slow = prepared.compose(person)
    slow.extra_headers["Message-ID"] = fast.message_id
    slow.extra_headers["Date"] = email.message_from_bytes(fast.data, policy=default_policy)["Date"]
    slow_bytes = slow.message().as_bytes(linesep="\r\n")

    def unfolded(data: bytes) -> tuple:
        # Each serialization draws its own MIME boundary; header lines may be folded differently.
        boundary = email.message_from_bytes(data, policy=default_policy).get_boundary()
        parsed = email.message_from_bytes(data.replace(boundary.encode(), b"BOUNDARY"), policy=default_policy)
        headers = sorted((name, " ".join(str(value).split())) for name, value in parsed.items())
        return headers, parsed.as_bytes().split(b"\n\n", 1)[1]

    assert unfolded(fast.data) == unfolded(slow_bytes)
    # The envelope as Django's SMTP backend gives it to smtplib.
    assert quoteaddr(fast.from_address) == quoteaddr(sanitize_address(slow.from_email, "utf-8"))
    assert [quoteaddr(fast.to_address)] == [quoteaddr(sanitize_address(to, "utf-8")) for to in slow.recipients()]
