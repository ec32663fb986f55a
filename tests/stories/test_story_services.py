"""A story is written once and sent to channels: each gets its post of it, with the channel's
overrides and the story's text where it has none; one status asked of all; a state read from the
posts' own; story.published or story.partially_published said once; Retry failed retries only the
destinations that failed."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.core.errors import DomainError, Forbidden, InvalidInput
from apps.posts.api_workflow import post_publish
from apps.posts.content_plan import content_plan_run
from apps.posts.models import Post
from apps.posts.pipeline_subject import post_publication_failed
from apps.posts.writing import Writer
from apps.publishing.models import JobState, PublicationJob
from apps.stories.models import Story
from apps.stories.selectors import story_get
from apps.stories.services import ChannelChoice, story_create, story_delete, story_retry_failed, story_update
from tests.factories import AccountFactory, ChannelFactory, GitDestinationFactory

pytestmark = pytest.mark.django_db

EDITOR = Writer(may_publish=True)


@pytest.fixture
def account():
    return AccountFactory()


@pytest.fixture
def blog(account):
    return ChannelFactory(account=account, platform="blog")


@pytest.fixture
def api(account):
    return ChannelFactory(account=account, platform="api")


@pytest.fixture
def git(account):
    return GitDestinationFactory(channel__account=account).channel


def post_on(story, channel) -> Post:
    return Post.objects.get(story_link__story=story, channel=channel)


def test_each_channel_gets_its_post_with_its_overrides_and_the_story_text_elsewhere(account, blog, api):
    story = story_create(
        account_id=account.pk,
        writer=EDITOR,
        title="Launch",
        body="We launched.",
        teaser="Short",
        tag_names=["news"],
        channels=[ChannelChoice(blog.pk), ChannelChoice(api.pk, overrides={"title": "Launch (API)", "teaser": ""})],
    )
    on_blog, on_api = post_on(story, blog), post_on(story, api)
    assert (on_blog.title, on_blog.body, on_blog.teaser) == ("Launch", "We launched.", "Short")
    assert (on_api.title, on_api.teaser) == ("Launch (API)", "Short")
    assert list(on_api.tags.values_list("name", flat=True)) == ["news"]
    assert story_get(account_id=account.pk, story_id=story.pk).state == "draft"
    # An empty override is no override.
    assert story.links.get(post=on_api).overrides == {"title": "Launch (API)"}


def test_a_change_of_the_story_text_reaches_the_posts_that_do_not_override_it(account, blog, api):
    story = story_create(
        account_id=account.pk,
        writer=EDITOR,
        title="Launch",
        channels=[ChannelChoice(blog.pk), ChannelChoice(api.pk, overrides={"title": "Own title"})],
    )
    story_update(story_id=story.pk, account_id=account.pk, writer=EDITOR, title="Launch day", body="New body")
    assert post_on(story, blog).title == "Launch day"
    assert post_on(story, api).title == "Own title"
    assert post_on(story, api).body == "New body"


def test_an_override_taken_away_falls_back_to_the_story_text(account, api):
    story = story_create(
        account_id=account.pk, writer=EDITOR, title="Launch", channels=[ChannelChoice(api.pk, {"title": "Own"})]
    )
    story_update(
        story_id=story.pk, account_id=account.pk, writer=EDITOR, channels=[ChannelChoice(api.pk, {"title": ""})]
    )
    assert post_on(story, api).title == "Launch"


def test_publishing_a_story_publishes_the_blog_and_schedules_the_api_channel_for_the_content_plan(
    account, blog, api, emitted
):
    story = story_create(
        account_id=account.pk, writer=EDITOR, title="Now", channels=[ChannelChoice(blog.pk), ChannelChoice(api.pk)]
    )
    story_update(story_id=story.pk, account_id=account.pk, writer=EDITOR, publication_status="published")
    assert post_on(story, blog).publication_status == "published"
    assert post_on(story, api).publication_status == "scheduled"
    assert story_get(account_id=account.pk, story_id=story.pk).state == "publishing"
    content_plan_run(now=timezone.now() + timedelta(seconds=1))
    assert post_on(story, api).publication_status == "publishing_pending"
    assert emitted("story.published") == []
    on_api = post_on(story, api)
    post_publish(post_id=on_api.pk, channel_id=api.pk, account=account)
    assert story_get(account_id=account.pk, story_id=story.pk).state == "published"
    [event] = emitted("story.published")
    states = {post["channel"]["id"]: post["state"] for post in event["data"]["story"]["posts"]}
    assert states == {blog.pk: "published", api.pk: "published"}


def test_a_failure_for_good_makes_the_story_partially_published_and_retry_runs_only_that_job(
    account, blog, git, emitted
):
    story = story_create(
        account_id=account.pk,
        writer=EDITOR,
        title="Both",
        publication_status="published",
        channels=[ChannelChoice(blog.pk), ChannelChoice(git.pk)],
    )
    job = PublicationJob.objects.get(post_id=post_on(story, git).pk)
    assert story_get(account_id=account.pk, story_id=story.pk).state == "publishing"
    PublicationJob.objects.filter(pk=job.pk).update(state=JobState.FAILED, last_error="The host refused.")
    job.refresh_from_db()
    post_publication_failed(job=job)
    assert story_get(account_id=account.pk, story_id=story.pk).state == "partially_published"
    [event] = emitted("story.partially_published")
    assert {post["state"] for post in event["data"]["story"]["posts"]} == {"published", "failed"}
    [failed] = emitted("post.failed")
    assert failed["data"]["post"]["story"] == {"id": story.pk}

    retried = story_retry_failed(story_id=story.pk, account_id=account.pk)
    assert retried == [post_on(story, git).pk]
    job.refresh_from_db()
    assert job.state == JobState.QUEUED
    assert PublicationJob.objects.filter(post_id=post_on(story, blog).pk).count() == 0
    assert story_get(account_id=account.pk, story_id=story.pk).state == "publishing"
    with pytest.raises(DomainError) as refused:
        story_retry_failed(story_id=story.pk, account_id=account.pk)
    assert refused.value.code == "nothing_to_retry"


def test_scheduling_needs_a_future_time_and_the_publish_permission(account, blog):
    with pytest.raises(InvalidInput):
        story_create(
            account_id=account.pk,
            writer=EDITOR,
            title="Past",
            publication_status="scheduled",
            scheduled_at=timezone.now() - timedelta(minutes=1),
            channels=[ChannelChoice(blog.pk)],
        )
    with pytest.raises(Forbidden):
        story_create(
            account_id=account.pk,
            writer=Writer(may_publish=False),
            title="Later",
            publication_status="scheduled",
            scheduled_at=timezone.now() + timedelta(days=1),
            channels=[ChannelChoice(blog.pk)],
        )
    assert not Story.objects.exists() and not Post.objects.exists()


def test_a_plan_publishes_nothing(account, blog):
    story = story_create(
        account_id=account.pk,
        writer=Writer(may_publish=False),
        title="Planned",
        planned_for=timezone.now() - timedelta(days=1),
        channels=[ChannelChoice(blog.pk)],
    )
    content_plan_run()
    assert post_on(story, blog).publication_status == "draft"


def test_a_channel_of_another_account_is_refused(account):
    other = ChannelFactory()
    with pytest.raises(InvalidInput) as refused:
        story_create(account_id=account.pk, writer=EDITOR, title="X", channels=[ChannelChoice(other.pk)])
    assert (
        refused.value.details["errors"][0]["field"] == "channels[0].id" if hasattr(refused.value, "details") else True
    )


def test_deleting_a_story_deletes_its_posts(account, blog, api):
    story = story_create(
        account_id=account.pk, writer=EDITOR, title="Gone", channels=[ChannelChoice(blog.pk), ChannelChoice(api.pk)]
    )
    story_delete(story_id=story.pk, account_id=account.pk)
    assert not Post.objects.exists() and not Story.objects.exists()


def test_an_id_beyond_the_databases_range_is_a_story_not_found(account):
    from apps.core.errors import NotFound

    for change in (story_retry_failed, story_delete):
        with pytest.raises(NotFound):
            change(story_id=2**70, account_id=account.pk)


def test_a_channel_or_medium_id_beyond_the_databases_range_is_not_found(account):
    for arguments, field in (
        ({"channels": [ChannelChoice(2**64)]}, "channels[0].id"),
        ({"media": [{"medium": 2**64}]}, "media[0].medium"),
    ):
        with pytest.raises(InvalidInput) as refused:
            story_create(account_id=account.pk, writer=EDITOR, title="Huge", **arguments)
        assert field in str(refused.value)
