"""A post as a Mastodon status's text, within the instance's own limit, counted as Mastodon counts it
(its StatusLengthValidator): in grapheme clusters, every http(s) link as `characters_reserved_per_url`
characters whatever its length, and a mention of a remote account (@user@domain) as its @user part.
What the status holds and what gives way first is apps/core/social.py's `fitted`."""

import dataclasses
import re
from functools import partial

from apps.core.destinations import Document
from apps.core.social import fitted, graphemes

# The links Mastodon counts at a fixed length: an http(s) address up to the next space, without the
# punctuation that ends a sentence around it (what its linkifier leaves out of a link).
_URL = re.compile(r"https?://[^\s<>\"]+?(?=[.,:;!?)\]'\"]*(?:\s|$))", re.IGNORECASE)
_REMOTE_MENTION = re.compile(r"(?<![\w/])(@\w+(?:[.-]+\w+)*)@[\w.-]+\w", re.UNICODE)


def length(text: str, *, reserved_per_url: int = 23) -> int:
    """The text's length as Mastodon counts it against an instance's limit."""
    countable = _URL.sub("x" * reserved_per_url, text)
    countable = _REMOTE_MENTION.sub(r"\1", countable)
    return graphemes(countable)


def _with_letters(tag: str) -> bool:
    # A Mastodon hashtag needs a letter: #2024 is no hashtag, and would be read as plain text.
    return any(char.isalpha() for char in tag)


def status_text(document: Document, *, limit: int, reserved_per_url: int) -> str:
    """The status: the post's title, teaser or body as plain text, its link, its tags as hashtags."""
    document = dataclasses.replace(document, tags=[tag for tag in document.tags if _with_letters(tag)])
    return fitted(document, limit=limit, length=partial(length, reserved_per_url=reserved_per_url))
