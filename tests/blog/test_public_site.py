"""The public site of blog channels as a reader's browser, a crawler and a CDN meet it, on the
service's host (/blog/<handle>/…): what exists, how fresh it is, its headers, its pages of posts,
its head metadata, robots.txt and the members' preview."""

import base64
import hashlib
import html
import json
import re
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest
from django.utils import timezone

from apps.posts.content_plan import content_plan_run
from apps.posts.editor_status import post_set_status
from apps.posts.models import Media, Post
from apps.posts.services import MediaInput, post_create, post_delete, post_update_content
from apps.users.models import Role
from tests.conftest import admin_session
from tests.factories import (
    AccountFactory,
    ChannelFactory,
    MediaFactory,
    OperatorFactory,
    PostFactory,
    TagFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

HOSTILE_BODY = (
    "Intro with **bold** words.\n\n"
    "<script>alert('body')</script>\n\n"
    '<a href="javascript:alert(1)" onclick="steal()">click me</a>\n\n'
    "| a | b |\n|---|---|\n| 1 | 2 |\n"
)


def blog(**kwargs):
    return ChannelFactory(team=None, **kwargs)


def published(channel, **kwargs):
    kwargs.setdefault("published_at", timezone.now())
    return PostFactory(channel=channel, publication_status="published", **kwargs)


def path_of(url: str) -> str:
    """What a browser asks the service for when it follows `url` (an address the pages print)."""
    parts = urlsplit(html.unescape(url))
    return parts.path + (f"?{parts.query}" if parts.query else "")


def post_path(channel, slug: str) -> str:
    return path_of(channel.post_url(slug))


def titles_on(page) -> list[str]:
    return [html.unescape(title) for title in re.findall(r'<article class="summary">\s*<h2><a [^>]*>([^<]*)</a>', page)]


def link(page: str, rel: str) -> str | None:
    found = re.search(rf'<a rel="{rel}" href="([^"]*)"', page)
    return path_of(found.group(1)) if found else None


def tag_links(page: str) -> list[tuple[str, str]]:
    """The (address, name) of each tag a page links."""
    lists = re.findall(r'<ul class="tags" aria-label="Tags">(.*?)</ul>', page, re.S)
    return [
        (href, html.unescape(name))
        for part in lists
        for href, name in re.findall(r'<a href="([^"]*)">([^<]*)</a>', part)
    ]


def meta(page: str, attribute: str, name: str) -> str | None:
    found = re.search(rf'<meta {attribute}="{re.escape(name)}" content="([^"]*)">', page)
    return html.unescape(found.group(1)) if found else None


def article(page: str) -> str:
    """The post's article without its dates (which say when, not what)."""
    body = re.search(r'<article class="post">.*?</article>', page, re.S).group(0)
    return re.sub(r'<p class="meta">.*?</p>', "", body, flags=re.S)


def served_from_cache(client, path: str, django_assert_num_queries) -> str:
    """Fill the page cache with `path`, then show the next request is the stored copy: the same
    bytes for one query (the channel with its version) where rendering reads the posts too."""
    first = client.get(path)
    assert first.status_code == 200
    with django_assert_num_queries(1):
        second = client.get(path)
    assert second.content == first.content
    return second.content.decode()


# --- 1. only published posts exist for readers ---


def test_drafts_scheduled_pending_foreign_and_unknown_posts_all_get_the_same_styled_404(client):
    channel = blog(title="Field Notes")
    sibling = blog(account=channel.account)
    stranger = blog()
    PostFactory(channel=channel, slug="a-draft")
    PostFactory(
        channel=channel,
        slug="a-scheduled",
        publication_status="scheduled",
        scheduled_at=timezone.now() + timedelta(days=1),
    )
    PostFactory(channel=channel, slug="a-pending", publication_status="publishing_pending")
    published(sibling, slug="of-the-same-account")
    published(stranger, slug="of-another-account")
    slugs = ["a-draft", "a-scheduled", "a-pending", "of-the-same-account", "of-another-account", "never-written"]

    responses = {slug: client.get(post_path(channel, slug)) for slug in slugs}

    assert {slug: response.status_code for slug, response in responses.items()} == dict.fromkeys(slugs, 404)
    # Nothing per request in the page (no token, no time), so "the same" is byte for byte.
    assert len({response.content for response in responses.values()}) == 1
    assert len({response["Content-Security-Policy"] for response in responses.values()}) == 1
    page = responses["never-written"].content.decode()
    assert "Page not found" in page
    assert "Field Notes" in page
    assert "/static/blog/theme.css" in page
    # The other blogs' posts are there, on their own blogs.
    assert client.get(post_path(sibling, "of-the-same-account")).status_code == 200
    assert client.get(post_path(stranger, "of-another-account")).status_code == 200


def test_a_published_post_shows_its_title_sanitized_body_tags_and_media(client):
    channel = blog()
    tag = TagFactory(account=channel.account, name="essays")
    post = published(channel, title="Hello, readers", body=HOSTILE_BODY, tags=[tag])
    MediaFactory(post=post, url="https://cdn.example.com/cat.jpg", alt_text="A cat", position=0)
    MediaFactory(post=post, kind="audio", url="https://cdn.example.com/talk.mp3", alt_text="The talk", position=1)

    response = client.get(post_path(channel, post.slug))

    assert response.status_code == 200
    page = response.content.decode()
    assert "<h1>Hello, readers</h1>" in page
    assert "<strong>bold</strong>" in page
    assert "<table>" in page
    assert "click me" in page
    for hostile in ("alert('body')", "javascript:", "onclick", "steal()"):
        assert hostile not in page
    assert re.findall(r"<script[^>]*>", page) == ['<script type="application/ld+json">']
    assert f'href="{channel.public_url("blog:tag", tag="essays")}">essays</a>' in page
    assert '<img src="https://cdn.example.com/cat.jpg" alt="A cat"' in page
    assert 'loading="lazy"' in page
    assert '<audio controls preload="none" src="https://cdn.example.com/talk.mp3">' in page


# --- 2. freshness: every change shows at the very next request ---


def edit_title(post):
    post_update_content(post=post, title="A retitled post")
    return "A retitled post"


def edit_body(post):
    post_update_content(post=post, body="Fresh *words* here.")
    return "<em>words</em>"


def edit_by_bulk_sql(post):
    # A path that bypasses the services (an admin script, a data migration): the database's triggers
    # still give the channel a new version.
    Post.objects.filter(pk=post.pk).update(title="Retitled by SQL")
    return "Retitled by SQL"


def rename_tag(post):
    tag = post.tags.get()
    tag.name = "renamed-tag"
    tag.save()
    return "renamed-tag"


def recolour_channel(post):
    post.channel.accent_color = "#ff0066"
    post.channel.save()
    return "--accent:#ff0066"


def unpublish(post):
    post_set_status(post_id=post.pk, status="draft")


def delete(post):
    post_delete(post_id=post.pk)


@pytest.mark.parametrize(
    "change", [edit_title, edit_body, edit_by_bulk_sql, rename_tag, recolour_channel, unpublish, delete]
)
def test_a_change_shows_at_the_very_next_request_though_pages_are_cached(client, change, django_assert_num_queries):
    channel = blog()
    post = published(channel, title="The original title", tags=[TagFactory(account=channel.account)])
    published(channel, title="A neighbour")
    index, page = path_of(channel.public_url()), post_path(channel, post.slug)
    served_from_cache(client, index, django_assert_num_queries)
    served_from_cache(client, page, django_assert_num_queries)

    shown = change(post)

    after_index, after_page = client.get(index).content.decode(), client.get(page)
    if shown is None:  # the post is gone for readers
        assert after_page.status_code == 404
        assert "The original title" not in after_index
        assert "A neighbour" in after_index
    else:
        assert after_page.status_code == 200
        assert shown in after_page.content.decode()
        if change is not edit_body:  # the index shows the teaser, not the body
            assert shown in after_index


def test_a_post_renders_the_same_whichever_path_wrote_it(client, admin_client):
    channel = blog()
    tag = TagFactory(account=channel.account, name="essays")
    content = {"title": "Same words", "body": HOSTILE_BODY, "teaser": "A teaser."}
    image = {"url": "https://cdn.example.com/same.jpg", "alt_text": "Same", "width": 640, "height": 480}

    by_services = post_create(channel=channel, slug="by-services", tags=[tag], media=[MediaInput(**image)], **content)
    post_set_status(post_id=by_services.pk, status="published")

    planned = post_create(channel=channel, slug="by-content-plan", tags=[tag], media=[MediaInput(**image)], **content)
    post_set_status(
        post_id=planned.pk, status="scheduled", scheduled_at=timezone.now() - timedelta(minutes=1), allow_past=True
    )
    content_plan_run()

    form = {"channel": channel.pk, "slug": "by-settings-area", "meta_title": "", "meta_description": "", **content}
    form |= {"tags": [tag.pk], "publication_status": "published", "scheduled_at_0": "", "scheduled_at_1": ""}
    form |= {"media-TOTAL_FORMS": 1, "media-INITIAL_FORMS": 0, "media-MIN_NUM_FORMS": 0, "media-MAX_NUM_FORMS": 1000}
    form |= {f"media-0-{name}": value for name, value in {**image, "kind": "image", "position": 0}.items()}
    form |= {"api_publication-TOTAL_FORMS": 0, "api_publication-INITIAL_FORMS": 0}
    form |= {"api_publication-MIN_NUM_FORMS": 0, "api_publication-MAX_NUM_FORMS": 1}
    assert admin_client.post("/admin/posts/post/add/", form).status_code == 302

    # A bulk load writes rows only: no published_at, so the post is dated by its creation.
    [loaded] = Post.objects.bulk_create(
        [Post(channel=channel, slug="by-bulk-load", publication_status="published", **content)]
    )
    Post.tags.through.objects.bulk_create([Post.tags.through(post_id=loaded.pk, tag_id=tag.pk)])
    Media.objects.bulk_create([Media(post=loaded, kind="image", **image)])

    slugs = ["by-services", "by-content-plan", "by-settings-area", "by-bulk-load"]
    pages = {slug: client.get(post_path(channel, slug)) for slug in slugs}

    assert {slug: page.status_code for slug, page in pages.items()} == dict.fromkeys(slugs, 200)
    articles = {article(page.content.decode()) for page in pages.values()}
    assert len(articles) == 1
    assert "<strong>bold</strong>" in articles.pop()
    loaded.refresh_from_db()
    assert loaded.published_at is None
    assert (
        f'<time datetime="{loaded.created_at.replace(microsecond=0).isoformat()}">'
        in pages["by-bulk-load"].content.decode()
    )
    assert titles_on(client.get(path_of(channel.public_url())).content.decode()) == ["Same words"] * 4


# --- 3. HTTP: validators, cache rules, security headers, methods ---


def test_pages_name_their_inline_style_in_a_policy_without_inline_scripts_and_keep_their_headers_when_cached(client):
    channel = blog(accent_color="#aa3300")
    post = published(channel)
    path = post_path(channel, post.slug)

    fresh, cached = client.get(path), client.get(path)

    for response in (fresh, cached):
        page = response.content.decode()
        assert response["ETag"] == fresh["ETag"]
        assert response["Last-Modified"] == fresh["Last-Modified"]
        assert response["Cache-Control"] == "public, max-age=0, must-revalidate"
        assert response["X-Content-Type-Options"] == "nosniff"
        assert response["Referrer-Policy"] == fresh["Referrer-Policy"] == "strict-origin-when-cross-origin"
        policy = response["Content-Security-Policy"]
        directives = {name: values for name, *values in (part.split() for part in policy.split(";"))}
        assert directives["default-src"] == ["'none'"]
        assert "script-src" not in directives  # so default-src 'none' holds for scripts
        assert "'unsafe-inline'" not in policy
        assert "'unsafe-eval'" not in policy
        [style] = re.findall(r"<style>(.*?)</style>", page, re.S)
        assert "#aa3300" in style
        digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in directives["style-src"]
        assert ' style="' not in page


def test_a_conditional_get_answers_304_by_etag_and_by_date(client):
    channel = blog()
    path = post_path(channel, published(channel).slug)
    first = client.get(path)

    by_etag = client.get(path, HTTP_IF_NONE_MATCH=first["ETag"])
    by_date = client.get(path, HTTP_IF_MODIFIED_SINCE=first["Last-Modified"])
    other_etag = client.get(path, HTTP_IF_NONE_MATCH='"something-else"')
    long_ago = client.get(path, HTTP_IF_MODIFIED_SINCE="Mon, 01 Jan 2001 00:00:00 GMT")

    assert (by_etag.status_code, by_etag.content) == (304, b"")
    assert by_etag["ETag"] == first["ETag"]
    assert by_date.status_code == 304
    assert other_etag.status_code == long_ago.status_code == 200
    # A browser lays a 304's headers over the page it kept: they must be the page's own.
    for name in ("Content-Security-Policy", "Referrer-Policy", "Cache-Control"):
        assert by_etag[name] == by_date[name] == first[name], name


def test_a_conditional_get_is_answered_with_the_cache_off_too(client, settings):
    settings.API_CACHE_SECONDS = 0
    channel = blog()
    path = post_path(channel, published(channel).slug)
    first = client.get(path)

    assert client.get(path, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304


def test_a_cdn_may_keep_pages_for_blog_cdn_max_age(client, settings):
    settings.BLOG_CDN_MAX_AGE = 300
    channel = blog()

    response = client.get(path_of(channel.public_url()))

    assert set(response["Cache-Control"].split(", ")) == {"public", "max-age=0", "must-revalidate", "s-maxage=300"}


def test_head_is_answered_and_post_is_refused(client):
    channel = blog()
    path = post_path(channel, published(channel).slug)

    head, post = client.head(path), client.post(path)

    assert head.status_code == 200
    assert head.content == b""
    assert head["ETag"] == client.get(path)["ETag"]
    assert post.status_code == 405
    assert client.post(path_of(channel.public_url())).status_code == 405


# --- 4. pages of posts, and tags ---


@pytest.fixture
def seven_posts(settings):
    """A blog of seven published posts (three at the same moment, two at another) with a draft
    between them, paged three at a time; the posts in the order readers see them."""
    settings.BLOG_PAGE_SIZE = 3
    channel = blog()
    moment = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    offsets = [0, 0, 0, 1, 2, 2, 3]
    posts = [
        published(channel, title=f"Post at -{hours}h #{n}", published_at=moment - timedelta(hours=hours))
        for n, hours in enumerate(offsets)
    ]
    PostFactory(channel=channel, title="A draft between them")
    published(blog(account=channel.account), title="Another blog's post", published_at=moment)
    newest_first = sorted(posts, key=lambda post: (post.published_at, post.pk), reverse=True)
    return channel, [post.title for post in newest_first]


def test_older_posts_links_visit_every_post_once_newest_first_and_newer_links_walk_back(client, seven_posts):
    channel, expected = seven_posts
    pages, path = [], path_of(channel.public_url())
    while path:
        page = client.get(path).content.decode()
        pages.append(titles_on(page))
        path = link(page, "next")

    assert [title for titles in pages for title in titles] == expected
    assert [len(titles) for titles in pages] == [3, 3, 1]

    walked_back = [pages[-1]]
    path = link(page, "prev")
    while path != path_of(channel.public_url()):
        page = client.get(path).content.decode()
        walked_back.append(titles_on(page))
        path = link(page, "prev")
    assert walked_back == pages[::-1]


def test_a_garbage_cursor_shows_the_first_page_and_one_past_the_end_answers_404(client, seven_posts):
    channel, expected = seven_posts
    index = path_of(channel.public_url())

    for garbage in ("yesterday", "-1-1", "1-", "99999999999999999-1", "1" * 30 + "-1", "\x00"):
        response = client.get(index, {"before": garbage})
        assert response.status_code == 200, garbage
        assert titles_on(response.content.decode()) == expected[:3], garbage
    assert client.get(index, {"before": "0-0"}).status_code == 404
    assert client.get(index, {"after": "9999999999999999-1"}).status_code == 404


def test_tag_pages_list_only_that_tags_posts_of_the_blog_by_the_addresses_the_pages_link(client):
    channel = blog()
    names = ["slow cooking", "a/b", "ünïcode ☕", "C# & 50%?"]
    tags = {name: TagFactory(account=channel.account, name=name) for name in names}
    published(channel, title="Tagged twice", tags=[tags["slow cooking"], tags["a/b"]])
    published(channel, title="Odd names", tags=[tags["ünïcode ☕"], tags["C# & 50%?"]])
    published(channel, title="No tags")
    PostFactory(channel=channel, title="A tagged draft", tags=[tags["a/b"]])
    published(blog(account=channel.account), title="A sibling blog's post", tags=[tags["a/b"]])

    followed = {}
    for slug in Post.objects.filter(channel=channel, publication_status="published").values_list("slug", flat=True):
        for href, name in tag_links(client.get(post_path(channel, slug)).content.decode()):
            followed[name] = client.get(path_of(href))

    assert sorted(followed) == sorted(names)
    for name, response in followed.items():
        assert response.status_code == 200, name
        expected = ["Tagged twice"] if name in ("slow cooking", "a/b") else ["Odd names"]
        assert titles_on(response.content.decode()) == expected, name
        assert f"Posts tagged “{html.escape(name)}”" in response.content.decode()

    unknown = client.get(path_of(channel.public_url("blog:tag", tag="never-used")))
    assert unknown.status_code == 404
    assert unknown.content == client.get(post_path(channel, "never-written")).content


# --- 5. what search engines and link previews read ---


def test_the_head_has_title_description_canonical_opengraph_json_ld_language_and_feed(client):
    channel = blog(title="Kochbuch", language="de")
    hostile_title = "</script><script>alert(1)</script> & more"
    post = published(
        channel,
        title=hostile_title,
        meta_title="A title for search engines",
        meta_description="A description for search engines.",
        published_at=datetime(2026, 5, 4, 3, 2, 1, tzinfo=UTC),
    )
    MediaFactory(post=post, kind="video", url="https://cdn.example.com/clip.mp4", position=0)
    MediaFactory(post=post, url="https://cdn.example.com/second.jpg", position=2)
    MediaFactory(post=post, url="https://cdn.example.com/first.jpg", position=1)

    page = client.get(post_path(channel, post.slug)).content.decode()

    assert '<html lang="de">' in page
    assert "<title>A title for search engines</title>" in page
    assert meta(page, "name", "description") == "A description for search engines."
    assert f'<link rel="canonical" href="{channel.post_url(post.slug)}">' in page
    assert meta(page, "property", "og:title") == "A title for search engines"
    assert meta(page, "property", "og:type") == "article"
    assert meta(page, "property", "og:url") == channel.post_url(post.slug)
    assert meta(page, "property", "og:image") == "https://cdn.example.com/first.jpg"
    feed = re.search(r'<link rel="alternate" type="application/atom\+xml" title="Kochbuch" href="([^"]*)">', page)
    assert feed.group(1) == channel.public_url("blog:feed")
    assert client.get(path_of(feed.group(1))).status_code == 200
    # The hostile title closes no element: the first </script> is the block's own.
    block = re.search(r'<script type="application/ld\+json">(.*?)</script>', page, re.S).group(1)
    data = json.loads(block)
    assert data["@type"] == "BlogPosting"
    assert data["headline"] == hostile_title
    assert datetime.fromisoformat(data["datePublished"]) == post.published_at
    assert "<script>alert(1)" not in page


def test_the_description_falls_back_to_the_teaser_then_to_the_body_text(client):
    channel = blog()
    teased = published(channel, title="Teased", teaser="The teaser says it.", body="The body says more.")
    plain = published(channel, title="Plain", teaser="", body="Only the **body** says [it](https://example.com).")

    teased_page = client.get(post_path(channel, teased.slug)).content.decode()
    plain_page = client.get(post_path(channel, plain.slug)).content.decode()

    assert "<title>Teased</title>" in teased_page
    assert meta(teased_page, "name", "description") == "The teaser says it."
    assert meta(plain_page, "name", "description") == "Only the body says it."


def test_dates_are_shown_in_the_blogs_time_zone_and_the_footer_says_which(client):
    channel = blog(time_zone="Europe/Berlin")
    winter = published(channel, title="Winter", published_at=datetime(2026, 1, 15, 12, 0, tzinfo=UTC))
    summer = published(channel, title="Summer", published_at=datetime(2026, 7, 15, 12, 0, tzinfo=UTC))

    winter_page = client.get(post_path(channel, winter.slug)).content.decode()
    summer_page = client.get(post_path(channel, summer.slug)).content.decode()
    index = client.get(path_of(channel.public_url())).content.decode()

    assert '<time datetime="2026-01-15T13:00:00+01:00">15 January 2026, 13:00 CET</time>' in winter_page
    assert '<time datetime="2026-07-15T14:00:00+02:00">15 July 2026, 14:00 CEST</time>' in summer_page
    assert "13:00 CET" in index and "14:00 CEST" in index
    for page in (winter_page, summer_page, index):
        assert "Times are in Europe/Berlin." in page


# --- 6. robots.txt ---


def test_robots_txt_names_the_blogs_sitemaps_and_keeps_crawlers_out_of_the_admin_and_api(client, settings):
    first, second = blog(), blog()
    blog(domain="own.example.org")  # named by its own domain's robots.txt (test_domains.py)
    ChannelFactory(platform="git")

    response = client.get("/robots.txt")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    lines = response.content.decode().splitlines()
    assert f"Disallow: /{settings.ADMIN_URL}" in lines
    assert "Disallow: /v1/" in lines
    assert "Disallow: /preview/" in lines
    sitemaps = [line.removeprefix("Sitemap: ") for line in lines if line.startswith("Sitemap: ")]
    assert sitemaps == [first.public_url("blog:sitemap"), second.public_url("blog:sitemap")]
    for sitemap in sitemaps:
        listed = client.get(path_of(sitemap))
        assert listed.status_code == 200
        assert listed["Content-Type"].startswith("application/xml")


def test_favicon_ico_is_the_blogs_icon_kept_for_a_day_by_browsers_and_caches(client, settings):
    """Browsers ask for /favicon.ico on every page that names no icon (the admin, the API's docs)."""
    response = client.get("/favicon.ico")

    assert response.status_code == 200
    assert response["Content-Type"] == "image/svg+xml"
    assert set(response["Cache-Control"].split(", ")) == {"public", "max-age=86400"}
    assert response.content == (settings.BASE_DIR / "apps/blog/static/blog/icon.svg").read_bytes()
    assert client.head("/favicon.ico").status_code == 200
    assert client.post("/favicon.ico").status_code == 405


# --- 7. the members' preview ---


@pytest.mark.parametrize("role", [Role.ADMIN, Role.EDITOR, Role.VIEWER])
def test_a_member_of_the_account_previews_an_unpublished_post_privately(client, role):
    channel = blog()
    draft = PostFactory(channel=channel, title="Not yet", body="Work in *progress*.")
    member = UserFactory(account=channel.account, role=role)

    response = admin_session(member).get(f"/preview/{draft.pk}/")

    assert response.status_code == 200
    page = response.content.decode()
    assert "Preview: this post is draft; readers cannot see it." in page
    assert "<em>progress</em>" in page
    assert '<meta name="robots" content="noindex">' in page
    assert response["Cache-Control"] == "private, no-store"
    assert response["X-Robots-Tag"] == "noindex"
    assert client.get(post_path(channel, draft.slug)).status_code == 404


def test_nobody_but_the_accounts_members_may_preview(client):
    channel = blog()
    draft = PostFactory(channel=channel)
    not_a_blog = PostFactory(channel=ChannelFactory(account=channel.account, platform="git"))
    path = f"/preview/{draft.pk}/"

    anonymous = client.get(path)

    assert anonymous.status_code == 302
    assert anonymous["Location"] == f"/account/login/?next=/preview/{draft.pk}/"
    assert admin_session(UserFactory(account=AccountFactory())).get(path).status_code == 404
    assert admin_session(OperatorFactory()).get(path).status_code == 404
    member = admin_session(UserFactory(account=channel.account))
    assert member.get(f"/preview/{not_a_blog.pk}/").status_code == 404
    assert member.get("/preview/999999999/").status_code == 404
