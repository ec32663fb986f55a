"""The publishing pipeline in one process, for its profile (issue 58): a git channel committing to
a local bare repository, POSTS posts as the publishing part makes them (three tags, one image each),
their publish jobs carried out by `channel_run` in batches of REPACK_EVERY with the remote repacked
between, as bench/publishing.py does. Prints queries, CPU and wall time per job, for the first
batch (a fresh process: the warm-up) and for the rest, and with --profile the functions that took
the most CPU; with --floor, the floor's loop making the same commits.

    DATABASE_URL=postgres://.../some_database .venv/bin/python -m bench.publishing_profile [--posts 200] [--profile]

It works in the database DATABASE_URL names (migrated first), in an account of its own, and
leaves its rows there.
"""

import argparse
import cProfile
import os
import pstats
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--posts", type=int, default=200)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--floor", action="store_true", help="and the floor's loop, making the same commits")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="publishing-profile-"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["GIT_CACHE_DIR"] = str(work / "cache")
    os.environ["GIT_ALLOW_LOCAL_REPOSITORIES"] = "true"
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from apps.channels.models import Team
    from apps.posts.models import Post, Tag
    from apps.publishing.services import channel_run
    from bench.common import insert_posts, make_account
    from bench.publish_jobs import enqueue_publish, git_channel
    from bench.publishing import REPACK_EVERY, bare_repository, repack

    call_command("migrate", verbosity=0)
    remote = work / "site.git"
    bare_repository(remote).close()
    account = make_account(f"Publishing profile {time.time()}")
    team = Team.objects.create(account=account, name="Editorial")
    channel = git_channel(account, team, "Site", str(remote))
    tags = [Tag.objects.create(account=account, name=name).pk for name in ("django", "news", "python")]
    insert_posts([channel.pk], args.posts, status="draft", scheduled=False, tags=tags)
    post_ids = list(Post.objects.filter(channel=channel).order_by("id").values_list("id", flat=True))

    import gc

    collections = []  # (generation, ms) of each collection during the jobs

    def collected(phase, info, started=[0.0]):  # noqa: B006 (the start time, kept between calls)
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            collections.append((info["generation"], (time.perf_counter() - started[0]) * 1000))

    gc.callbacks.append(collected)
    profiler = cProfile.Profile() if args.profile else None
    rows = []
    for start in range(0, len(post_ids), REPACK_EVERY):
        batch = post_ids[start : start + REPACK_EVERY]
        enqueue_publish(batch)
        cpu, wall = time.process_time(), time.perf_counter()
        with CaptureQueriesContext(connection) as queries:
            if profiler is not None and start:
                profiler.enable()
            done = channel_run(channel.pk)
            if profiler is not None:
                profiler.disable()
        rows.append((done, len(queries), time.process_time() - cpu, time.perf_counter() - wall))
        repack(remote)

    gc.callbacks.remove(collected)
    full = [ms for generation, ms in collections if generation == 2]
    print(f"garbage collections: {len(collections)}, of which full {len(full)} taking {sum(full):.0f} ms in all")
    from apps.publishing.models import PublicationJob

    failed = PublicationJob.objects.filter(channel=channel).exclude(state="succeeded")
    if failed.exists():
        raise SystemExit(f"jobs did not succeed: {list(failed.values_list('id', 'state', 'last_error')[:3])}")

    def line(label, part):
        jobs = sum(row[0] for row in part)
        print(
            f"{label}: {jobs} jobs, {sum(row[1] for row in part) / jobs:.2f} queries/job, "
            f"CPU {sum(row[2] for row in part) / jobs * 1000:.2f} ms/job, "
            f"wall {sum(row[3] for row in part) / jobs * 1000:.2f} ms/job"
        )

    line("first batch", rows[:1])
    if len(rows) > 1:
        line("the rest", rows[1:])
    if args.floor:
        # The floor (bench/publishing.py) making the same commits, in this process.
        from bench import publishing

        publishing.PART_WORK = work / "floor"
        publishing.PART_WORK.mkdir()
        commits, _ = publishing.pipeline_commits(remote)
        cpu, wall = time.process_time(), time.perf_counter()
        floor = publishing.run_floor(commits)
        print(
            f"floor: {len(commits)} commits, CPU {(time.process_time() - cpu) / len(commits) * 1000:.2f} ms/commit, "
            f"wall {floor['seconds'] / len(commits) * 1000:.2f} ms/commit (repacks excluded)"
        )
    print(f"load average {os.getloadavg()[0]:.1f}")
    if profiler is not None:
        if os.environ.get("PROFILE_DUMP"):
            profiler.dump_stats(os.environ["PROFILE_DUMP"])
        stats = pstats.Stats(profiler).sort_stats("cumulative")
        stats.print_stats(os.environ.get("PROFILE_FILTER", ""), 60)


if __name__ == "__main__":
    main()
