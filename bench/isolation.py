"""Part 4 of `make bench`: do bad webhook endpoints slow down a healthy one?

Three accounts with one endpoint each, every endpoint a receiver process of its own on 127.0.0.1:
healthy (200 at once), hanging (reads the request and holds it unanswered past WEBHOOK_TIMEOUT)
and failing (500 at once). One Celery worker as the Procfile starts it, fresh for each run:

- run "alone": only the healthy endpoint's account gets events;
- run "with hostile endpoints": first HOSTILE_EVENTS events committed for the hanging endpoint's
  account and as many for the failing one's (so their deliveries are in the broker first), then at
  once the same healthy load.

The healthy load of a run: a steady stream of single-event transactions (latency: the receiver's
arrival time of each delivery less its event's commit time), then a burst in larger transactions
(throughput: deliveries over the time from the burst's first commit to its last arrival). Only the
healthy deliveries are waited for, at most ARRIVAL_TIMEOUT seconds after the load; what has not
arrived by then is reported as such.
"""

import math
import os
import signal
import time

from bench.run import (
    BIN,
    PYTHON,
    QUEUE,
    WORKER_CONCURRENCY,
    Process,
    flush_redis,
    http_json,
    insert_posts,
    make_account,
    sql,
)

PORTS = {"healthy": 8411, "hanging": 8412, "failing": 8413}
HOSTILE_EVENTS = 1000
HOSTILE_BATCH = 100
STREAM_RATE, STREAM_SECONDS = 20, 15  # events per second, seconds
BURST_EVENTS, BURST_BATCH = 2000, 100
# The delivery code of 2026-11-23 gets to the hostile run's healthy deliveries after about 100 s;
# the limit keeps the part within a few minutes whatever the delivery code does.
ARRIVAL_TIMEOUT = 150


def bench_isolation() -> dict:
    from django.conf import settings

    from apps.channels.models import Channel, Team
    from apps.posts.models import Post, Tag
    from apps.posts.serializers import posts_webhook_data
    from apps.webhooks.models import WebhookEndpoint

    started = time.monotonic()
    # After a whole `make bench`, the content plan's deliveries are still pending (its broker
    # messages were dropped, its receiver is gone): a fourth endpoint that delivery code sweeping
    # for due work would take on. This part measures its own three endpoints only.
    sql("delete from webhooks_attempt where delivery_id in (select id from webhooks_delivery where status = 'pending')")
    sql("delete from webhooks_delivery where status = 'pending'")
    timeout = settings.WEBHOOK_TIMEOUT
    hang = max(60, 2 * timeout)
    options = {"healthy": [], "hanging": ["--hang", str(hang)], "failing": ["--status", "500"]}
    endpoints = {
        role: WebhookEndpoint.objects.create(
            account=make_account(f"Isolation bench {role}"), url=f"http://127.0.0.1:{port}/hook"
        )
        for role, port in PORTS.items()
    }
    healthy_account = endpoints["healthy"].account
    team = Team.objects.create(account=healthy_account, name="Editorial")
    channel = Channel.objects.create(account=healthy_account, team=team, title="Company Blog", platform="blog")
    tags = [Tag.objects.create(account=healthy_account, name=name).pk for name in ("django", "news", "python")]
    insert_posts([channel.pk], 1, status="published", scheduled=False, tags=tags)
    # The body of part 2: the post.published payload of a post with three tags and an image.
    [(_, post_id, data)] = posts_webhook_data([Post.objects.get(channel=channel).pk])
    payload = ({"post": data}, post_id)
    receivers = {}
    try:
        for role, port in PORTS.items():
            receivers[role] = Process(
                f"isolation-{role}", [PYTHON, "bench/receiver.py", str(port), endpoints[role].secret, *options[role]]
            )
        for receiver in receivers.values():
            receiver.wait_for_log("listening")
        alone = _run("alone", endpoints, payload, hostile=False)
        with_hostile = _run("hostile", endpoints, payload, hostile=True)
    finally:
        for receiver in receivers.values():
            receiver.stop()
    ratio, bound = _ratio(alone, with_hostile)
    return {
        "alone": alone,
        "hostile": with_hostile,
        "ratio": ratio,
        "ratio_is_bound": bound,
        "webhook_timeout": timeout,
        "batch_size": settings.WEBHOOK_BATCH_SIZE,
        "hang_seconds": hang,
        "load": {
            "hostile_events": HOSTILE_EVENTS,
            "hostile_batch": HOSTILE_BATCH,
            "stream_rate": STREAM_RATE,
            "stream_seconds": STREAM_SECONDS,
            "burst_events": BURST_EVENTS,
            "burst_batch": BURST_BATCH,
            "arrival_timeout": ARRIVAL_TIMEOUT,
        },
        "concurrency": WORKER_CONCURRENCY,
        "seconds": time.monotonic() - started,
    }


def _ratio(alone: dict, hostile: dict) -> tuple[float | None, bool]:
    """The hostile run's throughput over the run alone's, and whether it is only an upper bound
    (the hostile run's burst did not all arrive); None when the run alone gives nothing to compare."""
    if not alone["complete"]:
        return None, False
    return hostile["throughput"] / alone["throughput"], not hostile["complete"]


def _emit(account, payload: tuple[dict, int], n: int) -> tuple[list[float], list[int]]:
    """One transaction of `n` events through the outbox: (its commit time, once committed; the event ids)."""
    from django.db import transaction

    from apps.webhooks.models import EventKind
    from apps.webhooks.services import EventInput, events_emit

    data, post_id = payload
    committed: list[float] = []
    with transaction.atomic():
        # Registered before the outbox's own hook, so it runs first, right at COMMIT.
        transaction.on_commit(lambda: committed.append(time.time()))
        events = events_emit(
            kind=EventKind.POST_PUBLISHED, items=[EventInput(account=account, data=data, post_id=post_id)] * n
        )
    return committed, [event.pk for event in events]


def _run(name: str, endpoints: dict, payload: tuple[dict, int], *, hostile: bool) -> dict:
    from apps.webhooks.models import Attempt, Delivery, DeliveryStatus

    healthy = endpoints["healthy"]
    receiver_url = {role: f"http://127.0.0.1:{port}" for role, port in PORTS.items()}
    # Each run starts from an empty broker, empty receivers and a fresh worker, so the second run
    # inherits nothing of the first but the database.
    flush_redis()
    for url in receiver_url.values():
        http_json(f"{url}/reset", data=b"")
    worker = Process(
        f"isolation-worker-{name}",
        [str(BIN / "celery"), "-A", "config", "worker", "--loglevel", "INFO", "--concurrency", WORKER_CONCURRENCY,
         "-Q", QUEUE, "--without-gossip", "--without-mingle", "--without-heartbeat"],
    )  # fmt: skip
    try:
        worker.wait_for_log(" ready.")
        if hostile:
            for role in ("hanging", "failing"):
                for _ in range(HOSTILE_EVENTS // HOSTILE_BATCH):
                    _emit(endpoints[role].account, payload, HOSTILE_BATCH)
        print(f"  {name}: healthy stream of {STREAM_RATE * STREAM_SECONDS} events", flush=True)
        stream, stream_started = [], time.monotonic()
        for i in range(STREAM_RATE * STREAM_SECONDS):
            pause = stream_started + i / STREAM_RATE - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            stream.append(_emit(healthy.account, payload, 1))
        stream_seconds = time.monotonic() - stream_started
        burst = [_emit(healthy.account, payload, BURST_BATCH) for _ in range(BURST_EVENTS // BURST_BATCH)]
        expected = STREAM_RATE * STREAM_SECONDS + BURST_EVENTS
        load_done = time.time()
        deadline = time.monotonic() + ARRIVAL_TIMEOUT
        while http_json(f"{receiver_url['healthy']}/stats")["unique_deliveries"] < expected:
            if time.monotonic() > deadline:
                print(f"  {name}: timed out: healthy deliveries not all arrived {ARRIVAL_TIMEOUT} s after the "
                      f"load; see {worker.log_path}", flush=True)  # fmt: skip
                break
            time.sleep(0.2)
        waited_until = time.time()
        arrivals = http_json(f"{receiver_url['healthy']}/arrivals")
        bad = {}
        if hostile:
            for role in ("hanging", "failing"):
                deliveries = Delivery.objects.filter(endpoint=endpoints[role])
                bad[role] = {
                    "requests": http_json(f"{receiver_url[role]}/stats")["received"],
                    "attempts": Attempt.objects.filter(delivery__endpoint=endpoints[role]).count(),
                    "attempted": deliveries.filter(attempts__gt=0).count(),
                    "pending": deliveries.filter(status=DeliveryStatus.PENDING).count(),
                }
    finally:
        if hostile and worker.popen.poll() is None:
            # A warm shutdown would wait out the hanging attempts in flight; nothing of the worker's
            # is measured any more.
            os.killpg(worker.popen.pid, signal.SIGKILL)
        worker.stop()
    flush_redis()

    event_ids = [pk for _, ids in stream + burst for pk in ids]
    delivery_of = dict(Delivery.objects.filter(endpoint=healthy, event_id__in=event_ids).values_list("event_id", "pk"))
    latencies = []  # ms; None: not arrived
    for committed, ids in stream:
        for event_id in ids:
            arrived = arrivals.get(str(delivery_of[event_id]))
            latencies.append(None if arrived is None else (arrived - committed[0]) * 1000)
    burst_arrivals = [arrivals.get(str(delivery_of[pk])) for _, ids in burst for pk in ids]
    complete = None not in burst_arrivals
    burst_start, burst_committed = burst[0][0][0], burst[-1][0][0]
    # When not all arrived, the burst would have needed longer than the wait: an upper bound.
    burst_end = max(burst_arrivals) if complete else waited_until
    result = {
        "expected": expected,
        "received": len(arrivals),
        "stream_events": len(latencies),
        "stream_seconds": stream_seconds,
        "stream_missing": latencies.count(None),
        "p50": _percentile(latencies, 50),
        "p99": _percentile(latencies, 99),
        "max": _percentile(latencies, 100),
        "burst_events": len(burst_arrivals),
        "burst_received": len(burst_arrivals) - burst_arrivals.count(None),
        "burst_commit_seconds": burst_committed - burst_start,
        "throughput": BURST_EVENTS / (burst_end - burst_start),
        "complete": complete,
        "waited": waited_until - load_done,
        "hostile_endpoints": bad,
    }
    print(
        f"  {name}: {result['received']:,} of {expected:,} healthy deliveries, latency p50 {_ms(result['p50'])} "
        f"p99 {_ms(result['p99'])} max {_ms(result['max'])}, throughput "
        f"{'' if complete else '< '}{result['throughput']:.0f}/s",
        flush=True,
    )
    return result


def _percentile(values: list[float | None], percent: float) -> float | None:
    """Nearest rank over all values, those not arrived (None) ranking last: None when it falls on one."""
    arrived = sorted(v for v in values if v is not None)
    rank = max(1, math.ceil(len(values) * percent / 100))
    return arrived[rank - 1] if rank <= len(arrived) else None


def _ms(value: float | None) -> str:
    return "not arrived" if value is None else f"{value:,.0f} ms"
