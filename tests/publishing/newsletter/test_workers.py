"""An edition sent by a real Celery worker (the Procfile's, on Redis and PostgreSQL) to a real SMTP
server: killed with SIGKILL in the middle of a send and started again, it mails nobody twice and
resumes within a minute (it releases the jobs of its dead former self); a mail server that hangs
holds no other channel's publishing."""

import os
import subprocess
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.posts.editor_status import post_publish_now
from apps.posts.models import Post
from apps.posts.services import post_create
from apps.publishing import services, workers
from apps.publishing.git.services import GitSettings, git_destination_save
from apps.publishing.models import PublicationJob
from apps.publishing.newsletter import marks
from apps.publishing.newsletter.models import Delivery, Edition
from tests.conftest import requires_broker, wait_until
from tests.factories import ChannelFactory, NewsletterChannelFactory, PublicationJobFactory
from tests.publishing.conftest import files, make_bare_repository
from tests.publishing.newsletter.conftest import subscribe


def real_worker(test):
    """A test with a real worker: it shares the test database, so the test's writes are committed."""
    return requires_broker(pytest.mark.django_db(transaction=True)(test))


AUDIENCE = 400
# Long enough for the send to be caught in its middle, short enough for a quick test.
DELAY = 0.01
# A job's lease (2x PUBLISH_TIMEOUT + 10 s): a send that resumes within a minute did not wait for it.
LEASE = 70
RESUMES_WITHIN = 50


@real_worker
def test_a_worker_killed_in_the_middle_of_a_send_resumes_when_started_again_and_mails_nobody_twice(
    start_worker, smtp_server
):
    smtp_server.delay = DELAY
    channel = NewsletterChannelFactory()
    subscribe(channel, AUDIENCE)
    worker = start_worker(**smtp_server.worker_env(), NEWSLETTER_SEND_RATE=0)
    post = post_create(channel=channel, title="Spring issue", body="Hello.")
    post_publish_now(post_id=post.pk)

    wait_until(lambda: len(smtp_server.received) >= AUDIENCE // 4, timeout=30)
    worker.kill()
    received_before = len(smtp_server.received)
    assert received_before < AUDIENCE, "the send ended before the worker was killed"
    job = PublicationJob.objects.get(post_id=post.pk)
    assert job.state == "running" and job.locked_by.startswith("celery@"), worker.log_tail()

    start_worker(**smtp_server.worker_env(), NEWSLETTER_SEND_RATE=0)
    wait_until(lambda: Post.objects.get(pk=post.pk).publication_status == "published", timeout=RESUMES_WITHIN)

    received = smtp_server.count_by_address()
    assert set(received.values()) == {1}, "an address received two copies"
    records = dict(Delivery.objects.filter(edition__post_id=post.pk).values_list("subscriber__email", "state"))
    uncertain = {email for email, state in records.items() if state == "uncertain"}
    # Only the messages out unmarked when the worker died are in doubt, at most one window of the
    # batch in flight; nobody else went without.
    assert len(uncertain) <= marks.WINDOW
    assert all(records[email] == "uncertain" for email in set(records) - set(received))
    assert set(records) - set(received) <= uncertain
    assert {email for email, state in records.items() if state == "sent"} <= set(received)
    edition = Edition.objects.get(post_id=post.pk)
    assert edition.recipients() == {
        "total": AUDIENCE,
        "pending": 0,
        "sent": AUDIENCE - len(uncertain),
        "failed": 0,
        "suppressed": 0,
        "uncertain": len(uncertain),
    }
    assert PublicationJob.objects.get(post_id=post.pk).state == "succeeded"


@real_worker
def test_a_hanging_mail_server_holds_neither_another_newsletters_edition_nor_a_git_publication(
    start_worker, smtp_server, tmp_path
):
    start_worker(
        **smtp_server.worker_env(),
        NEWSLETTER_SEND_RATE=0,
        EMAIL_TIMEOUT=30,
        GIT_ALLOW_LOCAL_REPOSITORIES="true",
        GIT_CACHE_DIR=tmp_path / "worker-git-cache",
    )
    stuck = NewsletterChannelFactory(title="Stuck")
    subscribe(stuck, 2, prefix="stuck")
    smtp_server.hang_for("stuck0@example.com")
    post_publish_now(post_id=post_create(channel=stuck, title="Never gets far").pk)
    wait_until(lambda: smtp_server.hanging == 1, timeout=15)

    other = NewsletterChannelFactory(title="Healthy")
    subscribe(other, 3, prefix="healthy")
    healthy = post_create(channel=other, title="Gets through")
    post_publish_now(post_id=healthy.pk)
    bare = make_bare_repository(tmp_path / "site.git")
    git_channel = ChannelFactory(platform="git")
    git_destination_save(
        channel=git_channel,
        settings=GitSettings(repository_url=str(bare), author_name="Pat", author_email="pat@example.com"),
    )
    post_publish_now(post_id=post_create(channel=git_channel, title="Also gets through", body="Hi.").pk)

    wait_until(lambda: Post.objects.get(pk=healthy.pk).publication_status == "published", timeout=15)
    wait_until(lambda: bool(files(bare)), timeout=15)
    assert Counter(address for address in smtp_server.count_by_address() if address.startswith("healthy")) == {
        f"healthy{n}@example.com": 1 for n in range(3)
    }
    # ...while the stuck edition still waits on its server.
    assert smtp_server.hanging == 1
    assert PublicationJob.objects.get(channel=stuck).state == "running"


@pytest.mark.django_db
def test_a_worker_started_again_releases_the_jobs_of_its_dead_former_self_and_no_one_elses(monkeypatch):
    monkeypatch.setattr(workers, "_worker", {"identity": ""})
    me = workers.worker_started(node_name="celery@box")
    dead_pid = _finished_pid()
    alive_pid = os.getppid()

    def job(holder: str, state: str = "running") -> PublicationJob:
        return PublicationJobFactory(
            state=state, locked_by=holder, locked_until=timezone.now() + timedelta(seconds=LEASE)
        )

    crashed = job(f"celery@box {dead_pid} 1a2b3c")
    same_process_id = job(f"celery@box {os.getpid()} 4d5e6f")  # a restarted container's former self
    twin = job(f"celery@box {alive_pid} 7a8b9c")  # another worker given the same name, still running
    elsewhere = job(f"celery@other {dead_pid} 1a2b3c")
    mine = job(me)
    done = job(f"celery@box {dead_pid} 1a2b3c", state="succeeded")

    assert workers.jobs_release_former(identity=me) == 2

    states = {job.pk: (job.state, job.locked_until) for job in PublicationJob.objects.all()}
    assert states[crashed.pk] == states[same_process_id.pk] == ("queued", None)
    for held in (twin, elsewhere, mine):
        assert states[held.pk][0] == "running" and states[held.pk][1] is not None
    assert states[done.pk][0] == "succeeded"
    # A job claimed by this worker says so.
    queued = PublicationJob.objects.get(pk=crashed.pk)
    assert services._claim_head(queued.channel_id).locked_by == me


def _finished_pid() -> int:
    """The id of a process that has ended."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid
