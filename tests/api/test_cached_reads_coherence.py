"""Every path by which a row that the shared cache stands for can change is seen at the very next
request (apps/core/coherence.py): the API, the Settings area, the content plan, the publishing
pipeline, bulk SQL, another thread's connection, a Redis that went away, a reader's fill racing a
change, and a rolled-back transaction.

Each test first reads until a read asks the database nothing (`cached`), so the answer after the
change can only be right if the change removed the entries it made stale. The tests commit
(transaction=True): PostgreSQL sends its notifications only when a transaction commits.
"""

import socket
import threading
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from apps.channels import selectors as channel_selectors
from apps.channels.models import Channel
from apps.core import coherence, destinations
from apps.core.destinations import DestinationKind, Outcome
from apps.posts.content_plan import content_plan_run
from apps.posts.editor_status import post_publish_now
from apps.posts.models import Post
from apps.publishing import services as publishing_services
from apps.publishing.services import channel_run
from apps.users.models import ApiKey
from apps.users.selectors import api_key_find
from apps.users.services import user_record_login
from tests.conftest import admin_session
from tests.factories import (
    AdminUserFactory,
    ApiKeyFactory,
    ApiPublicationFactory,
    ChannelFactory,
    OperatorFactory,
    PostFactory,
    TagFactory,
)
from tests.posts.test_post_admin import form_data as post_form
from tests.users.test_users_admin import change_form as user_form

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not coherence.configured(), reason="needs PostgreSQL and Redis; set DATABASE_URL and REDIS_URL"),
]

ADMIN = f"/{settings.ADMIN_URL}"


@dataclass
class World:
    key: ApiKey
    channel: Channel
    post: Post
    client: APIClient


@pytest.fixture
def world(client_for) -> World:
    """A key of an editor, an `api` channel of the key's account with a post, and the key's client."""
    key = ApiKeyFactory()
    channel = ChannelFactory(account=key.account, platform="api")
    return World(key, channel, PostFactory(channel=channel), client_for(key))


@pytest.fixture
def settings_area(world):
    """A browser session of an admin of the world's account, in the Settings area."""
    return admin_session(AdminUserFactory(account=world.key.account))


def cached(client, path: str) -> dict:
    """The JSON of `path`, once a read of it asks the database nothing: its entries and its
    representation are all in the cache. (The first request records the key's use, which renews
    the key's entry; the second fills it.)"""
    client.get(path)
    client.get(path)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    assert response.status_code == 200, response.content
    assert [query["sql"] for query in captured.captured_queries] == []
    return response.json()


def data_of(client, path: str) -> dict:
    response = client.get(path)
    assert response.status_code == 200, response.content
    return response.json()["data"]


def data_of_profile(client) -> dict:
    response = client.get("/v1/users/profile")
    assert response.status_code == 200, response.content
    return response.json()


def post_paths(post) -> tuple[str, str]:
    return f"/v1/channels/{post.channel_id}/posts/{post.pk}", f"/v1/posts/{post.pk}"


def listed_ids(client, channel) -> list[int]:
    return [item["id"] for item in data_of(client, f"/v1/channels/{channel.pk}/posts")]


def admin_action(session, model: str, action: str, *objects) -> None:
    response = session.post(
        f"{ADMIN}{model}/", {"action": action, "_selected_action": [obj.pk for obj in objects]}, follow=True
    )
    assert response.status_code == 200


def admin_change(session, model: str, obj, data: dict) -> None:
    response = session.post(f"{ADMIN}{model}/{obj.pk}/change/", data)
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else response


def admin_delete(session, model: str, obj) -> None:
    assert session.post(f"{ADMIN}{model}/{obj.pk}/delete/", {"post": "yes"}).status_code == 302


# --- The API ------------------------------------------------------------------------------------


def test_a_post_published_then_unpublished_through_the_api_shows_each_status_at_the_next_read(world):
    channel, client = world.channel, world.client
    post = ApiPublicationFactory(post__channel=channel).post
    detail, anywhere = post_paths(post)
    assert cached(client, detail)["data"]["publication_status"] == "publishing_pending"
    cached(client, anywhere)

    assert client.patch(f"{detail}/publish", {"post": {"external_id": "ext-1"}}, format="json").status_code == 200
    assert data_of(client, detail)["publication_status"] == "published"
    assert data_of(client, anywhere)["external_id"] == "ext-1"
    cached(client, detail)

    assert client.patch(f"{detail}/unpublish").status_code == 200
    assert data_of(client, detail)["publication_status"] == "draft"
    assert data_of(client, anywhere)["external_id"] is None


def test_a_user_deactivated_through_the_users_endpoints_has_their_keys_refused_at_their_next_request(world, client_for):
    key, channel, client = world.key, world.channel, world.client
    admin = client_for(ApiKeyFactory(user=AdminUserFactory(account=key.account)))
    cached(client, "/v1/me")
    response = admin.put(f"/v1/users/{key.user_id}", {"status": "inactive"}, format="json")
    assert response.status_code == 200, response.content
    refused = client.get(f"/v1/channels/{channel.pk}/posts")
    assert refused.status_code == 401
    assert refused.json()["error"]["message"] == "The user who owns this API key is not active."


def test_a_user_deleted_through_the_users_endpoints_has_their_keys_refused_at_their_next_request(world, client_for):
    key, client = world.key, world.client
    admin = client_for(ApiKeyFactory(user=AdminUserFactory(account=key.account)))
    cached(client, "/v1/me")
    assert admin.delete(f"/v1/users/{key.user_id}").status_code == 204
    assert client.get("/v1/me").status_code == 401


def test_a_role_changed_through_the_users_endpoints_rules_the_owners_next_request(client_for):
    demoted_key = ApiKeyFactory(user=AdminUserFactory())
    demoted = client_for(demoted_key)
    other_admin = client_for(ApiKeyFactory(user=AdminUserFactory(account=demoted_key.account)))
    cached(demoted, "/v1/me")
    assert demoted.get("/v1/users").status_code == 200
    assert other_admin.put(f"/v1/users/{demoted_key.user_id}", {"role": "editor"}, format="json").status_code == 200
    refused = demoted.get("/v1/users")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "admin_required"
    assert other_admin.put(f"/v1/users/{demoted_key.user_id}", {"role": "admin"}, format="json").status_code == 200
    assert demoted.get("/v1/users").status_code == 200


def test_a_users_own_profile_shows_their_latest_sign_in_at_the_next_read(world):
    key, client = world.key, world.client
    cached(client, "/v1/me")
    assert data_of_profile(client)["last_login"] is None
    user_record_login(user=key.user, via="password")
    assert data_of_profile(client)["last_login"] is not None


# --- The Settings area ----------------------------------------------------------------------------


def test_a_post_title_edited_in_the_settings_area_shows_at_the_next_read(world, settings_area):
    post, client = world.post, world.client
    detail, anywhere = post_paths(post)
    cached(client, detail)
    cached(client, anywhere)
    admin_change(settings_area, "posts/post", post, post_form(post, title="Edited in Settings"))
    assert data_of(client, detail)["title"] == "Edited in Settings"
    assert data_of(client, anywhere)["title"] == "Edited in Settings"


def test_a_channel_title_edited_in_the_settings_area_shows_at_the_next_read(world, settings_area):
    channel, post, client = world.channel, world.post, world.client
    cached(client, f"/v1/channels/{channel.pk}")
    cached(client, post_paths(post)[1])
    admin_change(
        settings_area, "channels/channel", channel, {"team": channel.team_id, "title": "Renamed", "image_width": 1200}
    )
    assert data_of(client, f"/v1/channels/{channel.pk}")["title"] == "Renamed"
    assert data_of(client, post_paths(post)[1])["channel"]["title"] == "Renamed"


def test_a_team_renamed_in_the_settings_area_shows_in_its_channels_at_the_next_read(world, settings_area):
    channel, client = world.channel, world.client
    cached(client, f"/v1/channels/{channel.pk}")
    cached(client, f"/v1/channels/{channel.pk}/posts")
    admin_change(settings_area, "channels/team", channel.team, {"name": "Renamed team"})
    assert data_of(client, f"/v1/channels/{channel.pk}")["team"]["name"] == "Renamed team"
    assert data_of(client, f"/v1/channels/{channel.pk}/posts")[0]["channel"]["team"]["name"] == "Renamed team"


def test_a_tag_renamed_in_the_settings_area_shows_on_its_posts_at_the_next_read(world, settings_area):
    key, channel, client = world.key, world.channel, world.client
    tag = TagFactory(account=key.account, name="before")
    post = PostFactory(channel=channel, tags=[tag])
    detail, anywhere = post_paths(post)
    assert cached(client, detail)["data"]["tags"] == [{"id": tag.pk, "name": "before"}]
    cached(client, anywhere)
    admin_change(settings_area, "posts/tag", tag, {"name": "after"})
    assert data_of(client, detail)["tags"] == [{"id": tag.pk, "name": "after"}]
    assert data_of(client, anywhere)["tags"] == [{"id": tag.pk, "name": "after"}]


def test_a_post_deleted_in_the_settings_area_is_gone_at_the_next_read(world, settings_area):
    channel, post, client = world.channel, world.post, world.client
    detail, anywhere = post_paths(post)
    cached(client, detail)
    cached(client, anywhere)
    cached(client, f"/v1/channels/{channel.pk}/posts")
    admin_delete(settings_area, "posts/post", post)
    assert client.get(detail).status_code == 404
    assert client.get(anywhere).status_code == 404
    assert listed_ids(client, channel) == []


def test_a_channel_deleted_in_the_settings_area_answers_404_at_the_next_read(world, settings_area):
    channel, post, client = world.channel, world.post, world.client
    paths = [f"/v1/channels/{channel.pk}", f"/v1/channels/{channel.pk}/posts", *post_paths(post)]
    for path in paths:
        cached(client, path)
    admin_delete(settings_area, "channels/channel", channel)
    assert [client.get(path).status_code for path in paths] == [404] * len(paths)


def test_the_settings_area_does_not_move_a_post_to_another_channel(world, settings_area):
    key, channel, post, client = world.key, world.channel, world.post, world.client
    other = ChannelFactory(account=key.account, platform="api")
    admin_change(settings_area, "posts/post", post, post_form(post, channel=other.pk))
    assert Post.objects.get(pk=post.pk).channel_id == channel.pk
    assert data_of(client, post_paths(post)[1])["channel"]["id"] == channel.pk


def test_a_key_revoked_in_the_settings_area_is_refused_at_its_next_request(world, settings_area):
    key, channel, client = world.key, world.channel, world.client
    cached(client, f"/v1/channels/{channel.pk}/posts")
    admin_action(settings_area, "accounts/apikey", "revoke_selected", key)
    response = client.get(f"/v1/channels/{channel.pk}/posts")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "This API key has been revoked."


def test_a_key_whose_scopes_are_narrowed_in_the_settings_area_is_refused_at_its_next_request(world, settings_area):
    key, channel, client = world.key, world.channel, world.client
    cached(client, f"/v1/channels/{channel.pk}/posts")
    admin_change(
        settings_area,
        "accounts/apikey",
        key,
        {"name": key.name, "scopes": ["read:channels"], "expires_at": key.expires_at.strftime("%Y-%m-%d %H:%M:%S")},
    )
    assert ApiKey.objects.get(pk=key.pk).scopes == ["read:channels"]
    response = client.get(f"/v1/channels/{channel.pk}/posts")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient_scope"
    assert client.get(f"/v1/channels/{channel.pk}").status_code == 200


def test_a_user_suspended_in_the_settings_area_has_their_keys_refused_at_their_next_request(world, settings_area):
    key, client = world.key, world.client
    cached(client, "/v1/me")
    admin_action(settings_area, "users/user", "suspend_selected", key.user)
    assert client.get("/v1/me").status_code == 401


def test_a_user_made_inactive_on_their_page_in_the_settings_area_has_their_keys_refused(world, settings_area):
    key, client = world.key, world.client
    cached(client, "/v1/me")
    admin_change(settings_area, "users/user", key.user, user_form(key.user, status="inactive"))
    assert client.get("/v1/me").status_code == 401


def test_an_account_plan_changed_by_the_operator_changes_the_rate_limit_at_the_next_request(world, settings):
    key, channel, client = world.key, world.channel, world.client
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "free": 1000, "starter": 10000}
    cached(client, f"/v1/channels/{channel.pk}/posts")
    assert client.get(f"/v1/channels/{channel.pk}/posts")["X-RateLimit-Limit"] == "1000"
    account = key.account
    admin_change(
        admin_session(OperatorFactory()), "accounts/account", account, {"name": account.name, "plan": "starter"}
    )
    assert client.get(f"/v1/channels/{channel.pk}/posts")["X-RateLimit-Limit"] == "10000"
    assert data_of(client, "/v1/me")["account"]["id"] == account.pk


def test_an_account_renamed_by_the_operator_shows_in_me_at_the_next_read(world):
    key, client = world.key, world.client
    assert cached(client, "/v1/me")["data"]["account"]["name"] == key.account.name
    account = key.account
    admin_change(admin_session(OperatorFactory()), "accounts/account", account, {"name": "Renamed Co", "plan": "free"})
    assert data_of(client, "/v1/me")["account"]["name"] == "Renamed Co"


# --- The content plan and the publishing pipeline -------------------------------------------------


def test_a_scheduled_post_the_content_plan_moves_shows_its_new_status_at_the_next_read(world):
    key, api_channel, client = world.key, world.channel, world.client
    blog = ChannelFactory(account=key.account, platform="blog")
    due = timezone.now() - timedelta(minutes=1)
    to_publish = PostFactory(channel=blog, publication_status="scheduled", scheduled_at=due)
    to_hand_over = PostFactory(channel=api_channel, publication_status="scheduled", scheduled_at=due)
    for post in (to_publish, to_hand_over):
        for path in post_paths(post):
            assert cached(client, path)["data"]["publication_status"] == "scheduled"
    assert content_plan_run().moved == 2
    for path in post_paths(to_publish):
        assert data_of(client, path)["publication_status"] == "published"
    for path in post_paths(to_hand_over):
        assert data_of(client, path)["publication_status"] == "publishing_pending"


class Confirming:
    """A destination that confirms every job at once (the git kind's place, for the test)."""

    def publish(self, job, document) -> Outcome:
        return Outcome(reference=f"ref-{job.job_id}", path=f"posts/{document.slug}.md")

    def unpublish(self, job, document) -> Outcome:
        return Outcome(reference=f"ref-{job.job_id}")

    def check(self) -> str:
        return "confirming"


def test_a_git_post_published_by_the_pipeline_shows_published_at_the_next_read(world, monkeypatch):
    key, client = world.key, world.client
    monkeypatch.setattr(destinations, "_kinds", dict(destinations._kinds))
    destinations.register(DestinationKind(platform="git", load=lambda channel_id: Confirming(), missing="None."))
    # The test runs the channel itself, in this process, instead of a worker.
    monkeypatch.setattr(publishing_services, "enqueue_channels", lambda channel_ids: None)
    channel = ChannelFactory(account=key.account, platform="git")
    post = PostFactory(channel=channel)
    for path in post_paths(post):
        assert cached(client, path)["data"]["publication_status"] == "draft"
    post_publish_now(post_id=post.pk)
    assert data_of(client, post_paths(post)[0])["publication"]["state"] == "queued"
    cached(client, post_paths(post)[0])
    assert channel_run(channel.pk) == 1
    for path in post_paths(post):
        shown = data_of(client, path)
        assert (shown["publication_status"], shown["publication"]["state"]) == ("published", "succeeded")


# --- Statements, connections and failures -----------------------------------------------------------


def test_a_bulk_sql_update_of_posts_shows_at_the_next_read(world):
    channel, post, client = world.channel, world.post, world.client
    second = PostFactory(channel=channel)
    cached(client, f"/v1/channels/{channel.pk}/posts")
    cached(client, post_paths(second)[1])
    with connection.cursor() as cursor:
        cursor.execute("UPDATE posts_post SET title = 'Bulk ' || id WHERE channel_id = %s", [channel.pk])
    titles = {item["id"]: item["title"] for item in data_of(client, f"/v1/channels/{channel.pk}/posts")}
    assert titles == {post.pk: f"Bulk {post.pk}", second.pk: f"Bulk {second.pk}"}
    assert data_of(client, post_paths(second)[1])["title"] == f"Bulk {second.pk}"


def test_a_post_moved_by_sql_to_another_channel_follows_it_in_later_reads(world):
    key, channel, post, client = world.key, world.channel, world.post, world.client
    other = ChannelFactory(account=key.account, platform="api")
    anywhere = post_paths(post)[1]
    cached(client, anywhere)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE posts_post SET channel_id = %s WHERE id = %s", [other.pk, post.pk])
    assert data_of(client, anywhere)["channel"]["id"] == other.pk
    assert listed_ids(client, channel) == []
    # Only the new channel's version changes now: the post's own entry must name that channel.
    cached(client, anywhere)
    Post.objects.filter(pk=post.pk).update(title="Edited in its new channel")
    assert data_of(client, anywhere)["title"] == "Edited in its new channel"


def test_a_change_committed_on_another_threads_connection_is_seen_at_the_next_read(world):
    post, client = world.post, world.client
    detail, anywhere = post_paths(post)
    cached(client, detail)
    cached(client, anywhere)
    main_backend = connection.connection.info.backend_pid
    writer_backend = []

    def write():
        try:
            Post.objects.filter(pk=post.pk).update(title="From another connection")
            writer_backend.append(connection.connection.info.backend_pid)
        finally:
            connection.close()

    writer = threading.Thread(target=write)
    writer.start()
    writer.join()
    assert writer_backend and writer_backend[0] != main_backend
    assert data_of(client, detail)["title"] == "From another connection"
    assert data_of(client, anywhere)["title"] == "From another connection"


def test_a_rolled_back_change_leaves_the_next_reads_as_they_were(world):
    key, channel, post, client = world.key, world.channel, world.post, world.client
    detail = post_paths(post)[0]
    cached(client, detail)
    with pytest.raises(RuntimeError), transaction.atomic():
        Post.objects.filter(pk=post.pk).update(title="Never committed")
        ApiKey.objects.filter(pk=key.pk).update(revoked_at=timezone.now())
        # Read inside the transaction, which sees its own writes: nothing of them may be kept.
        assert api_key_find(key.raw).revoked_at is not None
        channel_selectors.channel_version(channel.pk)
        raise RuntimeError("rolled back")
    assert data_of(client, detail)["title"] == post.title
    assert cached(client, detail)["data"]["title"] == post.title
    Post.objects.filter(pk=post.pk).update(title="Committed")
    assert data_of(client, detail)["title"] == "Committed"


def test_a_fill_read_before_a_change_committed_meanwhile_is_not_stored(world, monkeypatch):
    key, channel, client = world.key, world.channel, world.client
    versions = channel_selectors._versions
    read_from_database = versions.load
    read = []

    def load_then_change(channel_id):
        value = read_from_database(channel_id)
        read.append(value)

        def change():
            try:
                Channel.objects.filter(pk=channel_id).update(title="Changed while a reader read")
            finally:
                connection.close()

        writer = threading.Thread(target=change)
        writer.start()
        writer.join()
        return value

    monkeypatch.setattr(versions, "load", load_then_change)
    stale = versions.get(channel.pk)
    assert read == [stale]
    # The writer's notification deleted the reader's lease with the entry: its fill found no lease.
    assert coherence.shared.client().get(versions.key(channel.pk)) is None
    monkeypatch.setattr(versions, "load", read_from_database)
    fresh = versions.get(channel.pk)
    assert fresh != stale
    assert fresh == (key.account_id, Channel.objects.get(pk=channel.pk).version)
    assert data_of(client, f"/v1/channels/{channel.pk}")["title"] == "Changed while a reader read"


@pytest.fixture
def redis_away(monkeypatch):
    """Make the shared cache's client one that reaches nothing, and bring the real one back; the
    pause after a failure and the deletions left to make are restored after the test too."""
    shared = coherence.shared
    real = shared.client()
    monkeypatch.setattr(shared, "pending", set())
    monkeypatch.setattr(shared, "paused_until", 0.0)
    dead = coherence.connect("redis://127.0.0.1:1")

    def away() -> None:
        monkeypatch.setattr(shared, "_client", dead)

    def back() -> None:
        monkeypatch.setattr(shared, "_client", real)
        # As when the pause after the failure has run out.
        monkeypatch.setattr(shared, "paused_until", 0.0)

    return away, back


def test_a_call_to_an_unreachable_redis_is_tried_once_and_then_the_store_is_left_alone(monkeypatch):
    """A server that hangs up on every connection: the call fails after one connection, not after
    redis-py's own retries, and the next call within the pause makes none."""
    accepted = []
    with socket.create_server(("127.0.0.1", 0)) as listener:

        def hang_up() -> None:
            while True:
                try:
                    connection, _ = listener.accept()
                except OSError:
                    return
                accepted.append(connection)
                connection.close()

        threading.Thread(target=hang_up, daemon=True).start()
        shared = coherence.Shared()
        monkeypatch.setattr(shared, "_client", coherence.connect(f"redis://127.0.0.1:{listener.getsockname()[1]}"))
        assert shared.call(lambda client: client.get("k"), "a read") == (False, None)
        assert len(accepted) == 1
        assert shared.call(lambda client: client.get("k"), "a read") == (False, None)
        assert len(accepted) == 1


def test_reads_answer_from_the_database_while_redis_is_unreachable(world, redis_away):
    key, channel, post, client = world.key, world.channel, world.post, world.client
    away, _ = redis_away
    paths = [f"/v1/channels/{channel.pk}/posts", f"/v1/channels/{channel.pk}", "/v1/me", *post_paths(post)]
    for path in paths:
        cached(client, path)
    away()
    assert [client.get(path).status_code for path in paths] == [200] * len(paths)
    Post.objects.filter(pk=post.pk).update(title="Written without Redis")
    assert [client.get(path).status_code for path in paths] == [200] * len(paths)
    assert data_of(client, post_paths(post)[0])["title"] == "Written without Redis"
    ApiKey.objects.filter(pk=key.pk).update(revoked_at=timezone.now())
    assert client.get("/v1/me").status_code == 401


def test_a_change_made_while_redis_was_unreachable_is_not_served_stale_once_it_is_back(world, redis_away):
    post, client = world.post, world.client
    away, back = redis_away
    detail, anywhere = post_paths(post)
    cached(client, detail)
    cached(client, anywhere)
    away()
    Post.objects.filter(pk=post.pk).update(title="Written without Redis")
    assert coherence.shared.pending
    back()
    assert data_of(client, detail)["title"] == "Written without Redis"
    assert data_of(client, anywhere)["title"] == "Written without Redis"
    assert coherence.shared.pending == set()


def test_a_key_revoked_while_redis_was_unreachable_stays_refused_once_it_is_back(world, redis_away):
    key, client = world.key, world.client
    away, back = redis_away
    cached(client, "/v1/me")
    away()
    ApiKey.objects.filter(pk=key.pk).update(revoked_at=timezone.now())
    back()
    assert client.get("/v1/me").status_code == 401


def test_an_entry_as_stored_is_what_a_reader_filled_and_nothing_while_leased_changed_or_in_a_transaction(world):
    """What the web process's recorder reads (config/server/recording.py): the entry's own bytes and
    what they hold, never filled by the look, and nothing where a reader could not trust it."""
    channel_id = world.channel.pk
    version = (world.key.account_id, Channel.objects.get(pk=channel_id).version)
    assert channel_selectors.channel_version_entry(channel_id, version) is None  # never read: nothing stands
    assert channel_selectors.channel_version(channel_id) == version
    stored = channel_selectors.channel_version_entry(channel_id, version)
    assert stored.key == channel_selectors._versions.key(channel_id)
    assert stored.raw == coherence.shared.client().get(stored.key)
    assert stored.value == version
    assert channel_selectors.channel_version_entry(channel_id, (version[0], version[1] + 1)) is None
    with transaction.atomic():
        assert channel_selectors.channel_version_entry(channel_id, version) is None
    coherence.shared.client().set(stored.key, coherence.LEASE + b"someone")
    assert channel_selectors.channel_version_entry(channel_id, version) is None
    coherence.shared.client().set(stored.key, stored.raw)
    Channel.objects.filter(pk=channel_id).update(title="Changed")
    assert channel_selectors.channel_version_entry(channel_id, version) is None
