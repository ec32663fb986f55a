"""One story sent at once to a blog, a git repository, LinkedIn (its local fake), a newsletter (a real
SMTP server) and an api channel, through the pipeline the worker runs (channel_run) and the content
plan: each destination reached once, with its channel's overrides or else the story's text; LinkedIn
failing for good leaves the story partially published, and Retry failed posts to LinkedIn only; a
change of the story's body reaches the channels that do not override it."""

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.channels.models import Channel
from apps.posts.content_plan import content_plan_run
from apps.posts.models import Post
from apps.posts.writing import Writer
from apps.publishing.linkedin.services import connection_save
from apps.publishing.services import channel_run
from apps.stories.models import Story
from apps.stories.selectors import story_get
from apps.stories.services import ChannelChoice, story_create, story_retry_failed, story_update
from tests.factories import AccountFactory, AdminUserFactory, ApiKeyFactory, ChannelFactory, NewsletterChannelFactory
from tests.publishing.conftest import (
    allow_local_repositories,
    files,
    front_matter,
    git_channel_to,
    history,
    make_bare_repository,
)
from tests.publishing.linkedin_fake import FakeLinkedIn, little_text
from tests.publishing.newsletter.conftest import subscribe
from tests.publishing.newsletter.smtp_server import SmtpServer

pytestmark = pytest.mark.django_db

EDITOR = Writer(may_publish=True)
TITLE = "The harbour opens"
BODY = "The harbour opens on Monday.\n\nBoats of every size are welcome."
# LinkedIn's text is the title and the body's summary: its channel says it in fewer words.
LINKEDIN_BODY = "Come sailing with us on Monday."
NEWSLETTER_SUBJECT = "This week: the harbour"
READERS = {f"reader{n}@example.com" for n in range(3)}


@pytest.fixture(autouse=True)
def _quick_retries(settings, tmp_path):
    allow_local_repositories(settings, tmp_path)
    # Three attempts in a row, no wait between them: a channel's run spends its retries.
    settings.PUBLISH_RETRY_DELAYS = [0, 0]


@dataclass
class Destinations:
    """An account's five channels, one of each kind, and what stands behind them."""

    blog: Channel
    git: Channel
    linkedin: Channel
    newsletter: Channel
    api: Channel
    repository: Path
    fake_linkedin: FakeLinkedIn
    smtp: SmtpServer
    api_client: APIClient

    def channels(self) -> list[Channel]:
        return [self.blog, self.git, self.linkedin, self.newsletter, self.api]

    def post_on(self, story: Story, channel: Channel) -> Post:
        return Post.objects.get(story_link__story=story, channel=channel)

    def run_the_workers(self) -> None:
        for channel in (self.git, self.linkedin, self.newsletter):
            channel_run(channel.pk)

    def confirm_the_api_post(self, story: Story) -> dict:
        """What the external system does once the content plan handed it the post: the spec's publish."""
        post = self.post_on(story, self.api)
        response = self.api_client.patch(
            f"/v1/channels/{self.api.pk}/posts/{post.pk}/publish",
            {"post": {"external_id": "ext-1", "external_url": "https://docs.example.com/harbour"}},
            format="json",
        )
        assert response.status_code == 200, response.content
        return response.json()["data"]

    def blog_page(self, client, story: Story) -> str:
        destinations = story_get(account_id=story.account_id, story_id=story.pk).destinations
        [on_blog] = [destination for destination in destinations if destination.channel.pk == self.blog.pk]
        page = client.get(urlsplit(on_blog.url).path)
        assert page.status_code == 200
        return page.content.decode()


@pytest.fixture
def destinations(tmp_path, linkedin, smtp_server, client_for) -> Destinations:
    account = AccountFactory()
    newsletter = NewsletterChannelFactory(account=account, title="Field Notes")
    subscribe(newsletter, len(READERS))
    social = ChannelFactory(account=account, platform="linkedin", title="LinkedIn")
    connection_save(channel=social, token=linkedin.issue_token(), connected_by="tests")
    repository = make_bare_repository(tmp_path / "docs.git")
    return Destinations(
        blog=ChannelFactory(account=account, platform="blog", title="Harbour News"),
        git=git_channel_to(repository, account=account, title="Docs"),
        linkedin=social,
        newsletter=newsletter,
        api=ChannelFactory(account=account, platform="api", title="Partner site"),
        repository=repository,
        fake_linkedin=linkedin,
        smtp=smtp_server,
        api_client=client_for(ApiKeyFactory(user=AdminUserFactory(account=account))),
    )


def published_story(to: Destinations) -> Story:
    """The story, published to the five channels at once; LinkedIn and the newsletter override some
    of its text."""
    return story_create(
        account_id=to.blog.account_id,
        writer=EDITOR,
        title=TITLE,
        body=BODY,
        tag_names=["harbour"],
        publication_status="published",
        channels=[
            ChannelChoice(to.blog.pk),
            ChannelChoice(to.git.pk),
            ChannelChoice(to.linkedin.pk, overrides={"body": LINKEDIN_BODY}),
            ChannelChoice(to.newsletter.pk, overrides={"title": NEWSLETTER_SUBJECT}),
            ChannelChoice(to.api.pk),
        ],
    )


def state_of(story: Story) -> str:
    return story_get(account_id=story.account_id, story_id=story.pk).state


def states_by_channel(event: dict) -> dict[int, str]:
    return {post["channel"]["id"]: post["state"] for post in event["data"]["story"]["posts"]}


def test_a_published_story_reaches_each_of_its_five_destinations_once_with_their_overrides(
    destinations, emitted, client
):
    to = destinations
    story = published_story(to)
    to.run_the_workers()

    # The api channel's post waits for the content plan, which hands it to the external system.
    assert to.post_on(story, to.api).publication_status == "scheduled"
    content_plan_run(now=timezone.now() + timedelta(seconds=1))
    assert to.post_on(story, to.api).publication_status == "publishing_pending"
    assert state_of(story) == "publishing"
    assert emitted("story.published") == []
    assert to.confirm_the_api_post(story)["publication_status"] == "published"

    # The repository: one commit, of the story's text.
    assert len(history(to.repository)) == 1
    meta, body = front_matter(files(to.repository)["content/posts/the-harbour-opens.md"])
    assert meta["title"] == TITLE and body.strip() == BODY
    # LinkedIn: one post, in the channel's own words after the story's title.
    [sent] = to.fake_linkedin.posts.values()
    assert little_text(sent["commentary"]).startswith(f"{TITLE}\n\n{LINKEDIN_BODY}\n\n")
    assert "Boats" not in sent["commentary"]
    # The newsletter: one message per subscriber, under the channel's own subject, with the story's body.
    assert to.smtp.count_by_address() == dict.fromkeys(READERS, 1)
    for message in to.smtp.messages:
        assert message["Subject"] == NEWSLETTER_SUBJECT
        assert "Boats of every size are welcome." in message.get_body(("plain",)).get_content()
    # The blog's page is live with the story's text; the api post has it too.
    assert "Boats of every size are welcome." in to.blog_page(client, story)
    assert (to.post_on(story, to.api).title, to.post_on(story, to.api).body) == (TITLE, BODY)

    assert state_of(story) == "published"
    [event] = emitted("story.published")
    assert states_by_channel(event) == {channel.pk: "published" for channel in to.channels()}
    assert emitted("story.partially_published") == []


def test_linkedin_failing_leaves_the_story_partially_published_and_retry_failed_posts_to_linkedin_only(
    destinations, emitted, client
):
    to = destinations
    # LinkedIn answers 500 to every attempt of the schedule (three).
    to.fake_linkedin.fail_next(500, method="POST", path="/rest/posts", times=3)
    story = published_story(to)
    to.run_the_workers()
    content_plan_run(now=timezone.now() + timedelta(seconds=1))
    to.confirm_the_api_post(story)

    assert to.fake_linkedin.posts == {}
    assert len(to.fake_linkedin.calls("POST", "/rest/posts")) == 3
    assert state_of(story) == "partially_published"
    [event] = emitted("story.partially_published")
    assert states_by_channel(event) == {
        to.blog.pk: "published",
        to.git.pk: "published",
        to.linkedin.pk: "failed",
        to.newsletter.pk: "published",
        to.api.pk: "published",
    }
    assert emitted("story.published") == []
    commits = history(to.repository)
    blog_post = to.post_on(story, to.blog)
    blog_page = to.blog_page(client, story)

    assert story_retry_failed(story_id=story.pk, account_id=story.account_id) == [to.post_on(story, to.linkedin).pk]
    to.run_the_workers()

    [sent] = to.fake_linkedin.posts.values()
    assert little_text(sent["commentary"]).startswith(f"{TITLE}\n\n{LINKEDIN_BODY}")
    assert [commit.id for commit in history(to.repository)] == [commit.id for commit in commits]
    assert to.smtp.count_by_address() == dict.fromkeys(READERS, 1)
    assert to.post_on(story, to.blog).updated_at == blog_post.updated_at
    assert to.blog_page(client, story) == blog_page
    assert state_of(story) == "published"
    [published] = emitted("story.published")
    assert set(states_by_channel(published).values()) == {"published"}
    assert len(emitted("story.partially_published")) == 1


def test_a_change_of_the_story_body_reaches_the_channels_that_do_not_override_it(destinations, client):
    to = destinations
    story = published_story(to)
    to.run_the_workers()
    content_plan_run(now=timezone.now() + timedelta(seconds=1))
    to.confirm_the_api_post(story)
    linkedin_requests = len(to.fake_linkedin.requests)

    story_update(
        story_id=story.pk, account_id=story.account_id, writer=EDITOR, body="The harbour opens on Tuesday instead."
    )
    to.run_the_workers()

    # The published file is updated, as an edit of a post does: one more commit.
    latest, first = history(to.repository)
    assert latest.parents == [first.id]
    _, body = front_matter(files(to.repository)["content/posts/the-harbour-opens.md"])
    assert body.strip() == "The harbour opens on Tuesday instead."
    assert "Tuesday" in to.blog_page(client, story)
    assert to.post_on(story, to.api).body == "The harbour opens on Tuesday instead."
    assert to.post_on(story, to.api).publication_status == "published"
    # The newsletter's post has the new body (its archive page) and its title override; mail is
    # never sent twice.
    on_newsletter = to.post_on(story, to.newsletter)
    assert (on_newsletter.title, on_newsletter.body) == (NEWSLETTER_SUBJECT, "The harbour opens on Tuesday instead.")
    assert to.smtp.count_by_address() == dict.fromkeys(READERS, 1)
    # LinkedIn says it in its own words: nothing of the change reaches it.
    assert to.post_on(story, to.linkedin).body == LINKEDIN_BODY
    assert len(to.fake_linkedin.requests) == linkedin_requests
    assert state_of(story) == "published"
