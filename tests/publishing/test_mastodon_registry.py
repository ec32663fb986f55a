"""The Mastodon kind reaches the rest of the service through the destination registry only: the API's
platform values and the OpenAPI enum list it, a channel of it is made over the API, and a post's
"Publish now" says what publishing there does, or, before the channel is connected or while it waits
for a reconnection, why it cannot publish yet."""

import pytest

from apps.core.destinations import kind_for
from apps.posts.publish_now import channel_publish_now
from apps.publishing.mastodon.models import MastodonConnection
from apps.publishing.mastodon.services import connection_lost
from tests.factories import ChannelFactory

pytestmark = pytest.mark.django_db


def test_the_api_and_its_schema_offer_the_mastodon_platform(client, authed, api_key):
    schema = client.get("/v1/openapi.json").json()
    assert "mastodon" in schema["components"]["schemas"]["PlatformEnum"]["enum"]

    channel = ChannelFactory(account=api_key.account, platform="mastodon")

    assert authed.get(f"/v1/channels/{channel.pk}").json()["data"]["platform"] == "mastodon"
    assert kind_for("mastodon").label == "Mastodon"


def test_publish_now_says_what_it_does_and_why_a_channel_cannot_publish_yet(mastodon, mastodon_channel):
    offer = channel_publish_now(mastodon_channel)
    assert offer.does.startswith("A status on Mastodon") and offer.unavailable == ""

    unconnected = channel_publish_now(ChannelFactory(platform="mastodon"))
    assert unconnected.unavailable.startswith("Connect Mastodon: this Mastodon channel is not connected")

    connection = MastodonConnection.objects.get(channel=mastodon_channel)
    connection_lost(connection=connection, reason="The instance refused the access token.")
    waiting = channel_publish_now(mastodon_channel)
    assert waiting.unavailable.startswith("Reconnect Mastodon: The instance refused the access token.")
