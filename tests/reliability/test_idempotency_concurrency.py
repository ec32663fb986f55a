"""One Idempotency-Key sent by many clients at once, over real HTTP to a live server (one thread and one
database connection per request): the write runs once, the others get its answer or 409."""

import threading
import time

import pytest
import requests

from apps.posts import writing
from apps.posts.models import Post
from apps.users import api as users_api
from apps.users.models import IdempotencyRecord, User
from tests.conftest import requires_postgres, run_together
from tests.factories import ChannelFactory

pytestmark = [pytest.mark.reliability, requires_postgres, pytest.mark.django_db(transaction=True)]

CALLS = 10
NEW_USER = {"email": "once@example.com", "name": "Once", "send_invitation": False}


def headers(key, idempotency_key: str) -> dict:
    return {"Authorization": f"Bearer {key.raw}", "Idempotency-Key": idempotency_key}


@pytest.fixture
def slow_create(monkeypatch):
    """Widen the window in which the first request runs, so the others arrive while it does."""
    create = users_api.user_create

    def slow(**kwargs):
        time.sleep(0.3)
        return create(**kwargs)

    monkeypatch.setattr(users_api, "user_create", slow)


def test_ten_simultaneous_requests_with_one_key_create_one_user(slow_create, admin_key, emitted, live_server):
    url = f"{live_server.url}/v1/users"

    def create():
        return requests.post(url, json=NEW_USER, headers=headers(admin_key, "ten-at-once"), timeout=30)

    responses = run_together([create] * CALLS)

    assert all(isinstance(response, requests.Response) for response in responses), responses
    assert User.objects.filter(email=NEW_USER["email"]).count() == 1
    assert len(emitted("user.created")) == 1
    ran = [r for r in responses if r.status_code == 201 and "Idempotent-Replayed" not in r.headers]
    replayed = [r for r in responses if r.status_code == 201 and r.headers.get("Idempotent-Replayed") == "true"]
    waiting = [r for r in responses if r.status_code == 409]
    assert len(ran) == 1
    assert len(ran) + len(replayed) + len(waiting) == CALLS
    assert all(r.content == ran[0].content for r in replayed)
    for response in waiting:
        assert response.json()["error"]["code"] == "idempotency_request_in_progress"
        assert int(response.headers["Retry-After"]) >= 1


def test_a_request_whose_key_is_in_use_by_a_running_one_gets_409_and_later_its_answer(
    admin_key, monkeypatch, live_server
):
    running, release = threading.Event(), threading.Event()
    create = users_api.user_create

    def held(**kwargs):
        running.set()
        assert release.wait(timeout=30)
        return create(**kwargs)

    monkeypatch.setattr(users_api, "user_create", held)
    url = f"{live_server.url}/v1/users"
    first: list = []
    sender = threading.Thread(
        target=lambda: first.append(requests.post(url, json=NEW_USER, headers=headers(admin_key, "held"), timeout=30))
    )
    sender.start()
    try:
        assert running.wait(timeout=30)
        waiting = requests.post(url, json=NEW_USER, headers=headers(admin_key, "held"), timeout=30)
    finally:
        release.set()
        sender.join(timeout=30)

    assert waiting.status_code == 409
    assert waiting.json()["error"]["code"] == "idempotency_request_in_progress"
    assert waiting.headers["Retry-After"] == "1"
    assert IdempotencyRecord.objects.count() == 1
    [answer] = first
    assert answer.status_code == 201
    again = requests.post(url, json=NEW_USER, headers=headers(admin_key, "held"), timeout=30)
    assert (again.status_code, again.headers["Idempotent-Replayed"], again.content) == (201, "true", answer.content)
    assert User.objects.filter(email=NEW_USER["email"]).count() == 1


def test_ten_simultaneous_post_creates_with_one_key_make_one_post_and_one_event(admin_key, emitted, live_server):
    channel = ChannelFactory(account=admin_key.account)
    url = f"{live_server.url}/v1/channels/{channel.pk}/posts"
    body = {"post": {"title": "Once only", "publication_status": "published"}}
    create = writing.post_create
    with pytest.MonkeyPatch.context() as patch:
        # The first one runs long enough for the others to arrive while it does.
        patch.setattr(writing, "post_create", lambda **kwargs: (time.sleep(0.3), create(**kwargs))[1])
        responses = run_together(
            [lambda: requests.post(url, json=body, headers=headers(admin_key, "one-post"), timeout=30)] * CALLS
        )

    assert Post.objects.filter(channel=channel).count() == 1
    assert len(emitted("post.published")) == 1
    ran = [r for r in responses if r.status_code == 201 and "Idempotent-Replayed" not in r.headers]
    replayed = [r for r in responses if r.status_code == 201 and r.headers.get("Idempotent-Replayed") == "true"]
    assert len(ran) == 1
    assert len(replayed) + sum(r.status_code == 409 for r in responses) == CALLS - 1
    assert all(
        (r.content, r.headers["Location"], r.headers["ETag"])
        == (ran[0].content, ran[0].headers["Location"], ran[0].headers["ETag"])
        for r in replayed
    )
