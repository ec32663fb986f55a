"""A LinkedIn channel's page in the Settings area says when the channel's access to LinkedIn ends,
beside whom its posts appear as (the connection's own page says it too), against the local fake of
LinkedIn (tests/publishing/linkedin_fake.py)."""

import pytest

from apps.publishing.linkedin.services import connection_save
from tests.conftest import admin_session
from tests.factories import AdminUserFactory, ChannelFactory
from tests.publishing.test_settings_area import text_of

pytestmark = pytest.mark.django_db

DAY = 86400


def channel_page_text(channel) -> str:
    client = admin_session(AdminUserFactory(account=channel.account))
    return text_of(client.get(f"/admin/channels/channel/{channel.pk}/change/"))


@pytest.fixture
def channel(linkedin):
    return ChannelFactory(platform="linkedin")


def test_an_access_that_renews_itself_says_until_when_it_does(channel, linkedin):
    connection = connection_save(channel=channel, token=linkedin.issue_token(), connected_by="tests")

    until = f"{connection.expires_at:%Y-%m-%d %H:%M} UTC"
    renewed = f"{connection.refresh_expires_at:%Y-%m-%d %H:%M} UTC"
    assert (
        f"Publishes to: LinkedIn (access until {until}, renewed by itself until {renewed}), posting as Ada Lovelace"
        in channel_page_text(channel)
    )


def test_an_access_without_a_refresh_token_says_when_it_ends(channel, linkedin):
    token = linkedin.issue_token(expires_in=30 * DAY, refresh=False)
    connection = connection_save(channel=channel, token=token, connected_by="tests")

    page = channel_page_text(channel)

    assert f"LinkedIn (access ends on {connection.expires_at:%Y-%m-%d %H:%M} UTC), posting as Ada Lovelace" in page
    assert "reconnect LinkedIn" not in page  # not within the warning's days yet


def test_an_access_whose_end_linkedin_did_not_give_says_so(channel, linkedin):
    token = linkedin.issue_token(refresh=False)
    del token["expires_in"]  # as a token made in LinkedIn's portal (connect_linkedin)
    connection_save(channel=channel, token=token, connected_by="tests")

    assert (
        "LinkedIn (LinkedIn gave no end date for this access; a token made in its portal lasts 60 days), posting as "
        "Ada Lovelace" in channel_page_text(channel)
    )


def test_an_access_ending_soon_is_said_once_by_the_warning(channel, linkedin):
    token = linkedin.issue_token(expires_in=3 * DAY, refresh=False)
    connection = connection_save(channel=channel, token=token, connected_by="tests")

    page = channel_page_text(channel)

    ends = f"{connection.expires_at:%Y-%m-%d %H:%M} UTC"
    assert f"LinkedIn, posting as Ada Lovelace The access LinkedIn granted ends on {ends}" in page
    assert page.count(ends) == 1
