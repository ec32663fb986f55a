"""A Bluesky channel is one through the registry alone: the API takes and the OpenAPI schema lists its
platform, and a Bluesky post's page shows it as it will be posted, with its length in graphemes as
Bluesky counts them and the card it carries."""

import pytest

from apps.posts.editor_status import post_publish_now
from apps.posts.services import post_create
from apps.publishing.models import PublicationJob
from apps.publishing.selectors import reference_link
from apps.publishing.services import channel_run
from apps.users.models import Role
from tests.conftest import admin_session
from tests.factories import ApiKeyFactory, ChannelFactory, TagFactory, UserFactory
from tests.publishing.test_settings_area import text_of

pytestmark = pytest.mark.django_db


def page_of(post):
    client = admin_session(UserFactory(account=post.channel.account, role=Role.EDITOR))
    return client.get(f"/admin/posts/post/{post.pk}/change/")


def test_the_api_lists_bluesky_channels_and_the_schema_names_the_platform(client, client_for):
    schema = client.get("/v1/openapi.json").json()
    assert "bluesky" in schema["components"]["schemas"]["PlatformEnum"]["enum"]

    channel = ChannelFactory(platform="bluesky")
    api = client_for(ApiKeyFactory(user=UserFactory(account=channel.account, role=Role.ADMIN)))
    listed = api.get("/v1/channels", {"platform": "bluesky"})

    assert listed.status_code == 200, listed.content
    assert [(row["id"], row["platform"]) for row in listed.json()["data"]] == [(channel.pk, "bluesky")]


def test_a_bluesky_posts_page_shows_its_text_and_its_length_in_graphemes():
    channel = ChannelFactory(platform="bluesky")
    post = post_create(
        channel=channel,
        title="Hello 👍🏽",
        body="漢字 and *words*.",
        tags=[TagFactory(account=channel.account, name="open source")],
    )

    page = text_of(page_of(post))

    assert "As it will be posted: Hello 👍🏽 漢字 and words. #opensource" in page
    assert "35 of 300 characters." in page


def test_a_jobs_reference_shows_the_records_key_linked_to_the_post_on_bluesky(bluesky, bluesky_channel):
    post = post_create(channel=bluesky_channel, title="Hello", body="Words.")
    post_publish_now(post_id=post.pk)
    channel_run(bluesky_channel.pk)
    job = PublicationJob.objects.select_related("channel").get(post_id=post.pk)
    [rkey] = bluesky.posts()

    assert reference_link(job) == f'<a href="https://bsky.app/profile/ada.test/post/{rkey}">{rkey}</a>'
