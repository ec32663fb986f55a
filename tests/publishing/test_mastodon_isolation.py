"""A hanging Mastodon instance delays no git publication and no webhook delivery: a real Celery worker
(the Procfile's, two processes) on Redis and PostgreSQL, the Mastodon fake and a git remote on
127.0.0.1. The Mastodon job that hung ends at its timeout, to be tried again: the post is not lost,
and the retry looks for a status the lost attempt made before it posts: once."""

import json
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from apps.posts.editor_status import post_publish_now
from apps.posts.models import PublicationStatus
from apps.posts.services import post_create
from apps.publishing.git.services import GitSettings, git_destination_save
from apps.publishing.mastodon.models import SentStatus
from apps.publishing.models import JobState, PublicationJob
from apps.publishing.services import enqueue_channels
from apps.webhooks.models import Event
from apps.webhooks.services import event_emit
from tests.conftest import requires_broker, wait_until
from tests.factories import AccountFactory, ChannelFactory, WebhookEndpointFactory
from tests.publishing.conftest import files, front_matter, make_bare_repository
from tests.publishing.mastodon_fake import connected_channel

pytestmark = [requires_broker, pytest.mark.django_db(transaction=True)]

PUBLISH_TIMEOUT = 12
# Well within PUBLISH_TIMEOUT: what arrives by then did not wait for the instance to time out.
ARRIVAL = 9


def test_a_hanging_instance_delays_neither_a_git_publication_nor_a_webhook_delivery_and_its_post_is_retried(
    start_worker, mastodon, receiver, private_targets, tmp_path
):
    worker = start_worker(
        PUBLISH_TIMEOUT=PUBLISH_TIMEOUT,
        GIT_ALLOW_LOCAL_REPOSITORIES="true",
        WEBHOOK_ALLOW_PRIVATE_TARGETS="true",
        GIT_CACHE_DIR=tmp_path / "worker-git-cache",
        MASTODON_ALLOW_LOCAL_INSTANCES="true",
    )
    mastodon_channel = connected_channel(mastodon)
    mastodon.hang(60, method="POST", path="/api/v1/statuses", times=1)
    stuck = post_create(channel=mastodon_channel, title="Stuck at the instance", body="Hello, fediverse.")
    post_publish_now(post_id=stuck.pk)
    wait_until(lambda: bool(mastodon.calls("POST", "/api/v1/statuses")), timeout=ARRIVAL)

    bare = make_bare_repository(tmp_path / "healthy.git")
    git_account = AccountFactory()
    WebhookEndpointFactory(account=git_account, url=receiver.url, events=["post.published"])
    git_channel = ChannelFactory(platform="git", account=git_account)
    git_destination_save(
        channel=git_channel,
        settings=GitSettings(repository_url=str(bare), author_name="Pat Publisher", author_email="pat@example.com"),
    )
    post = post_create(channel=git_channel, title="Gets through", body="Hello.")
    post_publish_now(post_id=post.pk)
    other_account = AccountFactory()
    WebhookEndpointFactory(account=other_account, url=receiver.url, events=["post.updated"])
    with transaction.atomic():
        event_emit(account=other_account, kind="post.updated", data={"post": {"id": 1}})

    wait_until(lambda: bool(files(bare)), timeout=ARRIVAL)
    [content] = files(bare).values()
    assert front_matter(content)[0]["title"] == "Gets through", worker.log_tail()
    arrived = receiver.wait_for(2, timeout=ARRIVAL)
    assert sorted(json.loads(r.body)["event"] for r in arrived) == ["post.published", "post.updated"]
    # ...while the instance still holds the create request, unanswered and not carried out.
    job = PublicationJob.objects.get(post_id=stuck.pk)
    assert (job.state, job.attempts) == (JobState.RUNNING, 1), worker.log_tail()
    assert len(mastodon.calls("POST", "/api/v1/statuses")) == 1 and mastodon.statuses == {}

    # At its timeout the job gives up this attempt and waits for the next one.
    wait_until(lambda: PublicationJob.objects.get(pk=job.pk).state != JobState.RUNNING, timeout=PUBLISH_TIMEOUT + 15)
    job.refresh_from_db()
    assert job.state == JobState.QUEUED, (job.last_error, worker.log_tail())
    assert job.last_error.startswith("The Mastodon instance did not answer") and "tried again" in job.last_error
    assert job.next_attempt_at > timezone.now()
    stuck.refresh_from_db()
    assert stuck.publication_status == PublicationStatus.DRAFT
    assert not Event.objects.filter(kind="post.failed").exists()

    # The retry, once due, looks for a status the lost attempt made, finds none, and posts it: once.
    PublicationJob.objects.filter(pk=job.pk).update(next_attempt_at=timezone.now() - timedelta(seconds=1))
    enqueue_channels([mastodon_channel.pk])
    wait_until(lambda: PublicationJob.objects.get(pk=job.pk).state == JobState.SUCCEEDED, timeout=ARRIVAL)
    job.refresh_from_db()
    [status] = mastodon.statuses.values()
    assert (job.attempts, job.reference) == (2, status.id)
    assert status.text.startswith("Stuck at the instance\n\nHello, fediverse.")
    assert len(mastodon.calls("GET", "/api/v1/accounts/109/statuses")) == 1  # the look-up before sending again
    assert SentStatus.objects.get(job_id=job.pk).status_id == status.id
    stuck.refresh_from_db()
    assert stuck.publication_status == PublicationStatus.PUBLISHED
