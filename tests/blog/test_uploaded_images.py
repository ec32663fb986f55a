"""Uploaded images on a blog post's page: the `responsive_img` tag with images made here, and the
page of a post whose row carries its uploaded images (`post.images`, which the media app's selector
sets; here a wrapper of the posts' selector sets them, and the media entry's `medium_id`)."""

import html
import re

import pytest
from django.template import Context, Template
from django.utils import timezone

from apps.core.images import CONTENT_SIZES
from apps.posts import selectors
from tests.blog.test_html_validity import JAVA, VNU_JAR, validation_errors
from tests.core.test_markdown import parsed
from tests.factories import ChannelFactory, MediaFactory, PostFactory
from tests.uploaded_images import uploaded_image


def tag_output(image, **options) -> str:
    arguments = " ".join(f"{name}={name}" for name in options)
    return Template("{% load blog %}{% responsive_img image " + arguments + " %}").render(
        Context({"image": image, **options})
    )


def test_the_tag_writes_the_size_the_copies_and_the_column_the_image_fills():
    photo = uploaded_image(width=2400, height=1600)

    result = parsed(tag_output(photo))

    [source] = result.tags("source")
    [img] = result.tags("img")
    assert [element.tag for element in result.elements] == ["picture", "source", "img"]
    assert source.attrs["type"] == "image/webp"
    assert source.attrs["srcset"].startswith(f"{photo.variants[0].src} 480w, ")
    assert img.attrs["src"] == photo.src
    assert img.attrs["alt"] == photo.alt_text
    assert (img.attrs["width"], img.attrs["height"]) == ("2400", "1600")
    assert img.attrs["srcset"].endswith(f", {photo.src} 2400w")
    assert img.attrs["sizes"] == source.attrs["sizes"] == CONTENT_SIZES
    assert (img.attrs["loading"], img.attrs["decoding"]) == ("lazy", "async")
    assert "fetchpriority" not in img.attrs


def test_the_pages_first_image_is_fetched_at_once_and_sizes_can_be_given():
    photo = uploaded_image(mime_type="image/png", copies=("image/png",))

    [img] = parsed(tag_output(photo, priority=True, sizes="(max-width: 30rem) 100vw, 30rem")).tags("img")

    assert img.attrs["fetchpriority"] == "high"
    assert "loading" not in img.attrs
    assert img.attrs["sizes"] == "(max-width: 30rem) 100vw, 30rem"


def test_the_tag_escapes_the_alt_text():
    photo = uploaded_image(alt_text='Boats "at dawn" <script>alert(1)</script>', copies=())

    output = tag_output(photo)

    assert "<script" not in output
    assert parsed(output).tags("img")[0].attrs["alt"] == 'Boats "at dawn" <script>alert(1)</script>'


# --- The post's page ---


@pytest.fixture
def page_with_images(client, monkeypatch):
    """A published post with an uploaded image attached (its first media entry), an external one
    after it, and an uploaded image its body shows; the page's HTML."""

    def render(body_shows_first: bool):
        channel = ChannelFactory(team=None, handle="harbour")
        attached = uploaded_image(medium_id=11, alt_text="The harbour wall")
        in_body = uploaded_image(medium_id=12, width=1800, height=1200, alt_text="Nets", attached=False)
        body = f"Morning.\n\n![Nets drying]({in_body.src})\n" if body_shows_first else "Morning, no picture.\n"
        post = PostFactory(channel=channel, publication_status="published", published_at=timezone.now(), body=body)
        MediaFactory(post=post, url=attached.url, alt_text="The harbour wall", position=0)
        MediaFactory(post=post, url="https://cdn.example.com/gull.jpg", alt_text="A gull", position=1)
        loaded = selectors.published_post

        def with_images(**kwargs):
            found = loaded(**kwargs)
            found.images = (attached, in_body) if body_shows_first else (attached,)
            found.media_items[0].medium_id = attached.medium_id
            return found

        monkeypatch.setattr(selectors, "published_post", with_images)
        response = client.get(f"/blog/harbour/{post.slug}/")
        assert response.status_code == 200
        return response.content.decode(), attached, in_body

    return render


@pytest.mark.django_db
def test_the_bodys_uploaded_image_is_the_pages_first_and_the_attached_ones_load_lazily(page_with_images):
    page, attached, in_body = page_with_images(body_shows_first=True)

    images = parsed(page).tags("img")
    body_image, attached_image, external = images
    assert body_image.attrs["src"] == in_body.src
    assert body_image.attrs["fetchpriority"] == "high" and "loading" not in body_image.attrs
    assert (body_image.attrs["width"], body_image.attrs["height"]) == ("1800", "1200")
    assert attached_image.attrs["src"] == attached.src
    assert attached_image.attrs["loading"] == "lazy" and "fetchpriority" not in attached_image.attrs
    assert attached_image.attrs["srcset"].endswith(f"{attached.src} 2400w")
    assert external.attrs["src"] == "https://cdn.example.com/gull.jpg"
    # OpenGraph and the structured data name the uploaded images by their absolute addresses.
    assert re.search(rf'<meta property="og:image" content="{re.escape(attached.url)}">', page)
    assert '<meta property="og:image:width" content="2400">' in page
    assert '<meta property="og:image:alt" content="The harbour wall">' in page
    assert '<meta name="twitter:card" content="summary_large_image">' in page
    structured = html.unescape(re.search(r'"image":\[([^\]]*)\]', page).group(1))
    assert structured == f'"{attached.url}","{in_body.url}","https://cdn.example.com/gull.jpg"'


@pytest.mark.django_db
def test_without_an_uploaded_image_in_the_body_the_first_attached_one_is_fetched_at_once(page_with_images):
    page, attached, _ = page_with_images(body_shows_first=False)

    attached_image, external = parsed(page).tags("img")
    assert attached_image.attrs["src"] == attached.src
    assert attached_image.attrs["fetchpriority"] == "high" and "loading" not in attached_image.attrs
    assert external.attrs["loading"] == "lazy"


@pytest.mark.django_db
@pytest.mark.skipif(JAVA is None or VNU_JAR is None or not VNU_JAR.is_file(), reason="needs Java and vnu.jar")
def test_a_page_with_uploaded_images_is_valid_html(page_with_images, tmp_path):
    page, _, _ = page_with_images(body_shows_first=True)

    assert validation_errors({"post": page.encode()}, tmp_path) == []
