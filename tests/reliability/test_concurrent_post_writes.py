"""Simultaneous edits of one post over real HTTP to a live server, each sent with the ETag their
client read: the post's row lock and the If-Match check inside it let exactly one win; the others get
412 and change nothing (no lost update)."""

import time

import pytest
import requests

from apps.posts import writing
from apps.posts.models import Post
from tests.conftest import requires_postgres, run_together
from tests.factories import AdminUserFactory, ApiKeyFactory, ChannelFactory, PostFactory

pytestmark = [pytest.mark.reliability, requires_postgres, pytest.mark.django_db(transaction=True)]

CALLS = 10


@pytest.fixture
def slow_check(monkeypatch):
    """Widen the window between the precondition's check and the write, so the calls are inside it at
    once: without the lock several would see the tag they sent and each overwrite the others."""
    original = writing.locked_post_change

    def slow(**kwargs):
        time.sleep(0.2)
        return original(**kwargs)

    monkeypatch.setattr(writing, "locked_post_change", slow)


def test_ten_edits_sent_with_the_same_etag_give_one_200_and_nine_412(slow_check, live_server):
    key = ApiKeyFactory(user=AdminUserFactory())
    post = PostFactory(channel=ChannelFactory(account=key.account), title="Original")
    url = f"{live_server.url}/v1/channels/{post.channel_id}/posts/{post.id}"
    headers = {"Authorization": f"Bearer {key.raw}"}
    etag = requests.get(url, headers=headers, timeout=30).headers["ETag"]

    def edit(n):
        return lambda: requests.patch(
            url, json={"post": {"title": f"Edit {n}"}}, headers={**headers, "If-Match": etag}, timeout=30
        )

    responses = run_together([edit(n) for n in range(CALLS)])

    assert sorted(response.status_code for response in responses) == [200] + [412] * (CALLS - 1)
    [winner] = [response for response in responses if response.status_code == 200]
    assert Post.objects.get(pk=post.pk).title == winner.json()["data"]["title"]
    current = requests.get(url, headers=headers, timeout=30)
    assert winner.headers["ETag"] == current.headers["ETag"]
    # Each loser was checked after the winner committed, against what it wrote.
    assert {r.json()["error"]["details"]["current_etag"] for r in responses if r.status_code == 412} == {
        current.headers["ETag"]
    }
