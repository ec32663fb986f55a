"""The media library's scripts in a real browser (Chromium through Playwright): an image dropped on
a post's body is uploaded to the library and its Markdown inserted at the cursor; images dropped on
the library's upload box are uploaded and shown in its grid."""

import base64
import re

import pytest

from apps.media.models import Medium
from apps.media.storage import public_src
from tests.conftest import admin_session, needs_chromium
from tests.factories import AdminUserFactory, ChannelFactory, MediumFactory, PostFactory
from tests.media import images

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), needs_chromium]

# A DataTransfer holding one file, as the browser makes one for a file dragged from the desktop.
DROPPED_FILE = """([data, name, type]) => {
    const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
    const transfer = new DataTransfer();
    transfer.items.add(new File([bytes], name, { type }));
    return transfer;
}"""


@pytest.fixture
def signed_in(live_server, browser):
    """A page of a browser signed in as an admin of an account, and that admin; problems collects
    the page's script errors."""
    user = AdminUserFactory()
    context = browser.new_context()
    session = admin_session(user)
    context.add_cookies([{"name": "sessionid", "value": session.cookies["sessionid"].value, "url": live_server.url}])
    page = context.new_page()
    page.problems = []
    page.on("console", lambda message: message.type == "error" and page.problems.append(message.text))
    page.on("pageerror", lambda error: page.problems.append(str(error)))
    yield page, user
    context.close()


def drop(page, selector: str, data: bytes, name: str) -> None:
    transfer = page.evaluate_handle(DROPPED_FILE, [base64.b64encode(data).decode(), name, "image/png"])
    page.dispatch_event(selector, "dragover", {"dataTransfer": transfer})
    page.dispatch_event(selector, "drop", {"dataTransfer": transfer})


def test_an_image_dropped_on_a_posts_body_is_uploaded_and_its_markdown_inserted_at_the_cursor(live_server, signed_in):
    from playwright import sync_api

    page, user = signed_in
    post = PostFactory(channel=ChannelFactory(account=user.account), body="Before the picture.\nAfter it.")
    page.goto(f"{live_server.url}/admin/posts/post/{post.pk}/change/")
    body = page.locator("#id_body")
    cursor = len("Before the picture.\n")
    body.evaluate("(area, at) => { area.focus(); area.setSelectionRange(at, at); }", cursor)

    drop(page, "#id_body", images.png(400, 300), "harbour.png")

    sync_api.expect(body).to_have_value(re.compile(r"!\[harbour\]\(/media/[0-9a-f]{64}\.png\)"))
    medium = Medium.objects.get(account=user.account)
    assert (medium.original_name, medium.width, medium.height, medium.uploaded_by_id) == (
        "harbour.png",
        400,
        300,
        user.pk,
    )
    expected = f"Before the picture.\n![harbour]({public_src(medium.name)})After it."
    assert body.input_value() == expected
    sync_api.expect(page.locator(".body-images-status")).to_have_text("Uploaded harbour.png.")
    assert page.problems == []


def test_a_file_dropped_on_a_posts_body_that_is_not_an_image_shows_the_services_message(live_server, signed_in):
    from playwright import sync_api

    page, user = signed_in
    post = PostFactory(channel=ChannelFactory(account=user.account), body="Text.")
    page.goto(f"{live_server.url}/admin/posts/post/{post.pk}/change/")

    drop(page, "#id_body", b"<html><script>alert(1)</script></html>", "page.png")

    sync_api.expect(page.locator(".body-images-status")).to_contain_text(
        "page.png was not uploaded: The file carries HTML, SVG or script"
    )
    assert page.locator("#id_body").input_value() == "Text."
    assert not Medium.objects.exists()


def test_images_dropped_on_the_librarys_upload_box_appear_in_its_grid(live_server, signed_in):
    from playwright import sync_api

    page, user = signed_in
    page.goto(f"{live_server.url}/admin/media/medium/")
    sync_api.expect(page.locator(".media-card")).to_have_count(0)
    page.fill("#media-upload-alt", "A quiet harbour")

    drop(page, "form[data-media-dropzone]", images.png(300, 200), "harbour.png")

    card = page.locator(".media-card")
    sync_api.expect(card).to_have_count(1)
    sync_api.expect(card.locator(".media-name")).to_have_text("harbour.png")
    sync_api.expect(card.locator(".media-alt")).to_have_text("A quiet harbour")
    sync_api.expect(card.locator("img")).to_have_js_property("complete", True)
    assert card.locator("img").evaluate("img => img.naturalWidth") == 300
    medium = Medium.objects.get(account=user.account)
    assert card.locator(".medium-insert").get_attribute("data-markdown") == (
        f"![A quiet harbour]({public_src(medium.name)})"
    )
    assert page.problems == []


def test_insert_into_post_in_the_library_opened_from_a_post_writes_the_markdown_at_the_cursor(live_server, signed_in):
    from playwright import sync_api

    page, user = signed_in
    medium = MediumFactory(account=user.account, alt_text="The bay at noon")
    post = PostFactory(channel=ChannelFactory(account=user.account), body="Start. End.")
    page.goto(f"{live_server.url}/admin/posts/post/{post.pk}/change/")
    page.locator("#id_body").evaluate("area => area.setSelectionRange(7, 7)")

    with page.expect_popup() as opened:
        page.get_by_role("button", name="Media library").click()
    library = opened.value
    with library.expect_event("close"):
        try:
            library.locator(f'.media-card[data-medium-id="{medium.pk}"] .medium-insert').click()
        except sync_api.Error as exc:
            # The library closes itself as it inserts (library.js): the page may be gone before the
            # click's own end is seen, which is what this test waits for.
            if "closed" not in str(exc):
                raise

    sync_api.expect(page.locator("#id_body")).to_have_value(f"Start. ![The bay at noon]({public_src(medium.name)})End.")
