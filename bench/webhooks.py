"""Part 2 of `make bench`: webhook delivery throughput against its floor.

Events written through the outbox (`events_emit`, in transactions of WEBHOOK_BATCH), delivered by a
Celery worker as the Procfile starts it to a receiver process (bench/receiver.py) that checks every
signature; the time from the first commit to the last 2xx recorded in the database. Floor: one
process posting the same signed bodies over one pooled requests session (bench/webhook_floor.py).
"""

import json
import os
import resource
import subprocess
import time
from pathlib import Path

from bench.common import (
    PYTHON,
    RECEIVER_PORT,
    ROOT,
    WORK,
    WORKER_CONCURRENCY,
    child_env,
    http_json,
    make_account,
    published_payload,
    receiver,
    verdict,
    worker,
)

WEBHOOK_EVENTS = 10_000
WEBHOOK_BATCH = 500
DELIVERY_TIMEOUT = 300  # seconds the deliveries are waited for
# Issue 58's target: the worker's two processes and sixteen threads at least 1.5x the floor's one
# process (it was 0.5x before).
RATIO_TARGET = 1.5


def bench_webhooks(events: int = WEBHOOK_EVENTS) -> dict:
    import config.celery  # noqa: F401 - the Celery app the tasks are sent with
    from apps.webhooks.models import Delivery, WebhookEndpoint

    account = make_account("Webhook bench")
    endpoint = WebhookEndpoint.objects.create(account=account, url=f"http://127.0.0.1:{RECEIVER_PORT}/hook")
    data, post_id = published_payload(account)
    listener = receiver("receiver", RECEIVER_PORT, endpoint.secret)
    listener.wait_for_log("listening")
    stats_url = f"http://127.0.0.1:{RECEIVER_PORT}/stats"
    delivering = worker("worker")
    try:
        delivering.wait_for_log(" ready.")
        worker_cpu, receiver_cpu = group_cpu(delivering.popen.pid), group_cpu(listener.popen.pid)
        postgres_cpu, redis_cpu = backends_cpu(), broker_cpu()
        first_commit = _emit_all(account, data, post_id, events)
        last = _wait_delivered(endpoint, events, delivering.log_path)
        worker_cpu = group_cpu(delivering.popen.pid) - worker_cpu
        postgres_cpu, redis_cpu = _spent(postgres_cpu, backends_cpu()), broker_cpu() - redis_cpu
        receiver_cpu, floor_receiver_cpu = group_cpu(listener.popen.pid) - receiver_cpu, group_cpu(listener.popen.pid)
        worker_stats = http_json(stats_url)
        attempts = sum(Delivery.objects.filter(endpoint=endpoint).values_list("attempts", flat=True))
    finally:
        delivering.stop()
    try:
        floor_client_cpu = _children_cpu()
        floor = _floor(endpoint)
        floor_client_cpu = _children_cpu() - floor_client_cpu
        floor_receiver_cpu = group_cpu(listener.popen.pid) - floor_receiver_cpu
        floor_stats = http_json(stats_url)
    finally:
        listener.stop()
    seconds = last - first_commit
    return {
        "events": events,
        "seconds": seconds,
        "rate": events / seconds,
        "attempts": attempts,
        "receiver": worker_stats,
        "floor_seconds": floor["seconds"],
        "floor_rate": floor["ok"] / floor["seconds"],
        "floor_receiver": floor_stats,
        "ratio": (events / seconds) / (floor["ok"] / floor["seconds"]),
        "concurrency": WORKER_CONCURRENCY,
        "body_bytes": len(json.dumps(data)),
        # CPU milliseconds per delivery: far less sensitive to the machine's other load than the rates.
        "worker_cpu_ms": worker_cpu * 1000 / events,
        # The worker's PostgreSQL backends (not the benchmark's own, which writes the events) and
        # the broker's Redis server, which the benchmark's hand-over to the broker uses too.
        "postgres_cpu_ms": postgres_cpu * 1000 / events,
        "redis_cpu_ms": redis_cpu * 1000 / events,
        "receiver_cpu_ms": receiver_cpu * 1000 / events,
        "floor_cpu_ms": floor_client_cpu * 1000 / max(floor["ok"], 1),
        "floor_receiver_cpu_ms": floor_receiver_cpu * 1000 / max(floor["ok"], 1),
    }


def group_cpu(pgid: int) -> float:
    """CPU seconds (user and system) used so far by the live processes of a process group."""
    tick = os.sysconf("SC_CLK_TCK")
    pids = subprocess.run(["ps", "-o", "pid=", "-g", str(pgid)], capture_output=True, text=True).stdout.split()
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:  # ended meanwhile
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / tick


def _process_cpu(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def backends_cpu() -> dict[int, float]:
    """CPU seconds used so far by each PostgreSQL backend of the benchmark's database but this
    process's own (readable from /proc when PostgreSQL runs on this machine)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        pids = [pid for (pid,) in cursor.fetchall()]
    return {pid: cpu for pid in pids if (cpu := _process_cpu(pid)) is not None}


def _spent(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds the backends used in between (one that ended meanwhile is not counted)."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


def broker_cpu() -> float:
    """CPU seconds the broker's Redis server has used so far (its INFO)."""
    import redis

    from bench.common import REDIS_URL

    info = redis.Redis.from_url(REDIS_URL).info("cpu")
    return info["used_cpu_sys"] + info["used_cpu_user"]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _emit_all(account, data: dict, post_id: int, events: int) -> float:
    """`events` events in transactions of WEBHOOK_BATCH; the first commit's time."""
    from django.db import transaction

    from apps.webhooks.models import EventInput, EventKind
    from apps.webhooks.services import events_emit

    first_commit: list[float] = []
    for start in range(0, events, WEBHOOK_BATCH):
        with transaction.atomic():
            if not first_commit:
                # Registered before the outbox's own hook, so it runs first, right at COMMIT.
                transaction.on_commit(lambda: first_commit.append(time.time()))
            items = [EventInput(account=account, data=data, post_id=post_id)] * WEBHOOK_BATCH
            events_emit(kind=EventKind.POST_PUBLISHED, items=items[: events - start])
    return first_commit[0]


def _wait_delivered(endpoint, events: int, log_path) -> float:
    """Wait until every delivery succeeded; the last one's time."""
    from django.db.models import Max

    from apps.webhooks.models import Delivery, DeliveryStatus

    deliveries = Delivery.objects.filter(endpoint=endpoint)
    deadline = time.monotonic() + DELIVERY_TIMEOUT
    while deliveries.filter(status=DeliveryStatus.SUCCEEDED).count() < events:
        if time.monotonic() > deadline:
            raise RuntimeError(f"deliveries did not finish; see {log_path}")
        time.sleep(0.2)
    return deliveries.aggregate(last=Max("delivered_at"))["last"].timestamp()


def _floor(endpoint) -> dict:
    """The same bodies, signed, posted by bench/webhook_floor.py to the emptied receiver."""
    from apps.webhooks.models import Delivery

    bodies = WORK / "webhook-bodies.jsonl"
    rows = Delivery.objects.filter(endpoint=endpoint).values_list("pk", "event__kind", "event__body")
    with bodies.open("w") as out:
        for pk, kind, body in rows:
            out.write(json.dumps({"delivery": str(pk), "event": kind, "body": body}) + "\n")
    http_json(f"http://127.0.0.1:{RECEIVER_PORT}/reset", data=b"")
    floor_run = subprocess.run(
        [PYTHON, "-m", "bench.webhook_floor", f"http://127.0.0.1:{RECEIVER_PORT}/hook", endpoint.secret, str(bodies)],
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(floor_run.stdout.strip().splitlines()[-1])


def webhooks_section(hooks: dict) -> list[str]:
    return [
        f"## 2. Webhook delivery throughput ({hooks['events']:,} events)",
        "",
        "Events written through the outbox (`events_emit`, in transactions of "
        f"{WEBHOOK_BATCH}), Redis broker, a Celery worker with concurrency {hooks['concurrency']}, "
        f"to a threaded receiver process on 127.0.0.1 that checks every signature (bodies of "
        f"{hooks['body_bytes']:,} bytes). Time from the first commit to the last 2xx recorded in the database. "
        "Floor: one process posting the same signed bodies over one pooled requests session.",
        "",
        "| | deliveries | seconds | deliveries/s | target |",
        "|---|---:|---:|---:|---|",
        f"| outbox + Celery | {hooks['receiver']['unique_deliveries']:,} | {hooks['seconds']:.1f} | "
        f"{hooks['rate']:.0f} | {verdict(hooks['rate'] >= 300)} (≥300/s) |",
        f"| floor | {hooks['floor_receiver']['unique_deliveries']:,} | {hooks['floor_seconds']:.1f} | "
        f"{hooks['floor_rate']:.0f} | |",
        f"| ratio | | | {hooks['ratio']:.2f}x | {verdict(hooks['ratio'] >= RATIO_TARGET)} (≥{RATIO_TARGET}x) |",
        "",
        f"Attempts: {hooks['attempts']:,} for {hooks['events']:,} deliveries; receiver: "
        f"{hooks['receiver']['received']:,} requests, {hooks['receiver']['bad_signatures']} bad signatures.",
        "",
        f"CPU per delivery: the worker (all its processes) {hooks['worker_cpu_ms']:.2f} ms, the floor's process "
        f"{hooks['floor_cpu_ms']:.2f} ms; the receiver {hooks['receiver_cpu_ms']:.2f} ms for the worker's requests, "
        f"{hooks['floor_receiver_cpu_ms']:.2f} ms for the floor's; the worker's PostgreSQL backends "
        f"{hooks['postgres_cpu_ms']:.2f} ms, Redis {hooks['redis_cpu_ms']:.2f} ms (the hand-over to the broker too).",
        "",
    ]
