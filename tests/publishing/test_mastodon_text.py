"""A post as a Mastodon status's text, counted as Mastodon counts it against an instance's limit:
grapheme clusters (an emoji with its skin tone, a flag, a family, a CJK character: one each), every
http(s) link as the instance's `characters_reserved_per_url` whatever its length, a remote mention as
its local part; fitted into the limit by apps/core/social.py's rule (the summary gives way first)."""

import pytest
from django.utils import timezone

from apps.core.destinations import Document
from apps.publishing.mastodon.text import length, status_text
from tests.publishing.mastodon_fake import counted


def document(**fields) -> Document:
    values = {"post_id": 1, "title": "Hello", "slug": "hello", "body": "", "published_at": timezone.now()}
    return Document(**(values | fields))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain words", 11),
        ("👍🏽🇯🇵👩‍👩‍👧‍👦", 3),
        ("日本語の文章", 6),
        ("e\u0301", 1),  # e and a combining accent: one character on the screen
        ("https://example.com/" + "x" * 200, 23),
        ("see https://a.io.", 4 + 23 + 1),  # the sentence's full stop is not part of the link
        ("(https://example.com/page)", 2 + 23),
        ("ftp://example.com/file", 22),  # not a link Mastodon counts short
        ("hi @ada@mastodon.example.org", 7),
        ("mail me@example.org", 19),  # an address, not a mention
    ],
)
def test_a_text_is_counted_as_mastodon_counts_it(text, expected):
    assert length(text) == expected


def test_the_instance_says_how_long_a_link_counts():
    assert length("https://example.com/a", reserved_per_url=40) == 40


def test_tags_become_hashtags_and_a_tag_without_a_letter_is_left_out():
    text = status_text(document(tags=["Open source", "2024", "C++", "日本"]), limit=500, reserved_per_url=23)

    assert text == "Hello\n\n#Opensource #C #日本"


def test_a_text_that_fits_is_posted_whole_and_one_that_does_not_is_shortened_to_the_limit_with_its_link_kept():
    link = "https://blog.example.org/" + "very-long-slug-" * 10
    body = "🌸 " + "桜の花が咲きました。" * 80
    doc = document(title="春 🌸", body=body, link=link, tags=["Spring"])

    whole = status_text(doc, limit=5000, reserved_per_url=23)
    fitted = status_text(doc, limit=300, reserved_per_url=23)

    assert body.strip() in whole
    assert length(fitted) <= 300 and length(fitted) >= 290
    assert counted(fitted, 23) == length(fitted)  # the fake's own count agrees
    assert fitted.startswith("春 🌸\n\n🌸 桜の花が咲きました。") and fitted.endswith(f"…\n\n{link}\n\n#Spring")
