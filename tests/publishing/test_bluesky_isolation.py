"""A Bluesky server that hangs delays no git publication and no webhook delivery: a real Celery
worker (the Procfile's, two processes) on Redis and PostgreSQL, the fake PDS and a git remote on
127.0.0.1. The Bluesky job that hung ends at its timeout, to be tried again: the post is not lost,
and its retry finds no record at its key and posts it once."""

import json
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from apps.posts.editor_status import post_publish_now
from apps.posts.models import PublicationStatus
from apps.posts.services import post_create
from apps.publishing.bluesky.models import SentRecord
from apps.publishing.git.services import GitSettings, git_destination_save
from apps.publishing.models import JobState, PublicationJob
from apps.publishing.services import enqueue_channels
from apps.webhooks.models import Event
from apps.webhooks.services import event_emit
from tests.conftest import requires_broker, wait_until
from tests.factories import AccountFactory, ChannelFactory, WebhookEndpointFactory
from tests.publishing.conftest import files, front_matter, make_bare_repository

pytestmark = [requires_broker, pytest.mark.django_db(transaction=True)]

PUBLISH_TIMEOUT = 12
# Well within PUBLISH_TIMEOUT: what arrives by then did not wait for Bluesky to time out.
ARRIVAL = 9
CREATE = "/xrpc/com.atproto.repo.createRecord"


def test_a_hanging_bluesky_server_delays_neither_a_git_publication_nor_a_webhook_delivery_and_its_post_is_retried(
    start_worker, bluesky, bluesky_channel, receiver, private_targets, tmp_path
):
    worker = start_worker(
        PUBLISH_TIMEOUT=PUBLISH_TIMEOUT,
        GIT_ALLOW_LOCAL_REPOSITORIES="true",
        WEBHOOK_ALLOW_PRIVATE_TARGETS="true",
        GIT_CACHE_DIR=tmp_path / "worker-git-cache",
        BLUESKY_RESOLVER_URL=bluesky.directory.url,
        BLUESKY_DIRECTORY_URL=bluesky.directory.url,
        BLUESKY_ALLOW_LOCAL_SERVERS="true",
    )
    bluesky.hang(60, method="POST", path=CREATE, times=1)
    stuck = post_create(channel=bluesky_channel, title="Stuck at Bluesky", body="Hello, network.")
    post_publish_now(post_id=stuck.pk)
    wait_until(lambda: bool(bluesky.calls("POST", CREATE)), timeout=ARRIVAL)

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
    # ...while Bluesky still holds the create request, unanswered and not carried out.
    job = PublicationJob.objects.get(post_id=stuck.pk)
    assert (job.state, job.attempts) == (JobState.RUNNING, 1), worker.log_tail()
    assert len(bluesky.calls("POST", CREATE)) == 1 and bluesky.posts() == {}

    # At its timeout the job gives up this attempt and waits for the next one.
    wait_until(lambda: PublicationJob.objects.get(pk=job.pk).state != JobState.RUNNING, timeout=PUBLISH_TIMEOUT + 15)
    job.refresh_from_db()
    assert job.state == JobState.QUEUED, (job.last_error, worker.log_tail())
    assert job.last_error.startswith("Bluesky did not answer") and "tried again" in job.last_error
    stuck.refresh_from_db()
    assert stuck.publication_status == PublicationStatus.DRAFT
    assert not Event.objects.filter(kind="post.failed").exists()

    # The retry reads the key it chose (no record there: the hung request was never carried out) and posts, once.
    PublicationJob.objects.filter(pk=job.pk).update(next_attempt_at=timezone.now() - timedelta(seconds=1))
    enqueue_channels([bluesky_channel.pk])
    wait_until(lambda: PublicationJob.objects.get(pk=job.pk).state == JobState.SUCCEEDED, timeout=ARRIVAL)
    job.refresh_from_db()
    sent = SentRecord.objects.get(job_id=job.pk)
    assert list(bluesky.posts()) == [sent.rkey]
    assert (job.attempts, job.reference) == (2, sent.uri)
    assert [request.body["rkey"] for request in bluesky.calls("POST", CREATE)] == [sent.rkey, sent.rkey]
    assert len(bluesky.calls("GET", "/xrpc/com.atproto.repo.getRecord")) == 1
    stuck.refresh_from_db()
    assert stuck.publication_status == PublicationStatus.PUBLISHED
