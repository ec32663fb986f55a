import pytest

from apps.channels.models import Channel
from tests.conftest import admin_session
from tests.factories import AccountFactory, AdminUserFactory, ChannelFactory, PostFactory, TeamFactory

pytestmark = pytest.mark.django_db


def test_channel_changelist_renders_with_filters_and_search(admin_client):
    team = TeamFactory(name="Editorial")
    ChannelFactory(account=team.account, team=team, title="Company Blog", platform="git")
    ChannelFactory(team=None, platform="api")
    for query, expected in (
        ("", 2),
        ("?platform__exact=git", 1),
        (f"?team__id__exact={team.pk}", 1),
        ("?q=Company", 1),
        ("?q=Editorial", 1),
    ):
        response = admin_client.get(f"/admin/channels/channel/{query}")
        assert response.status_code == 200
        assert response.context["cl"].result_count == expected, query


def test_team_changelist_and_change_pages_render(admin_client):
    team = TeamFactory()
    assert admin_client.get("/admin/channels/team/").status_code == 200
    assert admin_client.get(f"/admin/channels/team/{team.pk}/change/").status_code == 200


def test_channel_needs_a_team_of_its_own_account(admin_client):
    account = AccountFactory()
    foreign_team = TeamFactory()
    data = {"account": account.pk, "team": foreign_team.pk, "title": "X", "platform": "blog", "image_width": 1200}
    response = admin_client.post("/admin/channels/channel/add/", data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"team": ["The team must belong to the channel's account."]}
    assert not Channel.objects.exists()
    data["team"] = TeamFactory(account=account).pk
    assert admin_client.post("/admin/channels/channel/add/", data).status_code == 302
    assert Channel.objects.get().team_id == data["team"]


def test_account_is_fixed_and_platform_is_fixed_once_the_channel_has_posts(admin_client):
    channel = ChannelFactory(platform="blog")
    page = admin_client.get(f"/admin/channels/channel/{channel.pk}/change/")
    assert "account" not in page.context["adminform"].form.fields
    assert "platform" in page.context["adminform"].form.fields
    PostFactory(channel=channel)
    page = admin_client.get(f"/admin/channels/channel/{channel.pk}/change/")
    assert "platform" not in page.context["adminform"].form.fields


@pytest.mark.parametrize("platform", ["blog", "newsletter"])
def test_an_account_admin_sees_the_public_site_settings_without_markdown_or_repository_paths(platform):
    channel = ChannelFactory(platform=platform)
    admin = admin_session(AdminUserFactory(account=channel.account))

    page = admin.get(f"/admin/channels/channel/{channel.pk}/change/")

    assert page.status_code == 200
    text = page.content.decode()
    assert "the blog is then at its root." in text  # the domain field's help is shown
    assert "docs/" not in text
    assert ".md" not in text
    assert "`" not in text
