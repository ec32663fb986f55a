"""In-process measurements behind the webhook benchmark's figures, in CPU time and statements
(steadier than deliveries/s on a busy machine): deliveries sent to a receiver process in batches
of WEBHOOK_BATCH_SIZE by sending.deliveries_attempt on this process's thread, as a worker's
sender thread does, without Celery.

    .venv/bin/python -m bench.webhook_profile [DELIVERIES] [--profile [--tottime]]

Prints, per delivery: this process's CPU (claim, attempts, record), its PostgreSQL backend's
CPU (from /proc), the statements, and with --profile the functions that took the most.
"""

import cProfile
import os
import pstats
import sys
import time
from pathlib import Path


def backend_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    from bench.common import WEB_PORT, configure, ensure_database, flush_redis, setup_django

    args = [arg for arg in sys.argv[1:] if not arg.startswith("--")]
    deliveries = int(args[0]) if args else 2000
    configure()
    ensure_database()
    flush_redis()
    setup_django()
    from django.conf import settings
    from django.db import connection, transaction

    from apps.webhooks import outbox, sending
    from apps.webhooks.models import EventInput, EventKind, WebhookEndpoint
    from bench.common import make_account, published_payload, receiver

    port = WEB_PORT + 1  # BENCH_WEB_PORT's neighbour: another run's receiver may hold the benchmark's
    account = make_account("Webhook profile")
    endpoint = WebhookEndpoint.objects.create(account=account, url=f"http://127.0.0.1:{port}/hook")
    data, post_id = published_payload(account)
    listener = receiver("receiver-profile", port, endpoint.secret)
    try:
        listener.wait_for_log("listening")
        with transaction.atomic():
            _, ids = outbox.events_write(
                kind=EventKind.POST_PUBLISHED,
                items=[EventInput(account=account, data=data, post_id=post_id)] * deliveries,
            )
        size = settings.WEBHOOK_BATCH_SIZE
        batches = [ids[start : start + size] for start in range(0, len(ids), size)]
        # One batch first, so connections and caches are warm.
        sending.deliveries_attempt(delivery_ids=batches.pop(0), hand_over=lambda ids: None)
        measured = sum(len(batch) for batch in batches)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            (pid,) = cursor.fetchone()
        profiler = cProfile.Profile(time.process_time) if "--profile" in sys.argv else None
        cpu, backend, wall = time.process_time(), backend_cpu(pid), time.perf_counter()
        statements: list[str] = []

        def count(execute, sql, params, many, context):
            statements.append(sql)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(count):
            if profiler:
                profiler.enable()
            for batch in batches:
                attempts = sending.deliveries_attempt(delivery_ids=batch, hand_over=lambda ids: None)
                assert len(attempts) == len(batch) and all(a.succeeded for a in attempts), "a delivery failed"
            if profiler:
                profiler.disable()
        cpu, backend, wall = time.process_time() - cpu, backend_cpu(pid) - backend, time.perf_counter() - wall
    finally:
        listener.stop()
    print(
        f"{measured} deliveries in batches of {size}: this process {cpu * 1000 / measured:.3f} ms CPU each, "
        f"its PostgreSQL backend {backend * 1000 / measured:.3f} ms, "
        f"{len(statements) / len(batches):.1f} statements a batch, {measured / wall:.0f}/s"
    )
    for sql in statements[: len(statements) // len(batches)]:
        print("   ", sql[:160])
    if profiler:
        order = "tottime" if "--tottime" in sys.argv else "cumulative"
        pstats.Stats(profiler).sort_stats(order).print_stats(70)


if __name__ == "__main__":
    main()
