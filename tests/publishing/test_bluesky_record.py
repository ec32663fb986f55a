"""A post as a Bluesky record: its text within 300 graphemes (and 3,000 bytes) as Bluesky counts
them, with emoji, URLs and CJK; its links and hashtags as facets whose UTF-8 byte offsets point at
them; and record keys that are TIDs. Checked against an independent count (`regex`'s graphemes)
and by slicing the text's UTF-8 bytes, as Bluesky's app reads them."""

import re
import time

import regex
from django.utils import timezone

from apps.core.destinations import Document
from apps.publishing.bluesky import record

TID = re.compile(r"[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}")


def document(**fields) -> Document:
    return Document(
        **{"post_id": 1, "title": "Hello", "slug": "hello", "body": "", "published_at": timezone.now()} | fields
    )


def counted(text: str) -> int:
    return len(regex.findall(r"\X", text))


def sliced(text: str, facet: dict) -> str:
    index = facet["index"]
    return text.encode()[index["byteStart"] : index["byteEnd"]].decode()


def test_a_long_cjk_text_is_cut_to_300_graphemes_with_its_hashtags_kept():
    text = record.text_of(document(title="日本語の記事", body="漢字" * 400, tags=["ニュース", "tech"]))

    assert counted(text) <= 300 and counted(text) >= 290
    assert text.endswith("#ニュース #tech")
    assert "…" in text


def test_emoji_count_as_one_grapheme_each_and_a_skin_toned_thumb_is_never_split():
    body = "👍🏽" * 500
    text = record.text_of(document(title="Thumbs", body=body))

    assert counted(text) <= 300
    assert "\U0001f3fd" not in text.replace("👍🏽", "")  # no modifier left without its thumb
    assert len(text) > 300  # Python counts code points: more than Bluesky's graphemes


def test_long_emoji_sequences_are_cut_by_bluskys_3000_bytes_before_300_graphemes():
    family = "👨‍👩‍👧‍👦"  # one grapheme, 25 bytes
    text = record.text_of(document(title="Families", body=family * 300))

    assert len(text.encode()) <= record.BYTE_LIMIT
    assert counted(text) < 300


def test_a_short_post_is_posted_whole_and_the_blog_link_goes_only_in_the_card():
    doc = document(title="Hi", teaser="A few words.", link="https://blog.example.com/p/hi/", tags=["news"])

    assert record.text_of(doc) == "Hi\n\nA few words.\n\n#news"


def test_link_and_hashtag_facets_after_emoji_and_cjk_point_at_their_bytes():
    text = "Ünïcödé 👍🏽 漢字 see https://example.com/a_(b) (or https://example.org/x). Now.\n\n#日本 #news2 #2026"

    facets = record.facets(text)

    assert [sliced(text, facet) for facet in facets] == [
        "https://example.com/a_(b)",
        "https://example.org/x",
        "#日本",
        "#news2",
    ]
    assert facets[0]["features"] == [{"$type": "app.bsky.richtext.facet#link", "uri": "https://example.com/a_(b)"}]
    assert [facet["features"][0]["tag"] for facet in facets[2:]] == ["日本", "news2"]
    # Character offsets would point elsewhere: the byte offsets are larger.
    assert facets[0]["index"]["byteStart"] > text.index("https")


def test_a_hashtag_inside_a_word_or_of_digits_only_is_no_facet():
    assert record.facets("C#sharp and #123 and issue#4") == []


def test_record_keys_are_tids_in_the_order_they_were_made():
    earlier, later = record.tid(time.time() - 1), record.tid()

    assert TID.fullmatch(earlier) and TID.fullmatch(later)
    assert earlier < later


def test_the_record_has_its_type_text_time_languages_and_facets():
    post = record.post("Hello #world", embed=None, langs=["en"])

    assert post["$type"] == "app.bsky.feed.post"
    assert post["langs"] == ["en"]
    assert post["createdAt"].endswith("Z") and len(post["createdAt"]) == 24
    assert post["facets"][0]["index"] == {"byteStart": 6, "byteEnd": 12}


def test_an_address_in_the_text_is_a_link_facet_and_one_cut_short_to_fit_is_none():
    address = "https://example.com/" + "a" * 60
    whole = record.text_of(document(title="Links", teaser=f"漢字 👍🏽 see {address} and more."))
    # A word's end too far back to cut at: the address itself is cut.
    cut = record.text_of(document(title="Links", teaser="字" * 100 + f" {address}{'b' * 250}"))

    [link] = record.facets(whole)
    assert sliced(whole, link) == address and link["features"][0]["uri"] == address
    assert counted(cut) <= 300 and cut.endswith("b…") and "https://example.com/" in cut
    assert record.facets(cut) == []
