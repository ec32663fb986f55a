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
   run; the turns spread the machine's other load over both alike.

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
import signal
import socket
import subprocess
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.isolation import _emit, _ms, _percentile
from bench.run import (
    BIN,
    PYTHON,
    QUEUE,
    WORK,
    WORKER_CONCURRENCY,
    Process,
    flush_redis,
    http_json,
    insert_posts,
    make_account,
    sql,
)

POSTS = 1000
# Ports of this part (the others use 8401-8413): the receiver and the three hanging remotes.
RECEIVER_PORT = 8421
HANGING_PORTS = (8422, 8423, 8424)
HANGING_JOBS = 5  # queued publish jobs per hanging channel
ROUNDS = 4  # turns of the webhook streams without and with hanging remotes
# Half part 4's rate: on a busy machine a delivery costs the worker tens of milliseconds, and at 20/s the
# stream alone kept its two processes near full, so its latency measured the machine, not the remotes.
STREAM_RATE, STREAM_EVENTS = 10, 50  # single-event transactions per second, how many per stream
ARRIVAL_TIMEOUT = 60  # seconds the stream's deliveries are waited for after the stream
REPACK_EVERY = 50  # pushes between two repacks of the remote (git's gc.autoPackLimit)
PIPELINE_TIMEOUT = 600  # seconds the pipeline's jobs are waited for
BRANCH = "main"
PART_WORK = WORK / "publishing"


class HangingRemote:
    """A TCP server on 127.0.0.1 that accepts every connection and never answers nor closes it."""

    def __init__(self, port: int) -> None:
        self.server = socket.create_server(("127.0.0.1", port), backlog=64)
        self.server.settimeout(0.2)
        self.accepted = 0
        self.held: list[socket.socket] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._accept, name=f"hanging-{port}", daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                connection, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.held.append(connection)
            self.accepted += 1

    def drop(self) -> None:
        """Close the connections held so far (their client is gone); keep accepting new ones."""
        held, self.held = self.held, []
        for connection in held:
            connection.close()

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)
        self.server.close()
        self.drop()


def start_worker(name: str) -> Process:
    """The Procfile's worker (`celery -A config worker`) on the bench's queue, with a git cache of
    this part's own."""
    worker = Process(
        name,
        [str(BIN / "celery"), "-A", "config", "worker", "--loglevel", "INFO", "--concurrency", WORKER_CONCURRENCY,
         "-Q", QUEUE, "--without-gossip", "--without-mingle", "--without-heartbeat"],
        {"GIT_CACHE_DIR": str(PART_WORK / "worker-cache")},
    )  # fmt: skip
    worker.wait_for_log(" ready.")
    return worker


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
        subprocess.run([git, "-C", str(path), "-c", "repack.writeBitmaps=false", "repack", "-a", "-d", "-q"],
                       check=True)  # fmt: skip
        return
    from dulwich.repo import Repo

    with Repo(str(path)) as repo:
        repo.object_store.repack()


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
            items=[JobInput(channel_id=channel_id, post_id=pk, title=title, action=JobAction.PUBLISH)
                   for pk, channel_id, title in posts]
        )  # fmt: skip
    return committed[0]


# --- 1. the pipeline ------------------------------------------------------------------------------


def _wait_succeeded(jobs, n: int, deadline: float, worker: Process) -> None:
    from apps.publishing.models import JobState

    while (done := jobs.filter(state=JobState.SUCCEEDED).count()) < n:
        trouble = jobs.exclude(last_error="").values_list("id", "state", "last_error").first()
        if trouble:
            raise RuntimeError(f"publication job {trouble[0]} is {trouble[1]}: {trouble[2]}; see {worker.log_path}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{done} of {n} jobs succeeded after {PIPELINE_TIMEOUT} s; see {worker.log_path}")
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
    worker = start_worker("publishing-worker")
    try:
        deadline = time.monotonic() + PIPELINE_TIMEOUT
        for start in range(0, n, REPACK_EVERY):
            batch = post_ids[start : start + REPACK_EVERY]
            began = time.time()
            committed = enqueue_publish(batch)
            _wait_succeeded(jobs.filter(post_id__in=batch), len(batch), deadline, worker)
            finished = jobs.filter(post_id__in=batch).aggregate(last=Max("finished_at"))["last"].timestamp()
            batches.append({"seconds": finished - began, "enqueue_seconds": committed - began})
            if start + len(batch) < n:
                repack(remote)
            if (start // REPACK_EVERY) % 4 == 3:
                print(f"  pipeline: {start + len(batch)} of {n} jobs succeeded", flush=True)
        attempts = sum(jobs.values_list("attempts", flat=True))
    finally:
        worker.stop()
    durations = [int(ms) for ms in re.findall(r"publication job=\d+ .*duration_ms=(\d+)", worker.log_text())]
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
            commits.append({"path": new.path, "content": repo[new.sha].data, "message": entry.commit.message,
                            "author": entry.commit.author})  # fmt: skip
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


# --- 3. webhook delivery while git remotes hang ---------------------------------------------------


def webhook_seed() -> dict:
    """The receiving account (an endpoint at the receiver, part 4's payload) and three git channels
    of another account whose remotes hang, each with HANGING_JOBS draft posts."""
    from apps.channels.models import Channel, Team
    from apps.posts.models import Post, Tag
    from apps.posts.serializers import posts_webhook_data
    from apps.webhooks.models import WebhookEndpoint

    account = make_account("Publishing bench webhooks")
    endpoint = WebhookEndpoint.objects.create(account=account, url=f"http://127.0.0.1:{RECEIVER_PORT}/hook")
    team = Team.objects.create(account=account, name="Editorial")
    blog = Channel.objects.create(account=account, team=team, title="Company Blog", platform="blog")
    tags = [Tag.objects.create(account=account, name=name).pk for name in ("django", "news", "python")]
    insert_posts([blog.pk], 1, status="published", scheduled=False, tags=tags)
    [(_, post_id, data)] = posts_webhook_data([Post.objects.get(channel=blog).pk])
    publisher = make_account("Publishing bench hanging remotes")
    publisher_team = Team.objects.create(account=publisher, name="Editorial")
    hanging = [
        git_channel(publisher, publisher_team, f"Hanging site {port}", f"http://127.0.0.1:{port}/site.git").pk
        for port in HANGING_PORTS
    ]
    insert_posts(hanging, HANGING_JOBS * len(hanging), status="draft", scheduled=False, tags=[])
    return {
        "account": account,
        "endpoint": endpoint,
        "payload": ({"post": data}, post_id),
        "hanging": hanging,
        "hanging_posts": list(Post.objects.filter(channel_id__in=hanging).values_list("id", flat=True)),
    }


def webhook_run(name: str, seed: dict, remotes: list[HangingRemote] | None) -> tuple[list[float | None], dict]:
    """One stream through a fresh worker: (each delivery's latency in ms, None if not arrived; what
    the hanging remotes' jobs did meanwhile)."""
    from apps.publishing.models import JobState, PublicationJob
    from apps.webhooks.models import Delivery

    receiver_url = f"http://127.0.0.1:{RECEIVER_PORT}"
    flush_redis()
    http_json(f"{receiver_url}/reset", data=b"")
    hanging_jobs = PublicationJob.objects.filter(channel_id__in=seed["hanging"])
    # The jobs a killed worker left running; each run with hanging remotes starts them afresh.
    hanging_jobs.delete()
    worker = start_worker(f"publishing-webhooks-{name}")
    info = {}
    try:
        if remotes:
            accepted = [remote.accepted for remote in remotes]
            enqueue_publish(seed["hanging_posts"])
            deadline = time.monotonic() + 30
            while hanging_jobs.filter(state=JobState.RUNNING).count() < len(remotes) or any(
                remote.accepted <= before for remote, before in zip(remotes, accepted, strict=True)
            ):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the hanging remotes' jobs did not start; see {worker.log_path}")
                time.sleep(0.05)
        stream, stream_started = [], time.monotonic()
        for i in range(STREAM_EVENTS):
            pause = stream_started + i / STREAM_RATE - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            stream.append(_emit(seed["account"], seed["payload"], 1))
        if remotes:
            info = {
                "running_after_stream": hanging_jobs.filter(state=JobState.RUNNING).count(),
                "succeeded": hanging_jobs.filter(state=JobState.SUCCEEDED).count(),
            }
        deadline = time.monotonic() + ARRIVAL_TIMEOUT
        while http_json(f"{receiver_url}/stats")["unique_deliveries"] < STREAM_EVENTS:
            if time.monotonic() > deadline:
                print(f"  webhooks {name}: not all arrived {ARRIVAL_TIMEOUT} s after the stream", flush=True)
                break
            time.sleep(0.1)
        arrivals = http_json(f"{receiver_url}/arrivals")
    finally:
        if remotes and worker.popen.poll() is None:
            # A warm shutdown would wait for the hanging jobs in flight; nothing of the worker's is
            # measured any more.
            os.killpg(worker.popen.pid, signal.SIGKILL)
        worker.stop()
        for remote in remotes or []:
            remote.drop()
    flush_redis()
    event_ids = [pk for _, ids in stream for pk in ids]
    delivery_of = dict(
        Delivery.objects.filter(endpoint=seed["endpoint"], event_id__in=event_ids).values_list("event_id", "pk")
    )
    latencies = []
    for committed, ids in stream:
        for event_id in ids:
            arrived = arrivals.get(str(delivery_of[event_id]))
            latencies.append(None if arrived is None else (arrived - committed[0]) * 1000)
    print(f"  webhooks {name}: p50 {_ms(_percentile(latencies, 50))}, p99 {_ms(_percentile(latencies, 99))}",
          flush=True)  # fmt: skip
    return latencies, info


def run_webhooks() -> dict:
    from django.conf import settings

    # Pending deliveries earlier parts left behind (the content plan's) are not this part's load.
    sql("delete from webhooks_attempt where delivery_id in (select id from webhooks_delivery where status = 'pending')")
    sql("delete from webhooks_delivery where status = 'pending'")
    seed = webhook_seed()
    receiver = Process(
        "publishing-receiver", [PYTHON, "bench/receiver.py", str(RECEIVER_PORT), seed["endpoint"].secret]
    )
    remotes: list[HangingRemote] = []
    runs = {"alone": [], "hanging": []}
    info = []
    try:
        receiver.wait_for_log("listening")
        remotes = [HangingRemote(port) for port in HANGING_PORTS]
        for turn in range(ROUNDS):
            alone, _ = webhook_run(f"alone-{turn + 1}", seed, None)
            hanging, hanging_info = webhook_run(f"hanging-{turn + 1}", seed, remotes)
            runs["alone"].append(alone)
            runs["hanging"].append(hanging)
            info.append(hanging_info)
    finally:
        for remote in remotes:
            remote.close()
        receiver.stop()
    result = {"publish_timeout": settings.PUBLISH_TIMEOUT, "hanging_info": info}
    for name, streams in runs.items():
        latencies = [value for stream in streams for value in stream]
        result[name] = {
            "events": len(latencies),
            "received": len(latencies) - latencies.count(None),
            "p50": _percentile(latencies, 50),
            "p99": _percentile(latencies, 99),
            "max": _percentile(latencies, 100),
            "p99_per_round": [_percentile(stream, 99) for stream in streams],
        }
        print(f"  webhooks {name}: {result[name]['received']} of {len(latencies)} arrived, p50 "
              f"{_ms(result[name]['p50'])}, p99 {_ms(result[name]['p99'])}", flush=True)  # fmt: skip
    return result


# --- the part -------------------------------------------------------------------------------------


def bench_publishing(posts: int = POSTS) -> dict:
    from django.conf import settings

    started = time.monotonic()
    shutil.rmtree(PART_WORK, ignore_errors=True)
    PART_WORK.mkdir(parents=True)
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


def _late(value: float | None) -> str:
    return f"> {ARRIVAL_TIMEOUT * 1000:,}" if value is None else f"{value:,.0f}"


def publishing_section(pub: dict) -> list[str]:
    from bench.run import verdict

    p, n, ratio = pub["pipeline"], pub["pipeline"]["posts"], pub["ratio"]
    floor_seconds, hooks = pub["floor_seconds"], pub["webhooks"]
    job_ms, first, last = p["job_ms"], p["job_ms"][:REPACK_EVERY], p["job_ms"][-REPACK_EVERY:]
    alone, hanging = hooks["alone"], hooks["hanging"]
    p99_ok = hanging["p99"] is not None and hanging["p99"] < 2000

    def hook_row(label: str, run: dict, target: str) -> str:
        cells = " | ".join(_late(run[key]) for key in ("p50", "p99", "max"))
        per_round = ", ".join(_late(value) for value in run["p99_per_round"])
        return f"| {label} | {run['received']} of {run['events']} | {cells} | {per_round} | {target} |"

    return [
        "## 6. Publishing (issue 29)",
        "",
        f"Measured on {pub['measured_at']:%Y-%m-%d %H:%M} UTC; load average at the part's start "
        + ", ".join(f"{x:.2f}" for x in pub["load_at_start"])
        + ", at its end "
        + ", ".join(f"{x:.2f}" for x in pub["load_at_end"])
        + f". A git channel (`git_destination_save`) committing to a local bare repository, {n:,} draft posts "
        f"(3 tags each; files of {pub['file_bytes']:,.0f} bytes on average, the default path template), their "
        "publish jobs written by `jobs_enqueue` (as the content plan writes them) and carried out by a Celery "
        f"worker as the Procfile starts it (concurrency {pub['concurrency']}, `PUBLISH_WORKERS` "
        f"{pub['publish_workers']}, a git cache of its own). Floor: a plain dulwich loop making the same commits "
        "(the pipeline's files, messages and author, read back from its repository) into a fresh bare repository, "
        "per file one fetch into a local cache repository, a commit on the fetched head and a push; its branch "
        f"ends with the pipeline's tree. Both in batches of {REPACK_EVERY} jobs or commits, the remote repacked "
        "between two batches as a git server's `git gc --auto` would (dulwich leaves one pack per push, and "
        "every later fetch and push reads them all), outside the time: the pipeline's time is the sum of its "
        "batches' times from the start of the enqueue to the last job's `finished_at`.",
        "",
        "| | commits | seconds | jobs/s | ms per job | target |",
        "|---|---:|---:|---:|---:|---|",
        f"| pipeline (jobs + Celery worker) | {n:,} | {p['seconds']:.1f} | {n / p['seconds']:.1f} | "
        f"{p['seconds'] * 1000 / n:.1f} | |",
        f"| floor (dulwich loop) | {n:,} | {floor_seconds:.1f} | {n / floor_seconds:.1f} | "
        f"{floor_seconds * 1000 / n:.1f} | |",
        f"| ratio pipeline / floor | | {ratio:.2f}x | | | {verdict(ratio <= 1.5)} (≤1.5x) |",
        "",
        "Each commit costs more than the one before, in the pipeline and the floor alike: a push has dulwich "
        "work out what to send by walking every ancestor of the remote's head in the local cache, so its cost "
        "grows with the branch's history. The first and the last batch:",
        "",
        "| batch | pipeline ms per job | floor ms per commit | ratio |",
        "|---|---:|---:|---:|",
        *(
            f"| {label} ({index * REPACK_EVERY + 1:,}-{min(n, (index + 1) * REPACK_EVERY):,}) | "
            f"{p['batch_seconds'][index] * 1000 / size:.1f} | {pub['floor_batch_seconds'][index] * 1000 / size:.1f} | "
            f"{p['batch_seconds'][index] / pub['floor_batch_seconds'][index]:.2f}x |"
            for label, index in (("first", 0), ("last", len(p["batch_seconds"]) - 1))
            for size in [min(n, (index + 1) * REPACK_EVERY) - index * REPACK_EVERY]
        ),
        "",
        f"{p['attempts']:,} attempts, {p['published']:,} posts published; each batch's enqueue took "
        f"{min(p['enqueue_seconds']) * 1000:,.0f}-{max(p['enqueue_seconds']) * 1000:,.0f} ms. Each job's own time "
        "in the worker's log (`job_run`: carrying it out and recording it), p50 / p99: "
        f"{_nearest(job_ms, 50)} / {_nearest(job_ms, 99)} ms over all jobs, {_nearest(first, 50)} / "
        f"{_nearest(first, 99)} ms over the first {len(first)}, {_nearest(last, 50)} / {_nearest(last, 99)} ms over "
        f"the last {len(last)}; in all {sum(job_ms) / 1000:.1f} s of the pipeline's {p['seconds']:.1f} s.",
        "",
        f"**Webhook delivery while git remotes hang.** One webhook endpoint (a receiver process on 127.0.0.1) gets "
        f"streams of {STREAM_EVENTS} single-event transactions at {STREAM_RATE}/s (latency: the receiver's arrival "
        "time of each delivery less its event's commit, as in part 4), each through a fresh Celery worker "
        f"(concurrency {pub['concurrency']}, default settings); {ROUNDS} rounds of a stream without and a stream "
        "with hanging remotes, taking turns. With hanging remotes: three git channels whose remotes are TCP "
        f"servers that accept and never answer, {HANGING_JOBS} queued publish jobs each, the stream started once "
        "each channel's first job is running and connected (it holds its thread until `PUBLISH_TIMEOUT`, "
        f"{hooks['publish_timeout']} s, longer than a stream).",
        "",
        "| Run | deliveries | latency p50 ms | p99 ms | max ms | p99 ms of each round | target |",
        "|---|---:|---:|---:|---:|---|---|",
        hook_row("without hanging remotes", alone, ""),
        hook_row("with three hanging git remotes", hanging, f"p99 <2 s: {verdict(p99_ok)}"),
        "",
        "Hanging jobs still running when each stream with hanging remotes ended: "
        + ", ".join(str(i["running_after_stream"]) for i in hooks["hanging_info"])
        + f" (of 3); the hanging channels' jobs succeeded: {sum(i['succeeded'] for i in hooks['hanging_info'])}. "
        f"The part took {pub['seconds']:.0f} s.",
        "",
    ]


def _nearest(values: list[int], percent: float) -> str:
    value = _percentile(values, percent)
    return "n/a" if value is None else f"{value:,}"


def replace_section(text: str, section: list[str]) -> str:
    """bench/RESULTS.md with this part's section replaced (or added before the closing line), the
    other parts' figures left as they are."""
    lines = text.split("\n")
    closing = next((i for i, line in enumerate(lines) if line.startswith("The whole benchmark took")), len(lines))
    if section[0] in lines:
        start = lines.index(section[0])
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ") or i == closing), len(lines))
    else:
        start = end = closing
    lines[start:end] = section
    return "\n".join(lines)
