"""An edition as it is mailed: rendered once when its send starts (subject, HTML and text parts),
then addressed to each recipient (their own unsubscribe link and headers).

The HTML part is the body as the blog renders it (the same Markdown and the same allow-list), in a
table layout with its CSS inlined. Nothing in it is per reader but the unsubscribe address: no
tracking pixel, no rewritten links, so every recipient gets the same bytes but for that one link.
"""

import re
from dataclasses import dataclass
from email.utils import formataddr, formatdate, make_msgid, parseaddr
from urllib.parse import urlsplit

import css_inline
from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.core.mail.message import forbid_multi_line_headers, sanitize_address
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import escape

from apps.channels.models import DEFAULT_ACCENT_COLOR
from apps.core.images import by_address
from apps.core.markdown import markdown_text, render_markdown, summary
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
_DOT_LINE = re.compile(rb"(?m)^\.")
# The widest an uploaded image shows, in pixels: newsletter/email.html's column (600) less the
# content's padding (32 each side). Outlook sizes an image by its width attribute alone.
IMAGE_WIDTH = 600 - 2 * 32

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
    """The edition's parts from the post (`document`: apps.core.destinations.Document), with
    UNSUBSCRIBE_MARK where each recipient's unsubscribe address goes."""
    title = one_line(document.title)
    accent = channel.accent_color if COLOR.fullmatch(channel.accent_color or "") else DEFAULT_ACCENT_COLOR
    context = {
        "channel": channel,
        "title": title,
        "accent": accent,
        # The permalinks after headings lead within the post's page; an e-mail is not that page.
        "body_html": render_markdown(
            document.body, anchors=False, images=by_address(document.images), mail_width=IMAGE_WIDTH
        ),
        "text": markdown_text(document.body, paragraphs=True, links=True),
        "preheader": one_line(summary(document.teaser, document.body, limit=PREHEADER_LENGTH)),
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
        channel.pk,
        channel.title,
        newsletter.sender_name,
        newsletter.reply_to,
        settings.DEFAULT_FROM_EMAIL,
        settings.SITE_URL,
    )
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
        to=[to_header(name, recipient.email)],
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


# The marks a prepared edition's bytes carry where each recipient's own values go: none of them can
# occur in a rendered edition (the token's and the address's characters survive every transfer
# encoding the mail API picks for short lines, and prepared() checks that they did).
_TOKEN_MARK = "Zq7recipientTOKENmarkZq7"  # noqa: S105 (a mark, not a secret)
_ADDRESS_MARK = "zq7-recipient-address@mark.invalid"
_ID_MARK = "<zq7-message-id@mark.invalid>"
_DATE_MARK = "Zq7 message date mark"


def to_header(name: str, email: str) -> str:
    """The To of a recipient's message: their name and address, or the address alone where the name
    is empty or the address is not ASCII (formataddr cannot quote a name beside such an address; the
    mail API encodes it on its own)."""
    return formataddr((name, email)) if name and email.isascii() else email


@dataclass(frozen=True)
class Serialized:
    """One recipient's message as the SMTP backend would hand it to smtplib's sendmail()."""

    message_id: str
    from_address: str
    to_address: str
    data: bytes


class Prepared:
    """The edition's message serialized once by Django's mail API for a marked recipient; each
    recipient's bytes are those with their values put in: four replacements instead of a MIME
    serialization and two address parses, most of the cost of a message at 100,000 of them.
    tests/publishing/newsletter/test_message.py holds them byte for byte to what the mail API makes.
    Backends that take message objects (django-anymail's) get compose()'s."""

    def __init__(self, *, edition, newsletter) -> None:
        self.edition, self.newsletter = edition, newsletter
        marked = compose(edition=edition, newsletter=newsletter, recipient=Recipient(_ADDRESS_MARK, "", _TOKEN_MARK))
        marked.extra_headers.update({"Message-ID": _ID_MARK, "Date": _DATE_MARK})
        template = marked.message().as_bytes(linesep="\r\n")
        self.encoding = marked.encoding or settings.DEFAULT_CHARSET
        self.from_address = sanitize_address(marked.from_email, self.encoding)
        # Where a mark did not come through as written (an encoding the mail API chose), every
        # message is serialized on its own instead (serialize() answers None).
        usable = template.count(f"To: {_ADDRESS_MARK}\r\n".encode()) == 1 and all(
            template.count(mark.encode()) == 1 for mark in (_ID_MARK, _DATE_MARK)
        )
        self.template = template if usable and template.count(_TOKEN_MARK.encode()) >= 3 else None
        # The same bytes with SMTP's dot-stuffing done (RFC 5321 4.5.2: a line that begins with a
        # period gets another), which smtplib would otherwise do to every message. Of the values
        # put in, only a token might begin a line (where an encoding wrapped one): one beginning
        # with a period is never put in them (serialize()).
        self.stuffed = None if self.template is None else _DOT_LINE.sub(b"..", self.template)

    def compose(self, recipient: Recipient) -> EmailMultiAlternatives:
        return compose(edition=self.edition, newsletter=self.newsletter, recipient=recipient)

    def serialize(self, recipient: Recipient, *, stuffed: bool = False) -> Serialized | None:
        """The recipient's bytes (None: compose() the message instead); `stuffed`: dot-stuffed as
        they go after SMTP's DATA (None where that cannot be done once for all)."""
        if self.template is None or not recipient.token.isascii():
            return None
        if stuffed and recipient.token.startswith("."):
            return None
        name = one_line(recipient.name)
        simple = recipient.email.isascii() and name.isascii()
        # What the mail API would write (sanitize_address parses the address: the slow way, kept for
        # the addresses and names that need encoding).
        to = to_header(name, recipient.email)
        if not simple:
            to = forbid_multi_line_headers("To", to, self.encoding)[1]
        to_address = recipient.email if simple else sanitize_address(recipient.email, self.encoding)
        message_id = make_msgid(domain=_envelope(self.newsletter).domain)
        data = (
            (self.stuffed if stuffed else self.template)
            .replace(f"To: {_ADDRESS_MARK}".encode(), f"To: {to}".encode())
            .replace(_ID_MARK.encode(), message_id.encode())
            .replace(_DATE_MARK.encode(), formatdate(localtime=settings.EMAIL_USE_LOCALTIME).encode())
            .replace(_TOKEN_MARK.encode(), recipient.token.encode())
        )
        return Serialized(message_id=message_id, from_address=self.from_address, to_address=to_address, data=data)


def send_test(*, edition_or_rendered, newsletter, to_email: str, connection=None) -> None:
    """Mail the edition (an Edition, or a Rendered of a post not sent yet) to this one address as a
    test: subject marked [Test], the real layout, an unsubscribe link that changes nothing, nothing
    recorded. The mail server's errors are raised for the caller to show."""
    recipient = Recipient(email=to_email, name="", token=TEST_TOKEN)
    message = compose(edition=edition_or_rendered, newsletter=newsletter, recipient=recipient, test=True)
    message.connection = connection
    message.send()
