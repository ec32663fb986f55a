"""A story published to several destinations whose jobs are confirmed at the same moment, by two
workers, is announced once: the story's row is locked while its state is read, so the second
confirmation reads the first's."""

import time
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from apps.posts.models import Post
from apps.posts.pipeline_subject import post_publication_confirmed
from apps.posts.writing import Writer
from apps.publishing.models import JobState, PublicationJob
from apps.stories import announcements
from apps.stories.models import Story
from apps.stories.services import ChannelChoice, story_create
from apps.webhooks.models import Event
from tests.conftest import requires_postgres, run_together
from tests.factories import AccountFactory, GitDestinationFactory

pytestmark = [pytest.mark.django_db(transaction=True), requires_postgres]


def confirm(job_id: int) -> None:
    with transaction.atomic():
        job = PublicationJob.objects.get(pk=job_id)
        job.state, job.finished_at = JobState.SUCCEEDED, timezone.now()
        job.published_at = timezone.now() - timedelta(seconds=1)
        job.save()
        post_publication_confirmed(job=job)


def test_two_destinations_confirmed_at_once_announce_the_story_once(monkeypatch):
    account = AccountFactory()
    channels = [GitDestinationFactory(channel__account=account).channel for _ in range(2)]
    story = story_create(
        account_id=account.pk,
        writer=Writer(may_publish=True),
        title="Twice at once",
        publication_status="published",
        channels=[ChannelChoice(channel.pk) for channel in channels],
    )
    jobs = list(PublicationJob.objects.filter(post_id__in=Post.objects.filter(story_link__story=story)))
    assert len(jobs) == 2
    read = announcements.with_destinations

    def slow_read(stories):
        # Both confirmations would read the story's posts inside this window if nothing serialized them.
        found = read(stories)
        time.sleep(0.5)
        return found

    monkeypatch.setattr(announcements, "with_destinations", slow_read)
    results = run_together([lambda: confirm(jobs[0].pk), lambda: confirm(jobs[1].pk)])
    assert results == [None, None]
    assert Event.objects.filter(kind="story.published").count() == 1
    assert Story.objects.get(pk=story.pk).announced == "published"
