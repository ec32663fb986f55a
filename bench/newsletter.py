"""Part 9 of `make bench`: a newsletter edition to SUBSCRIBERS confirmed subscribers (issue 37)
against its floor, both into the same local SMTP sink (bench/smtp_sink.py, aiosmtpd).

1. **Send.** A newsletter channel with SUBSCRIBERS confirmed subscribers (inserted by SQL), one
   draft post, its publish job written by `jobs_enqueue` (as the content plan hands a due post over)
   and carried out by a Celery worker as the Procfile starts it, with its default settings but
   `NEWSLETTER_SEND_RATE=0` (no pacing: the issue measures the rate unlimited). The time runs from
   the enqueue's commit to the job's `finished_at`. The worker's memory (the resident set of its
   whole process group) is sampled every half second: it must stay flat, as no list of all
   recipients is ever held.
2. **Floor.** A plain loop over one smtplib connection sending the same messages: the bytes of the
   first message the sink took from the send, addressed to each subscriber in turn (the address in
   its To header and the envelope recipient changed), nothing else.
The sink must end with every address once from the send, and the edition's counters must say so.
"""

import os
import smtplib
import subprocess
import time
from datetime import UTC, datetime
from email import message_from_bytes, policy
from pathlib import Path

from bench.common import PYTHON, WORK, Process, fresh_directory, insert_posts, make_account, sql, verdict
from bench.publish_jobs import enqueue_publish, start_worker

SUBSCRIBERS = 100_000
SINK_PORT = 8431
PART_WORK = WORK / "newsletter"
SEND_TIMEOUT = 1800  # seconds the send is waited for
TARGET = 1.5


def insert_subscribers(channel_id: int, n: int) -> None:
    sql(
        """
        insert into publishing_newsletter_subscriber
            (channel_id, email, name, status, token, created_at, confirmed_at)
        select %s, 'reader' || i || '@example.com', 'Reader ' || i, 'confirmed',
               md5(random()::text || i::text) || md5(i::text), now(), now()
        from generate_series(1, %s) as i
        """,
        [channel_id, n],
    )


def start_sink(name: str) -> tuple[Process, Path]:
    work = PART_WORK / name
    work.mkdir(parents=True)
    sink = Process(f"newsletter-{name}", [PYTHON, "-m", "bench.smtp_sink", str(SINK_PORT), str(work)])
    sink.wait_for_log("ready")
    return sink, work


def group_rss_kb(pgid: int) -> int:
    """The resident memory of every process of the group, in kB (ps reads /proc)."""
    out = subprocess.run(["ps", "-o", "rss=", "-g", str(pgid)], capture_output=True, text=True).stdout
    return sum(int(line) for line in out.split() if line.strip().isdigit())


def run_send(n: int) -> dict:
    from apps.channels.models import Channel
    from apps.posts.models import Post
    from apps.publishing.models import JobState, PublicationJob
    from apps.publishing.newsletter.models import Edition

    account = make_account("Newsletter bench")
    channel = Channel.objects.create(account=account, title="Bench Weekly", platform="newsletter")
    insert_subscribers(channel.pk, n)
    insert_posts([channel.pk], 1, status="draft", scheduled=False, tags=[])
    post = Post.objects.get(channel=channel)
    Post.objects.filter(pk=post.pk).update(
        body="## This week\n\n" + "A paragraph of the edition, with a [link](https://example.com/).\n\n" * 12
    )
    sink, sink_work = start_sink("send")
    smtp = {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": "127.0.0.1",
        "EMAIL_PORT": str(SINK_PORT),
        "NEWSLETTER_SEND_RATE": "0",
    }
    worker = start_worker("newsletter-worker", smtp)
    samples: list[tuple[float, int]] = []
    try:
        began = enqueue_publish([post.pk])
        deadline = time.monotonic() + SEND_TIMEOUT
        job = PublicationJob.objects.filter(post_id=post.pk)
        next_print = time.monotonic() + 30
        while not job.filter(state=JobState.SUCCEEDED).exists():
            failed = job.filter(state=JobState.FAILED).values_list("last_error", flat=True).first()
            if failed is not None:
                raise RuntimeError(f"the edition's job failed: {failed}; see {worker.log_path}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the edition was not sent after {SEND_TIMEOUT} s; see {worker.log_path}")
            samples.append((time.time() - began, group_rss_kb(worker.popen.pid)))
            if time.monotonic() > next_print:
                print(f"  send: {(sink_work / 'count').read_text() or 0} of {n} messages", flush=True)
                next_print += 30
            time.sleep(0.5)
        finished = job.get().finished_at.timestamp()
    finally:
        worker.stop()
        time.sleep(0.5)
        sink.stop()
    edition = Edition.objects.get(post_id=post.pk)
    recipients = (sink_work / "recipients.txt").read_text().split()
    if len(recipients) != n or len(set(recipients)) != n or edition.sent != n:
        raise RuntimeError(
            f"the sink took {len(recipients)} messages for {len(set(recipients))} addresses, the edition counts "
            f"{edition.sent} sent, for {n} subscribers"
        )
    seconds = finished - began
    print(f"  send: {n:,} messages in {seconds:.1f} s, {n / seconds:,.0f}/s", flush=True)
    return {"seconds": seconds, "memory": samples, "first": (sink_work / "first.eml").read_bytes()}


def run_floor(n: int, first: bytes) -> float:
    """The same message, to each address in turn over one smtplib connection: its bytes as the sink
    took them, with the address in its To header changed (no MIME work at all)."""
    message = message_from_bytes(first, policy=policy.SMTP)
    sender = message["From"].addresses[0].addr_spec
    first_address = message["To"].addresses[0].addr_spec.encode()
    sink, _ = start_sink("floor")
    try:
        started = time.monotonic()
        with smtplib.SMTP("127.0.0.1", SINK_PORT) as smtp:
            for i in range(1, n + 1):
                address = f"reader{i}@example.com"
                smtp.sendmail(sender, [address], first.replace(first_address, address.encode()))
        seconds = time.monotonic() - started
    finally:
        sink.stop()
    print(f"  floor: {n:,} messages in {seconds:.1f} s, {n / seconds:,.0f}/s", flush=True)
    return seconds


def bench_newsletter(n: int = SUBSCRIBERS) -> dict:
    started = time.monotonic()
    fresh_directory(PART_WORK)
    load = os.getloadavg()
    send = run_send(n)
    floor = run_floor(n, send.pop("first"))
    memory = [kb for _, kb in send["memory"]]
    # Flat: the last quarter of the samples against the first quarter, past the worker's start-up.
    quarter = max(len(memory) // 4, 1)
    return {
        "measured_at": datetime.now(UTC),
        "load_at_start": load,
        "load_at_end": os.getloadavg(),
        "subscribers": n,
        "send_seconds": send["seconds"],
        "floor_seconds": floor,
        "ratio": send["seconds"] / floor,
        "rss_first_mb": sum(memory[:quarter]) / quarter / 1024,
        "rss_last_mb": sum(memory[-quarter:]) / quarter / 1024,
        "rss_max_mb": max(memory, default=0) / 1024,
        "seconds": time.monotonic() - started,
    }


def newsletter_section(result: dict) -> list[str]:
    n, ratio = result["subscribers"], result["ratio"]
    growth = result["rss_last_mb"] - result["rss_first_mb"]
    return [
        "## 9. Newsletter (issue 37)",
        "",
        f"Measured on {result['measured_at']:%Y-%m-%d %H:%M} UTC; load average at the part's start "
        + ", ".join(f"{x:.2f}" for x in result["load_at_start"])
        + f". An edition to {n:,} confirmed subscribers of a newsletter channel, its publish job written by "
        "`jobs_enqueue` and carried out by a Celery worker as the Procfile starts it (default settings, "
        "`NEWSLETTER_SEND_RATE=0`), into a local SMTP sink (aiosmtpd, `bench/smtp_sink.py`), from the enqueue's "
        "commit to the job's `finished_at`. Floor: a plain loop sending the first message the sink took, "
        "addressed to each subscriber in turn, over one smtplib connection into the same sink.",
        "",
        "| | messages | seconds | messages/s | target |",
        "|---|---:|---:|---:|---|",
        f"| send (pipeline + worker) | {n:,} | {result['send_seconds']:.1f} | {n / result['send_seconds']:,.0f} | |",
        f"| floor (smtplib loop) | {n:,} | {result['floor_seconds']:.1f} | {n / result['floor_seconds']:,.0f} | |",
        f"| ratio send / floor | | {ratio:.2f}x | | {verdict(ratio <= TARGET)} (≤{TARGET}x) |",
        "",
        f"The worker's memory (its whole process group, resident): {result['rss_first_mb']:.0f} MB on average in "
        f"the first quarter of the send, {result['rss_last_mb']:.0f} MB in the last ({growth:+.0f} MB), at most "
        f"{result['rss_max_mb']:.0f} MB.",
        "",
        "Where the difference goes: the delivery records' marks are committed 20 messages at a time, in one "
        "transaction with the edition's counters (`marks.py`: what bounds a crash to at most 20 `uncertain` "
        "records per batch in flight), one commit every 20 messages instead of one per message; each batch of "
        "`NEWSLETTER_BATCH_SIZE` adds its claim, its read of the recipients, its release and an SMTP connection; "
        "the message itself is serialized once per edition and only addressed per recipient (`message.Prepared`).",
        "",
    ]


if __name__ == "__main__":  # pragma: no cover - run through bench/__main__.py
    raise SystemExit("run it through `python -m bench --only newsletter`")
