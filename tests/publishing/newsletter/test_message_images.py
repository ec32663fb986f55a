"""Uploaded images in an edition (message.render with the Document's `images`): shown inline from
their absolute address, with their alt text, no wider than the message's column, as the mail
clients read it; valid HTML, and no more spam-like to SpamAssassin than an edition without."""

import re
from datetime import UTC, datetime

import pytest

from apps.core.destinations import Document
from apps.publishing.newsletter import message
from apps.publishing.newsletter.services import newsletter_of
from tests.blog.test_html_validity import JAVA, VNU_JAR, validation_errors
from tests.core.test_markdown import parsed
from tests.factories import NewsletterChannelFactory
from tests.publishing.newsletter.test_message import mailed, parts, recipient
from tests.publishing.newsletter.test_spam_score import needs_spamassassin, spam_score
from tests.uploaded_images import uploaded_image

pytestmark = pytest.mark.django_db

BODY = """Hello readers. This spring we planted tomatoes, beans and a row of sunflowers along the
fence, and the harbour wall finally has its new lamps.

![The new lamps on the harbour wall]({wide})

Read [the planting notes](https://example.org/notes) for the dates. The gulls are back too:

![]({narrow})
"""


@pytest.fixture(autouse=True)
def _site(settings):
    settings.SITE_URL = "https://cps.example.com"
    settings.DEFAULT_FROM_EMAIL = "Field Notes <news@cps.example.com>"


@pytest.fixture
def edition():
    """An edition whose body shows a wide photo (by its relative address) and a narrow one (by its
    absolute one), as its newsletter mails it to a reader: (the HTML part, the whole message, the images)."""
    wide = uploaded_image(width=2400, height=1600, medium_id=1, attached=False)
    narrow = uploaded_image(width=320, height=240, medium_id=2, mime_type="image/png", alt_text="Two gulls")
    document = Document(
        post_id=1,
        title="Spring in the garden",
        slug="spring",
        body=BODY.format(wide=wide.src, narrow=narrow.url),
        teaser="Tomatoes, beans and sunflowers",
        published_at=datetime.now(UTC),
        images=(narrow, wide),
    )
    letter_of = newsletter_of(NewsletterChannelFactory(title="Field Notes"))
    rendered = message.render(channel=letter_of.channel, document=document)
    letter = message.compose(edition=rendered, newsletter=letter_of, recipient=recipient())
    return parts(mailed(letter))[1], letter, (wide, narrow)


def test_each_uploaded_image_shows_from_its_absolute_address_with_its_alt_text_and_fits_the_column(edition):
    html, _, (wide, narrow) = edition

    shown_wide, shown_narrow = parsed(html).tags("img")

    assert shown_wide.attrs["src"] == wide.url == f"https://cps.example.com/media/{wide.name}"
    assert shown_wide.attrs["alt"] == "The new lamps on the harbour wall"
    # The column: 600 pixels less 32 of padding on each side; the height in proportion.
    assert (shown_wide.attrs["width"], shown_wide.attrs["height"]) == ("536", "357")
    assert shown_narrow.attrs["src"] == narrow.url
    assert shown_narrow.attrs["alt"] == "Two gulls"
    assert (shown_narrow.attrs["width"], shown_narrow.attrs["height"]) == ("320", "240")
    for image in (shown_wide, shown_narrow):
        style = image.attrs["style"].replace(" ", "")
        assert "max-width:100%" in style and "height:auto" in style
        # Mail clients fetch every image at once and know no srcset.
        assert not {"srcset", "sizes", "loading", "decoding", "fetchpriority"} & set(image.attrs)
    assert "/media/" not in html.replace("https://cps.example.com/media/", "")
    assert "<picture" not in html


def test_the_text_part_keeps_the_words_around_the_images(edition):
    _, letter, _ = edition

    text = mailed(letter).get_body(("plain",)).get_content()

    assert "new lamps." in text and "The gulls are back too:" in text
    assert not re.search(r"<img|!\[", text)


@pytest.mark.skipif(JAVA is None or VNU_JAR is None or not VNU_JAR.is_file(), reason="needs Java and vnu.jar")
def test_an_edition_with_images_is_valid_html(edition, tmp_path):
    html, _, _ = edition

    assert validation_errors({"edition": html.encode()}, tmp_path) == []


@needs_spamassassin
def test_an_edition_with_images_scores_at_most_one_point(edition, tmp_path):
    _, letter, _ = edition

    score, report = spam_score(letter.message().as_bytes(), tmp_path)

    assert score <= 1.0, report
    assert "HTML_IMAGE_ONLY" not in report, report
