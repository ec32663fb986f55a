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
import time

from bench.common import (
    WORKER_CONCURRENCY,
    delete_pending_deliveries,
    flush_redis,
    http_json,
    make_account,
    published_payload,
    receiver,
    verdict,
    worker,
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

    from apps.webhooks.models import WebhookEndpoint

    started = time.monotonic()
    # After a whole `make bench`, the content plan's deliveries are still pending: a fourth endpoint
    # that delivery code sweeping for due work would take on. This part measures its own three only.
    delete_pending_deliveries()
    timeout = settings.WEBHOOK_TIMEOUT
    hang = max(60, 2 * timeout)
    options = {"healthy": [], "hanging": ["--hang", str(hang)], "failing": ["--status", "500"]}
    endpoints = {
        role: WebhookEndpoint.objects.create(
            account=make_account(f"Isolation bench {role}"), url=f"http://127.0.0.1:{port}/hook"
        )
        for role, port in PORTS.items()
    }
    # The body of part 2: the post.published payload of a post with three tags and an image.
    payload = published_payload(endpoints["healthy"].account)
    receivers = {}
    try:
        for role, port in PORTS.items():
            receivers[role] = receiver(f"isolation-{role}", port, endpoints[role].secret, *options[role])
        for listener in receivers.values():
            listener.wait_for_log("listening")
        alone = _run("alone", endpoints, payload, hostile=False)
        with_hostile = _run("hostile", endpoints, payload, hostile=True)
    finally:
        for listener in receivers.values():
            listener.stop()
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


def emit_events(account, payload: tuple[dict, int], n: int) -> tuple[list[float], list[int]]:
    """One transaction of `n` events through the outbox: (its commit time, once committed; the event ids)."""
    from django.db import transaction

    from apps.webhooks.models import EventInput, EventKind
    from apps.webhooks.services import events_emit

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
    receiver_url = {role: f"http://127.0.0.1:{port}" for role, port in PORTS.items()}
    # Each run starts from an empty broker, empty receivers and a fresh worker, so the second run
    # inherits nothing of the first but the database.
    flush_redis()
    for url in receiver_url.values():
        http_json(f"{url}/reset", data=b"")
    delivering = worker(f"isolation-worker-{name}")
    try:
        delivering.wait_for_log(" ready.")
        if hostile:
            for role in ("hanging", "failing"):
                for _ in range(HOSTILE_EVENTS // HOSTILE_BATCH):
                    emit_events(endpoints[role].account, payload, HOSTILE_BATCH)
        load = _healthy_load(name, endpoints["healthy"].account, payload)
        load_done = time.time()
        _wait_arrived(name, receiver_url["healthy"], load["expected"], delivering.log_path)
        waited_until = time.time()
        arrivals = http_json(f"{receiver_url['healthy']}/arrivals")
        bad = _hostile_figures(endpoints, receiver_url) if hostile else {}
    finally:
        if hostile:
            delivering.kill()
        delivering.stop()
    flush_redis()
    result = _figures(endpoints["healthy"], load, arrivals) | {
        "waited": waited_until - load_done,
        "hostile_endpoints": bad,
    }
    # When not all arrived, the burst would have needed longer than the wait: an upper bound.
    burst_start = load["burst"][0][0][0]
    burst_end = result.pop("burst_end") or waited_until
    result["throughput"] = BURST_EVENTS / (burst_end - burst_start)
    print(
        f"  {name}: {result['received']:,} of {result['expected']:,} healthy deliveries, latency p50 "
        f"{ms_text(result['p50'])} p99 {ms_text(result['p99'])} max {ms_text(result['max'])}, throughput "
        f"{'' if result['complete'] else '< '}{result['throughput']:.0f}/s",
        flush=True,
    )
    return result


def _healthy_load(name: str, account, payload: tuple[dict, int]) -> dict:
    """The steady stream of single-event transactions, then the burst: what each committed."""
    print(f"  {name}: healthy stream of {STREAM_RATE * STREAM_SECONDS} events", flush=True)
    stream, stream_seconds = emit_stream(account, payload, STREAM_RATE * STREAM_SECONDS, STREAM_RATE)
    burst = [emit_events(account, payload, BURST_BATCH) for _ in range(BURST_EVENTS // BURST_BATCH)]
    return {
        "stream": stream,
        "stream_seconds": stream_seconds,
        "burst": burst,
        "expected": STREAM_RATE * STREAM_SECONDS + BURST_EVENTS,
    }


def emit_stream(account, payload: tuple[dict, int], events: int, rate: float) -> tuple[list, float]:
    """`events` single-event transactions at `rate` a second: what each committed, and the seconds taken."""
    stream, started = [], time.monotonic()
    for i in range(events):
        pause = started + i / rate - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        stream.append(emit_events(account, payload, 1))
    return stream, time.monotonic() - started


def _wait_arrived(name: str, url: str, expected: int, log_path) -> None:
    if not wait_arrived(url, expected, ARRIVAL_TIMEOUT, poll=0.2):
        print(
            f"  {name}: timed out: healthy deliveries not all arrived {ARRIVAL_TIMEOUT} s after the "
            f"load; see {log_path}",
            flush=True,
        )


def wait_arrived(url: str, expected: int, timeout: float, *, poll: float) -> bool:
    """Whether the receiver at `url` had `expected` deliveries within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while http_json(f"{url}/stats")["unique_deliveries"] < expected:
        if time.monotonic() > deadline:
            return False
        time.sleep(poll)
    return True


def _hostile_figures(endpoints: dict, receiver_url: dict) -> dict:
    """What the hostile endpoints got: requests at their receivers, attempts in the database."""
    from apps.webhooks.models import Attempt, Delivery, DeliveryStatus

    bad = {}
    for role in ("hanging", "failing"):
        deliveries = Delivery.objects.filter(endpoint=endpoints[role])
        bad[role] = {
            "requests": http_json(f"{receiver_url[role]}/stats")["received"],
            "attempts": Attempt.objects.filter(delivery__endpoint=endpoints[role]).count(),
            "attempted": deliveries.filter(attempts__gt=0).count(),
            "pending": deliveries.filter(status=DeliveryStatus.PENDING).count(),
        }
    return bad


def _figures(healthy, load: dict, arrivals: dict) -> dict:
    """The stream's latencies and the burst's arrivals, from the receiver's arrival times."""
    from apps.webhooks.models import Delivery

    stream, burst = load["stream"], load["burst"]
    event_ids = [pk for _, ids in stream + burst for pk in ids]
    delivery_of = dict(Delivery.objects.filter(endpoint=healthy, event_id__in=event_ids).values_list("event_id", "pk"))
    latencies = stream_latencies(stream, delivery_of, arrivals)
    burst_arrivals = [arrivals.get(str(delivery_of[pk])) for _, ids in burst for pk in ids]
    complete = None not in burst_arrivals
    return {
        "expected": load["expected"],
        "received": len(arrivals),
        "stream_events": len(latencies),
        "stream_seconds": load["stream_seconds"],
        "stream_missing": latencies.count(None),
        "p50": arrival_percentile(latencies, 50),
        "p99": arrival_percentile(latencies, 99),
        "max": arrival_percentile(latencies, 100),
        "burst_events": len(burst_arrivals),
        "burst_received": len(burst_arrivals) - burst_arrivals.count(None),
        "burst_commit_seconds": burst[-1][0][0] - burst[0][0][0],
        "complete": complete,
        "burst_end": max(burst_arrivals) if complete else None,
    }


def stream_latencies(stream: list, delivery_of: dict, arrivals: dict) -> list[float | None]:
    """Each delivery's arrival less its event's commit (ms), None where it has not arrived."""
    latencies = []
    for committed, ids in stream:
        for event_id in ids:
            arrived = arrivals.get(str(delivery_of[event_id]))
            latencies.append(None if arrived is None else (arrived - committed[0]) * 1000)
    return latencies


def arrival_percentile(values: list[float | None], percent: float) -> float | None:
    """Nearest rank over all values, those not arrived (None) ranking last: None when it falls on one."""
    arrived = sorted(v for v in values if v is not None)
    rank = max(1, math.ceil(len(values) * percent / 100))
    return arrived[rank - 1] if rank <= len(arrived) else None


def ms_text(value: float | None) -> str:
    return "not arrived" if value is None else f"{value:,.0f} ms"


def isolation_section(iso: dict) -> list[str]:
    def row(label: str, run: dict, target: str) -> str:
        # A delivery not arrived when the wait ended took longer than the wait.
        late = f"> {run['waited'] * 1000:,.0f}"
        cells = [late if value is None else f"{value:,.0f}" for value in (run["p50"], run["p99"], run["max"])]
        rate = f"{'' if run['complete'] else '< '}{run['throughput']:,.0f}"
        return f"| {label} | {run['received']:,} of {run['expected']:,} | {' | '.join(cells)} | {rate} | {target} |"

    alone, hostile, ratio, load = iso["alone"], iso["hostile"], iso["ratio"], iso["load"]
    hostile_events, stream_rate = load["hostile_events"], load["stream_rate"]
    p99_ok = hostile["p99"] is not None and hostile["p99"] < 2000
    ratio_ok = ratio is not None and not iso["ratio_is_bound"] and ratio >= 0.8
    ratio_text = "n/a" if ratio is None else f"{'< ' if iso['ratio_is_bound'] else ''}{ratio:.2f}x"
    lines = [
        "## 4. Webhook isolation",
        "",
        "Three accounts with one webhook endpoint each, every one a receiver process of its own on 127.0.0.1: "
        f"healthy (200 at once), hanging (reads the request and holds it unanswered for {iso['hang_seconds']} s) "
        f"and failing (500 at once). One Celery worker with concurrency {iso['concurrency']}, started afresh for "
        f"each run, default webhook settings (`WEBHOOK_TIMEOUT` {iso['webhook_timeout']} s, "
        f"`WEBHOOK_BATCH_SIZE` {iso['batch_size']}). The run with hostile endpoints first commits "
        f"{hostile_events:,} events for the hanging endpoint's account and {hostile_events:,} for the failing one's "
        f"(`events_emit`, transactions of {load['hostile_batch']}), then at once the same healthy load as the run "
        f"alone: {stream_rate * load['stream_seconds']} single-event transactions at {stream_rate}/s (latency: "
        "the receiver's arrival time of each delivery less its event's commit), then a burst of "
        f"{load['burst_events']:,} events in transactions of {load['burst_batch']} (throughput: its deliveries "
        "over the time from its first commit to its last arrival). The healthy deliveries are waited for at most "
        f"{load['arrival_timeout']} s after the load; the hostile ones are not.",
        "",
        "| Run | healthy deliveries | latency p50 ms | p99 ms | max ms | burst deliveries/s | target |",
        "|---|---:|---:|---:|---:|---:|---|",
        row("alone", alone, ""),
        row("with hostile endpoints", hostile, f"p99 <2 s: {verdict(p99_ok)}"),
        f"| ratio (with / alone) | | | | | {ratio_text} | {verdict(ratio_ok)} (≥0.8x) |",
        "",
    ]
    for name, run in (("alone", alone), ("with hostile endpoints", hostile)):
        if run["received"] < run["expected"]:
            lines += [
                f"Run {name}: {run['expected'] - run['received']:,} healthy deliveries had not arrived "
                f"{run['waited']:.0f} s after the load ({run['stream_missing']} of the stream's, "
                f"{run['burst_events'] - run['burst_received']:,} of the burst's); its burst throughput is an "
                "upper bound.",
                "",
            ]
    lines += [
        "The hostile endpoints in the run with them when the wait for the healthy deliveries ended "
        f"({hostile['waited']:.0f} s after the load): "
        + "; ".join(
            f"{role}: its receiver saw {h['requests']:,} requests; in the database {h['attempts']:,} attempts, "
            f"{h['attempted']:,} of {hostile_events:,} deliveries attempted, {h['pending']:,} still pending"
            for role, h in hostile["hostile_endpoints"].items()
        )
        + ". The load as emitted, alone / with hostile endpoints: the stream over "
        f"{alone['stream_seconds']:.1f} / {hostile['stream_seconds']:.1f} s, the burst committed over "
        f"{alone['burst_commit_seconds']:.1f} / {hostile['burst_commit_seconds']:.1f} s. "
        f"The part took {iso['seconds']:.0f} s.",
        "",
    ]
    return lines
