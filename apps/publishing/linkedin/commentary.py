"""A post as the text of a LinkedIn post (the Posts API's `commentary`): its title, its teaser or
else its body as plain text, the link to its page on the account's blog, and its tags as hashtags.

The commentary is in LinkedIn's "little" text format, where `\\ | { } @ [ ] ( ) < > # * _ ~` are
reserved: unescaped, LinkedIn reads them as mentions or templates, or cuts the post at the first
one while answering that all went well. So every character of the post's own text is escaped; the
link keeps no reserved character (they are percent-encoded, which names the same page), and the
hashtags are the format's own `#word` elements.
"""

from apps.core.destinations import Document, PublishError
from apps.core.markdown import summary
from apps.core.social import hashtag_words

# LinkedIn's limit on a post's text, in characters (as sent: escapes count).
LIMIT = 3000
RESERVED = frozenset("\\|{}@[]()<>#*_~")


def escape(text: str) -> str:
    return "".join(f"\\{char}" if char in RESERVED else char for char in text)


def link(url: str) -> str:
    # By hand: quote() leaves `_` and `~` as they are (unreserved in URLs, reserved on LinkedIn).
    return "".join(f"%{ord(char):02X}" if char in RESERVED else char for char in url)


def hashtags(tags: list[str]) -> str:
    """`#Word` for each tag that makes a word (letters and digits only: LinkedIn's hashtags)."""
    return " ".join(f"#{word}" for word in hashtag_words(tags))


def _parts(document: Document, *, escaped: bool) -> str:
    keep = escape if escaped else str
    text = summary(document.teaser, document.body, paragraphs=True)
    parts = [keep(" ".join(document.title.split())), keep(text)]
    if document.link:
        parts.append(link(document.link) if escaped else document.link)
    parts.append(hashtags(document.tags))
    return "\n\n".join(part for part in parts if part)


def shown(document: Document) -> str:
    """The post's text as LinkedIn's readers see it (the Settings area's preview)."""
    return _parts(document, escaped=False)


def commentary(document: Document) -> str:
    """The post's LinkedIn text; PublishError (permanent) when it is longer than LinkedIn takes,
    before anything is sent."""
    result = _parts(document, escaped=True)
    if len(result) > LIMIT:
        raise PublishError(
            f"The post is too long for LinkedIn: its text would be {len(result):,} characters and LinkedIn takes at "
            f"most {LIMIT:,}. Shorten it, or give it a teaser (a teaser is posted instead of the body).",
            permanent=True,
        )
    return result
