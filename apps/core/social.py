"""What the social destinations share in turning a post into a short text: its length as the
networks count it (user-perceived characters, grapheme clusters: 👍🏽 or a flag is one), its tags as
hashtags, and a text fitted into a network's limit.

A network's own rules (one counts every link as 23 characters, another escapes its reserved
characters) stay in its destination's package: each passes its own `length`."""

from collections.abc import Callable

import regex

from apps.core.destinations import Document
from apps.core.markdown import summary

# An extended grapheme cluster (Unicode UAX #29), what `regex` matches as \X.
_GRAPHEME = regex.compile(r"\X")
_WORD = regex.compile(r"[^\W_]+")
ELLIPSIS = "…"


def graphemes(text: str) -> int:
    """The text's length in user-perceived characters."""
    return len(_GRAPHEME.findall(text))


def hashtag_words(tags: list[str]) -> list[str]:
    """A word for each tag that makes one, its letters and digits only (what every network reads as a
    hashtag: "Machine learning" is #Machinelearning); tags differing only in case are one hashtag."""
    words: dict[str, str] = {}
    for tag in tags:
        word = "".join(_WORD.findall(tag))
        if word:
            words.setdefault(word.casefold(), word)
    return list(words.values())


def shorten(text: str, limit: int, *, length: Callable[[str], int] = graphemes) -> str:
    """The text cut to at most `limit` (as `length` counts), at a word's end where one is near, with
    an ellipsis; the text itself when it fits. Never splits a grapheme cluster."""
    if length(text) <= limit:
        return text
    if limit < 1:
        return ""
    clusters = _GRAPHEME.findall(text)
    # The longest run of whole clusters that fits with the ellipsis (a network may count a
    # cluster as more than one, so it is measured, not sliced by count).
    low, high = 0, len(clusters)
    while low < high:
        middle = (low + high + 1) // 2
        if length("".join(clusters[:middle]).rstrip() + ELLIPSIS) <= limit:
            low = middle
        else:
            high = middle - 1
    kept = "".join(clusters[:low])
    # At a word's end when one is within the last fifth of what is kept.
    cut = max(kept.rfind(" "), kept.rfind("\n"))
    if cut > len(kept) * 4 // 5:
        kept = kept[:cut]
    return kept.rstrip() + ELLIPSIS


def fitted(
    document: Document,
    *,
    limit: int,
    length: Callable[[str], int] = graphemes,
    hashtag: Callable[[str], str] = lambda word: f"#{word}",
    link: bool = True,
) -> str:
    """A post as a short social text within `limit`: its title, its teaser (else its body as plain
    text), the link to its page on the account's blog and its tags as hashtags, a blank line between
    them. What gives way when it does not fit: first the summary is shortened (then left out), then
    hashtags from the last, then the title is shortened; the link is kept whole."""
    title = " ".join(document.title.split())
    text = summary(document.teaser, document.body, paragraphs=True)
    address = document.link if link and document.link else ""
    tags = [hashtag(word) for word in hashtag_words(document.tags)]

    def joined(title: str, text: str, tags: list[str]) -> str:
        return "\n\n".join(part for part in (title, text, address, " ".join(tags)) if part)

    whole = joined(title, text, tags)
    if length(whole) <= limit:
        return whole
    room = limit - length(joined(title, "", tags)) - 2  # the blank line before the summary
    if room >= 20:
        return joined(title, shorten(text, room, length=length), tags)
    while tags and length(joined(title, "", tags)) > limit:
        tags = tags[:-1]
    rest = length(joined("", "", tags))
    room = limit - rest - (2 if rest else 0)
    return joined(shorten(title, room, length=length), "", tags)
