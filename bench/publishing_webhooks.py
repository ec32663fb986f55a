"""Part 6 of `make bench`, its third half: webhook delivery while git remotes hang (bench/publishing.py).

A webhook endpoint (a bench/receiver.py process) gets streams of single-event transactions (part
4's latency: the receiver's arrival time less the commit time), taking turns in ROUNDS rounds: with
nothing else to do, and while three git channels' remotes hang (TCP servers that accept connections
and never answer), each channel with queued jobs whose first one holds a publisher thread until
`PUBLISH_TIMEOUT`. A fresh worker for each run.
"""

import socket
import threading
import time

from bench.common import (
    delete_pending_deliveries,
    flush_redis,
    http_json,
    insert_posts,
    make_account,
    published_payload,
    receiver,
)
from bench.isolation import arrival_percentile, emit_stream, ms_text, stream_latencies, wait_arrived
from bench.publish_jobs import enqueue_publish, git_channel, start_worker

# Ports of this part (the others use 8401-8413): the receiver and the three hanging remotes.
RECEIVER_PORT = 8421
HANGING_PORTS = (8422, 8423, 8424)
HANGING_JOBS = 5  # queued publish jobs per hanging channel
ROUNDS = 4  # turns of the webhook streams without and with hanging remotes
# Half part 4's rate: on a busy machine a delivery costs the worker tens of milliseconds, and at 20/s the
# stream alone kept its two processes near full, so its latency measured the machine, not the remotes.
STREAM_RATE, STREAM_EVENTS = 10, 50  # single-event transactions per second, how many per stream
ARRIVAL_TIMEOUT = 60  # seconds the stream's deliveries are waited for after the stream
JOBS_START_TIMEOUT = 30  # seconds the hanging remotes' jobs are given to start


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


def webhook_seed() -> dict:
    """The receiving account (an endpoint at the receiver, part 4's payload) and three git channels
    of another account whose remotes hang, each with HANGING_JOBS draft posts."""
    from apps.channels.models import Team
    from apps.posts.models import Post
    from apps.webhooks.models import WebhookEndpoint

    account = make_account("Publishing bench webhooks")
    endpoint = WebhookEndpoint.objects.create(account=account, url=f"http://127.0.0.1:{RECEIVER_PORT}/hook")
    payload = published_payload(account)
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
        "payload": payload,
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
    delivering = start_worker(f"publishing-webhooks-{name}")
    info = {}
    try:
        if remotes:
            _start_hanging_jobs(seed, remotes, hanging_jobs, delivering.log_path)
        stream, _ = emit_stream(seed["account"], seed["payload"], STREAM_EVENTS, STREAM_RATE)
        if remotes:
            info = {
                "running_after_stream": hanging_jobs.filter(state=JobState.RUNNING).count(),
                "succeeded": hanging_jobs.filter(state=JobState.SUCCEEDED).count(),
            }
        if not wait_arrived(receiver_url, STREAM_EVENTS, ARRIVAL_TIMEOUT, poll=0.1):
            print(f"  webhooks {name}: not all arrived {ARRIVAL_TIMEOUT} s after the stream", flush=True)
        arrivals = http_json(f"{receiver_url}/arrivals")
    finally:
        if remotes:
            delivering.kill()
        delivering.stop()
        for remote in remotes or []:
            remote.drop()
    flush_redis()
    event_ids = [pk for _, ids in stream for pk in ids]
    delivery_of = dict(
        Delivery.objects.filter(endpoint=seed["endpoint"], event_id__in=event_ids).values_list("event_id", "pk")
    )
    latencies = stream_latencies(stream, delivery_of, arrivals)
    print(
        f"  webhooks {name}: p50 {ms_text(arrival_percentile(latencies, 50))}, "
        f"p99 {ms_text(arrival_percentile(latencies, 99))}",
        flush=True,
    )
    return latencies, info


def _start_hanging_jobs(seed: dict, remotes: list[HangingRemote], hanging_jobs, log_path) -> None:
    """Enqueue the hanging channels' jobs; wait until each channel's first one runs and has connected."""
    from apps.publishing.models import JobState

    accepted = [remote.accepted for remote in remotes]
    enqueue_publish(seed["hanging_posts"])
    deadline = time.monotonic() + JOBS_START_TIMEOUT
    while hanging_jobs.filter(state=JobState.RUNNING).count() < len(remotes) or any(
        remote.accepted <= before for remote, before in zip(remotes, accepted, strict=True)
    ):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the hanging remotes' jobs did not start; see {log_path}")
        time.sleep(0.05)


def run_webhooks() -> dict:
    from django.conf import settings

    # Pending deliveries earlier parts left behind (the content plan's) are not this part's load.
    delete_pending_deliveries()
    seed = webhook_seed()
    listener = receiver("publishing-receiver", RECEIVER_PORT, seed["endpoint"].secret)
    remotes: list[HangingRemote] = []
    runs = {"alone": [], "hanging": []}
    info = []
    try:
        listener.wait_for_log("listening")
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
        listener.stop()
    result = {"publish_timeout": settings.PUBLISH_TIMEOUT, "hanging_info": info}
    for name, streams in runs.items():
        latencies = [value for stream in streams for value in stream]
        result[name] = {
            "events": len(latencies),
            "received": len(latencies) - latencies.count(None),
            "p50": arrival_percentile(latencies, 50),
            "p99": arrival_percentile(latencies, 99),
            "max": arrival_percentile(latencies, 100),
            "p99_per_round": [arrival_percentile(stream, 99) for stream in streams],
        }
        print(
            f"  webhooks {name}: {result[name]['received']} of {len(latencies)} arrived, p50 "
            f"{ms_text(result[name]['p50'])}, p99 {ms_text(result[name]['p99'])}",
            flush=True,
        )
    return result
