"""Deep pages of a channel's posts start from anchors (apps/posts/page_anchors.py): every page is
still the page OFFSET reads, whatever happened to the channel's posts since the anchors were made,
with the cache or without it. The anchors here are three posts apart (a thousand in production), so
that a few dozen posts have pages at every depth."""

import uuid

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext

from apps.channels.models import Channel
from apps.posts import page_anchors
from apps.posts.models import Post
from apps.posts.services import post_create, post_delete, post_update_content
from apps.publishing.newsletter.models import Edition
from tests.conftest import requires_postgres, run_together
from tests.factories import ChannelFactory, PostFactory, PublicationJobFactory

pytestmark = pytest.mark.django_db

SPACING = 3


@pytest.fixture(autouse=True)
def anchors(monkeypatch, settings):
    """Anchors three posts apart, two to a cache entry, in a store of this test's own; responses
    computed anew at every request (the representation cache would answer the second one)."""
    monkeypatch.setattr(page_anchors, "SPACING", SPACING)
    monkeypatch.setattr(page_anchors, "CHUNK", 2)
    monkeypatch.setattr(page_anchors, "store", page_anchors.AnchorStore(f"test-anchors-{uuid.uuid4().hex}"))
    settings.API_CACHE_SECONDS = 0


@pytest.fixture
def made(monkeypatch) -> list[int]:
    """The channel ids whose anchors were made, once per making."""
    calls = []
    read = page_anchors._read_anchors

    def counted(channel_id):
        calls.append(channel_id)
        return read(channel_id)

    monkeypatch.setattr(page_anchors, "_read_anchors", counted)
    return calls


@pytest.fixture
def channel(api_key):
    return ChannelFactory(account=api_key.account)


def posts_path(channel, page: int, per_page: int, query: str = "") -> str:
    return f"/v1/channels/{channel.pk}/posts?page={page}&per_page={per_page}{query}"


def offset_page(channel, page: int, per_page: int, **filters) -> list[int]:
    ids = Post.objects.filter(channel=channel, **filters).order_by("id").values_list("id", flat=True)
    return list(ids[(page - 1) * per_page : page * per_page])


def posts_ids_version(channel) -> int:
    return Channel.objects.values_list("posts_ids_version", flat=True).get(pk=channel.pk)


def assert_every_page_is_the_offset_page(authed, channel, per_page: int = 2) -> None:
    count = Post.objects.filter(channel=channel).count()
    pages = -(-count // per_page)
    for page in range(1, pages + 2):
        response = authed.get(posts_path(channel, page, per_page))
        assert response.status_code == 200, response.content
        body = response.json()
        assert [item["id"] for item in body["data"]] == offset_page(channel, page, per_page), (page, per_page)
        assert body["meta"]["count"] == count
        assert body["meta"]["pages"] == pages


# --- every page, every depth ---


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("per_page", [1, 2, 5, 7])
def test_every_page_at_every_depth_is_the_page_offset_reads(authed, channel, per_page, made):
    PostFactory.create_batch(40, channel=channel)

    assert_every_page_is_the_offset_page(authed, channel, per_page)

    assert made == [channel.pk], "the anchors are made once, by the first page deep enough to need them"


@pytest.mark.django_db(transaction=True)
def test_a_deep_page_skips_fewer_posts_than_the_anchors_are_apart(authed, channel):
    PostFactory.create_batch(40, channel=channel)
    authed.get(posts_path(channel, 9, 2))  # makes the anchors

    with CaptureQueriesContext(connection) as queries:
        body = authed.get(posts_path(channel, 9, 2)).json()

    assert [item["id"] for item in body["data"]] == offset_page(channel, 9, 2)
    [page_query] = [query["sql"] for query in queries if "posts_post" in query["sql"] and "LIMIT 2" in query["sql"]]
    # Offset 16: the anchor of position 15, then one post skipped.
    assert f"LIMIT 2 OFFSET {16 % SPACING}" in page_query


@pytest.mark.django_db(transaction=True)
def test_a_page_is_the_same_response_with_anchors_and_without(authed, channel, monkeypatch):
    PostFactory.create_batch(30, channel=channel)
    with_anchors = [authed.get(posts_path(channel, page, 3)).content for page in range(1, 12)]

    monkeypatch.setattr(page_anchors, "SPACING", 10**9)
    without = [authed.get(posts_path(channel, page, 3)).content for page in range(1, 12)]

    assert with_anchors == without


# --- what moves posts, and what does not ---


@pytest.mark.django_db(transaction=True)
def test_pages_stay_the_offset_pages_through_inserts_deletes_and_moves(authed, channel, api_key):
    other = ChannelFactory(account=api_key.account)
    posts = PostFactory.create_batch(30, channel=channel)
    PostFactory.create_batch(10, channel=other)
    assert_every_page_is_the_offset_page(authed, channel)

    changes = [
        lambda: post_delete(post_id=posts[4].pk),
        lambda: Post.objects.filter(pk__in=[posts[10].pk, posts[11].pk, posts[20].pk]).delete(),
        lambda: Post.objects.filter(pk=posts[7].pk).update(channel=other),
        lambda: Post.objects.filter(pk=posts[7].pk).update(channel=channel),
        lambda: Post.objects.filter(channel=other).update(channel=channel),
        # A post inserted below others: an id reused (as a restored row would have).
        lambda: PostFactory(channel=channel, id=posts[4].pk),
        lambda: PostFactory.create_batch(5, channel=channel),
        lambda: Post.objects.filter(pk=posts[2].pk).update(id=posts[-1].pk + 1000),
        lambda: Post.objects.filter(channel=channel, pk__gt=posts[25].pk).delete(),
    ]
    for change in changes:
        change()
        assert_every_page_is_the_offset_page(authed, channel)
        assert_every_page_is_the_offset_page(authed, other)


@pytest.mark.django_db(transaction=True)
def test_appending_editing_and_deleting_the_newest_keep_the_anchors(authed, channel, made):
    posts = PostFactory.create_batch(30, channel=channel)
    authed.get(posts_path(channel, 8, 2))
    version = posts_ids_version(channel)

    post_create(channel=channel, title="Appended")
    PostFactory.create_batch(3, channel=channel)
    Post.objects.bulk_create(PostFactory.build_batch(4, channel=channel))
    post_update_content(post=posts[3], title="Edited", body="New body")
    Post.objects.filter(pk=posts[5].pk).update(publication_status="published")
    post_delete(post_id=Post.objects.filter(channel=channel).latest("id").pk)

    assert posts_ids_version(channel) == version
    for page in (5, 8, 10):
        body = authed.get(posts_path(channel, page, 2)).json()
        assert [item["id"] for item in body["data"]] == offset_page(channel, page, 2)
    assert made == [channel.pk]
    assert_every_page_is_the_offset_page(authed, channel)


@pytest.mark.django_db(transaction=True)
def test_a_channel_grown_past_its_anchors_makes_them_again_for_its_new_pages(authed, channel, made):
    PostFactory.create_batch(12, channel=channel)
    authed.get(posts_path(channel, 3, 2))
    PostFactory.create_batch(30, channel=channel)

    assert_every_page_is_the_offset_page(authed, channel)

    assert made == [channel.pk, channel.pk]


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda posts: posts[0].delete(), id="the oldest deleted"),
        pytest.param(lambda posts: Post.objects.filter(pk=posts[2].pk).delete(), id="one in the middle deleted"),
        pytest.param(lambda posts: PostFactory(channel=posts[0].channel, id=posts[1].pk + 1), id="one inserted below"),
        pytest.param(
            lambda posts: Post.objects.bulk_create(
                [
                    PostFactory.build(channel=posts[0].channel, id=posts[-1].pk - 1),
                    PostFactory.build(channel=posts[0].channel, id=posts[-1].pk + 1),
                ]
            ),
            id="two inserted at once around the newest",
        ),
        pytest.param(
            lambda posts: Post.objects.filter(pk=posts[1].pk).update(channel=ChannelFactory()), id="one moved away"
        ),
    ],
)
def test_a_change_that_moves_a_post_to_another_position_renews_the_version(change):
    channel = ChannelFactory()
    posts = [PostFactory(channel=channel, id=number * 10) for number in range(1, 6)]
    version = posts_ids_version(channel)

    change(posts)

    assert posts_ids_version(channel) != version


def test_a_post_moved_in_below_others_renews_the_version_there():
    channel, other = ChannelFactory(), ChannelFactory()
    posts = PostFactory.create_batch(3, channel=channel)
    PostFactory.create_batch(2, channel=other)
    version = posts_ids_version(other)

    Post.objects.filter(pk=posts[0].pk).update(channel=other)

    assert posts_ids_version(other) != version


def test_a_channel_saved_from_a_copy_read_before_posts_moved_gets_a_new_version_not_the_old_one():
    channel = ChannelFactory()
    posts = PostFactory.create_batch(3, channel=channel)
    copy = Channel.objects.get(pk=channel.pk)
    old = copy.posts_ids_version
    posts[0].delete()
    current = posts_ids_version(channel)

    copy.title = "Renamed"
    copy.save()

    assert posts_ids_version(channel) not in (old, current)


def test_saving_a_channel_keeps_the_version_when_no_post_moved():
    channel = ChannelFactory()
    PostFactory.create_batch(3, channel=channel)
    version = posts_ids_version(channel)

    channel = Channel.objects.get(pk=channel.pk)
    channel.title = "Renamed"
    channel.save()

    assert posts_ids_version(channel) == version


def test_a_newsletter_edition_is_neither_counted_nor_moves_the_posts():
    newsletter = ChannelFactory(platform="newsletter")
    post = PostFactory(channel=newsletter)
    PostFactory(channel=newsletter)
    version = posts_ids_version(newsletter)
    job = PublicationJobFactory(channel=newsletter, post_id=post.pk)

    edition = Edition.objects.create(post_id=post.pk, channel=newsletter, job_id=job.pk, subject="S", html="", text="")
    Edition.objects.filter(pk=edition.pk).update(sent=1)

    newsletter.refresh_from_db()
    assert (newsletter.posts_count, newsletter.posts_ids_version) == (2, version)
    edition.delete()
    assert Channel.objects.get(pk=newsletter.pk).posts_count == 2


# --- lists and situations without anchors ---


def test_filtered_lists_read_their_pages_without_anchors(authed, channel, monkeypatch):
    PostFactory.create_batch(20, channel=channel, publication_status="published")
    PostFactory.create_batch(20, channel=channel)

    def refused(*args):
        raise AssertionError("a filtered list asked for anchors")

    monkeypatch.setattr(page_anchors, "start_of", refused)
    for page in range(1, 12):
        body = authed.get(posts_path(channel, page, 2, "&publication_status=published")).json()
        assert [item["id"] for item in body["data"]] == offset_page(channel, page, 2, publication_status="published")


def test_inside_a_transaction_pages_are_read_without_making_anchors(authed, channel, made):
    PostFactory.create_batch(30, channel=channel)

    assert_every_page_is_the_offset_page(authed, channel)

    assert made == []


@pytest.mark.django_db(transaction=True)
def test_while_another_process_makes_the_anchors_pages_are_read_without_them(authed, channel, made):
    PostFactory.create_batch(30, channel=channel)
    making = page_anchors.store.key(channel.pk, posts_ids_version(channel), "making")
    page_anchors.store.call(lambda cache: cache.add(making, True, 60))

    assert_every_page_is_the_offset_page(authed, channel)

    assert made == []


class Unreachable:
    def __getattr__(self, name):
        def fail(*args, **kwargs):
            raise ConnectionError("cache down")

        return fail


@pytest.mark.django_db(transaction=True)
def test_with_the_cache_unreachable_every_page_is_read_from_the_database(authed, channel, monkeypatch, made):
    PostFactory.create_batch(30, channel=channel)
    monkeypatch.setattr(page_anchors, "caches", {"default": Unreachable()})

    assert_every_page_is_the_offset_page(authed, channel)

    assert made == []


@pytest.mark.django_db(transaction=True)
def test_when_redis_stops_after_the_anchors_were_made_every_page_still_answers(
    authed, channel, settings, private_redis
):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": private_redis.url,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
    PostFactory.create_batch(30, channel=channel)
    assert_every_page_is_the_offset_page(authed, channel)

    private_redis.stop()

    assert_every_page_is_the_offset_page(authed, channel)


# --- PostgreSQL: writers at once ---


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_pages_are_the_offset_pages_after_writers_commit_lower_ids_after_higher_ones_beside_deep_reads(authed, channel):
    PostFactory.create_batch(60, channel=channel)
    per_page = 2

    def writer(seed: int):
        def run():
            with connection.cursor() as cursor:
                # Ids taken now and inserted later: below the ids the other writers commit meanwhile.
                cursor.execute("SELECT nextval(pg_get_serial_sequence('posts_post', 'id')) FROM generate_series(1, 4)")
                reserved = [row[0] for row in cursor.fetchall()]
            for step in range(8):
                if step % 2:
                    PostFactory(channel=channel, id=reserved.pop())
                else:
                    post_create(channel=channel, title=f"Writer {seed} step {step}")
                    victim = Post.objects.filter(channel=channel).order_by("?").values_list("pk", flat=True).first()
                    Post.objects.filter(pk=victim).delete()
            return "done"

        return run

    def reader():
        for page in (12, 20, 25, 12, 20, 25, 12, 20):
            assert authed.get(posts_path(channel, page, per_page)).status_code == 200
        return "done"

    assert run_together([writer(seed) for seed in range(3)] + [reader, reader]) == ["done"] * 5

    assert_every_page_is_the_offset_page(authed, channel, per_page)


# --- the migration ---


@pytest.mark.django_db(transaction=True)
def test_the_migration_goes_back_and_forth_and_counts_newsletters_that_editions_counted_wrong():
    newsletter = ChannelFactory(platform="newsletter")
    post = PostFactory(channel=newsletter)
    job = PublicationJobFactory(channel=newsletter, post_id=post.pk)
    executor = MigrationExecutor(connection)
    executor.migrate([("channels", "0005_newsletter_platform")])
    # The triggers before: on PostgreSQL this edition counted as a post.
    Edition.objects.create(post_id=post.pk, channel_id=newsletter.pk, job_id=job.pk, subject="S", html="", text="")

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    assert Channel.objects.get(pk=newsletter.pk).posts_count == 1
    channel = ChannelFactory()
    posts = PostFactory.create_batch(3, channel=channel)
    version = posts_ids_version(channel)
    PostFactory(channel=channel)
    assert posts_ids_version(channel) == version
    posts[1].delete()
    assert posts_ids_version(channel) != version
    assert Channel.objects.get(pk=channel.pk).posts_count == 3
