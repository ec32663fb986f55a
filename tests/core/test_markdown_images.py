"""Uploaded images in a post's body (apps/core/markdown.py with apps/core/images.py): on a page with
their size and responsive copies, in an e-mail from their absolute address sized to fit; every other
image as before, and the allow-list as strict as ever. Outputs are read as a browser parses them."""

from apps.core.images import CONTENT_SIZES, by_address
from apps.core.markdown import render_body, render_markdown
from tests.core.test_markdown import assert_inert
from tests.uploaded_images import uploaded_image


def candidates(srcset: str) -> list[tuple[str, str]]:
    return [tuple(candidate.strip().split(" ")) for candidate in srcset.split(",")]


def test_an_uploaded_image_has_its_size_and_its_copies_of_its_type_narrowest_first_then_the_original():
    photo = uploaded_image(width=2400, height=1600)

    result = assert_inert(render_markdown(f"![Boats at dawn]({photo.src})", images=by_address([photo])))

    [img] = result.tags("img")
    assert img.attrs["src"] == photo.src
    assert img.attrs["alt"] == "Boats at dawn"
    assert (img.attrs["width"], img.attrs["height"]) == ("2400", "1600")
    assert img.attrs["loading"] == "lazy"
    assert img.attrs["decoding"] == "async"
    jpeg_copies = [variant for variant in photo.variants if variant.mime_type == "image/jpeg"]
    assert candidates(img.attrs["srcset"]) == [
        (jpeg_copies[0].src, "480w"),
        (jpeg_copies[1].src, "960w"),
        (jpeg_copies[2].src, "1600w"),
        (photo.src, "2400w"),
    ]
    assert img.attrs["sizes"] == CONTENT_SIZES == "(max-width: 44.5rem) calc(100vw - 2.5rem), 42rem"


def test_the_webp_copies_of_a_jpeg_come_first_in_a_picture_for_the_browsers_that_take_them():
    photo = uploaded_image(mime_type="image/jpeg")

    result = assert_inert(render_markdown(f"![]({photo.src})", images=by_address([photo])))

    assert [element.tag for element in result.elements] == ["p", "picture", "source", "img"]
    [source] = result.tags("source")
    webp_copies = [variant.src for variant in photo.variants if variant.mime_type == "image/webp"]
    assert source.attrs["type"] == "image/webp"
    assert candidates(source.attrs["srcset"]) == list(zip(webp_copies, ["480w", "960w", "1600w"], strict=True))
    assert source.attrs["sizes"] == CONTENT_SIZES
    # No words in the body: the image's own alt text.
    assert result.tags("img")[0].attrs["alt"] == "Fishing boats in the harbour at dawn"


def test_a_webp_original_lists_its_webp_copies_on_the_image_itself_with_no_picture():
    photo = uploaded_image(mime_type="image/webp", copies=("image/webp",))

    result = assert_inert(render_markdown(f"![x]({photo.src})", images=by_address([photo])))

    assert [element.tag for element in result.elements] == ["p", "img"]
    assert [width for _, width in candidates(result.tags("img")[0].attrs["srcset"])] == [
        "480w",
        "960w",
        "1600w",
        "2400w",
    ]


def test_an_image_without_copies_yet_has_its_size_and_no_srcset():
    photo = uploaded_image(width=800, height=600, copies=())

    result = assert_inert(render_markdown(f"![x]({photo.src})", images=by_address([photo])))

    [img] = result.tags("img")
    assert (img.attrs["width"], img.attrs["height"]) == ("800", "600")
    assert "srcset" not in img.attrs and "sizes" not in img.attrs
    assert result.tags("picture") == []


def test_the_body_may_show_it_by_its_absolute_address_with_a_title():
    photo = uploaded_image()

    result = assert_inert(render_markdown(f'![Boats]({photo.url} "The harbour")', images=by_address([photo])))

    [img] = result.tags("img")
    assert img.attrs["src"] == photo.src
    assert img.attrs["title"] == "The harbour"
    assert "srcset" in img.attrs


def test_an_external_image_renders_as_it_did_without_uploaded_images():
    photo = uploaded_image()
    body = '![A cat](https://cdn.example/cat.jpg "Cat") and <img src="/b.png" alt="b">'

    assert render_markdown(body, images=by_address([photo])) == render_markdown(body)
    assert assert_inert(render_markdown(body, images=by_address([photo]))).tags("img")[0].attrs == {
        "src": "https://cdn.example/cat.jpg",
        "alt": "A cat",
        "title": "Cat",
        "loading": "lazy",
        "decoding": "async",
    }


def test_sanitizing_still_removes_scripts_and_handlers_around_and_on_an_uploaded_image():
    photo = uploaded_image()
    body = (
        f'![x" onerror="alert(1)]({photo.src} "t\\" onload=\\"alert(2)")\n\n'
        f'<img src="{photo.src}" onerror="alert(3)" srcset="javascript:alert(4) 1x">'
        "<script>alert(5)</script>"
    )

    html = render_markdown(body, images=by_address([photo]))
    result = assert_inert(html)

    assert "alert(5)" not in html
    first, raw = result.tags("img")
    assert first.attrs["alt"] == 'x" onerror="alert(1)'
    assert first.attrs["title"] == 't" onload="alert(2)'
    # An image the body's raw HTML writes keeps what the allow-list keeps, and no srcset it wrote.
    assert raw.attrs == {"src": photo.src, "decoding": "async", "loading": "lazy"}


def test_with_priority_the_first_uploaded_image_is_fetched_at_once_and_the_rest_lazily():
    first, second = uploaded_image(medium_id=1), uploaded_image(medium_id=2, width=1200, height=800)
    body = f"![external](https://cdn.example/a.jpg)\n\n![one]({first.src})\n\n![two]({second.src})"

    rendered = render_body(body, images=by_address([first, second]), priority=True)

    external, one, two = assert_inert(rendered.html).tags("img")
    assert external.attrs["loading"] == "lazy" and "fetchpriority" not in external.attrs
    assert one.attrs["fetchpriority"] == "high" and "loading" not in one.attrs
    assert two.attrs["loading"] == "lazy" and "fetchpriority" not in two.attrs
    assert rendered.images == (first, second)
    assert render_body("No image.", images=by_address([first]), priority=True).images == ()


def test_in_an_email_it_shows_from_its_absolute_address_sized_to_fit_the_column_and_nothing_is_lazy():
    wide, narrow = uploaded_image(width=2400, height=1600), uploaded_image(width=300, height=200, medium_id=8)
    body = f"![Boats]({wide.src})\n\n![]({narrow.src})\n\n![cat](https://cdn.example/cat.jpg)"

    result = assert_inert(render_markdown(body, anchors=False, images=by_address([wide, narrow]), mail_width=536))

    shown_wide, shown_narrow, external = result.tags("img")
    assert shown_wide.attrs == {"src": wide.url, "alt": "Boats", "width": "536", "height": "357"}
    assert shown_narrow.attrs == {"src": narrow.url, "alt": narrow.alt_text, "width": "300", "height": "200"}
    assert external.attrs == {"src": "https://cdn.example/cat.jpg", "alt": "cat"}
    assert result.tags("picture") == []
