"""Part 6 of `make bench`: the publishing pipeline (issue 29) against its floor, and webhook
delivery while git remotes hang.

1. **Pipeline.** A git channel set up (`git_destination_save`) to commit to a local bare
   repository, POSTS draft posts, their publish jobs written by `jobs_enqueue` (as the content
   plan hands due posts over), then carried out as in production: a Celery worker started as the
   Procfile starts it (default settings: `PUBLISH_WORKERS`, `PUBLISH_TIMEOUT`; a `GIT_CACHE_DIR`
   of its own). The jobs go in batches of REPACK_EVERY, the remote repacked between two batches
   (see below); the time is the sum over the batches of the time from the start of the batch's
   enqueue to its last job's `finished_at`, the database polled until every job has succeeded.
2. **Floor.** A plain dulwich loop making the same commits (the pipeline's files, read back from
   its repository, with their messages and author) into a fresh bare repository: per file one
   fetch into a local cache repository, one commit on top of the fetched head, one push, as the
   pipeline does; the remote repacked after the same batches, outside the time. Its branch must
   end with the tree the pipeline's ends with.
3. **Webhooks while remotes hang.** A webhook endpoint (a bench/receiver.py process) gets streams
   of single-event transactions (part 4's latency: the receiver's arrival time less the commit
   time), taking turns in ROUNDS rounds: with nothing else to do, and while three git channels'
   remotes hang (TCP servers that accept connections and never answer), each channel with queued
   jobs whose first one holds a publisher thread until `PUBLISH_TIMEOUT`. A fresh worker for each
   run; the turns spread the machine's other load over both alike (bench/publishing_webhooks.py).

Why the repacks: dulwich writes every push into a local repository as a pack of its own and never
repacks, and every fetch and push opens the remote and reads each pack's index (looking for
bitmaps), so without them each job costs more than the one before: 250 commits of the floor took
43 s, 400 took 126 s (by hand, 2026-11-25). A git server repacks by itself (`git gc --auto` after
a push once there are more than gc.autoPackLimit, 50, packs); the remote here is repacked the same
way between batches, when no job touches it.
"""

import os
import re
import shutil
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.common import WORK, WORKER_CONCURRENCY, Process, fresh_directory, insert_posts, make_account
from bench.publish_jobs import enqueue_publish, git_channel, start_worker
from bench.publishing_webhooks import run_webhooks

POSTS = 1000
REPACK_EVERY = 50  # pushes between two repacks of the remote (git's gc.autoPackLimit)
PIPELINE_TIMEOUT = 600  # seconds the pipeline's jobs are waited for
BRANCH = "main"
PART_WORK = WORK / "publishing"


def bare_repository(path: Path):
    from dulwich.repo import Repo

    path.mkdir(parents=True)
    repo = Repo.init_bare(str(path))
    repo.refs.set_symbolic_ref(b"HEAD", f"refs/heads/{BRANCH}".encode())
    return repo


def repack(path: Path) -> None:
    """What a git server's `git gc --auto` does once pushes have left many packs: one pack. With
    git where installed (a quarter of a second at 1,000 commits; dulwich's repack, which rewrites
    every object in Python, about 4 s), without bitmaps, as dulwich's leaves it."""
    git = shutil.which("git")
    if git:
        subprocess.run(
            [git, "-C", str(path), "-c", "repack.writeBitmaps=false", "repack", "-a", "-d", "-q"], check=True
        )
        return
    from dulwich.repo import Repo

    with Repo(str(path)) as repo:
        repo.object_store.repack()


def _wait_succeeded(jobs, n: int, deadline: float, publisher: Process) -> None:
    from apps.publishing.models import JobState

    while (done := jobs.filter(state=JobState.SUCCEEDED).count()) < n:
        trouble = jobs.exclude(last_error="").values_list("id", "state", "last_error").first()
        if trouble:
            raise RuntimeError(f"publication job {trouble[0]} is {trouble[1]}: {trouble[2]}; see {publisher.log_path}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{done} of {n} jobs succeeded after {PIPELINE_TIMEOUT} s; see {publisher.log_path}")
        time.sleep(0.05)


def run_pipeline(n: int) -> dict:
    from django.db.models import Max

    from apps.channels.models import Team
    from apps.posts.models import Post, Tag
    from apps.publishing.models import PublicationJob

    remote = PART_WORK / "pipeline.git"
    bare_repository(remote).close()
    account = make_account("Publishing bench")
    team = Team.objects.create(account=account, name="Editorial")
    channel = git_channel(account, team, "Site", str(remote))
    tags = [Tag.objects.create(account=account, name=name).pk for name in ("django", "news", "python")]
    insert_posts([channel.pk], n, status="draft", scheduled=False, tags=tags)
    post_ids = list(Post.objects.filter(channel=channel).order_by("id").values_list("id", flat=True))
    jobs = PublicationJob.objects.filter(channel=channel)
    batches = []
    publisher = start_worker("publishing-worker")
    try:
        deadline = time.monotonic() + PIPELINE_TIMEOUT
        for start in range(0, n, REPACK_EVERY):
            batch = post_ids[start : start + REPACK_EVERY]
            began = time.time()
            committed = enqueue_publish(batch)
            _wait_succeeded(jobs.filter(post_id__in=batch), len(batch), deadline, publisher)
            finished = jobs.filter(post_id__in=batch).aggregate(last=Max("finished_at"))["last"].timestamp()
            batches.append({"seconds": finished - began, "enqueue_seconds": committed - began})
            if start + len(batch) < n:
                repack(remote)
            if (start // REPACK_EVERY) % 4 == 3:
                print(f"  pipeline: {start + len(batch)} of {n} jobs succeeded", flush=True)
        attempts = sum(jobs.values_list("attempts", flat=True))
    finally:
        publisher.stop()
    durations = [int(ms) for ms in re.findall(r"publication job=\d+ .*duration_ms=(\d+)", publisher.log_text())]
    seconds = sum(batch["seconds"] for batch in batches)
    published = Post.objects.filter(channel=channel, publication_status="published").count()
    if published != n or attempts != n:
        raise RuntimeError(f"pipeline: {published} posts published, {attempts} attempts, for {n} posts")
    print(f"  pipeline: {n} jobs in {seconds:.1f} s, {n / seconds:.1f} jobs/s", flush=True)
    return {
        "posts": n,
        "seconds": seconds,
        "batch_seconds": [batch["seconds"] for batch in batches],
        "enqueue_seconds": [batch["enqueue_seconds"] for batch in batches],
        "attempts": attempts,
        "published": published,
        "job_ms": durations,
        "remote": remote,
    }


# --- 2. the floor ---------------------------------------------------------------------------------


def pipeline_commits(remote: Path) -> tuple[list[dict], bytes]:
    """The pipeline's commits on the branch, oldest first: the one file each wrote, its message and
    author; and the tree of the branch's head."""
    from dulwich.repo import Repo

    with Repo(str(remote)) as repo:
        head = repo.refs[f"refs/heads/{BRANCH}".encode()]
        commits = []
        for entry in repo.get_walker(include=[head], reverse=True):
            changes = entry.changes()
            if len(changes) != 1 or changes[0].new is None:
                raise RuntimeError(f"pipeline commit {entry.commit.id.decode()} is not one file added or changed")
            new = changes[0].new
            commits.append(
                {
                    "path": new.path,
                    "content": repo[new.sha].data,
                    "message": entry.commit.message,
                    "author": entry.commit.author,
                }
            )
        return commits, repo[head].tree


def trees_along(store, root: bytes, path: bytes) -> list[bytes]:
    ids, tree = [root], store[root]
    for part in path.split(b"/")[:-1]:
        _, sha = tree[part]
        ids.append(sha)
        tree = store[sha]
    return ids


def run_floor(commits: list[dict]) -> dict:
    """The same commits with dulwich alone: per file a fetch into the cache, a commit, a push."""
    import stat

    from dulwich.client import LocalGitClient
    from dulwich.object_store import commit_tree_changes
    from dulwich.objects import Blob, Commit, Tree
    from dulwich.pack import pack_objects_to_data
    from dulwich.repo import Repo

    remote, cache_path = PART_WORK / "floor.git", PART_WORK / "floor-cache.git"
    bare_repository(remote).close()
    cache = bare_repository(cache_path)
    ref = f"refs/heads/{BRANCH}".encode()
    client, store = LocalGitClient(), cache.object_store
    empty = Tree()
    store.add_object(empty)
    batches = []
    for start in range(0, len(commits), REPACK_EVERY):
        began = time.perf_counter()
        for item in commits[start : start + REPACK_EVERY]:

            def wants(refs, depth=None):
                head = refs.get(ref)
                return [head] if head and head not in store else []

            parent = client.fetch(str(remote), cache, determine_wants=wants).refs.get(ref)
            if parent:
                cache.refs[ref] = parent  # the cache names what it holds: the next fetch offers it
            blob = Blob.from_string(item["content"])
            store.add_object(blob)
            commit = Commit()
            commit.tree = commit_tree_changes(
                store, store[parent].tree if parent else empty.id, [(item["path"], stat.S_IFREG | 0o644, blob.id)]
            )
            commit.parents = [parent] if parent else []
            commit.author = commit.committer = item["author"]
            commit.commit_time = commit.author_time = int(time.time())
            commit.commit_timezone = commit.author_timezone = 0
            commit.encoding = b"UTF-8"
            commit.message = item["message"]
            store.add_object(commit)

            def update_refs(refs, parent=parent, new=commit.id):
                if refs.get(ref) != parent:
                    raise RuntimeError("the floor's branch moved")
                return {ref: new}

            # A loop done well sends what the commit made and nothing else (dulwich's own pack
            # generation walks the history to find that out): the blob, the trees on its path, itself.
            made = [blob, commit, *(store[tree_id] for tree_id in trees_along(store, commit.tree, item["path"]))]

            def only_what_was_made(have, want, *, ofs_delta=True, progress=None, made=made, **options):
                return pack_objects_to_data(made, ofs_delta=ofs_delta)

            result = client.send_pack(str(remote), update_refs, generate_pack_data=only_what_was_made)
            if (result.ref_status or {}).get(ref):
                raise RuntimeError(f"the floor's push was refused: {result.ref_status[ref]}")
        batches.append(time.perf_counter() - began)
        if start + REPACK_EVERY < len(commits):
            repack(remote)
    cache.close()
    with Repo(str(remote)) as repo:
        tree = repo[repo.refs[ref]].tree
    print(f"  floor: {len(commits)} commits in {sum(batches):.1f} s", flush=True)
    return {"seconds": sum(batches), "batch_seconds": batches, "tree": tree}


# --- the part -------------------------------------------------------------------------------------


def bench_publishing(posts: int = POSTS) -> dict:
    from django.conf import settings

    started = time.monotonic()
    fresh_directory(PART_WORK)
    load = os.getloadavg()
    pipeline = run_pipeline(posts)
    commits, pipeline_tree = pipeline_commits(pipeline.pop("remote"))
    if len(commits) != posts:
        raise RuntimeError(f"the pipeline's branch has {len(commits)} commits for {posts} posts")
    floor = run_floor(commits)
    if floor["tree"] != pipeline_tree:
        raise RuntimeError("the floor's branch does not end with the pipeline's tree")
    webhooks = run_webhooks()
    return {
        "measured_at": datetime.now(UTC),
        "load_at_start": load,
        "load_at_end": os.getloadavg(),
        "pipeline": pipeline,
        "floor_seconds": floor["seconds"],
        "floor_batch_seconds": floor["batch_seconds"],
        "ratio": pipeline["seconds"] / floor["seconds"],
        "file_bytes": sum(len(c["content"]) for c in commits) / len(commits),
        "webhooks": webhooks,
        "concurrency": WORKER_CONCURRENCY,
        "publish_workers": settings.PUBLISH_WORKERS,
        "seconds": time.monotonic() - started,
    }
