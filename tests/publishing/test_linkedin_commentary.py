"""A post as the text of a LinkedIn post: LinkedIn shows (the fake's little_text) exactly what the post
says, whatever characters it holds, within LinkedIn's 3000 characters, counted as sent."""

from datetime import UTC, datetime
from urllib.parse import unquote

import pytest

from apps.core.destinations import Document, PublishError
from apps.publishing.linkedin.commentary import LIMIT, commentary
from tests.publishing.linkedin_fake import RESERVED, little_text

ALL_RESERVED = "\\|{}@[]()<>#*_~"


def document(**fields) -> Document:
    return Document(
        **{
            "post_id": 1,
            "title": "Release notes",
            "slug": "release-notes",
            "body": "",
            "teaser": "",
            "published_at": datetime(2026, 5, 4, 9, 30, tzinfo=UTC),
            **fields,
        }
    )


def shown(doc: Document) -> str:
    """What LinkedIn shows for the document's commentary (ValueError at an unescaped reserved character)."""
    return little_text(commentary(doc))


def test_the_characters_checked_here_are_every_one_linkedin_reserves():
    assert set(ALL_RESERVED) == RESERVED


@pytest.mark.parametrize("char", list(ALL_RESERVED))
def test_each_reserved_character_is_escaped_and_linkedin_shows_it_as_written(char):
    text = commentary(document(title=f"Title {char} here", teaser=f"Teaser {char}{char} there"))

    assert f"\\{char} here" in text
    assert little_text(text) == f"Title {char} here\n\nTeaser {char}{char} there"


def test_text_full_of_reserved_characters_and_a_would_be_mention_is_shown_exactly():
    title = "C# & C++ {templates} | <tags> ~ ok"
    teaser = "Ask @[Bob](urn:li:person:1) about a_b*c* \\n and [links](https://x.example/) #notatag"

    assert shown(document(title=title, teaser=teaser)) == f"{title}\n\n{teaser}"


def test_the_title_is_one_line():
    assert shown(document(title="  Two\n   lines  ", teaser="Short.")) == "Two lines\n\nShort."


def test_the_teaser_is_posted_instead_of_the_body():
    text = shown(document(teaser="The short version.", body="The long version, with *everything*."))

    assert text == "Release notes\n\nThe short version."


def test_a_blank_teaser_leaves_the_body():
    assert shown(document(teaser="  \n ", body="The body.")) == "Release notes\n\nThe body."


def test_the_body_is_plain_text_with_paragraphs_and_list_items_on_their_own_lines():
    body = (
        "We shipped **three** things\nthis week:\n\n"
        "- faster *search*\n- a [new editor](https://example.com/editor_v2)\n- fewer_bugs\n\n"
        "## What next\n\nMore `code_blocks` & <b>less</b> waiting.<script>alert(1)</script>"
    )

    assert shown(document(body=body)) == (
        "Release notes\n\n"
        "We shipped three things this week:\n\n"
        "faster search\na new editor\nfewer_bugs\n\n"
        "What next\n\n"
        "More code_blocks & less waiting."
    )


def test_the_link_keeps_no_reserved_character_and_still_names_the_same_page():
    link = "https://blog.example.com/~ada/my_blog/notes_(2026)/"

    text = commentary(document(teaser="Read it.", link=link))

    posted = text.split("\n\n")[2]
    assert posted == "https://blog.example.com/%7Eada/my%5Fblog/notes%5F%282026%29/"
    # LinkedIn shows it as sent (a whole, clickable address), which decodes to the blog's own.
    assert little_text(posted) == posted
    assert unquote(posted) == link


def test_a_link_without_reserved_characters_is_posted_as_it_is():
    text = shown(document(teaser="Read it.", link="https://blog.example.com/blog/notes/release-notes/"))

    assert text == "Release notes\n\nRead it.\n\nhttps://blog.example.com/blog/notes/release-notes/"


def test_tags_become_hashtags_of_letters_and_digits_each_once():
    tags = ["C++", "open source", "Python3", "+++", "open-source", "C", "Zürich", "python3"]

    text = commentary(document(teaser="Tagged.", tags=tags))

    assert text.split("\n\n")[-1] == "#C #opensource #Python3 #Zürich"
    # Hashtags are LinkedIn's own elements: shown as they are, not escaped text.
    assert little_text(text).endswith("#C #opensource #Python3 #Zürich")


def test_tags_that_make_no_word_leave_no_hashtag_line():
    assert commentary(document(teaser="Tagged.", tags=["+++", "#", "--"])) == "Release notes\n\nTagged."


def test_the_parts_come_in_order_title_text_link_hashtags():
    text = commentary(document(teaser="Text.", link="https://b.example/p/", tags=["news"]))

    assert text == "Release notes\n\nText.\n\nhttps://b.example/p/\n\n#news"


def test_exactly_linkedins_limit_passes_and_one_more_character_fails_before_sending():
    title = "T"
    fits = document(title=title, body="x" * (LIMIT - len(title) - 2))
    assert len(commentary(fits)) == LIMIT == 3000

    with pytest.raises(PublishError) as refused:
        commentary(document(title=title, body="x" * (LIMIT - len(title) - 1)))

    assert refused.value.permanent is True
    assert refused.value.message.startswith(
        "The post is too long for LinkedIn: its text would be 3,001 characters and LinkedIn takes at most 3,000."
    )
    assert "teaser" in refused.value.message


def test_escapes_count_toward_the_limit():
    assert len(commentary(document(title="Tt", teaser="_" * 1498))) == 3000

    # 1,503 characters as written, 3,001 as sent.
    with pytest.raises(PublishError, match="3,001 characters") as refused:
        commentary(document(title="Tt", teaser="_" * 1498 + "x"))
    assert refused.value.permanent is True
