"""The change feed is exact under concurrent writes (PostgreSQL): transactions commit in another order
than their ids, and a reader that follows the cursors still misses no committed change."""

import random
import threading
import time

import pytest
import requests
from django.db import connection, transaction

from apps.core.errors import NotFound
from apps.posts import services
from apps.posts.changes import cursor_read
from apps.posts.models import Post
from apps.posts.services import post_create, post_delete, post_update_content
from tests.conftest import requires_postgres
from tests.factories import ApiKeyFactory, ChannelFactory, PostFactory
from tests.posts.test_change_feed import settled

pytestmark = [pytest.mark.reliability, requires_postgres, pytest.mark.django_db(transaction=True)]


def _current_xid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_xact_id()::text::bigint")
        return cursor.fetchone()[0]


@pytest.fixture
def key():
    return ApiKeyFactory()


@pytest.fixture
def channel(key):
    return ChannelFactory(account=key.account)


@pytest.fixture
def page(client_for, key):
    client = client_for(key)

    def get(channel, cursor=None):
        params = {} if cursor is None else {"cursor": cursor}
        response = client.get(f"/v1/channels/{channel.pk}/changes", params)
        assert response.status_code == 200, response.content
        return response.json()

    return get


def test_a_transaction_still_open_is_not_overtaken_by_a_later_commit(channel, page):
    early, late = PostFactory.create_batch(2, channel=channel)
    settled()
    cursor = page(channel)["meta"]["next_cursor"]
    began, write, edited, commit = (threading.Event() for _ in range(4))
    held = {}

    def held_writer():
        try:
            with transaction.atomic():
                # Its id comes first; it writes the channel only after the later commit.
                held["xid"] = _current_xid()
                began.set()
                assert write.wait(30)
                post_update_content(post=Post.objects.get(pk=early.pk), title="Held")
                edited.set()
                assert commit.wait(30)
        finally:
            connection.close()

    writer = threading.Thread(target=held_writer)
    writer.start()
    try:
        assert began.wait(30)
        post_update_content(post=late, title="Committed later")
        write.set()
        assert edited.wait(30)
        # The held transaction has written and stays open while the reader reads.
        reading = page(channel, cursor)
    finally:
        write.set()
        commit.set()
        writer.join(30)

    # The later commit was not handed out: the reader's place stays below the open transaction's.
    assert reading["data"] == []
    assert cursor_read(reading["meta"]["next_cursor"], channel_id=channel.pk).at.position < held["xid"]
    settled()
    after = page(channel, reading["meta"]["next_cursor"])
    assert [(item["id"], item["title"]) for item in after["data"]] == [(early.pk, "Held"), (late.pk, "Committed later")]


WRITERS = 4
OPERATIONS = 40


@pytest.fixture
def slow_writes(monkeypatch):
    """Widen the time between a writer taking its transaction id (locking the post) and committing,
    so the writers commit in another order than their ids, as busy servers do."""
    original = services.locked_post

    def slow(post_id):
        post = original(post_id)
        time.sleep(random.uniform(0, 0.05))
        return post

    monkeypatch.setattr(services, "locked_post", slow)


def test_a_reader_following_the_feed_while_writers_create_edit_and_delete_ends_with_the_database(
    channel, key, live_server, slow_writes
):
    PostFactory.create_batch(10, channel=channel)
    failures = []

    def writer(number: int):
        pick = random.Random(number)
        try:
            for step in range(OPERATIONS):
                ids = list(Post.objects.filter(channel=channel).values_list("id", flat=True))
                action = pick.choice(["create", "edit", "edit", "delete"] if ids else ["create"])
                try:
                    if action == "create":
                        post_create(channel=channel, title=f"Created {number}-{step}")
                    elif action == "edit":
                        post_update_content(post=Post(pk=pick.choice(ids)), title=f"Edited {number}-{step}")
                    else:
                        post_delete(post_id=pick.choice(ids))
                except NotFound:
                    pass  # another writer deleted it first
        except Exception as exc:
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()

    url = f"{live_server.url}/v1/channels/{channel.pk}/changes"
    headers = {"Authorization": f"Bearer {key.raw}"}
    copy: dict[int, str] = {}
    cursor = None
    pages = 0

    def read_until_up_to_date():
        nonlocal cursor, pages
        while True:
            params = {"per_page": 3} if cursor is None else {"per_page": 3, "cursor": cursor}
            response = requests.get(url, params=params, headers=headers, timeout=30)
            assert response.status_code == 200, response.text
            body = response.json()
            pages += 1
            for item in body["data"]:
                if item.get("deleted"):
                    copy.pop(item["id"], None)
                else:
                    copy[item["id"]] = item["title"]
            cursor = body["meta"]["next_cursor"]
            if not body["meta"]["has_more"]:
                return

    while any(thread.is_alive() for thread in threads):
        read_until_up_to_date()
    for thread in threads:
        thread.join()
    settled()
    read_until_up_to_date()

    assert failures == []
    assert copy == dict(Post.objects.filter(channel=channel).values_list("id", "title"))
    assert pages > WRITERS  # the reader read while the writers wrote
