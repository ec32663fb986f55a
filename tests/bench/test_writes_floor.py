"""The write part's floors (bench/floor.py create_post and edit_post) do the endpoints' work: they
write the same rows and answer the same bytes, ETag and Location as POST and PATCH
/v1/channels/{id}/posts[/{id}], so the part's ratios compare like with like. The benchmark checks
this again on its own data before it measures (bench/writes.py)."""

import json

import pytest
from django.test import RequestFactory

from apps.posts.models import Post
from bench import floor
from tests.factories import ChannelFactory, PostFactory, TagFactory

pytestmark = pytest.mark.django_db

FIELDS = {"title": "Bench post 1-7", "body": "Some **Markdown**.", "teaser": "Short", "tags": ["news", "django"]}


def floor_request(method: str, path: str, api_key, body: dict):
    return RequestFactory().generic(
        method, path, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {api_key.raw}"
    )


@pytest.fixture
def channel(admin_key):
    channel = ChannelFactory(account=admin_key.account, title="Company Blog", platform="blog")
    TagFactory(account=admin_key.account, name="news")
    return channel


def test_the_floors_create_writes_the_post_and_its_tags_and_answers_what_get_answers(client_for, admin_key, channel):
    path = f"/v1/floor/channels/{channel.pk}/posts/new"
    answer = floor.create_post(floor_request("POST", path, admin_key, {"post": FIELDS}), channel.pk)

    assert answer.status_code == 201
    post = Post.objects.get(channel=channel)
    assert (post.title, post.slug, post.publication_status) == ("Bench post 1-7", "bench-post-1-7", "draft")
    assert sorted(post.tags.values_list("name", flat=True)) == ["django", "news"]
    read = client_for(admin_key).get(f"/v1/channels/{channel.pk}/posts/{post.pk}")
    assert answer.content == read.content
    assert answer["ETag"] == read["ETag"]
    assert answer["Location"] == f"http://testserver/v1/channels/{channel.pk}/posts/{post.pk}"


def test_the_endpoints_create_and_the_floors_answer_the_same_bytes_for_the_same_fields(client_for, admin_key, channel):
    created = client_for(admin_key).post(f"/v1/channels/{channel.pk}/posts", {"post": FIELDS}, format="json")
    assert created.status_code == 201, created.json()
    post_id = created.json()["data"]["id"]

    read = floor.channel_post(floor_request("GET", "/", admin_key, {}), channel.pk, post_id)

    assert read.content == created.content


def test_the_floors_edit_changes_the_title_and_answers_what_the_endpoints_patch_answers(client_for, admin_key, channel):
    post, other = PostFactory(channel=channel), PostFactory(channel=channel)
    client = client_for(admin_key)
    path = f"/v1/floor/channels/{channel.pk}/posts/{post.pk}/edit"
    answer = floor.edit_post(
        floor_request("PATCH", path, admin_key, {"post": {"title": "Edited 1"}}), channel.pk, post.pk
    )
    patched = client.patch(
        f"/v1/channels/{channel.pk}/posts/{other.pk}", {"post": {"title": "Edited 2"}}, format="json"
    )

    assert answer.status_code == patched.status_code == 200
    post.refresh_from_db()
    assert post.title == "Edited 1"
    read = client.get(f"/v1/channels/{channel.pk}/posts/{post.pk}")
    assert answer.content == read.content and answer["ETag"] == read["ETag"]
    # The endpoint's answer is the same form: the floor's read of that post gives its bytes.
    assert floor.channel_post(floor_request("GET", "/", admin_key, {}), channel.pk, other.pk).content == patched.content


def test_the_floors_refuse_a_body_without_a_title_and_another_accounts_channel(admin_key, channel):
    foreign = ChannelFactory()
    no_title = floor.create_post(floor_request("POST", "/", admin_key, {"post": {"body": "x"}}), channel.pk)
    elsewhere = floor.create_post(floor_request("POST", "/", admin_key, {"post": FIELDS}), foreign.pk)
    post = PostFactory(channel=foreign)
    edit_elsewhere = floor.edit_post(
        floor_request("PATCH", "/", admin_key, {"post": {"title": "x"}}), foreign.pk, post.pk
    )

    assert (no_title.status_code, elsewhere.status_code, edit_elsewhere.status_code) == (400, 404, 404)
    assert not Post.objects.filter(channel=channel).exists()


def figures(rps: float, non_2xx: int = 0) -> dict:
    return {
        "rps": rps,
        "requests": int(rps * 20),
        "p50": 50.0,
        "p99": 90.0,
        "non_2xx": non_2xx,
        "socket_errors": 0,
        "cpu_ms": {"web": 10.0, "postgres": 5.0, "redis": 0.0, "wrk": 1.0, "other": 0.0},
    }


def test_the_write_sections_verdicts_follow_the_ratio_and_say_whether_the_idempotency_figure_is_the_records():
    from bench import writes

    result = {
        "writes": {
            writes.CREATE: {"endpoint": figures(79), "floor": figures(100), "Idempotency-Key": figures(70)},
            writes.EDIT: {"endpoint": figures(90), "floor": figures(100), "If-Match": figures(80)},
        },
        "queries": {(w, name): 10 for w in writes.WRITES for name in ("endpoint", "floor", writes.HEADER[w])},
        "idempotency_live": False,
        "duration": 20,
        "slices": 4,
        "load": (1.0, 2.0),
        "edited": 128,
    }

    text = "\n".join(writes.writes_section(result))

    assert "0.79x the floor (target ≥0.8x: **missed**)" in text
    assert "0.90x the floor (target ≥0.8x: met)" in text
    assert "ignores `Idempotency-Key`" in text
    result["idempotency_live"] = True
    result["writes"][writes.EDIT]["endpoint"]["non_2xx"] = 3
    text = "\n".join(writes.writes_section(result))
    assert "0.90x the floor (target ≥0.8x: **missed**)" in text
    assert "its figure is the record's cost" in text
