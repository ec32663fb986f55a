"""A blog page served from the page cache is answered by the web process before Django
(config/server/fast_reads.py) with Django's answer byte for byte, and every change of what the blog
shows, and every request that is not a plain reader's, is Django's to answer.

Each request goes to the web process's ASGI application itself (config/server/asgi.py), in this
process, twice built: with the fast path, and without it. These tests commit (transaction=True): the
entries the fast path checks are deleted by the database's notifications.
"""

import logging
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from apps.blog import pages
from apps.core import coherence
from apps.posts.editor_status import post_set_status
from apps.posts.models import Post
from apps.posts.services import post_update_content
from tests import web_process
from tests.factories import ChannelFactory, PostFactory, TagFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not coherence.configured(), reason="needs PostgreSQL and Redis; set DATABASE_URL and REDIS_URL"),
]

REQUEST_ID = "fast-pages-test"
DOMAIN = "fast.example.com"


loop, fast, django_only = web_process.fixtures(request_id=REQUEST_ID)


def published(channel, **kwargs):
    kwargs.setdefault("published_at", timezone.now())
    return PostFactory(channel=channel, publication_status="published", **kwargs)


@pytest.fixture
def blog():
    channel = ChannelFactory(team=None, title="Fast Blog", handle="fast-blog", domain=DOMAIN)
    tag = TagFactory(account=channel.account, name="notes")
    posts = [published(channel, title=f"Post {n}", slug=f"post-{n}", tags=[tag]) for n in range(12)]
    # On the blog's domain its path begins as the API's do (/v1/...): a page's all the same.
    published(channel, title="Very first", slug="very-first", published_at=timezone.now() - timedelta(days=1))
    draft = PostFactory(channel=channel, title="A draft", slug="a-draft", publication_status="draft")
    return SimpleNamespace(channel=channel, post=posts[-1], oldest=posts[0], draft=draft)


def same_answer(first, then) -> None:
    assert (first.status, first.headers, first.body) == (then.status, then.headers, then.body)


PAGES = [
    "/blog/fast-blog/",
    "/blog/fast-blog/?before=nonsense",  # not a cursor: the first page, under its own request
    "/blog/fast-blog/tags/notes/",
    "/blog/fast-blog/post-11/",
    "/blog/fast-blog/feed.xml",
    "/blog/fast-blog/sitemap.xml",
]


@pytest.mark.parametrize("path", PAGES)
def test_a_cached_page_answered_before_django_is_djangos_answer_byte_for_byte(blog, fast, django_only, path):
    first = web_process.answered_fast(fast, path)
    then = django_only.get(path)
    assert first.status == 200
    same_answer(first, then)


def test_an_older_page_is_answered_before_django_byte_for_byte(blog, fast, django_only):
    index = django_only.get("/blog/fast-blog/").body.decode()
    older = index.split("?before=", 1)[1].split('"', 1)[0]
    path = f"/blog/fast-blog/?before={older}"
    first = web_process.answered_fast(fast, path)
    assert b"Post 0" in first.body
    same_answer(first, django_only.get(path))


@pytest.mark.parametrize("path", ["/", "/post-11/", "/very-first/", "/tags/notes/", "/feed.xml"])
def test_a_blog_on_its_own_domain_is_answered_before_django_byte_for_byte(blog, fast, django_only, path):
    first = web_process.answered_fast(fast, path, host=DOMAIN)
    assert first.status == 200
    same_answer(first, django_only.get(path, host=DOMAIN))
    # Another spelling of the host is another request: Django answers it first.
    assert not fast.get(path, host=DOMAIN.upper()).fast


def test_a_page_request_made_once_costs_no_recording_and_the_same_request_again_is_recorded(blog, fast):
    path = "/blog/fast-blog/"
    fast.get(path)  # a miss: the page is rendered and stored
    for n in range(3):
        # Readers whose browsers send headers of their own: each a hit, each seen once.
        assert not fast.get(path, user_agent=f"reader {n}").fast
    assert fast.server.fast.recorded == set()
    assert not fast.get(path, user_agent="reader 1").fast  # seen again: Django's answer is recorded
    assert fast.server.fast.recorded != set()
    assert fast.get(path, user_agent="reader 1").fast


def test_the_page_cache_headers_of_a_fast_answer_are_the_pages(blog, fast):
    headers = dict(web_process.answered_fast(fast, "/blog/fast-blog/").headers)
    assert headers[b"cache-control"] == b"public, max-age=0, must-revalidate"
    assert headers[b"content-security-policy"].startswith(b"default-src 'none'")
    assert headers[b"referrer-policy"] == b"strict-origin-when-cross-origin"
    assert headers[b"x-request-id"] == REQUEST_ID.encode()
    assert b"etag" in headers and b"last-modified" in headers
    assert b"vary" not in headers and b"set-cookie" not in headers


def test_each_request_gets_its_own_request_id_on_the_fast_path(blog, fast):
    web_process.answered_fast(fast, "/blog/fast-blog/")
    sent = "0123456789abcdef0123456789abcdef"
    answer = fast.get("/blog/fast-blog/", x_request_id=sent)
    # The request id is no part of the answer's key: the same answer, with the request's own id.
    assert answer.fast
    assert dict(answer.headers)[b"x-request-id"] == sent.encode()


def publish_the_draft(blog):
    post_set_status(post_id=blog.draft.pk, status="published")
    return "A draft"


def edit_the_newest(blog):
    post_update_content(post=Post.objects.get(pk=blog.post.pk), title="A retitled post")
    return "A retitled post"


def unpublish_the_newest(blog):
    post_set_status(post_id=blog.post.pk, status="draft")
    return "Post 1<"  # the index now reaches one post further back


def describe_the_blog(blog):
    blog.channel.description = "Notes written fast."
    blog.channel.save()
    return "Notes written fast."


@pytest.mark.parametrize("change", [publish_the_draft, edit_the_newest, unpublish_the_newest, describe_the_blog])
@pytest.mark.parametrize("host, path", [("testserver", "/blog/fast-blog/"), (DOMAIN, "/")])
def test_a_change_of_what_the_blog_shows_sends_the_next_request_to_django(blog, fast, django_only, change, host, path):
    web_process.answered_fast(fast, path, host=host)
    shown = change(blog)
    answer = fast.get(path, host=host)
    assert not answer.fast
    assert shown in answer.body.decode()
    # And the page under the new version is answered fast again, as Django answers it.
    same_answer(web_process.answered_fast(fast, path, host=host), django_only.get(path, host=host))


def test_an_unpublished_posts_page_is_djangos_404_at_the_next_request(blog, fast):
    path = f"/blog/fast-blog/{blog.post.slug}/"
    web_process.answered_fast(fast, path)
    post_set_status(post_id=blog.post.pk, status="draft")
    answer = fast.get(path)
    assert (answer.status, answer.fast) == (404, False)
    assert (fast.get(path).status, fast.get(path).fast) == (404, False)


def stored_pages() -> list[bytes]:
    return coherence.shared.client().keys(f"*{pages.store.namespace}*")


def test_a_page_gone_from_the_page_cache_is_djangos_to_render_again(blog, fast, django_only):
    path = "/blog/fast-blog/"
    first = web_process.answered_fast(fast, path)
    coherence.shared.client().delete(*stored_pages())
    answer = fast.get(path)
    assert (answer.status, answer.fast) == (200, False)
    assert answer.body == first.body
    same_answer(web_process.answered_fast(fast, path), django_only.get(path))


def test_a_page_stored_again_with_other_headers_is_djangos_to_answer(blog, fast, django_only):
    # Rendered again under the same version (its entry expired, or was evicted) a second later:
    # the same body, another Last-Modified. The answer recorded with the old one is not given.
    path = "/blog/fast-blog/"
    first = web_process.answered_fast(fast, path)
    (key,) = stored_pages()
    old, other = dict(first.headers)[b"last-modified"], b"Sun, 01 Nov 2026 00:00:00 GMT"
    redis = coherence.shared.client()
    redis.set(key, redis.get(key).replace(old, other))
    answer = fast.get(path)
    assert (answer.status, answer.fast) == (200, False)
    assert dict(answer.headers)[b"last-modified"] == other
    same_answer(answer, django_only.get(path))


def test_a_readers_conditional_request_that_matches_gets_djangos_304(blog, fast, django_only):
    path = "/blog/fast-blog/"
    etag = dict(web_process.answered_fast(fast, path).headers)[b"etag"].decode()
    for _ in range(3):
        answer = fast.get(path, if_none_match=etag)
        assert (answer.status, answer.fast, answer.body) == (304, False, b"")
    same_answer(answer, django_only.get(path, if_none_match=etag))


@pytest.mark.parametrize(
    "headers",
    [
        {"cookie": "sessionid=abc; csrftoken=def"},  # a signed-in editor, or anyone with a session
        {"authorization": "Bearer cps_00000000_notakeyatall"},
    ],
)
def test_a_request_with_a_session_or_a_credential_is_always_djangos(blog, fast, django_only, headers):
    path = "/blog/fast-blog/"
    web_process.answered_fast(fast, path)
    for _ in range(3):
        answer = fast.get(path, **headers)
        assert (answer.status, answer.fast) == (200, False)
    # Django's answer to it, whatever it is (a malformed CSRF cookie gets a new one, a session Vary: Cookie).
    then = django_only.get(path, **headers)
    assert (answer.status, answer.body) == (then.status, then.body)


def test_a_head_request_is_djangos(blog, fast, django_only):
    path = "/blog/fast-blog/"
    web_process.answered_fast(fast, path)
    for _ in range(3):
        answer = fast.get(path, method="HEAD")
        assert (answer.status, answer.fast) == (200, False)


def test_a_draft_and_its_preview_are_never_answered_before_django(blog, fast):
    for path in (f"/blog/fast-blog/{blog.draft.slug}/", f"/preview/{blog.draft.pk}/"):
        for _ in range(3):
            answer = fast.get(path)
            assert answer.status in (302, 404)
            assert not answer.fast


def test_with_the_page_cache_off_nothing_is_recorded(blog, loop, settings):
    settings.API_CACHE_SECONDS = 0
    assert web_process.Web(loop, fast=True, request_id=REQUEST_ID).server.fast is None


def test_both_paths_write_the_same_log_line_for_a_page(blog, fast, django_only, caplog):
    path = "/blog/fast-blog/"
    web_process.answered_fast(fast, path)
    with caplog.at_level(logging.INFO, logger="cps.request"):
        caplog.clear()
        assert fast.get(path).fast
        django_only.get(path)
    first, then = (record for record in caplog.records if record.name == "cps.request")
    assert first.getMessage().split(" duration_ms=")[0] == then.getMessage().split(" duration_ms=")[0]
    assert first.getMessage().split(" account=")[1] == then.getMessage().split(" account=")[1]
    fields = ("method", "path", "status", "account_id", "request_id")
    assert [getattr(first, name) for name in fields] == [getattr(then, name) for name in fields]
