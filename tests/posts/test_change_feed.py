"""GET /v1/channels/{channel_id}/changes: a channel's posts in the order their changes committed, and
the posts that left it, followed by cursor. Real commits (`transactional_db`): on PostgreSQL a
change is handed out once no older transaction runs, and pytest-django's `db` would keep the test's
own writes in one open transaction.

On PostgreSQL that horizon is the server's, over every database: other test runs on the same
server hold it back while their transactions last. `settled()` waits for it to pass what this test
wrote, so a page shows everything committed before it."""

from datetime import timedelta

import jsonschema
import pytest
from django.db import connection
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from apps.posts.changes import Cursor, Position, cursor_text, tombstones_sweep
from apps.posts.models import ChangeFeedState, Media, Post, PostDeletion
from apps.posts.services import post_delete, post_update_content
from tests.conftest import settings_loaded, wait_until
from tests.factories import ApiKeyFactory, ChannelFactory, MediaFactory, PostFactory, TagFactory
from tests.posts.test_openapi_conformance import as_json_schema

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _no_tombstones_of_earlier_tests():
    """SQLite's flush after each test deletes posts row by row, through the triggers: the tombstones
    it leaves are not this test's."""
    PostDeletion.objects.all().delete()


@pytest.fixture
def key():
    return ApiKeyFactory()


@pytest.fixture
def channel(key):
    return ChannelFactory(account=key.account)


def _oldest_running_and_newest() -> tuple[int, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint, pg_current_xact_id()::text::bigint"
        )
        return cursor.fetchone()


def settled() -> None:
    """Wait until every transaction begun before now on the database server has ended (PostgreSQL)."""
    if connection.vendor != "postgresql":
        return
    _, now = _oldest_running_and_newest()
    wait_until(lambda: _oldest_running_and_newest()[0] > now, timeout=300, step=0.05)


@pytest.fixture
def feed(client_for, key):
    """One page of a channel's feed, as JSON, once what was committed before is past the horizon;
    asserts the status."""
    client = client_for(key)

    def get(channel, cursor=None, status=200, **params):
        settled()
        if cursor is not None:
            params["cursor"] = cursor
        response = client.get(f"/v1/channels/{channel.pk}/changes", params)
        assert response.status_code == status, response.content
        return response.json()

    return get


@pytest.fixture
def follow(feed):
    """Every item from `cursor` until the feed is up to date: (items, the last cursor)."""

    def run(channel, cursor=None, per_page=None):
        items = []
        params = {} if per_page is None else {"per_page": per_page}
        while True:
            page = feed(channel, cursor, **params)
            items += page["data"]
            cursor = page["meta"]["next_cursor"]
            if not page["meta"]["has_more"]:
                return items, cursor

    return run


def ids(items) -> list[int]:
    return [item["id"] for item in items]


def test_a_first_sync_returns_every_post_once_in_its_single_form(channel, follow, client_for, key):
    posts = PostFactory.create_batch(25, channel=channel)
    PostFactory(channel=ChannelFactory(account=channel.account))

    items, _ = follow(channel, per_page=10)

    assert sorted(ids(items)) == sorted(post.pk for post in posts)
    single = client_for(key).get(f"/v1/channels/{channel.pk}/posts/{posts[3].pk}").json()["data"]
    assert next(item for item in items if item["id"] == posts[3].pk) == single


def test_a_first_sync_tells_no_deletion_made_before_it(channel, follow):
    kept = PostFactory(channel=channel)
    post_delete(post_id=PostFactory(channel=channel).pk)

    items, _ = follow(channel, per_page=1)

    assert ids(items) == [kept.pk]


def test_an_edit_after_the_cursor_returns_the_posts_new_form_once(channel, feed, follow):
    post, _ = PostFactory.create_batch(2, channel=channel)
    _, cursor = follow(channel)

    post_update_content(post=post, title="A new title")
    page = feed(channel, cursor)

    assert [(item["id"], item["title"]) for item in page["data"]] == [(post.pk, "A new title")]
    assert feed(channel, page["meta"]["next_cursor"])["data"] == []


def test_a_post_edited_twice_appears_once_in_its_latest_form(channel, feed, follow):
    post = PostFactory(channel=channel)
    _, cursor = follow(channel)

    post_update_content(post=post, title="First")
    post_update_content(post=post, title="Second")

    assert [(item["id"], item["title"]) for item in feed(channel, cursor)["data"]] == [(post.pk, "Second")]


def test_changes_come_in_the_order_they_committed(channel, feed, follow):
    first, second = PostFactory.create_batch(2, channel=channel)
    _, cursor = follow(channel)

    post_update_content(post=second, title="Edited first")
    post_update_content(post=first, title="Edited second")
    created = PostFactory(channel=channel)

    assert ids(feed(channel, cursor)["data"]) == [second.pk, first.pk, created.pk]


def test_a_deleted_post_appears_as_a_tombstone(channel, feed, follow):
    post = PostFactory(channel=channel)
    _, cursor = follow(channel)

    before = timezone.now()
    post_delete(post_id=post.pk)
    [item] = feed(channel, cursor)["data"]

    assert set(item) == {"id", "deleted", "deleted_at"}
    assert item["id"] == post.pk and item["deleted"] is True
    assert item["deleted_at"].endswith("Z") and before - timedelta(seconds=1) <= parse_datetime(item["deleted_at"])


def test_a_post_deleted_with_its_channel_or_in_bulk_leaves_tombstones(channel, key):
    posts = PostFactory.create_batch(3, channel=channel)
    other_channel = ChannelFactory(account=key.account)
    PostFactory(channel=other_channel)

    Post.objects.filter(pk__in=[posts[0].pk, posts[1].pk]).delete()
    other_channel_id = other_channel.pk
    other_channel.delete()

    assert sorted(PostDeletion.objects.filter(channel_id=channel.pk).values_list("post_id", flat=True)) == sorted(
        [posts[0].pk, posts[1].pk]
    )
    assert PostDeletion.objects.filter(channel_id=other_channel_id).count() == 1


def test_a_post_moved_to_another_channel_leaves_one_and_enters_the_other(channel, key, feed, follow):
    post = PostFactory(channel=channel)
    elsewhere = ChannelFactory(account=key.account)
    _, here_cursor = follow(channel)
    _, there_cursor = follow(elsewhere)

    Post.objects.filter(pk=post.pk).update(channel=elsewhere)

    assert [(item["id"], item.get("deleted")) for item in feed(channel, here_cursor)["data"]] == [(post.pk, True)]
    assert [(item["id"], item.get("deleted")) for item in feed(elsewhere, there_cursor)["data"]] == [(post.pk, None)]


def test_a_post_moved_back_drops_its_tombstone_there(channel, key, feed, follow):
    post = PostFactory(channel=channel)
    elsewhere = ChannelFactory(account=key.account)
    _, cursor = follow(channel)

    Post.objects.filter(pk=post.pk).update(channel=elsewhere)
    Post.objects.filter(pk=post.pk).update(channel=channel)

    assert [(item["id"], item.get("deleted")) for item in feed(channel, cursor)["data"]] == [(post.pk, None)]


def test_linking_and_unlinking_a_tag_moves_the_post(channel, feed, follow):
    post, _ = PostFactory.create_batch(2, channel=channel)
    tag = TagFactory(account=channel.account)
    _, cursor = follow(channel)

    post.tags.add(tag)
    page = feed(channel, cursor)
    post.tags.remove(tag)

    assert [(item["id"], [t["name"] for t in item["tags"]]) for item in page["data"]] == [(post.pk, [tag.name])]
    assert [(item["id"], item["tags"]) for item in feed(channel, page["meta"]["next_cursor"])["data"]] == [
        (post.pk, [])
    ]


def test_adding_changing_and_removing_media_moves_the_post(channel, feed, follow):
    post, _ = PostFactory.create_batch(2, channel=channel)
    _, cursor = follow(channel)

    media = MediaFactory(post=post)
    page = feed(channel, cursor)
    Media.objects.filter(pk=media.pk).update(alt_text="Changed")
    changed = feed(channel, page["meta"]["next_cursor"])
    media.delete()
    removed = feed(channel, changed["meta"]["next_cursor"])

    assert [(item["id"], len(item["media"])) for item in page["data"]] == [(post.pk, 1)]
    assert [item["media"][0]["alt_text"] for item in changed["data"]] == ["Changed"]
    assert [(item["id"], item["media"]) for item in removed["data"]] == [(post.pk, [])]


def test_renaming_a_tag_moves_every_post_that_carries_it(channel, key, feed, follow):
    tag = TagFactory(account=key.account)
    tagged = PostFactory.create_batch(2, channel=channel, tags=[tag])
    PostFactory(channel=channel)
    _, cursor = follow(channel)

    tag.name = "renamed"
    tag.save()

    page = feed(channel, cursor)
    assert sorted(ids(page["data"])) == sorted(post.pk for post in tagged)
    assert {item["tags"][0]["name"] for item in page["data"]} == {"renamed"}


def test_an_up_to_date_feed_gives_a_cursor_that_misses_nothing_and_repeats_nothing(channel, feed, follow):
    post = PostFactory(channel=channel)
    _, cursor = follow(channel)

    empty = feed(channel, cursor)
    post_update_content(post=post, title="Changed later")
    later = feed(channel, empty["meta"]["next_cursor"])

    assert empty["data"] == [] and empty["meta"]["has_more"] is False
    assert [(item["id"], item["title"]) for item in later["data"]] == [(post.pk, "Changed later")]
    assert feed(channel, later["meta"]["next_cursor"])["data"] == []


def test_a_page_with_no_items_gives_back_the_cursor_sent(channel, feed, follow):
    PostFactory(channel=channel)
    _, cursor = follow(channel)

    page = feed(channel, cursor)

    assert page["data"] == [] and page["meta"]["has_more"] is False
    assert page["meta"]["next_cursor"] == cursor


def test_an_empty_channel_has_an_empty_first_page_and_a_cursor(channel, feed):
    page = feed(channel)

    assert page["data"] == [] and page["meta"]["next_cursor"] and page["meta"]["per_page"] == 20
    created = PostFactory(channel=channel)
    assert ids(feed(channel, page["meta"]["next_cursor"])["data"]) == [created.pk]


def test_another_accounts_channel_and_an_unknown_one_are_404(feed):
    assert feed(ChannelFactory(), status=404)["error"]["code"] == "not_found"
    assert feed(ChannelFactory.build(pk=987654321), status=404)["error"]["code"] == "not_found"


def test_the_feed_needs_the_read_posts_scope(channel, client_for):
    key = ApiKeyFactory(user__account=channel.account, scopes=["read:channels"])

    assert client_for(key).get(f"/v1/channels/{channel.pk}/changes").status_code == 403


@pytest.mark.parametrize("cursor", ["garbage", "", "x" * 300])
def test_a_forged_cursor_is_400_on_field_cursor(channel, feed, follow, cursor):
    PostFactory(channel=channel)
    _, real = follow(channel)
    forged = cursor or real[:-2] + ("AA" if real[-2:] != "AA" else "BB")

    error = feed(channel, forged, status=400)["error"]

    assert error["code"] == "VALIDATION_ERROR"
    assert (error["details"]["field"], error["details"]["rule"]) == ("cursor", "invalid_cursor")


def test_a_cursor_of_another_channel_is_400(channel, key, feed):
    other = ChannelFactory(account=key.account)
    cursor = feed(other)["meta"]["next_cursor"]

    error = feed(channel, cursor, status=400)["error"]

    assert (error["code"], error["details"]["field"], error["details"]["rule"]) == (
        "VALIDATION_ERROR",
        "cursor",
        "foreign_cursor",
    )


def test_a_cursor_issued_longer_ago_than_the_retention_is_410(channel, feed, settings):
    settings.CHANGES_RETENTION = timedelta(days=30)
    old = cursor_text(Cursor(channel.pk, Position(0, 0), 0), now=timezone.now() - timedelta(days=31))
    recent = cursor_text(Cursor(channel.pk, Position(0, 0), 0), now=timezone.now() - timedelta(days=29))

    error = feed(channel, old, status=410)["error"]

    assert error["code"] == "cursor_expired" and "without a cursor" in error["message"]
    feed(channel, recent, status=200)


def test_a_cursor_at_or_below_the_floor_is_410(channel, feed, follow, settings):
    settings.CHANGES_RETENTION = timedelta(days=30)
    PostFactory(channel=channel)
    _, before = follow(channel)
    post_delete(post_id=PostFactory(channel=channel).pk)
    PostDeletion.objects.update(deleted_at=timezone.now() - timedelta(days=31))

    assert tombstones_sweep() == 1
    _, after = follow(channel)

    assert feed(channel, before, status=410)["error"]["code"] == "cursor_expired"
    assert feed(channel, after)["data"] == []


def test_the_sweeper_deletes_old_tombstones_in_batches_and_raises_the_floor(channel, settings):
    settings.CHANGES_RETENTION = timedelta(days=30)
    posts = PostFactory.create_batch(5, channel=channel)
    for post in posts:
        post_delete(post_id=post.pk)
    old = list(PostDeletion.objects.order_by("position", "post_id")[:3])
    PostDeletion.objects.filter(pk__in=[t.pk for t in old]).update(deleted_at=timezone.now() - timedelta(days=31))

    assert tombstones_sweep(batch=2) == 3

    assert sorted(PostDeletion.objects.values_list("post_id", flat=True)) == sorted(p.pk for p in posts[3:])
    assert ChangeFeedState.objects.get().floor == max(t.position for t in old)
    assert tombstones_sweep() == 0


def test_the_floor_never_goes_down(channel, settings):
    ChangeFeedState.objects.update_or_create(pk=1, defaults={"floor": 10**15})
    post_delete(post_id=PostFactory(channel=channel).pk)
    PostDeletion.objects.update(deleted_at=timezone.now() - timedelta(days=365))

    assert tombstones_sweep() == 1
    assert ChangeFeedState.objects.get().floor == 10**15


@pytest.mark.parametrize(("value", "status"), [("0", 400), ("-3", 400), ("many", 400), ("", 200)])
def test_per_page_must_be_a_positive_integer(channel, feed, value, status):
    page = feed(channel, status=status, per_page=value)

    if status == 400:
        assert (page["error"]["details"]["field"], page["error"]["details"]["rule"]) == ("per_page", "positive_integer")


def test_per_page_is_capped_at_100(channel, feed):
    PostFactory.create_batch(101, channel=channel)

    page = feed(channel, per_page=500)

    assert page["meta"]["per_page"] == 100 and len(page["data"]) == 100 and page["meta"]["has_more"] is True


def test_pages_of_one_item_walk_the_changes_without_repeating_or_skipping(channel, feed, follow):
    posts = PostFactory.create_batch(4, channel=channel)
    _, cursor = follow(channel)
    post_update_content(post=posts[2], title="x")
    post_delete(post_id=posts[0].pk)
    post_update_content(post=posts[1], title="y")

    items, _ = follow(channel, cursor, per_page=1)

    assert [(item["id"], item.get("deleted", False)) for item in items] == [
        (posts[2].pk, False),
        (posts[0].pk, True),
        (posts[1].pk, False),
    ]


def test_the_feed_matches_its_openapi_schema(channel, key, client, feed, follow):
    schema = client.get("/v1/openapi.json").json()
    operation = schema["paths"]["/v1/channels/{channel_id}/changes"]["get"]
    assert {"400", "404", "410"} <= set(operation["responses"])
    body_schema = as_json_schema(
        operation["responses"]["200"]["content"]["application/json"]["schema"], schema["components"]["schemas"]
    )
    post = PostFactory(channel=channel, tags=[TagFactory(account=key.account)])
    MediaFactory(post=post)
    first = feed(channel)
    post_delete(post_id=PostFactory(channel=channel).pk)
    post_update_content(post=post, title="Changed")

    jsonschema.validate(first, body_schema)
    jsonschema.validate(feed(channel, first["meta"]["next_cursor"]), body_schema)


def test_the_positions_are_written_by_the_database_whatever_python_wrote(channel):
    post = PostFactory(channel=channel)
    post.refresh_from_db()
    created = post.change_position
    post.change_position = 0
    post.save()
    saved = Post.objects.get(pk=post.pk).change_position
    with connection.cursor() as cursor:
        cursor.execute("UPDATE posts_post SET title = 'raw' WHERE id = %s", [post.pk])

    assert 0 < created < saved < Post.objects.get(pk=post.pk).change_position


@pytest.mark.parametrize("value", ["", "0", "-P1D", "soon"])
def test_a_bad_changes_retention_stops_the_start_up(value):
    result = settings_loaded("import config.settings", {"CHANGES_RETENTION": value})

    assert result.returncode != 0
    assert "CHANGES_RETENTION must be a positive duration" in result.stderr


def test_the_changes_retention_is_thirty_days_unless_set():
    show = "import config.settings as s; print(s.CHANGES_RETENTION.total_seconds())"

    assert settings_loaded(show, {}, unset=("CHANGES_RETENTION",)).stdout == f"{30 * 86400.0}\n"
    assert settings_loaded(show, {"CHANGES_RETENTION": "P7D"}).stdout == f"{7 * 86400.0}\n"


def test_the_sweep_runs_hourly_from_beat(settings):
    assert settings.CELERY_BEAT_SCHEDULE["posts.sweep_changes"]["task"] == "posts.sweep_changes"


def test_a_page_of_changes_runs_as_many_queries_with_1_item_as_with_100(key, client_for, follow):
    from django.test.utils import CaptureQueriesContext

    client = client_for(key)
    tags = TagFactory.create_batch(2, account=key.account)
    counted = {}
    for n in (1, 100):
        channel = ChannelFactory(account=key.account)
        posts = PostFactory.create_batch(n + 1, channel=channel, tags=tags)
        for post in posts:
            MediaFactory(post=post)
        _, cursor = follow(channel)
        for post in posts[:n]:
            post_update_content(post=post, title="Changed")
        post_delete(post_id=posts[-1].pk)
        settled()
        path = f"/v1/channels/{channel.pk}/changes"
        client.get(path, {"cursor": cursor})  # the key is looked up and kept as for any later request
        with CaptureQueriesContext(connection) as queries:
            page = client.get(path, {"cursor": cursor, "per_page": 100}).json()
        assert len(page["data"]) == min(n + 1, 100)
        counted[n] = len(queries)

    # The key, the channel, the horizon, posts, tombstones, the floor, the posts' forms (posts,
    # tags, media): none per item.
    assert counted[1] == counted[100]
