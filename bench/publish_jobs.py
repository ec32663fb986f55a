"""What the parts that publish (6, publishing, and 9, the newsletter) share: the Procfile's worker,
a git channel, and publish jobs written as the content plan writes them."""

import time

from bench.common import WORK, Process, worker

# The workers' git cache, in the publishing part's folder (which that part empties at its start).
GIT_CACHE = WORK / "publishing" / "worker-cache"


def start_worker(name: str, env: dict | None = None) -> Process:
    """The Procfile's worker on the bench's queue, with a git cache of this part's own and `env`;
    started."""
    started = worker(name, {"GIT_CACHE_DIR": str(GIT_CACHE), **(env or {})})
    started.wait_for_log(" ready.")
    return started


def git_channel(account, team, title: str, url: str):
    from apps.channels.models import Channel
    from apps.publishing.git.services import GitSettings, git_destination_save

    channel = Channel.objects.create(account=account, team=team, title=title, platform="git")
    git_destination_save(
        channel=channel,
        settings=GitSettings(repository_url=url, author_name="Bench Publisher", author_email="bench@example.com"),
    )
    return channel


def enqueue_publish(post_ids: list[int]) -> float:
    """One transaction of a publish job for each of the posts (as the content plan writes them);
    returns its commit time."""
    from django.db import transaction

    from apps.posts.models import Post
    from apps.publishing.models import JobAction
    from apps.publishing.services import JobInput, jobs_enqueue

    posts = Post.objects.filter(pk__in=post_ids).order_by("id").values_list("id", "channel_id", "title")
    committed: list[float] = []
    with transaction.atomic():
        # Registered before the pipeline's own hook (the broker hand-over), so it runs right at COMMIT.
        transaction.on_commit(lambda: committed.append(time.time()))
        jobs_enqueue(
            items=[
                JobInput(channel_id=channel_id, post_id=pk, title=title, action=JobAction.PUBLISH)
                for pk, channel_id, title in posts
            ]
        )
    return committed[0]


# --- 1. the pipeline ------------------------------------------------------------------------------
