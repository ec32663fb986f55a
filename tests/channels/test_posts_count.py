"""A channel's `posts_count` is stored, kept in the transaction of every change of its number of
posts whatever the path, read without counting, and recounted by `recount_posts`."""

import io
import random

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext

from apps.channels.models import Channel
from apps.demo.seed import seed_demo
from apps.posts.editor_status import post_set_status
from apps.posts.models import Post
from apps.posts.services import post_create
from tests.conftest import requires_postgres, run_together
from tests.factories import ChannelFactory, PostFactory, WebhookEndpointFactory
from tests.posts.test_post_admin import form_data

pytestmark = pytest.mark.django_db


def stored(channel: Channel) -> int:
    return Channel.objects.values_list("posts_count", flat=True).get(pk=channel.pk)


def counted(channel: Channel) -> int:
    return Post.objects.filter(channel=channel).count()


def recount(*args) -> str:
    out = io.StringIO()
    call_command("recount_posts", *args, stdout=out)
    return out.getvalue()


# --- every path that adds or removes posts ---


def test_services_and_factories_add_to_the_stored_number():
    channel, other = ChannelFactory(), ChannelFactory()
    assert stored(channel) == 0
    post_create(channel=channel, title="One")
    PostFactory.create_batch(3, channel=channel)
    PostFactory(channel=other)
    assert (stored(channel), stored(other)) == (4, 1)


def test_bulk_statements_add_and_remove_every_row_they_touch():
    channel, other = ChannelFactory(), ChannelFactory()
    Post.objects.bulk_create([Post(channel=channel, title=f"P{i}", slug=f"p-{i}") for i in range(50)])
    Post.objects.bulk_create([Post(channel=other, title=f"Q{i}", slug=f"q-{i}") for i in range(7)])
    assert (stored(channel), stored(other)) == (50, 7)
    Post.objects.filter(channel=channel, slug__in=[f"p-{i}" for i in range(20)]).delete()
    assert stored(channel) == 30
    # A move between channels counts on both sides.
    Post.objects.filter(channel=channel, slug__in=["p-20", "p-21"]).update(channel=other)
    assert (stored(channel), stored(other)) == (28, 9)
    Post.objects.filter(channel=other).update(title="Renamed")  # no move, no change
    assert (stored(channel), stored(other)) == (28, 9)


def test_raw_sql_writes_are_counted_too():
    channel = ChannelFactory()
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO posts_post (channel_id, title, body, teaser, slug, publication_status, created_at, updated_at)"
            " VALUES (%s, 'Raw', '', '', 'raw-1', 'draft', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP),"
            " (%s, 'Raw', '', '', 'raw-2', 'draft', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)",
            [channel.pk, channel.pk],
        )
        assert stored(channel) == 2
        cursor.execute("DELETE FROM posts_post WHERE slug = 'raw-1'")
    assert stored(channel) == 1


def test_a_channel_inserted_by_raw_sql_starts_at_zero():
    account = ChannelFactory().account
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO channels_channel (account_id, title, platform, image_width, version, created_at, updated_at)"
            " VALUES (%s, 'Raw channel', 'blog', 1200, 1, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)",
            [account.pk],
        )
    assert Channel.objects.get(title="Raw channel").posts_count == 0


def test_the_admin_adds_and_deletes_posts_one_by_one_and_in_bulk(admin_client):
    channel = ChannelFactory()
    for title in ("First", "Second", "Third"):
        response = admin_client.post("/admin/posts/post/add/", form_data(channel=channel.pk, title=title))
        assert response.status_code == 302, response.content
    assert stored(channel) == 3
    first = Post.objects.get(channel=channel, title="First")
    assert admin_client.post(f"/admin/posts/post/{first.pk}/delete/", {"post": "yes"}).status_code == 302
    assert stored(channel) == 2
    rest = list(Post.objects.filter(channel=channel).values_list("pk", flat=True))
    response = admin_client.post(
        "/admin/posts/post/", {"action": "delete_selected", "_selected_action": rest, "post": "yes"}
    )
    assert response.status_code == 302
    assert stored(channel) == 0


def test_saving_a_channel_read_before_posts_were_added_keeps_their_number(admin_client):
    channel = ChannelFactory(title="Before")
    stale = Channel.objects.get(pk=channel.pk)  # posts_count 0
    PostFactory.create_batch(3, channel=channel)
    stale.title = "After"
    stale.save()
    assert stored(channel) == 3
    response = admin_client.post(
        f"/admin/channels/channel/{channel.pk}/change/",
        {"title": "In the admin", "platform": channel.platform, "image_width": 1200, "team": ""},
    )
    assert response.status_code == 302, response.content
    channel.refresh_from_db()
    assert (channel.title, channel.posts_count) == ("In the admin", 3)


def test_deleting_a_channel_with_posts_works():
    channel = ChannelFactory()
    PostFactory.create_batch(2, channel=channel)
    channel.delete()
    assert not Post.objects.filter(channel_id=channel.pk).exists()


def test_the_demo_data_is_counted():
    seed_demo()
    assert Channel.objects.exists()
    for channel in Channel.objects.all():
        assert channel.posts_count == counted(channel) > 0


# --- reads never count ---


def test_no_read_counts_posts(authed, api_key):
    channel = ChannelFactory(account=api_key.account)
    post = PostFactory(channel=channel)
    PostFactory.create_batch(2, channel=channel)
    paths = [
        "/v1/channels",
        f"/v1/channels/{channel.pk}",
        f"/v1/channels/{channel.pk}/posts",
        f"/v1/channels/{channel.pk}/posts?page=2&per_page=1",
        f"/v1/channels/{channel.pk}/posts/{post.pk}",
        f"/v1/posts/{post.pk}",
    ]
    with CaptureQueriesContext(connection) as queries:
        for path in paths:
            response = authed.get(path)
            assert response.status_code == 200, path
            assert 3 in [item["posts_count"] for item in _channels_in(response.json()["data"])], path
    assert not post_counts(queries)


def post_counts(queries) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper() and "posts_post" in q["sql"]]


def _channels_in(data) -> list[dict]:
    items = data if isinstance(data, list) else [data]
    return [item.get("channel", item) for item in items]


def test_webhook_bodies_carry_the_stored_number_without_counting(emitted):
    channel = ChannelFactory(platform="blog")
    WebhookEndpointFactory(account=channel.account)
    PostFactory.create_batch(4, channel=channel)
    with CaptureQueriesContext(connection) as queries:
        post_create(channel=channel, title="Fifth")
    assert not post_counts(queries)
    post = Post.objects.get(channel=channel, title="Fifth")
    post_set_status(post_id=post.pk, status="published")
    [body] = emitted("post.published")
    assert body["data"]["post"]["channel"]["posts_count"] == 5


# --- the recount command ---


def test_recount_reports_and_fixes_drift_and_dry_run_only_reports():
    exact, drifted = ChannelFactory(title="Exact"), ChannelFactory(title="Drifted")
    PostFactory.create_batch(2, channel=exact)
    PostFactory.create_batch(3, channel=drifted)
    Channel.objects.filter(pk=drifted.pk).update(posts_count=10)

    with pytest.raises(CommandError, match="1 of 2 channel"):
        recount("--dry-run")
    assert stored(drifted) == 10

    out = recount()
    assert f"channel {drifted.pk} “Drifted”: stored 10, counted 3 (-7), fixed" in out
    assert "Exact" not in out
    assert "Recounted 2 channel(s): 1 drifted (fixed)." in out
    assert (stored(exact), stored(drifted)) == (2, 3)
    assert recount("--dry-run").strip() == "Recounted 2 channel(s): 0 drifted."


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_the_number_is_exact_after_concurrent_creates_and_deletes_and_a_recount_beside_them():
    channels = ChannelFactory.create_batch(2)
    for channel in channels:
        PostFactory.create_batch(10, channel=channel)

    def writer(seed: int):
        def run():
            rng = random.Random(seed)
            for step in range(15):
                channel = rng.choice(channels)
                if rng.random() < 0.6:
                    post_create(channel=channel, title=f"Writer {seed} step {step}")
                elif rng.random() < 0.5:
                    Post.objects.bulk_create(
                        [Post(channel=channel, title="Bulk", slug=f"bulk-{seed}-{step}-{i}") for i in range(3)]
                    )
                else:
                    victim = Post.objects.filter(channel=channel).order_by("?").values_list("pk", flat=True).first()
                    Post.objects.filter(pk=victim).delete()
            return "done"

        return run

    def recounter():
        return [recount() for _ in range(5)]

    results = run_together([writer(seed) for seed in range(6)] + [recounter])
    assert results[:6] == ["done"] * 6, results
    assert all(" 0 drifted." in out for out in results[6]), results[6]
    for channel in channels:
        assert stored(channel) == counted(channel)
    assert recount("--dry-run").strip() == "Recounted 2 channel(s): 0 drifted."


@pytest.mark.django_db(transaction=True)
def test_the_migration_counts_the_posts_of_existing_channels_and_keeps_counting():
    executor = MigrationExecutor(connection)
    before = [("channels", "0002_channel_version")]
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    Channel_, Post_ = old.get_model("channels", "Channel"), old.get_model("posts", "Post")
    account = ChannelFactory.build().account
    account.save()
    busy = Channel_.objects.create(account_id=account.pk, title="Busy", platform="blog")
    empty = Channel_.objects.create(account_id=account.pk, title="Empty", platform="blog")
    Post_.objects.bulk_create([Post_(channel_id=busy.pk, title=f"P{i}", slug=f"p-{i}", teaser="") for i in range(4)])

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    busy, empty = Channel.objects.get(pk=busy.pk), Channel.objects.get(pk=empty.pk)
    assert (busy.posts_count, empty.posts_count) == (4, 0)
    PostFactory(channel=empty)
    Post.objects.filter(channel=busy, slug="p-0").delete()
    assert (stored(busy), stored(empty)) == (3, 1)
