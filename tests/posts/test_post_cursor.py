"""The posts list's cursor (issue 19): `meta.next_cursor` on every page, `?cursor=` for the next
one, refused when altered or foreign; and deep pages that read their ids through the index."""

import base64

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.posts.models import Post
from tests.factories import ChannelFactory, PostFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def channel(api_key):
    return ChannelFactory(account=api_key.account)


def posts_path(channel, query: str = "") -> str:
    return f"/v1/channels/{channel.pk}/posts" + (f"?{query}" if query else "")


def ids(body) -> list[int]:
    return [item["id"] for item in body["data"]]


def walk(authed, channel, query: str) -> tuple[list[int], list[dict]]:
    """Follow next_cursor from the first page to the end; every id seen and every meta."""
    seen, metas = [], []
    body = authed.get(posts_path(channel, query)).json()
    while True:
        seen += ids(body)
        metas.append(body["meta"])
        cursor = body["meta"]["next_cursor"]
        if cursor is None:
            return seen, metas
        response = authed.get(posts_path(channel, f"{query}&cursor={cursor}"))
        assert response.status_code == 200, response.json()
        body = response.json()


def error_of(response) -> dict:
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"]["field"] == "cursor"
    return error


def a_cursor(authed, channel, query: str = "per_page=2") -> str:
    cursor = authed.get(posts_path(channel, query)).json()["meta"]["next_cursor"]
    assert cursor
    return cursor


def test_following_next_cursor_from_page_one_visits_every_post_once_in_order(authed, channel):
    posts = PostFactory.create_batch(23, channel=channel)
    seen, metas = walk(authed, channel, "per_page=5")
    assert seen == [post.pk for post in posts]
    assert metas[0] == {"page": 1, "pages": 5, "count": 23, "per_page": 5, "next_cursor": metas[0]["next_cursor"]}
    # A page reached by cursor has no page number; the last one says nothing follows.
    assert [set(meta) for meta in metas[1:]] == [{"count", "per_page", "next_cursor"}] * 4
    assert metas[-1] == {"count": 23, "per_page": 5, "next_cursor": None}


def test_a_page_answers_the_cursor_of_its_last_post_and_the_last_page_none(authed, channel):
    posts = PostFactory.create_batch(6, channel=channel)
    second = authed.get(posts_path(channel, "per_page=2&page=2")).json()
    after = authed.get(posts_path(channel, f"per_page=2&cursor={second['meta']['next_cursor']}")).json()
    assert ids(after) == [posts[4].pk, posts[5].pk]
    assert after["meta"]["next_cursor"] is None
    assert authed.get(posts_path(channel, "per_page=2&page=3")).json()["meta"]["next_cursor"] is None
    assert authed.get(posts_path(channel, "per_page=2&page=9")).json()["meta"]["next_cursor"] is None


def test_a_sync_by_cursor_sees_posts_added_meanwhile_at_its_end_and_none_twice(authed, channel):
    first = PostFactory.create_batch(4, channel=channel)
    page = authed.get(posts_path(channel, "per_page=2")).json()
    Post.objects.filter(pk=first[0].pk).delete()  # already seen
    added = PostFactory(channel=channel)
    rest, _ = walk(authed, channel, f"per_page=3&cursor={page['meta']['next_cursor']}")
    assert ids(page) + rest == [first[0].pk, first[1].pk, first[2].pk, first[3].pk, added.pk]


def test_the_page_size_may_change_between_cursor_pages(authed, channel):
    posts = PostFactory.create_batch(7, channel=channel)
    cursor = a_cursor(authed, channel)
    body = authed.get(posts_path(channel, f"limit=4&cursor={cursor}")).json()
    assert ids(body) == [post.pk for post in posts[2:6]]
    assert body["meta"]["per_page"] == 4


def test_a_cursor_keeps_the_filters_of_its_list(authed, channel):
    drafts = PostFactory.create_batch(5, channel=channel, publication_status="draft")
    PostFactory.create_batch(5, channel=channel, publication_status="published")
    seen, metas = walk(authed, channel, "publication_status=draft&per_page=2")
    assert seen == [post.pk for post in drafts]
    assert {meta["count"] for meta in metas} == {5}
    # The same filters written another way are the same list.
    cursor = a_cursor(authed, channel, "publication_status=draft,scheduled&per_page=2")
    response = authed.get(posts_path(channel, f"publication_status=scheduled,draft&per_page=2&cursor={cursor}"))
    assert response.status_code == 200


def test_a_cursor_of_another_channel_or_of_other_filters_is_refused(authed, channel, api_key):
    other = ChannelFactory(account=api_key.account)
    PostFactory.create_batch(3, channel=channel)
    PostFactory.create_batch(3, channel=other)
    cursor = a_cursor(authed, channel)
    error = error_of(authed.get(posts_path(other, f"cursor={cursor}")))
    assert error["details"]["rule"] == "foreign_cursor"
    error = error_of(authed.get(posts_path(channel, f"publication_status=draft&cursor={cursor}")))
    assert error["details"]["rule"] == "foreign_cursor"


def _tampered(cursor: str) -> list[str]:
    payload, signature = cursor.rsplit(":", 1)
    decoded = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    moved = base64.urlsafe_b64encode(decoded.replace(b"]", b"0]")).rstrip(b"=").decode()
    return [
        f"{moved}:{signature}",  # another position, the old signature
        cursor[:-3],  # cut short
        f"{payload}:",  # no signature
        payload,
        "not-a-cursor",
        "%00%ff",
        "a" * 5000,
    ]


def test_an_altered_or_made_up_cursor_is_a_400_never_a_500(authed, channel):
    PostFactory.create_batch(5, channel=channel)
    for bad in _tampered(a_cursor(authed, channel)):
        error = error_of(authed.get(posts_path(channel, f"cursor={bad}")))
        assert error["details"]["rule"] == "invalid_cursor", bad


def test_a_cursor_with_a_page_is_refused(authed, channel):
    PostFactory.create_batch(3, channel=channel)
    cursor = a_cursor(authed, channel)
    error = error_of(authed.get(posts_path(channel, f"page=2&cursor={cursor}")))
    assert error["details"]["rule"] == "cursor_with_page"


def test_an_unknown_channel_is_a_404_whatever_the_cursor(authed, channel):
    assert authed.get("/v1/channels/999999/posts?cursor=garbage").status_code == 404


def _queries_of(authed, path: str) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        assert authed.get(path).status_code == 200
    return [q["sql"] for q in queries.captured_queries]


def test_deep_and_cursor_pages_run_as_many_queries_in_a_large_channel_as_in_a_small_one(authed, api_key):
    small, large = ChannelFactory(account=api_key.account), ChannelFactory(account=api_key.account)
    PostFactory.create_batch(8, channel=small)
    Post.objects.bulk_create([Post(channel=large, title=f"P{i}", slug=f"p-{i}") for i in range(300)])
    counts = {}
    for channel, middle in ((small, 2), (large, 75)):
        cursor = authed.get(posts_path(channel, f"per_page=2&page={middle - 1}")).json()["meta"]["next_cursor"]
        deep = _queries_of(authed, posts_path(channel, f"per_page=2&page={middle}"))
        by_cursor = _queries_of(authed, posts_path(channel, f"per_page=2&cursor={cursor}"))
        counts[channel.pk] = (len(deep), len(by_cursor))
        # The page's ids come from a subquery on ids; only those rows are read whole.
        [page_query] = [sql for sql in deep if 'FROM "posts_post"' in sql]
        assert 'IN (SELECT U0."id"' in page_query and "OFFSET" in page_query
        [cursor_query] = [sql for sql in by_cursor if 'FROM "posts_post"' in sql]
        assert "OFFSET" not in cursor_query
    assert counts[small.pk] == counts[large.pk]


def test_the_last_page_is_read_from_the_end_of_the_index_without_skipping(authed, channel):
    Post.objects.bulk_create([Post(channel=channel, title=f"P{i}", slug=f"p-{i}") for i in range(300)])
    [page_query] = [
        sql for sql in _queries_of(authed, posts_path(channel, "per_page=7&page=43")) if "posts_post" in sql
    ]
    assert 'ORDER BY U0."id" DESC LIMIT 6' in page_query and "OFFSET" not in page_query


@pytest.mark.parametrize("query", ["", "publication_status=published&"])
def test_every_page_holds_its_slice_of_the_list_whichever_end_it_is_read_from(authed, channel, query):
    PostFactory.create_batch(4, channel=channel, publication_status="draft")
    posts = [post.pk for post in PostFactory.create_batch(23, channel=channel, publication_status="published")]
    expected = posts if query else sorted(Post.objects.filter(channel=channel).values_list("pk", flat=True))
    for per_page in (1, 2, 5, 7, 11, 12, 26, 27, 100):
        pages = -(-len(expected) // per_page)
        for page in range(1, pages + 2):
            body = authed.get(posts_path(channel, f"{query}per_page={per_page}&page={page}")).json()
            assert ids(body) == expected[(page - 1) * per_page : page * per_page], (per_page, page)


def test_the_schema_documents_the_cursor(authed):
    schema = authed.get("/v1/openapi.json").json()
    operation = schema["paths"]["/v1/channels/{channel_id}/posts"]["get"]
    assert "cursor" in [parameter["name"] for parameter in operation["parameters"]]
    ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    meta = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"]["meta"]
    page_meta, cursor_meta = meta["anyOf"]
    assert set(page_meta["required"]) == {"page", "pages", "count", "per_page", "next_cursor"}
    assert set(cursor_meta["required"]) == {"count", "per_page", "next_cursor"}
    # OpenAPI 3.1 is JSON Schema: null is a type (3.0's `nullable` would be ignored).
    for meta in (page_meta, cursor_meta):
        assert meta["properties"]["next_cursor"]["type"] == ["string", "null"]
