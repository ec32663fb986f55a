"""A post as an `app.bsky.feed.post` record: its text within Bluesky's 300 graphemes (and 3,000
UTF-8 bytes), the links and hashtags in it as facets addressed by UTF-8 byte offsets, and the blog
link as an external embed card (or, without one, the post's images), and the record key (a TID)
chosen before the record is sent.

The blog link goes only as the card, not in the text too: the card is what Bluesky's app shows as
the link, and the text keeps its 300 graphemes for the post (docs/bluesky.md)."""

import hashlib
import secrets
import time
from datetime import UTC, datetime

import regex

from apps.core.destinations import Document, PublishError
from apps.core.markdown import summary
from apps.core.social import ELLIPSIS, fitted, graphemes, shorten

LIMIT = 300
BYTE_LIMIT = 3000
# The external card's description, as Bluesky's app cuts it.
DESCRIPTION_LIMIT = 300
TAG_LIMIT = 64
# A link in the text: an http(s) address up to a space, without the punctuation that ends a sentence.
_URL = regex.compile(r"https?://[^\s<>\"]+")
_URL_TRAILING = ".,;:!?]}'\""
# A hashtag as Bluesky's app reads one: `#` after a space or the text's start, letters and digits,
# not digits only.
_TAG = regex.compile(r"(?<![^\s])#([^\W_]*[^\W\d_][^\W_]*)")
_TID_ALPHABET = "234567abcdefghijklmnopqrstuvwxyz"


def length(text: str) -> int:
    """The text's length against 300: graphemes, or a tenth of its UTF-8 bytes where that is more
    (Bluesky's second limit, 3,000 bytes, which long emoji sequences reach first)."""
    return max(graphemes(text), -(-len(text.encode()) // 10))


def text_of(document: Document) -> str:
    return fitted(document, limit=LIMIT, length=length, link=False)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _byte_span(text: str, start: int, end: int) -> dict:
    prefix = len(text[:start].encode())
    return {"byteStart": prefix, "byteEnd": prefix + len(text[start:end].encode())}


def _url_end(url: str) -> str:
    """The address without the punctuation after it: a closing parenthesis ends it only when it has
    no opening one in the address (a sentence's, not Wikipedia's `Foo_(bar)`)."""
    while url:
        url = url.rstrip(_URL_TRAILING)
        if not url.endswith(")") or url.count("(") >= url.count(")"):
            return url
        url = url[:-1]
    return url


def facets(text: str) -> list[dict]:
    """The links and hashtags of the text, each addressed by its UTF-8 byte offsets (what Bluesky's
    lexicon asks: a character index would point elsewhere after any emoji or CJK)."""
    found = []
    for match in _URL.finditer(text):
        if match.group().endswith(ELLIPSIS):
            continue  # an address cut short to fit would lead elsewhere: it stays text
        url = _url_end(match.group())
        feature = {"$type": "app.bsky.richtext.facet#link", "uri": url}
        found.append((match.start(), match.start() + len(url), feature))
    for match in _TAG.finditer(text):
        if graphemes(match.group(1)) <= TAG_LIMIT:
            feature = {"$type": "app.bsky.richtext.facet#tag", "tag": match.group(1)}
            found.append((match.start(), match.end(), feature))
    return [
        {"index": _byte_span(text, start, end), "features": [feature]}
        for start, end, feature in sorted(found, key=lambda item: item[0])
    ]


def tid(now: float | None = None) -> str:
    """A record key: a TID (13 characters of base32-sortable: 53 bits of microseconds since the
    epoch, 10 bits of a random clock id), chosen before the record is sent."""
    micros = int((time.time() if now is None else now) * 1_000_000)
    value = (micros << 10) | secrets.randbelow(1024)
    return "".join(_TID_ALPHABET[(value >> (5 * shift)) & 31] for shift in range(12, -1, -1))


def description(document: Document) -> str:
    text = document.description or summary(document.teaser, document.body, paragraphs=False)
    return shorten(" ".join(text.split()), DESCRIPTION_LIMIT)


def external(document: Document, thumb: dict | None) -> dict:
    card = {"uri": document.link, "title": " ".join(document.title.split()), "description": description(document)}
    if thumb:
        card["thumb"] = thumb
    return {"$type": "app.bsky.embed.external", "external": card}


def post(text: str, *, embed: dict | None, langs: list[str], created_at: datetime | None = None) -> dict:
    """The record; PublishError (permanent) when the text cannot be posted, before anything is sent."""
    if not text.strip():
        raise PublishError("The post has no text to post on Bluesky: give it a title or a text.", permanent=True)
    if graphemes(text) > LIMIT or len(text.encode()) > BYTE_LIMIT:
        raise PublishError(
            f"The post is too long for Bluesky: {graphemes(text)} characters ({len(text.encode())} bytes), and Bluesky "
            f"takes at most {LIMIT} ({BYTE_LIMIT} bytes).",
            permanent=True,
        )
    record = {
        "$type": "app.bsky.feed.post",
        "text": text,
        "createdAt": (created_at or datetime.now(UTC)).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    }
    if found := facets(text):
        record["facets"] = found
    if langs:
        record["langs"] = langs
    if embed:
        record["embed"] = embed
    return record
