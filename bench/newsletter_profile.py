"""The newsletter sender in this process, for profiling it (issue 58): an edition to N subscribers
frozen, then sent by `sending.Sender` into the bench's SMTP sink (bench/smtp_sink.py), with the
process's CPU time, the statements run and, with --profile, cProfile's CPU-time profile, per message.

    python -m bench.newsletter_profile [--subscribers 5000] [--profile] [--batch-size 100]

It uses the bench's database (BENCH_DATABASE, emptied first), as `python -m bench` does.
"""

import argparse
import cProfile
import os
import pstats
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.common import configure, fresh_directory, insert_posts, make_account, setup_django
from bench.newsletter import PART_WORK, insert_subscribers, run_floor, start_sink


def cpu_seconds(pid: int) -> float:
    """A process's user and system CPU time so far (/proc: this machine's processes only)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _watch_memory(sender) -> None:
    """Print the process's resident memory every 50 batches (it must stay flat)."""
    send_batch, batches = sender._send_batch, [0]

    def watched(*args):
        send_batch(*args)
        batches[0] += 1
        if batches[0] % 50 == 0:
            pages = int(Path("/proc/self/statm").read_text().split()[1])
            print(f"  after {batches[0]} batches: {pages * os.sysconf('SC_PAGE_SIZE') / 2**20:.1f} MB resident")

    sender._send_batch = watched


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--subscribers", type=int, default=5000)
    parser.add_argument("--profile", action="store_true", help="print cProfile's top functions (CPU time)")
    parser.add_argument("--floor", action="store_true", help="then time bench/newsletter.py's floor")
    parser.add_argument("--profile-freeze", action="store_true", help="print cProfile's top functions of the freeze")
    parser.add_argument("--memory", action="store_true", help="print the resident memory every 50 batches")
    parser.add_argument("--wall", action="store_true", help="profile wall-clock time instead of CPU time")
    parser.add_argument("--batch-size", type=int, default=None, help="NEWSLETTER_BATCH_SIZE for this run")
    args = parser.parse_args()
    configure()
    setup_django()

    from django.conf import settings
    from django.db import connection

    from apps.channels.models import Channel
    from apps.core.destinations import Document
    from apps.posts.models import Post
    from apps.publishing.newsletter.editions import edition_freeze
    from apps.publishing.newsletter.models import Edition
    from apps.publishing.newsletter.sending import Sender

    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", 8431
    settings.NEWSLETTER_SEND_RATE = 0
    if args.batch_size:
        settings.NEWSLETTER_BATCH_SIZE = args.batch_size
    n = args.subscribers
    fresh_directory(PART_WORK)
    account = make_account("Newsletter profile")
    channel = Channel.objects.create(account=account, title="Bench Weekly", platform="newsletter")
    insert_subscribers(channel.pk, n)
    insert_posts([channel.pk], 1, status="draft", scheduled=False, tags=[])
    document = Document(
        post_id=Post.objects.get(channel=channel).pk,
        title="This week",
        slug="this-week",
        body="## This week\n\n" + "A paragraph of the edition, with a [link](https://example.com/).\n\n" * 12,
        published_at=datetime.now(UTC),
    )
    freezing = cProfile.Profile(time.process_time) if args.profile_freeze else None
    cpu, wall = time.process_time(), time.monotonic()
    if freezing:
        freezing.enable()
    edition = edition_freeze(channel=channel, job_id=0, document=document)
    if freezing:
        freezing.disable()
        pstats.Stats(freezing).sort_stats("cumulative").print_stats(25)
    print(f"frozen in {time.monotonic() - wall:.2f} s, CPU {time.process_time() - cpu:.2f} s")
    sink, sink_work = start_sink("profile")
    statements = 0
    with connection.cursor() as cursor:
        cursor.execute("select pg_backend_pid()")
        backend = cursor.fetchone()[0]
    others = {"database": backend, "sink": sink.popen.pid}

    def count(execute, sql, params, many, context):
        nonlocal statements
        statements += 1
        return execute(sql, params, many, context)

    profiler = cProfile.Profile(time.perf_counter if args.wall else time.process_time) if args.profile else None
    try:
        with connection.execute_wrapper(count):
            spent = {name: cpu_seconds(pid) for name, pid in others.items()}
            cpu, wall = time.process_time(), time.monotonic()
            if profiler:
                profiler.enable()
            sender = Sender(edition, deadline=time.monotonic() + 3600)
            if args.memory:
                _watch_memory(sender)
            sender.run()
            if profiler:
                profiler.disable()
            cpu, wall = time.process_time() - cpu, time.monotonic() - wall
            spent = {name: cpu_seconds(pid) - spent[name] for name, pid in others.items()}
    finally:
        sink.stop()
    edition = Edition.objects.get(pk=edition.pk)
    print(
        f"{edition.sent:,} of {n:,} sent in {wall:.1f} s: {wall / n * 1000:.3f} ms a message, "
        f"CPU {cpu / n * 1000:.3f} ms a message, {statements / n:.3f} statements a message "
        f"({statements} in all), batch size {settings.NEWSLETTER_BATCH_SIZE}; CPU of its database backend "
        f"{spent['database'] / n * 1000:.3f} ms, of the sink {spent['sink'] / n * 1000:.3f} ms a message"
    )
    if args.floor:
        floor = run_floor(n, (sink_work / "first.eml").read_bytes())
        print(f"floor {floor / n * 1000:.3f} ms a message: the send took {wall / floor:.2f}x the floor's time")
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(35)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
