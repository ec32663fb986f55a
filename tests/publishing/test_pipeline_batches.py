"""A channel's jobs claimed, carried out and recorded a batch at a time (apps/publishing/runs.py):
one transaction records a batch, its posts confirmed in one statement and their events in one
insert; a job's later attempt recognises the commit an earlier one pushed; and a real worker killed
with SIGKILL in the middle of a batch loses nothing and commits nothing twice."""

import re
from collections import Counter
from dataclasses import replace

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from apps.core.destinations import JobContext, subject
from apps.posts.editor_status import post_publish_now
from apps.posts.models import Post
from apps.posts.services import post_create
from apps.publishing import runs
from apps.publishing.git import repository
from apps.publishing.git.destination import load
from apps.publishing.git.services import GitSettings, git_destination_save
from apps.publishing.models import JobAction, PublicationJob
from apps.publishing.services import JobInput, channel_run, jobs_enqueue
from apps.webhooks.models import Event
from tests.conftest import requires_broker, wait_until
from tests.factories import ChannelFactory, TagFactory
from tests.publishing.conftest import files, front_matter, history, make_bare_repository
from tests.publishing.git_http_server import GitHttpServer

pytestmark = pytest.mark.django_db

JOB_TRAILER = re.compile(rb"\nPublication-Job-Id: (\d+)\n")


def draft_posts(channel, n: int) -> list[Post]:
    return [post_create(channel=channel, title=f"Post {number}", body=f"Words {number}.\n") for number in range(n)]


def enqueue(posts: list[Post]) -> None:
    """One publish job for each post, written together (as the content plan writes them)."""
    with transaction.atomic():
        jobs_enqueue(
            items=[
                JobInput(channel_id=p.channel_id, post_id=p.pk, title=p.title, action=JobAction.PUBLISH) for p in posts
            ]
        )


def commits_by_job(bare) -> Counter:
    """How many commits of the branch name each job."""
    return Counter(int(match.group(1)) for commit in history(bare) for match in JOB_TRAILER.finditer(commit.message))


def statements(queries, start: str, table: str) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if q["sql"].startswith(start) and f'"{table}"' in q["sql"]]


def test_a_batch_of_jobs_is_recorded_in_one_transaction_its_posts_confirmed_in_one_statement_and_announced_once_each(
    git_channel, bare_repo
):
    posts = draft_posts(git_channel, 6)
    enqueue(posts)
    with CaptureQueriesContext(connection) as queries:
        assert channel_run(git_channel.pk) == 6
    # One claim and one record of the jobs, one confirmation of the posts, one insert of the events.
    assert len(statements(queries, "UPDATE", "publishing_publicationjob")) == 2
    assert len(statements(queries, "UPDATE", "posts_post")) == 1
    assert len(statements(queries, "INSERT", "webhooks_event")) == 1
    # The destination was loaded once for the run.
    assert len(statements(queries, "SELECT", "publishing_git_gitdestination")) == 1
    assert set(Post.objects.filter(channel=git_channel).values_list("publication_status", flat=True)) == {"published"}
    announced = Counter(Event.objects.filter(kind="post.published").values_list("post_id", flat=True))
    assert announced == Counter({post.pk: 1 for post in posts})
    # Each job's reference is its own commit, each commit named by its job once.
    jobs = PublicationJob.objects.filter(post_id__in=[p.pk for p in posts])
    commits = {commit.id.decode(): commit for commit in history(bare_repo)}
    for job in jobs:
        assert job.state == "succeeded" and job.finished_at is not None
        assert f"Publication-Job-Id: {job.pk}\n" in commits[job.reference].message.decode()
        assert job.published_at == Post.objects.get(pk=job.post_id).published_at
    assert commits_by_job(bare_repo) == Counter({job.pk: 1 for job in jobs})


def test_a_batch_reads_its_posts_documents_in_as_many_queries_whatever_its_size(git_channel, bare_repo):
    tags = [TagFactory(account=git_channel.account, name=name) for name in ("python", "django")]

    def run(n: int) -> tuple[int, list[Post]]:
        posts = [post_create(channel=git_channel, title=f"Post {n}.{k}", body="Words.\n", tags=tags) for k in range(n)]
        enqueue(posts)
        with CaptureQueriesContext(connection) as queries:
            assert channel_run(git_channel.pk) == n
        return len(queries), posts

    run(1)  # what a first run of the process reads once
    few, _ = run(2)
    many, posts = run(12)
    # The posts, their tags, their images and blog links are read for the batch, not for each job.
    assert many == few
    published = files(bare_repo)
    for job in PublicationJob.objects.filter(post_id__in=[post.pk for post in posts]):
        matter, body = front_matter(published[job.path])
        assert (matter["tags"], matter["id"], body) == (["django", "python"], job.post_id, "\nWords.\n")


def test_a_batch_that_runs_long_reads_the_documents_of_its_later_jobs_again(git_channel, bare_repo, monkeypatch):
    first, second = draft_posts(git_channel, 2)
    enqueue([first, second])
    pushed = repository.commit_and_push

    def push_then_the_second_post_is_edited(*args, **kwargs):
        commit = pushed(*args, **kwargs)
        Post.objects.filter(pk=second.pk).update(body="Edited while the first job ran.\n")
        return commit

    monkeypatch.setattr(repository, "commit_and_push", push_then_the_second_post_is_edited)
    monkeypatch.setattr(runs, "DOCUMENTS_FRESH", 0.0)  # every job runs long after the batch's read
    assert channel_run(git_channel.pk) == 2

    job = PublicationJob.objects.get(post_id=second.pk)
    assert front_matter(files(bare_repo)[job.path])[1] == "\nEdited while the first job ran.\n"


def test_a_posts_second_job_waits_for_the_first_to_be_recorded_and_keeps_the_date_it_published_with(
    git_channel, bare_repo
):
    post = post_create(channel=git_channel, title="Hello", body="First.\n")
    with transaction.atomic():
        jobs_enqueue(
            items=[
                JobInput(channel_id=git_channel.pk, post_id=post.pk, title=post.title, action=action)
                for action in (JobAction.PUBLISH, JobAction.UPDATE)
            ]
        )
    with CaptureQueriesContext(connection) as queries:
        assert channel_run(git_channel.pk) == 2
    # Two batches: the update is claimed once the publication is recorded.
    assert len(statements(queries, "UPDATE", "publishing_publicationjob")) == 4
    publish, update = PublicationJob.objects.filter(post_id=post.pk).order_by("id")
    assert update.path == publish.path
    matter, _ = front_matter(files(bare_repo)[update.path])
    assert matter["date"] == publish.published_at == Post.objects.get(pk=post.pk).published_at


def test_a_later_attempt_finds_the_commit_its_earlier_one_pushed_even_under_a_later_change_of_its_file(
    git_channel, bare_repo
):
    post = post_create(channel=git_channel, title="Hello", body="First.\n")
    post_publish_now(post_id=post.pk)
    [job] = runs.claim(git_channel.pk)
    run = runs.Run(git_channel.pk)
    first = run.attempt(job)  # pushed, and (as in a crash) never recorded
    # A later change of the same file lands on top of it.
    publisher = load(git_channel.pk)
    document = subject().document(post_id=post.pk, action="update", published_at=job.published_at)
    context = JobContext(
        job_id=job.pk + 1000, post_id=post.pk, action="update", title="Hello", previous_path="", deadline=10**12
    )
    publisher.publish(context, replace(document, body="Changed since.\n"))
    commits = len(history(bare_repo))

    # The job's next attempt: it commits nothing, and names its own commit.
    again = runs.Run(git_channel.pk).attempt(job_with_attempt(job, 2))
    assert len(history(bare_repo)) == commits
    assert again.outcome.reference == first.outcome.reference
    assert again.outcome.path == first.outcome.path


def job_with_attempt(job: PublicationJob, attempt: int) -> PublicationJob:
    job.attempts = attempt
    return job


# --- a real worker killed in the middle of a batch ---------------------------------------------------

POSTS = 60


TOKEN = "gho-Secret-Token-0123456789abcdef"


@pytest.fixture
def served(tmp_path, settings):
    """A bare repository behind a smart-HTTP git server of its own (in the test's process, which a
    worker's kill does not reach, as a host's server would not be reached): what a killed worker
    leaves behind is its own."""
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True  # the server listens on 127.0.0.1
    bare = make_bare_repository(tmp_path / "served" / "site.git")
    server = GitHttpServer(tmp_path / "served", TOKEN).start()
    yield bare, server.url("site.git")
    server.stop()


@requires_broker
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_in_the_middle_of_a_batch_loses_nothing_and_commits_no_job_twice(
    start_worker, served, tmp_path
):
    bare, url = served
    channel = ChannelFactory(platform="git")
    setup = GitSettings(repository_url=url, author_name="Pat Publisher", author_email="pat@example.com")
    git_destination_save(channel=channel, settings=setup, token=TOKEN)
    posts = draft_posts(channel, POSTS)
    # The worker's git cache is left as the kill leaves it: a ref lock of a fetch cut short is the
    # next holder's to clear (apps/publishing/git/repository.py).
    env = {"GIT_ALLOW_LOCAL_REPOSITORIES": "true", "GIT_CACHE_DIR": tmp_path / "worker-git-cache"}
    worker = start_worker(**env)
    enqueue(posts)
    jobs = PublicationJob.objects.filter(channel=channel)

    def pushed_not_recorded() -> bool:
        recorded = jobs.filter(state="succeeded").count()
        return recorded >= runs.BATCH and len(history(bare)) >= recorded + 3

    wait_until(pushed_not_recorded, timeout=60, step=0.01)
    worker.kill()
    pushed, recorded = len(history(bare)), jobs.filter(state="succeeded").count()
    # Several jobs pushed and not recorded: their next attempts must each find their own commit.
    assert recorded + 3 <= pushed < POSTS, "the worker was not caught between a batch's pushes and its record"

    again = start_worker(**env)
    try:
        wait_until(lambda: jobs.filter(state="succeeded").count() == POSTS, timeout=180)
    except AssertionError:
        pytest.fail(f"{list(jobs.exclude(state='succeeded').values_list('state', 'last_error'))}\n{again.log_tail()}")

    # Nothing lost: every post published and announced once; nothing twice: one commit per job.
    assert commits_by_job(bare) == Counter({job.pk: 1 for job in jobs})
    assert len(history(bare)) == POSTS
    assert set(Post.objects.filter(channel=channel).values_list("publication_status", flat=True)) == {"published"}
    announced = Counter(Event.objects.filter(kind="post.published").values_list("post_id", flat=True))
    assert announced == Counter({post.pk: 1 for post in posts})
    # The jobs the crash left unrecorded ran again and named the commits their first attempts made.
    commits = {commit.id.decode(): commit for commit in history(bare)}
    for job in jobs:
        assert f"\nPublication-Job-Id: {job.pk}\n" in commits[job.reference].message.decode()
    assert jobs.filter(attempts=2).count() >= pushed - recorded
