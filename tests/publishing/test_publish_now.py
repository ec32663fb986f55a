"""Publish now on a post's page in the Settings area says what it does for the post's channel (each
destination in its own words), is not offered on a published post, and is disabled with the reason
where the channel's destination is not set up; a job's line names its destination's reference. The
pages are driven as a browser would (the Django test client, signed in as an admin of the account)."""

import re

import pytest

from apps.posts.services import post_create
from apps.publishing.linkedin.services import connection_lost, connection_save
from apps.publishing.models import PublicationJob
from apps.publishing.services import channel_run
from tests.conftest import admin_session
from tests.factories import (
    AdminUserFactory,
    ChannelFactory,
    NewsletterChannelFactory,
    PostFactory,
    PublicationJobFactory,
)
from tests.publishing.test_settings_area import POSTS, messages_of, text_of

pytestmark = pytest.mark.django_db

BLOG = "The post goes on the blog now."
GIT = "A commit to the repository:"
LINKEDIN = "A post on LinkedIn:"
NEWSLETTER = "An edition mailed once to the channel's confirmed subscribers"
API = "The post is handed to the external system now:"


def page_of(post) -> str:
    return f"{POSTS}{post.pk}/change/"


def publish_now_url(post) -> str:
    return f"{POSTS}{post.pk}/publish-now/"


def button(page: str, post) -> str:
    """The Publish now button's tag on the page ("" when the page has none)."""
    found = re.search(rf'<form method="post" action="{re.escape(publish_now_url(post))}">.*?(<button[^>]*>)', page)
    return found[1] if found else ""


def publish_now_row(client, post) -> str:
    """What the post's page says under Publish now (the label's row, as a reader sees it)."""
    text = text_of(client.get(page_of(post)))
    return text.split("Publish now:", 1)[1].split("Publication jobs:", 1)[0].strip()


@pytest.fixture
def channels(git_channel, linkedin_channel):
    """One connected channel of each kind, in one account."""
    account = git_channel.account
    linkedin_channel.account = account
    linkedin_channel.save()
    return {
        "blog": ChannelFactory(account=account, platform="blog"),
        "git": git_channel,
        "linkedin": linkedin_channel,
        "newsletter": NewsletterChannelFactory(account=account),
        "api": ChannelFactory(account=account, platform="api"),
    }


@pytest.mark.parametrize(
    ("platform", "says"),
    [("blog", BLOG), ("git", GIT), ("linkedin", LINKEDIN), ("newsletter", NEWSLETTER), ("api", API)],
)
def test_publish_now_says_what_it_does_for_each_kind_of_channel_before_and_after_it_is_pressed(
    channels, platform, says
):
    client = admin_session(AdminUserFactory(account=channels["git"].account))
    post = post_create(channel=channels[platform], title="News", body="Words.")

    assert publish_now_row(client, post).startswith(says)
    assert "disabled" not in button(client.get(page_of(post)).content.decode(), post)

    response = client.post(publish_now_url(post), follow=True)

    [message] = messages_of(response)
    assert message.startswith(says)


def test_a_blog_post_published_with_publish_now_is_on_the_blog_and_the_button_is_gone(channels):
    client = admin_session(AdminUserFactory(account=channels["blog"].account))
    post = post_create(channel=channels["blog"], title="Out now", body="x")

    client.post(publish_now_url(post))

    post.refresh_from_db()
    assert post.publication_status == "published"
    page = client.get(page_of(post)).content.decode()
    assert button(page, post) == "" and "Publish now</button>" not in page
    assert publish_now_row(client, post) == "Not offered: the post is published."


def test_a_git_post_published_through_its_job_is_no_longer_offered_publish_now(git_channel):
    client = admin_session(AdminUserFactory(account=git_channel.account))
    post = post_create(channel=git_channel, title="Shipped", body="x")
    client.post(publish_now_url(post))
    assert button(client.get(page_of(post)).content.decode(), post)  # still offered while the job is queued

    channel_run(git_channel.pk)

    assert button(client.get(page_of(post)).content.decode(), post) == ""
    assert client.post(publish_now_url(post), follow=True).status_code == 200
    assert PublicationJob.objects.filter(post_id=post.pk).count() == 1


def test_an_api_post_handed_over_is_not_offered_publish_now_again(channels):
    client = admin_session(AdminUserFactory(account=channels["api"].account))
    post = post_create(channel=channels["api"], title="External", body="x")

    client.post(publish_now_url(post))

    post.refresh_from_db()
    assert post.publication_status == "publishing_pending"
    assert button(client.get(page_of(post)).content.decode(), post) == ""
    assert publish_now_row(client, post) == "Not offered: the post awaits the external system's confirmation."


@pytest.mark.parametrize(
    ("platform", "reason"),
    [
        ("linkedin", "Connect LinkedIn: this LinkedIn channel is not connected to a LinkedIn account."),
        ("git", "This git channel has no repository set up: add one in Settings → Publishing: git → Git destinations."),
    ],
)
def test_publish_now_is_disabled_with_the_reason_where_the_destination_is_not_set_up(db, platform, reason):
    channel = ChannelFactory(platform=platform)
    client = admin_session(AdminUserFactory(account=channel.account))
    post = post_create(channel=channel, title="Waiting", body="x")

    page = client.get(page_of(post)).content.decode()

    tag = button(page, post)
    assert "disabled" in tag and reason in tag.replace("&#x27;", "'")
    assert publish_now_row(client, post).startswith(f"Not available: {reason}")
    # Pressed anyway (a page left open before the set-up was removed): refused, no job written.
    response = client.post(publish_now_url(post), follow=True)
    [refused] = messages_of(response)
    assert reason in refused
    assert not PublicationJob.objects.filter(post_id=post.pk).exists()
    post.refresh_from_db()
    assert post.publication_status == "draft"


def test_publish_now_is_disabled_on_a_linkedin_channel_whose_access_was_lost(linkedin_channel):
    connection_lost(
        connection=linkedin_channel.linkedin_connection, reason="LinkedIn refused the access token (revoked)."
    )
    client = admin_session(AdminUserFactory(account=linkedin_channel.account))
    post = post_create(channel=linkedin_channel, title="Blocked", body="x")

    tag = button(client.get(page_of(post)).content.decode(), post)

    assert "disabled" in tag and "Reconnect LinkedIn: LinkedIn refused the access token (revoked)." in tag
    client.post(publish_now_url(post))
    assert not PublicationJob.objects.filter(post_id=post.pk).exists()


def test_a_linkedin_connected_again_offers_publish_now_again(linkedin_channel, linkedin):
    connection_lost(connection=linkedin_channel.linkedin_connection, reason="Gone.")
    connection_save(channel=linkedin_channel, token=linkedin.issue_token(), connected_by="tests")
    client = admin_session(AdminUserFactory(account=linkedin_channel.account))
    post = post_create(channel=linkedin_channel, title="Back", body="x")

    assert "disabled" not in button(client.get(page_of(post)).content.decode(), post)


@pytest.mark.parametrize(
    ("platform", "reference", "says"),
    [
        ("linkedin", "", "· LinkedIn post —"),
        ("linkedin", "urn:li:share:7001", "· LinkedIn post urn:li:share:7001"),
        ("newsletter", "edition:12", "· edition edition:12"),
        ("git", "", "· commit —"),
    ],
)
def test_a_jobs_line_names_its_destinations_reference(db, platform, reference, says):
    channel = ChannelFactory(platform=platform)
    post = PostFactory(channel=channel)
    PublicationJobFactory(channel=channel, post_id=post.pk, state="failed", reference=reference, last_error="No.")
    client = admin_session(AdminUserFactory(account=channel.account))

    page = text_of(client.get(page_of(post)))

    assert says in page
    if platform != "git":
        assert "commit" not in page.split("Publication jobs:", 1)[1]
    if reference:  # the list of jobs names it the same way
        assert says.removeprefix("· ") in text_of(client.get("/admin/publishing/publicationjob/"))


def test_the_post_list_action_refuses_posts_whose_destination_is_not_set_up_and_publishes_the_others(db):
    channel = ChannelFactory(platform="linkedin")
    blog = ChannelFactory(account=channel.account, platform="blog")
    waiting = post_create(channel=channel, title="Waiting", body="x")
    ready = post_create(channel=blog, title="Ready", body="x")
    client = admin_session(AdminUserFactory(account=channel.account))

    response = client.post(POSTS, {"action": "publish_now", "_selected_action": [waiting.pk, ready.pk]}, follow=True)

    first, done = messages_of(response)
    assert first.startswith("“Waiting”: Connect LinkedIn: this LinkedIn channel is not connected")
    assert done == "1 post(s) handed over for publishing."
    assert not PublicationJob.objects.filter(post_id=waiting.pk).exists()


def test_the_section_linkedins_sentence_names_is_on_the_posts_page(linkedin_channel):
    client = admin_session(AdminUserFactory(account=linkedin_channel.account))
    post = post_create(channel=linkedin_channel, title="Named", body="x")

    text = text_of(client.get(page_of(post)))

    assert "“as it will be posted”" in publish_now_row(client, post)
    assert "As it will be posted:" in text
