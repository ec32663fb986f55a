"""The worker's git cache (GIT_CACHE_DIR) is shared by its processes: one at a time uses a copy, a
process that wants it waits while its holder lives, and what a holder killed in the middle of a
write leaves behind (git's lock files, a half-written pack) no longer blocks the channel's jobs."""

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from apps.posts.editor_status import post_publish_now
from apps.posts.services import post_create
from apps.publishing.git import cache
from apps.publishing.models import PublicationJob
from apps.publishing.services import channel_run
from tests.conftest import wait_until
from tests.publishing.conftest import files, history

pytestmark = pytest.mark.django_db

# Another process of the worker, caught in the middle of a fetch into the copy: the branch's ref
# being written (its lock file made), a loose object and a pack on their way in. It waits to be killed.
HOLDER = """
import os, sys, tempfile
import django
django.setup()
from dulwich.file import GitFile
from apps.publishing.git import cache
with cache.cached_copy(sys.argv[1]) as repo:
    ref = GitFile(os.path.join(repo.path, "refs", "heads", "main"), "wb")
    os.makedirs(os.path.join(repo.path, "objects", "ab"), exist_ok=True)
    loose = GitFile(os.path.join(repo.path, "objects", "ab", "cdef" * 9 + "0123"), "wb")
    tempfile.mkstemp(dir=os.path.join(repo.path, "objects"), prefix="tmp_pack_")
    print("holding", flush=True)
    sys.stdin.read()
"""


def publish(channel, title: str):
    post = post_create(channel=channel, title=title, body="Words.\n")
    post_publish_now(post_id=post.pk)
    channel_run(channel.pk)
    return PublicationJob.objects.filter(post_id=post.pk).get()


def start_holder(url: str) -> subprocess.Popen:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "GIT_CACHE_DIR": str(settings.GIT_CACHE_DIR)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=settings.BASE_DIR,
        start_new_session=True,
    )
    assert holder.stdout.readline() == b"holding\n"
    return holder


def stale_files(copy: Path) -> list[str]:
    return sorted(str(path.relative_to(copy)) for path in [*copy.rglob("*.lock"), *copy.rglob("tmp_pack_*")])


def test_a_copy_is_waited_for_while_its_holder_lives_and_what_a_killed_holder_left_no_longer_blocks_publishing(
    git_channel, bare_repo
):
    assert publish(git_channel, "Before").state == "succeeded"
    url = str(bare_repo)
    [copy] = Path(settings.GIT_CACHE_DIR).glob("*.git")

    holder = start_holder(url)
    left = stale_files(copy)
    assert "refs/heads/main.lock" in left and "objects/ab/" + "cdef" * 9 + "0123.lock" in left
    assert [name for name in left if name.startswith("objects/tmp_pack_")]
    # This process waits for the copy while its holder lives: its locks are not touched.
    entered = threading.Event()

    def use_the_copy():
        with cache.cached_copy(url):
            entered.set()

    waiting = threading.Thread(target=use_the_copy)
    waiting.start()
    assert not entered.wait(timeout=1)
    assert "refs/heads/main.lock" in stale_files(copy)

    # Killed where it stood: the kernel lets go of its hold, and the next holder clears what it left.
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=10)
    wait_until(entered.is_set, timeout=10)
    waiting.join(timeout=10)
    assert stale_files(copy) == []

    # The channel's jobs go on: no FileLocked, the post committed.
    job = publish(git_channel, "After")
    assert job.state == "succeeded", job.last_error
    assert job.reference == history(bare_repo)[0].id.decode()
    assert job.path in files(bare_repo)


def test_a_ref_lock_left_by_a_killed_worker_is_cleared_by_the_next_job_itself(git_channel, bare_repo):
    assert publish(git_channel, "Before").state == "succeeded"
    [copy] = Path(settings.GIT_CACHE_DIR).glob("*.git")
    holder = start_holder(str(bare_repo))
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=10)
    assert "refs/heads/main.lock" in stale_files(copy)

    job = publish(git_channel, "After")

    assert job.state == "succeeded", job.last_error
    assert job.reference == history(bare_repo)[0].id.decode()
    assert stale_files(copy) == []


def test_a_stale_lock_the_copy_does_not_know_of_costs_one_attempt_not_the_channels_jobs(git_channel, bare_repo):
    # As a machine that lost power may leave it: the lock file on disk, the copy's lock file saying
    # that its last holder ended cleanly.
    assert publish(git_channel, "Before").state == "succeeded"
    [copy] = Path(settings.GIT_CACHE_DIR).glob("*.git")
    (copy / "refs" / "heads" / "main.lock").write_bytes(b"")

    job = publish(git_channel, "After")
    assert job.state == "queued" and "FileLocked" in job.last_error  # tried again later

    PublicationJob.objects.filter(pk=job.pk).update(next_attempt_at=timezone.now())
    channel_run(git_channel.pk)
    job.refresh_from_db()
    assert job.state == "succeeded", job.last_error
    assert job.reference == history(bare_repo)[0].id.decode()
    assert stale_files(copy) == []
