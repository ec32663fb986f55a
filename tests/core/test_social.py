"""A post as a short social text: counted as the networks count characters, its tags as hashtags,
fitted into a network's limit with the link kept whole."""

from datetime import UTC, datetime

from apps.core.destinations import Document
from apps.core.social import ELLIPSIS, fitted, graphemes, hashtag_words, shorten


def document(**fields) -> Document:
    values = {
        "post_id": 1,
        "title": "Spring release",
        "slug": "spring-release",
        "body": "Body text.",
        "published_at": datetime(2026, 4, 1, tzinfo=UTC),
        "link": "https://blog.example.com/spring-release/",
    }
    return Document(**{**values, **fields})


def test_an_emoji_with_a_skin_tone_a_flag_and_a_family_are_one_character_each():
    assert graphemes("👍🏽") == 1
    assert graphemes("🇫🇷") == 1
    assert graphemes("👨‍👩‍👧‍👦") == 1
    assert graphemes("é") == 1  # e and a combining accent
    assert graphemes("日本語") == 3


def test_tags_become_hashtag_words_of_letters_and_digits_once_whatever_their_case():
    assert hashtag_words(["Machine learning", "python", "Python", "C++", "日本", "---"]) == [
        "Machinelearning",
        "python",
        "C",
        "日本",
    ]


def test_a_shortened_text_ends_at_a_words_end_with_an_ellipsis_and_never_splits_a_character():
    assert shorten("short", 10) == "short"
    cut = shorten("The quick brown fox jumps over the lazy dog", 20)
    assert cut == "The quick brown fox" + ELLIPSIS
    assert graphemes(shorten("👍🏽" * 30, 10)) == 10
    assert shorten("👍🏽" * 30, 10) == "👍🏽" * 9 + ELLIPSIS


def test_a_post_that_fits_is_its_title_summary_link_and_hashtags():
    text = fitted(document(teaser="What is new.", tags=["News", "Release notes"]), limit=500)
    assert text == "Spring release\n\nWhat is new.\n\nhttps://blog.example.com/spring-release/\n\n#News #Releasenotes"


def test_a_long_post_loses_summary_before_anything_else_and_keeps_its_link_whole():
    long = document(body="word " * 400, tags=["News"])
    text = fitted(long, limit=300)
    assert graphemes(text) <= 300
    assert text.startswith("Spring release\n\nword word")
    assert ELLIPSIS in text
    assert "https://blog.example.com/spring-release/" in text and text.endswith("#News")


def test_with_no_room_for_a_summary_hashtags_go_from_the_last_and_the_title_is_shortened():
    tight = document(title="A rather long title " * 5, body="word " * 50, tags=["One", "Two", "Three"])
    text = fitted(tight, limit=80)
    assert graphemes(text) <= 80
    assert "https://blog.example.com/spring-release/" in text
    assert "word" not in text


def test_a_network_that_counts_links_its_own_way_passes_its_length():
    def counted(text: str) -> int:
        return graphemes(text.replace("https://blog.example.com/spring-release/", "x" * 23))

    text = fitted(document(body="word " * 100), limit=100, length=counted)
    assert counted(text) <= 100 < graphemes(text)
