"""When a story's post fails for good on its destination, the account's admins are told by e-mail with
links to the Settings area's pages of the post, its story and its channel, and the `post.failed` event
names the story; a post of its own gets the post's and the channel's links only."""

import re

import pytest
from django.core import mail
from django.urls import reverse

from apps.posts.editor_status import post_publish_now
from apps.posts.services import post_create, post_delete
from apps.posts.writing import Writer
from apps.publishing.linkedin.services import connection_save
from apps.publishing.models import PublicationJob
from apps.publishing.services import channel_run
from apps.stories.services import ChannelChoice, story_create
from tests.factories import AdminUserFactory, ChannelFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_retries(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.PUBLISH_RETRY_DELAYS = []
    settings.SITE_URL = "https://cps.example.com"


@pytest.fixture
def social(linkedin):
    """A LinkedIn channel (the local fake), and the account's admin."""
    channel = ChannelFactory(platform="linkedin", title="Company page")
    connection_save(channel=channel, token=linkedin.issue_token(), connected_by="tests")
    AdminUserFactory(account=channel.account, email="admin@example.com")
    return channel


def links_in(body: str) -> dict[str, str]:
    return dict(re.findall(r"^(The post|The story|The channel): (\S+)$", body, flags=re.MULTILINE))


def fails(channel, django_capture_on_commit_callbacks) -> PublicationJob:
    """The channel's next job, run once and failed for good (no retries in these tests)."""
    with django_capture_on_commit_callbacks(execute=True):
        channel_run(channel.pk)
    job = PublicationJob.objects.filter(channel=channel).latest("id")
    assert job.state == "failed"
    return job


def test_the_failure_email_of_a_storys_post_links_the_post_the_story_and_the_channel_absolutely(
    social, linkedin, emitted, django_capture_on_commit_callbacks
):
    linkedin.fail_next(500, method="POST", path="/rest/posts")
    story = story_create(
        account_id=social.account_id,
        writer=Writer(may_publish=True),
        title="Harbour opens",
        publication_status="published",
        channels=[ChannelChoice(social.pk)],
    )
    post = story.links.get().post

    job = fails(social, django_capture_on_commit_callbacks)

    [message] = mail.outbox
    assert message.to == ["admin@example.com"]
    assert links_in(message.body) == {
        "The post": f"https://cps.example.com{reverse('admin:posts_post_change', args=[post.pk])}",
        "The story": f"https://cps.example.com{reverse('admin:stories_story_change', args=[story.pk])}",
        "The channel": f"https://cps.example.com{reverse('admin:channels_channel_change', args=[social.pk])}",
    }
    assert f"https://cps.example.com{reverse('admin:publishing_publicationjob_change', args=[job.pk])}" in message.body
    [event] = emitted("post.failed")
    assert event["data"]["post"]["story"] == {"id": story.pk}
    assert event["data"]["post"]["channel"]["id"] == social.pk


def test_the_failure_email_of_a_post_of_its_own_links_the_post_and_the_channel(
    social, linkedin, emitted, django_capture_on_commit_callbacks
):
    linkedin.fail_next(500, method="POST", path="/rest/posts")
    post = post_create(channel=social, title="On its own", body="Hello.")
    post_publish_now(post_id=post.pk)

    fails(social, django_capture_on_commit_callbacks)

    [message] = mail.outbox
    assert links_in(message.body) == {
        "The post": f"https://cps.example.com{reverse('admin:posts_post_change', args=[post.pk])}",
        "The channel": f"https://cps.example.com{reverse('admin:channels_channel_change', args=[social.pk])}",
    }
    [event] = emitted("post.failed")
    assert event["data"]["post"]["story"] is None


def test_the_failure_email_of_a_deleted_posts_take_down_links_its_channel_only(
    social, linkedin, django_capture_on_commit_callbacks
):
    post = post_create(channel=social, title="Soon gone", body="Hello.")
    post_publish_now(post_id=post.pk)
    channel_run(social.pk)
    assert len(linkedin.posts) == 1
    post_delete(post_id=post.pk)
    linkedin.fail_next(500, method="DELETE", path="/rest/posts")

    job = fails(social, django_capture_on_commit_callbacks)

    assert job.action == "unpublish"
    [message] = mail.outbox
    assert links_in(message.body) == {
        "The channel": f"https://cps.example.com{reverse('admin:channels_channel_change', args=[social.pk])}"
    }
