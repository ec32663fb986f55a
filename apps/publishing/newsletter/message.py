"""An edition as it is mailed: rendered once when its send starts (subject, HTML and text parts),
then addressed to each recipient (their own unsubscribe link and headers).

The HTML part is the body as the blog renders it (the same Markdown and the same allow-list), in a
table layout with its CSS inlined. Nothing in it is per reader but the unsubscribe address: no
tracking pixel, no rewritten links, so every recipient gets the same bytes but for that one link.
"""

import re
from dataclasses import dataclass
from email.utils import formataddr, make_msgid, parseaddr
from urllib.parse import urlsplit

import css_inline
from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import escape

from apps.channels.models import DEFAULT_ACCENT_COLOR
from apps.core.markdown import markdown_text, render_markdown
from apps.publishing.newsletter.services import sender_address

# Where each recipient's own unsubscribe address goes in the rendered parts.
UNSUBSCRIBE_MARK = "%%UNSUBSCRIBE_URL%%"
# The token of test messages and previews: nobody has it, so its unsubscribe page changes nothing.
TEST_TOKEN = "test"  # noqa: S105 (no secret: the token nobody has)
# The inbox's preview line, when the post has no teaser: the body's beginning.
PREHEADER_LENGTH = 150
COLOR = re.compile(r"#[0-9a-fA-F]{6}")
# RFC 5322's limit is 998 bytes a line: a part with a longer line is quoted-printable encoded by the
# mail API, once per message, which costs more than all the rest of composing one.
LINE_LIMIT = 990
_TAG_START = re.compile(r"<([a-zA-Z][a-zA-Z0-9]*) ")

# @media rules stay in a <style> block (the clients that read one apply them); the rest is inlined.
# The body's HTML went through the blog's allow-list, so it names no stylesheet to fetch.
_inliner = css_inline.CSSInliner(keep_at_rules=True, load_remote_stylesheets=False)


@dataclass(frozen=True)
class Rendered:
    subject: str
    html: str
    text: str


@dataclass(frozen=True)
class Recipient:
    email: str
    name: str
    token: str


def unsubscribe_url(token: str) -> str:
    return f"{settings.SITE_URL}{reverse('blog:newsletter_unsubscribe', args=[token])}"


def one_line(text: str) -> str:
    """A header's text: a title or a name with a line break would be refused by the mail API."""
    return " ".join((text or "").split())


def render(*, channel, document) -> Rendered:
    """The edition's parts from the post (`document`: apps.publishing.destinations.Document), with
    UNSUBSCRIBE_MARK where each recipient's unsubscribe address goes."""
    title = one_line(document.title)
    accent = channel.accent_color if COLOR.fullmatch(channel.accent_color or "") else DEFAULT_ACCENT_COLOR
    context = {
        "channel": channel,
        "title": title,
        "accent": accent,
        # The permalinks after headings lead within the post's page; an e-mail is not that page.
        "body_html": render_markdown(document.body, anchors=False),
        "text": markdown_text(document.body, paragraphs=True, links=True),
        "preheader": one_line(document.teaser) or markdown_text(document.body, limit=PREHEADER_LENGTH),
        "channel_url": channel.url,
        "archive_url": channel.post_url(document.slug),
        "unsubscribe_url": UNSUBSCRIBE_MARK,
    }
    html = _short_lines(_inliner.inline(render_to_string("newsletter/email.html", context)), html=True)
    text = _short_lines(render_to_string("newsletter/email.txt", context), html=False)
    return Rendered(subject=title, html=html, text=text)


def _short_lines(content: str, *, html: bool) -> str:
    """The part with no line over LINE_LIMIT bytes where it can be done unseen: HTML breaks inside
    a tag after its name, then (as text does) at a space between words; a single longer word stays."""
    lines = content.split("\n")
    if all(len(line.encode()) <= LINE_LIMIT for line in lines):
        return content
    short: list[str] = []
    for line in lines:
        if html and len(line.encode()) > LINE_LIMIT:
            line = _TAG_START.sub("<\\1\n", line)
        for part in line.split("\n"):
            short.extend(_at_spaces(part))
    return "\n".join(short)


def _at_spaces(line: str) -> list[str]:
    if len(line.encode()) <= LINE_LIMIT:
        return [line]
    pieces: list[str] = []
    current, size = [], 0
    for word in line.split(" "):
        length = len(word.encode()) + 1
        if current and size + length > LINE_LIMIT:
            pieces.append(" ".join(current))
            current, size = [], 0
        current.append(word)
        size += length
    pieces.append(" ".join(current))
    return pieces


def preview(*, edition=None, channel=None, document=None) -> Rendered:
    """The parts as a recipient sees them, for the Settings area: of an `edition` (an Edition, as
    frozen, or a Rendered), or else of the post not sent yet (`channel` and `document`, as render()).
    The unsubscribe link is the test token's, whose page says nothing changed."""
    rendered = edition if edition is not None else render(channel=channel, document=document)
    url = unsubscribe_url(TEST_TOKEN)
    return Rendered(
        subject=rendered.subject,
        html=rendered.html.replace(UNSUBSCRIBE_MARK, escape(url)),
        text=rendered.text.replace(UNSUBSCRIBE_MARK, url),
    )


@dataclass(frozen=True)
class _Envelope:
    """The headers that are the same for every recipient of a newsletter."""

    from_email: str
    reply_to: tuple[str, ...]
    domain: str
    list_id: str
    mailbox: str


# compose() runs once per recipient (100,000 of them): the envelope is worked out once per
# newsletter and settings, not per message.
_envelopes: dict[tuple, _Envelope] = {}


def _envelope(newsletter) -> _Envelope:
    channel = newsletter.channel
    key = (
        channel.pk, channel.title, newsletter.sender_name, newsletter.reply_to,
        settings.DEFAULT_FROM_EMAIL, settings.SITE_URL,
    )  # fmt: skip
    envelope = _envelopes.get(key)
    if envelope is None:
        domain = urlsplit(settings.SITE_URL).hostname or "localhost"
        envelope = _Envelope(
            from_email=sender_address(newsletter),
            reply_to=(newsletter.reply_to,) if newsletter.reply_to else (),
            domain=domain,
            # RFC 2919: the list's name, then a label unique to it under a domain of ours.
            list_id=formataddr((one_line(channel.title), f"channel-{channel.pk}.{domain}")),
            mailbox=parseaddr(settings.DEFAULT_FROM_EMAIL)[1],
        )
        if len(_envelopes) >= 256:
            _envelopes.clear()
        _envelopes[key] = envelope
    return envelope


def compose(*, edition, newsletter, recipient: Recipient, test: bool = False) -> EmailMultiAlternatives:
    """The message for one recipient (`edition`: an Edition, or a Rendered not yet sent; `test`: the
    Settings area's "Send test", subject marked [Test]). Its Message-ID is in
    `message.extra_headers["Message-ID"]`."""
    envelope = _envelope(newsletter)
    url = unsubscribe_url(recipient.token)
    name = one_line(recipient.name)
    message = EmailMultiAlternatives(
        subject=f"[Test] {edition.subject}" if test else edition.subject,
        body=edition.text.replace(UNSUBSCRIBE_MARK, url),
        from_email=envelope.from_email,
        to=[formataddr((name, recipient.email)) if name else recipient.email],
        reply_to=list(envelope.reply_to),
        headers={
            "Message-ID": make_msgid(domain=envelope.domain),
            "List-Id": envelope.list_id,
            # RFC 2369, the one-click address first: RFC 8058's POST goes to it; the mailto: is for
            # mail clients that only know that form.
            "List-Unsubscribe": f"<{url}>, <mailto:{envelope.mailbox}?subject=unsubscribe-{recipient.token}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
            # Out-of-office and other automatic replies from Exchange have nowhere useful to go.
            "X-Auto-Response-Suppress": "OOF, AutoReply",
        },
    )
    message.attach_alternative(edition.html.replace(UNSUBSCRIBE_MARK, escape(url)), "text/html")
    return message


def send_test(*, edition_or_rendered, newsletter, to_email: str, connection=None) -> None:
    """Mail the edition (an Edition, or a Rendered of a post not sent yet) to this one address as a
    test: subject marked [Test], the real layout, an unsubscribe link that changes nothing, nothing
    recorded. The mail server's errors are raised for the caller to show."""
    recipient = Recipient(email=to_email, name="", token=TEST_TOKEN)
    message = compose(edition=edition_or_rendered, newsletter=newsletter, recipient=recipient, test=True)
    message.connection = connection
    message.send()
