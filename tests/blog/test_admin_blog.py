"""The blog in the Settings area: a channel's blog settings, "View on site" and "Preview" on a post's
page, the live Markdown preview of a body, and "View site" in the header."""

import pytest
from django.test import Client
from django.utils import timezone

from apps.channels.models import Channel
from tests.conftest import admin_session, needs_chromium
from tests.factories import (
    AdminUserFactory,
    ChannelFactory,
    OperatorFactory,
    PostFactory,
    PublicationJobFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

MARKDOWN_PREVIEW = "/admin/posts/post/markdown-preview/"
PREVIEW_FRAME = "/preview/markdown-frame/"


def channel_url(channel: Channel) -> str:
    return f"/admin/channels/channel/{channel.pk}/change/"


def post_url(post) -> str:
    return f"/admin/posts/post/{post.pk}/change/"


def blog_settings(channel: Channel, **changes) -> dict:
    data = {"title": channel.title, "platform": channel.platform, "image_width": 1200, "team": ""}
    return data | changes


def form_errors(response) -> dict:
    assert response.status_code == 200, response.status_code
    return response.context["adminform"].form.errors


def test_an_account_admin_saves_a_blogs_settings_and_sees_its_public_address():
    admin = AdminUserFactory()
    channel = ChannelFactory(account=admin.account, title="Field notes")
    client = admin_session(admin)
    settings = {
        "handle": "Notes",
        "domain": " Notes.Example.org ",
        "description": "Walks and weather",
        "language": "de",
        "time_zone": "Europe/Berlin",
        "accent_color": "#AA3300",
        "logo_url": "https://cdn.example.com/logo.png",
    }
    response = client.post(channel_url(channel), blog_settings(channel, **settings))
    assert response.status_code == 302, form_errors(response)
    channel.refresh_from_db()
    saved = {name: getattr(channel, name) for name in settings}
    assert saved == settings | {"handle": "notes", "domain": "notes.example.org", "accent_color": "#aa3300"}

    page = client.get(channel_url(channel))
    assert page.context["absolute_url"] == "https://notes.example.org/"
    assert b'href="https://notes.example.org/"' in page.content
    listing = client.get("/admin/channels/channel/")
    assert b'href="https://notes.example.org/"' in listing.content


def test_cleared_blog_settings_fall_back_to_their_defaults():
    admin = AdminUserFactory()
    channel = ChannelFactory(account=admin.account, title="Plain", language="fr", time_zone="Europe/Paris")
    response = admin_session(admin).post(channel_url(channel), blog_settings(channel, language="", time_zone=""))
    assert response.status_code == 302, form_errors(response)
    channel.refresh_from_db()
    assert (channel.handle, channel.language, channel.time_zone) == ("plain", "en", "UTC")


def test_bad_blog_settings_are_form_errors_and_change_nothing():
    admin = AdminUserFactory()
    ChannelFactory(handle="taken", domain="taken.example.com")
    channel = ChannelFactory(account=admin.account, handle="mine")
    client = admin_session(admin)
    bad = {
        "handle": "taken",
        "domain": "taken.example.com",
        "time_zone": "Mars/Olympus_Mons",
        "accent_color": "blue",
        "logo_url": "http://cdn.example.com/logo.png",
    }
    errors = form_errors(client.post(channel_url(channel), blog_settings(channel, **bad)))
    assert set(errors) == set(bad)
    errors = form_errors(client.post(channel_url(channel), blog_settings(channel, handle="preview", domain="a.b/c")))
    assert set(errors) == {"handle", "domain"}
    assert "reserved" in errors["handle"][0]
    channel.refresh_from_db()
    assert (channel.handle, channel.domain) == ("mine", None)


def test_only_blog_channels_keep_blog_settings():
    admin = AdminUserFactory()
    client = admin_session(admin)
    typed = {"title": "Site", "platform": "git", "image_width": 1200, "handle": "site", "domain": "site.example.com"}
    response = client.post("/admin/channels/channel/add/", typed)
    assert response.status_code == 302
    git = Channel.objects.get(title="Site")
    assert (git.handle, git.domain) == (None, None)
    page = client.get(channel_url(git))
    assert "handle" not in page.context["adminform"].form.fields
    assert not page.context["has_absolute_url"]


def test_view_on_site_links_a_published_blog_post_to_its_page_and_nothing_else():
    admin = AdminUserFactory()
    client = admin_session(admin)
    blog = ChannelFactory(account=admin.account)
    draft = PostFactory(channel=blog)
    published = PostFactory(channel=blog, title="Out now", publication_status="published", published_at=timezone.now())

    assert not client.get(post_url(draft)).context["has_absolute_url"]
    page = client.get(post_url(published))
    assert page.context["absolute_url"] == blog.post_url(published.slug)
    assert b'class="viewsitelink"' in page.content
    reader = Client().get(f"/blog/{blog.handle}/{published.slug}/")
    assert reader.status_code == 200
    assert b"Out now" in reader.content

    git = ChannelFactory(account=admin.account, platform="git")
    committed = PostFactory(channel=git, publication_status="published", published_at=timezone.now())
    assert not client.get(post_url(committed)).context["has_absolute_url"]
    PublicationJobFactory(channel=git, post_id=committed.pk, state="succeeded", url="https://example.org/committed/")
    assert client.get(post_url(committed)).context["absolute_url"] == "https://example.org/committed/"


def test_a_draft_blog_post_has_a_preview_that_its_accounts_member_can_open():
    editor = UserFactory(role="editor")
    client = admin_session(editor)
    draft = PostFactory(channel=ChannelFactory(account=editor.account), title="Not yet")
    page = client.get(post_url(draft))
    preview = f"/preview/{draft.pk}/"
    assert page.context["preview_url"] == preview
    assert f'href="{preview}"'.encode() in page.content
    opened = client.get(preview)
    assert opened.status_code == 200
    assert b"Not yet" in opened.content
    assert admin_session(AdminUserFactory()).get(preview).status_code == 404  # another account's admin

    git_post = PostFactory(channel=ChannelFactory(account=editor.account, platform="git"))
    assert "preview_url" not in client.get(post_url(git_post)).context


def test_the_body_has_a_live_preview_from_a_static_script():
    page = admin_session(AdminUserFactory()).get("/admin/posts/post/add/")
    assert "posts/markdown_preview.js" in str(page.context["media"])
    assert f'data-markdown-preview="{MARKDOWN_PREVIEW}"'.encode() in page.content


def test_the_markdown_preview_renders_sanitized_html():
    client = admin_session(UserFactory(role="editor"))
    body = "# Hello\n\n<script>alert('x')</script>\n\n<img src=x onerror=alert(1)> [link](javascript:alert(2))\n"
    response = client.post(MARKDOWN_PREVIEW, {"body": body})
    assert response.status_code == 200
    assert response["Content-Type"] == "text/html; charset=utf-8"
    html = response.content.decode()
    assert "<h1" in html and "Hello" in html
    for hostile in ("<script", "alert('x')", "onerror", 'href="javascript:'):
        assert hostile not in html


def test_the_markdown_preview_takes_only_posts_from_those_who_may_write_posts(settings):
    client = admin_session(AdminUserFactory())
    assert client.get(MARKDOWN_PREVIEW).status_code == 405
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    assert client.post(MARKDOWN_PREVIEW, {"body": "x" * 2000}).status_code == 413
    assert admin_session(UserFactory(role="viewer")).post(MARKDOWN_PREVIEW, {"body": "x"}).status_code == 403
    for signed_out in (Client(), admin_session(AdminUserFactory(status="suspended"))):
        response = signed_out.post(MARKDOWN_PREVIEW, {"body": "x"})
        assert response.status_code == 302 and "/login/" in response["Location"]


def test_the_preview_is_shown_in_a_frame_with_the_blogs_stylesheet_and_image_rules():
    """Not in the admin's own page, whose styles made a heading an admin header bar and whose policy
    takes https: images only: the blog shows http: images (apps/blog/site.py), so the preview does."""
    form = admin_session(UserFactory(role="editor")).get("/admin/posts/post/add/")
    assert f'data-markdown-preview-frame="{PREVIEW_FRAME}"'.encode() in form.content

    frame = Client().get(PREVIEW_FRAME)  # an empty page: nothing in it is anyone's

    assert frame.status_code == 200
    html = frame.content.decode()
    assert '<link rel="stylesheet" href="/static/blog/theme.css">' in html
    assert 'id="preview"' in html
    assert "admin" not in html  # none of the admin's stylesheets
    policy = frame["Content-Security-Policy"]
    assert "img-src 'self' https: http:;" in policy
    assert "script-src" not in policy and "default-src 'none'" in policy  # nothing runs in it
    assert "frame-ancestors 'self'" in policy
    assert frame["X-Frame-Options"] == "SAMEORIGIN"


def test_the_markdown_preview_needs_the_csrf_token_as_the_script_sends_it():
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(AdminUserFactory(), backend="apps.settings_area.access.AccessBackend")
    assert browser.post(MARKDOWN_PREVIEW, {"body": "*hi*"}).status_code == 403
    browser.get("/admin/posts/post/add/")  # sets the CSRF cookie, as the page does
    token = browser.cookies["csrftoken"].value
    response = browser.post(MARKDOWN_PREVIEW, {"body": "*hi*"}, headers={"X-CSRFToken": token})
    assert response.status_code == 200
    assert b"<em>hi</em>" in response.content


def test_view_site_in_the_header_leads_to_the_accounts_blog_or_is_not_shown():
    admin = AdminUserFactory()
    ChannelFactory(account=admin.account, platform="git")
    blog = ChannelFactory(account=admin.account, handle="first")
    ChannelFactory(account=admin.account, handle="second")
    page = admin_session(admin).get("/admin/")
    assert page.context["site_url"] == blog.public_url()
    assert f'href="{blog.public_url()}">View site'.encode() in page.content

    without_blog = AdminUserFactory()
    ChannelFactory(account=without_blog.account, platform="git")
    page = admin_session(without_blog).get("/admin/")
    assert page.context["site_url"] is None
    assert b"View site" not in page.content

    assert admin_session(OperatorFactory()).get("/admin/").context["site_url"] == "/"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@needs_chromium
def test_typing_in_the_body_fills_the_preview_pane_in_a_real_browser(live_server, browser):
    from playwright import sync_api

    post = PostFactory(channel=ChannelFactory(), body="Before")
    session = admin_session(AdminUserFactory(account=post.channel.account))
    context = browser.new_context()
    signed_in = session.cookies["sessionid"].value
    context.add_cookies([{"name": "sessionid", "value": signed_in, "url": live_server.url}])
    page = context.new_page()
    problems = []
    page.on("console", lambda message: message.type == "error" and problems.append(message.location["url"]))
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(f"{live_server.url}{post_url(post)}")
    pane = page.frame_locator(".markdown-preview-frame").locator("#preview")
    sync_api.expect(pane).to_have_text("Before")
    page.fill("#id_body", "## Typed\n\n<script>window.ran = 1</script>*done*")
    sync_api.expect(pane.locator("h2")).to_contain_text("Typed")
    assert pane.inner_html().count("<script") == 0
    assert page.evaluate("window.ran") is None
    assert problems == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@needs_chromium
def test_the_preview_looks_like_the_blog_page_and_shows_its_http_images_in_a_real_browser(live_server, browser):
    from playwright import sync_api

    # An http: image of another origin (the admin is at localhost): the admin's own policy blocks it.
    image = live_server.url.replace("localhost", "127.0.0.1") + "/static/blog/icon.svg"
    post = PostFactory(channel=ChannelFactory(), body=f"## A heading\n\n- one\n- two\n\n![The icon]({image})")
    session = admin_session(AdminUserFactory(account=post.channel.account))
    context = browser.new_context()
    context.add_cookies([{"name": "sessionid", "value": session.cookies["sessionid"].value, "url": live_server.url}])
    page = context.new_page()
    page.goto(f"{live_server.url}{post_url(post)}")
    frame = page.frame_locator(".markdown-preview-frame")
    sync_api.expect(frame.locator("#preview h2")).to_contain_text("A heading")
    sync_api.expect(frame.locator("#preview img")).to_have_js_property("complete", True)
    assert frame.locator("#preview img").evaluate("img => img.naturalWidth") > 0
    # The blog's h2 (theme.css: 1.5rem), with no admin header bar behind it.
    heading = frame.locator("#preview h2").evaluate(
        "e => [getComputedStyle(e).fontSize, getComputedStyle(e).backgroundColor]"
    )
    assert heading == ["24px", "rgba(0, 0, 0, 0)"]
    # The list starts with the text (the admin's form rows push lists 160px to the right).
    assert frame.locator("#preview ul").evaluate("e => getComputedStyle(e).marginLeft") == "0px"
    context.close()
