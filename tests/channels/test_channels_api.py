import pytest
from dateutil.parser import isoparse

from tests.factories import (
    AccountFactory,
    ApiKeyFactory,
    ChannelFactory,
    PostFactory,
    TeamFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

LIST_FIELDS = {"id", "title", "platform", "team", "posts_count"}
DETAIL_FIELDS = LIST_FIELDS | {"created_at", "updated_at", "image_width", "url"}


@pytest.fixture
def account(api_key):
    return api_key.account


def test_list_item_has_exactly_the_list_fields(authed, account):
    team = TeamFactory(account=account, name="Editorial")
    channel = ChannelFactory(account=account, team=team, title="Company Blog", platform="git")
    PostFactory.create_batch(3, channel=channel)
    response = authed.get("/v1/channels")
    assert response.status_code == 200
    assert response.json()["data"] == [
        {
            "id": channel.id,
            "title": "Company Blog",
            "platform": "git",
            "team": {"id": team.id, "name": "Editorial"},
            "posts_count": 3,
        }
    ]


def test_channel_without_team_has_team_null_and_empty_channel_counts_zero(authed, account):
    ChannelFactory(account=account, team=None, platform="linkedin")
    item = authed.get("/v1/channels").json()["data"][0]
    assert item["team"] is None
    assert item["posts_count"] == 0
    assert set(item) == LIST_FIELDS


def test_posts_count_counts_posts_of_every_status_and_only_of_that_channel(authed, account):
    first, second = ChannelFactory.create_batch(2, account=account)
    for status in ("draft", "scheduled", "publishing_pending", "published"):
        PostFactory(channel=first, publication_status=status)
    PostFactory(channel=second)
    counts = {item["id"]: item["posts_count"] for item in authed.get("/v1/channels").json()["data"]}
    assert counts == {first.id: 4, second.id: 1}


def test_detail_has_the_list_fields_plus_dates_and_image_width(authed, account):
    channel = ChannelFactory(account=account, platform="api", image_width=1600)
    PostFactory(channel=channel)
    response = authed.get(f"/v1/channels/{channel.id}")
    assert response.status_code == 200
    data = response.json()["data"]
    assert set(response.json()) == {"data"}
    assert set(data) == DETAIL_FIELDS
    assert data["platform"] == "api"
    assert data["image_width"] == 1600
    assert data["posts_count"] == 1
    assert data["team"] == {"id": channel.team.id, "name": channel.team.name}
    assert isoparse(data["created_at"]) == channel.created_at
    assert isoparse(data["updated_at"]) == channel.updated_at
    assert data["url"] is None  # an api channel has no public address


def test_a_blog_channel_s_url_is_its_public_site_and_follows_a_new_handle_or_domain(authed, account, settings):
    settings.SITE_URL = "https://publish.example.com"
    blog = ChannelFactory(account=account, platform="blog", title="Field Notes")
    assert (
        authed.get(f"/v1/channels/{blog.id}").json()["data"]["url"] == "https://publish.example.com/blog/field-notes/"
    )

    blog.handle = "notes"
    blog.save()
    assert authed.get(f"/v1/channels/{blog.id}").json()["data"]["url"] == "https://publish.example.com/blog/notes/"

    blog.domain = "notes.example.org"
    blog.save()
    assert authed.get(f"/v1/channels/{blog.id}").json()["data"]["url"] == "https://notes.example.org/"


@pytest.mark.parametrize("platform", ["blog", "git", "linkedin", "api"])
def test_every_platform_is_rendered_as_its_value(authed, account, platform):
    channel = ChannelFactory(account=account, platform=platform)
    assert authed.get(f"/v1/channels/{channel.id}").json()["data"]["platform"] == platform


def test_list_is_ordered_by_id_and_paginated(authed, account):
    channels = ChannelFactory.create_batch(25, account=account)
    first = authed.get("/v1/channels").json()
    assert [item["id"] for item in first["data"]] == [c.id for c in channels[:20]]
    assert first["meta"] == {"page": 1, "pages": 2, "count": 25, "per_page": 20}
    second = authed.get("/v1/channels?page=2&per_page=20").json()
    assert [item["id"] for item in second["data"]] == [c.id for c in channels[20:]]
    assert authed.get("/v1/channels?per_page=5").json()["meta"] == {"page": 1, "pages": 5, "count": 25, "per_page": 5}


def test_channels_list_rejects_a_bad_page(authed):
    response = authed.get("/v1/channels?page=0")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == "page"


def test_key_sees_only_its_own_accounts_channels(authed, account):
    mine = ChannelFactory(account=account)
    ChannelFactory(account=AccountFactory())
    assert [item["id"] for item in authed.get("/v1/channels").json()["data"]] == [mine.id]


def test_another_accounts_channel_is_404_not_403(authed):
    foreign = ChannelFactory(account=AccountFactory())
    response = authed.get(f"/v1/channels/{foreign.id}")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found", "message": "Resource not found."}}


@pytest.mark.parametrize(
    "path", ["/v1/channels/999999", "/v1/channels/abc", "/v1/channels/-1", f"/v1/channels/{10**30}"]
)
def test_unknown_or_malformed_channel_id_is_a_json_404(authed, path):
    response = authed.get(path)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("path", ["/v1/channels", "/v1/channels/1"])
def test_channels_need_read_channels_scope(client_for, path):
    key = ApiKeyFactory(scopes=["read:posts", "write:posts"])
    channel = ChannelFactory(account=key.account)
    response = client_for(key).get(path.replace("/1", f"/{channel.id}"))
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient_scope"
    assert "read:channels" in response.json()["error"]["message"]


def test_read_channels_scope_alone_is_enough(client_for):
    key = ApiKeyFactory(scopes=["read:channels"])
    ChannelFactory(account=key.account)
    assert client_for(key).get("/v1/channels").status_code == 200


def test_channels_need_a_key(api_client):
    assert api_client.get("/v1/channels").status_code == 401


def test_a_team_of_another_user_of_the_same_account_is_shown(client_for):
    # Channels belong to the account, not to the key's owner.
    account = AccountFactory()
    key = ApiKeyFactory(user=UserFactory(account=account))
    ChannelFactory(account=account)
    assert len(client_for(key).get("/v1/channels").json()["data"]) == 1
