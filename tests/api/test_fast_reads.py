"""A cached read answered by the web process before Django (config/server/fast_reads.py) is the answer
Django gives, byte for byte, and anything the fast path cannot be sure of is Django's to answer.

Each request goes to the web process's ASGI application itself (config/server/asgi.py), in this
process, twice built: with the fast path, and without it (WEB_FAST_READS=false). These tests commit
(transaction=True): the entries the fast path checks are deleted by the database's notifications.
"""

import logging
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from apps.core import coherence
from apps.posts.models import Post
from apps.users.credentials import api_key_revoke
from apps.users.models import ApiKey
from config.server import asgi, recording
from config.wsgi import application as django_application
from tests import web_process
from tests.factories import ApiKeyFactory, ChannelFactory, PostFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not coherence.configured(), reason="needs PostgreSQL and Redis; set DATABASE_URL and REDIS_URL"),
]

REQUEST_ID = "fast-reads-test"


loop, fast, django_only = web_process.fixtures(request_id=REQUEST_ID)


@pytest.fixture
def world():
    # Used just now: its use is not due to be written (a claim of another run's key of the same id
    # could otherwise hold the write back, and a key never used is never answered fast).
    key = ApiKeyFactory(last_used_at=timezone.now())
    channel = ChannelFactory(account=key.account)
    posts = PostFactory.create_batch(3, channel=channel)
    return SimpleNamespace(key=key, channel=channel, post=posts[0])


def drop(headers: list, dropped: bytes) -> list:
    return [(name, value) for name, value in headers if name != dropped]


def without_remaining(headers: list) -> list:
    return drop(headers, b"x-ratelimit-remaining")


def remaining(answer) -> int:
    return int(dict(answer.headers)[b"x-ratelimit-remaining"])


PATHS = [
    "/v1/channels/{channel}/posts",
    "/v1/channels/{channel}/posts?per_page=20",
    "/v1/channels/{channel}/posts?per_page=100",
    "/v1/channels/{channel}/posts/{post}",
]


@pytest.mark.parametrize("path", PATHS)
def test_a_cached_read_answered_before_django_is_djangos_answer_byte_for_byte(world, fast, django_only, path):
    path = path.format(channel=world.channel.pk, post=world.post.pk)
    first = web_process.answered_fast(fast, path, world.key)
    then = django_only.get(path, world.key)
    assert first.status == then.status == 200
    assert first.body == then.body
    assert without_remaining(first.headers) == without_remaining(then.headers)
    # Each counted once: Django's came after.
    assert remaining(then) == remaining(first) - 1


def test_a_conditional_read_answers_the_same_304(world, fast, django_only):
    path = f"/v1/channels/{world.channel.pk}/posts"
    etag = dict(web_process.answered_fast(fast, path, world.key).headers)[b"etag"].decode()
    first = web_process.answered_fast(fast, path, world.key, if_none_match=etag)
    then = django_only.get(path, world.key, if_none_match=etag)
    assert first.status == then.status == 304
    assert first.body == then.body == b""
    assert without_remaining(first.headers) == without_remaining(then.headers)


def test_a_request_of_another_shape_is_djangos(world, fast):
    path = f"/v1/channels/{world.channel.pk}/posts"
    web_process.answered_fast(fast, path, world.key)
    assert not fast.get(path, world.key, accept="application/json; indent=2").fast
    assert not fast.get(path + "?per_page=5", world.key).fast


def test_a_request_the_fast_path_cannot_answer_gets_djangos_refusal(world, fast, django_only):
    path = f"/v1/channels/{world.channel.pk}/posts"
    unknown = SimpleNamespace(raw="cps_00000000_notakeyatall")
    narrow = ApiKeyFactory(account=world.key.account, scopes=["read:channels"])
    for key, status in ((unknown, 401), (None, 401), (narrow, 403)):
        first, then = fast.get(path, key), django_only.get(path, key)
        assert (first.status, first.fast) == (status, False)
        assert (then.status, without_remaining(then.headers), then.body) == (
            status,
            without_remaining(first.headers),
            first.body,
        )
        assert remaining(then) == remaining(first) - 1


def test_a_revoked_key_is_refused_at_its_very_next_request(world, fast):
    path = f"/v1/channels/{world.channel.pk}/posts"
    web_process.answered_fast(fast, path, world.key)
    api_key_revoke(api_key=ApiKey.objects.get(pk=world.key.pk))
    refused = fast.get(path, world.key)
    assert (refused.status, refused.fast) == (401, False)


def test_a_key_without_the_scope_any_more_is_refused_at_its_next_request(world, fast):
    path = f"/v1/channels/{world.channel.pk}/posts"
    web_process.answered_fast(fast, path, world.key)
    ApiKey.objects.filter(pk=world.key.pk).update(scopes=["read:channels"])
    assert fast.get(path, world.key).status == 403


def test_an_expired_key_is_refused_although_nothing_changed_in_the_database(world, fast, monkeypatch):
    path = f"/v1/channels/{world.channel.pk}/posts"
    web_process.answered_fast(fast, path, world.key)
    expiry = ApiKey.objects.get(pk=world.key.pk).expires_at
    later = (expiry + timedelta(seconds=1)).timestamp()
    monkeypatch.setattr(fast.server.fast, "clock", lambda: later)
    assert not fast.get(path, world.key).fast


def test_a_changed_post_is_seen_at_the_next_request(world, fast, django_only):
    path = f"/v1/channels/{world.channel.pk}/posts/{world.post.pk}"
    web_process.answered_fast(fast, path, world.key)
    Post.objects.filter(pk=world.post.pk).update(title="A new title")
    answer = fast.get(path, world.key)
    assert not answer.fast
    assert b"A new title" in answer.body
    assert web_process.answered_fast(fast, path, world.key).body == django_only.get(path, world.key).body


def test_the_last_request_of_the_budget_is_answered_fast_and_the_next_is_djangos_429(
    world, fast, django_only, settings
):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, world.key.account.plan: 6}
    path = f"/v1/channels/{world.channel.pk}/posts"
    last = web_process.answered_fast(fast, path, world.key)
    while remaining(last) > 0:
        last = fast.get(path, world.key)
        assert last.status == 200
    assert last.fast
    refused, then = fast.get(path, world.key), django_only.get(path, world.key)
    assert (refused.status, refused.fast) == (429, False)
    assert (then.status, then.body) == (429, refused.body)
    # Retry-After counts the seconds left in the window: a second may have ended between the two.
    assert drop(then.headers, b"retry-after") == drop(refused.headers, b"retry-after")
    assert abs(int(dict(then.headers)[b"retry-after"]) - int(dict(refused.headers)[b"retry-after"])) <= 1


def test_a_key_whose_use_is_due_to_be_written_goes_to_django_which_writes_it(world, fast, monkeypatch):
    path = f"/v1/channels/{world.channel.pk}/posts"
    web_process.answered_fast(fast, path, world.key)
    used = ApiKey.objects.get(pk=world.key.pk).last_used_at
    later = used + timedelta(seconds=recording.settings.API_KEY_LAST_USED_RESOLUTION + 1)
    monkeypatch.setattr(fast.server.fast, "clock", lambda: later.timestamp())
    assert not fast.get(path, world.key).fast


def test_both_paths_write_the_same_log_line(world, fast, django_only, caplog):
    path = f"/v1/channels/{world.channel.pk}/posts"
    web_process.answered_fast(fast, path, world.key)
    with caplog.at_level(logging.INFO, logger="cps.request"):
        caplog.clear()
        assert fast.get(path, world.key).fast
        django_only.get(path, world.key)
    first, then = (record for record in caplog.records if record.name == "cps.request")
    assert first.getMessage().split(" duration_ms=")[0] == then.getMessage().split(" duration_ms=")[0]
    assert first.getMessage().split(" account=")[1] == then.getMessage().split(" account=")[1]
    fields = ("method", "path", "status", "account_id", "request_id")
    assert [getattr(first, name) for name in fields] == [getattr(then, name) for name in fields]


def test_the_fast_path_can_be_turned_off(settings):
    settings.WEB_FAST_READS = False
    assert asgi.Server(django_application).fast is None
    settings.WEB_FAST_READS = True
    assert asgi.Server(django_application).fast is not None


def test_a_read_that_is_never_recorded_costs_no_round_trip_to_redis(world, fast, monkeypatch):
    looked_up = []
    monkeypatch.setattr(type(fast.server.fast), "script", property(lambda self: looked_up.append(1)))
    for _ in range(3):
        assert fast.get("/v1/me", world.key).status == 200
    assert looked_up == []


def test_every_process_looks_up_only_the_answers_it_recorded(world, fast, loop):
    path = f"/v1/channels/{world.channel.pk}/posts"
    web_process.answered_fast(fast, path, world.key)
    another = web_process.Web(loop, fast=True, request_id=REQUEST_ID)
    assert not another.get(path, world.key).fast
    assert another.get(path, world.key).fast


def test_with_redis_unreachable_the_fast_path_stands_aside_and_django_answers(world, fast, caplog):
    path = f"/v1/channels/{world.channel.pk}/posts"
    web_process.answered_fast(fast, path, world.key)
    fast.server.fast.location = "redis://127.0.0.1:1/0"  # nothing listens there
    fast.server.fast._script = None
    answer = fast.get(path, world.key)
    assert (answer.status, answer.fast) == (200, False)
    assert "Redis unreachable" in caplog.text
    assert fast.server.fast.paused_until > 0


def test_a_web_process_started_with_other_settings_never_gives_the_answers_recorded_before(fast, loop, settings):
    assert web_process.Web(loop, fast=True, request_id=REQUEST_ID).server.fast.namespace == fast.server.fast.namespace
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "free": 7}
    assert web_process.Web(loop, fast=True, request_id=REQUEST_ID).server.fast.namespace != fast.server.fast.namespace
