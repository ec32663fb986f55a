"""Part 1 of `make bench` (`python -m bench --only api`): the API's reads against their floors
(bench/floor.py) on the web process the Procfile runs, with its default settings, and the
alternatives beside it.

- The main run: each endpoint and its floor under wrk, taking turns in slices, on the shipped web
  process; then the mixed load (one write in 50 requests).
- Queries per request, counted in-process with the benchmark's production settings: on a miss (the
  first request after an edit of what the URL shows) and on a hit (the same request again).
- Concurrent misses: after a write, CONNECTIONS requests of one page sent at once to the web
  process; how many of them computed the page, counted by PostgreSQL (the scans of posts_post across
  the burst, against those of one miss).
- The sweep: the cached reads and `/v1/me` with their floors on other servers and sizes (granian
  at several processes x threads and both runtime modes, gunicorn's sync and gthread workers), each
  started afresh in turns; the fastest marked, and whether the shipped defaults are it (bench/sweep.py).

Its section of bench/RESULTS.md: bench/api_report.py.
"""

import http.client
import json
import math
import os
import threading
import time

from bench import api_profile
from bench.api_endpoints import LIST_20, LIST_100, ME, POST, api_endpoints
from bench.common import (
    CONNECTIONS,
    WEB_CONCURRENCY,
    WEB_PORT,
    WEB_THREADS,
    WORK,
    insert_posts,
    make_reader,
    sql,
)
from bench.load import SLICES, measure, start_web
from bench.sweep import SWEEP, Config, parse_sweep, shipped_defaults, sweep, sweep_verdict

LIST_POSTS = 1000
# Issue 39: (least ratio to the floor's req/s, highest p99 in ms or None), at CONNECTIONS connections.
TARGETS = {LIST_20: (3, 50), LIST_100: (3, 50), POST: (3, 50), ME: (1.5, None)}
MIXED = (LIST_20, POST)
MIXED_TARGET = 2.5  # the mixed load's least ratio to its floor
SWEPT = (LIST_20, POST, ME)


# --- the data -------------------------------------------------------------------------------------


def seed_api() -> dict:
    from apps.channels.models import Channel, Team
    from apps.posts.models import Post, Tag

    account, key = make_reader("API bench", "reader@bench.example.com")
    team = Team.objects.create(account=account, name="Editorial")
    channel = Channel.objects.create(account=account, team=team, title="Company Blog", platform="blog")
    tags = [Tag.objects.create(account=account, name=name).pk for name in ("django", "news", "python")]
    insert_posts([channel.pk], LIST_POSTS, status="published", scheduled=False, tags=tags)
    post = Post.objects.filter(channel=channel).order_by("id")[10]
    sql(
        "insert into posts_media (kind, url, alt_text, width, height, position, created_at, post_id) "
        "values ('video', 'https://cdn.example.com/v.mp4', '', null, null, 1, now(), %s)",
        [post.pk],
    )
    # For trying things by hand against the bench database after a run.
    (WORK / "seed.json").write_text(json.dumps({"key": key, "channel": channel.pk, "post": post.pk}))
    return {"key": key, "channel": channel.pk, "post": post.pk}


def reader(seed: dict):
    from django.test import Client

    return Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {seed['key']}")


def count_queries(seed: dict, endpoints) -> dict:
    """Queries of each endpoint on a miss and on a hit (the same request again), and of its floor,
    measured in-process with the benchmark's settings (PostgreSQL, Redis, production); and a check
    that the floor answers byte for byte what the endpoint answers. A miss of a channel's page is
    the first request after an edit of a post it shows, so every page size misses alike."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from apps.posts.models import Post

    client = reader(seed)
    # The key's last use is written at most once a minute: here, not in the counts; that write makes
    # the next request read the key again, also here.
    client.get("/v1/me")
    client.get("/v1/me")
    first_post = Post.objects.filter(channel_id=seed["channel"]).order_by("id").values_list("pk", flat=True)[0]
    edited = {LIST_20: first_post, LIST_100: first_post, POST: seed["post"]}

    def counted(url: str) -> tuple[int, bytes]:
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
        if response.status_code != 200:
            raise RuntimeError(f"{url} answered {response.status_code}: {response.content[:500]!r}")
        return len(queries), response.content

    counts = {}
    for label, path, floor_path in endpoints:
        if label in edited:
            edit(edited[label], f"Edited before the queries of {label} were counted")
        counts[(label, "miss")], body = counted(path)
        counts[(label, "hit")], again = counted(path)
        counts[(label, "floor")], floor_body = counted(floor_path)
        if again != body:
            raise RuntimeError(f"{label} answered other bytes on a hit:\n{body[:600]!r}\n{again[:600]!r}")
        if floor_body != body:
            at = next(i for i, (a, b) in enumerate(zip(body + b" ", floor_body + b"  ", strict=False)) if a != b)
            where = slice(max(at - 200, 0), at + 200)
            raise RuntimeError(
                f"the floor of {label} answers other JSON from byte {at}:\n{body[where]!r}\n{floor_body[where]!r}"
            )
    return counts


# --- concurrent misses ----------------------------------------------------------------------------


def edit(post_id: int, title: str) -> None:
    """An editor's save through the service: the channel gets a new version, its pages are stale."""
    from apps.posts.models import Post
    from apps.posts.services import post_update_content

    post_update_content(post=Post.objects.get(pk=post_id), title=title)


def posts_scans() -> int:
    """Scans of posts_post (sequential and index) the database has counted, this process's own
    included (flushed first: PostgreSQL 15 keeps a session's counts until it idles or ends)."""
    sql("select pg_stat_force_next_flush()")
    [(scans,)] = sql(
        "select coalesce(seq_scan, 0) + coalesce(idx_scan, 0) from pg_stat_user_tables where relname = 'posts_post'"
    )
    return scans


def wait_for_sessions_to_end(timeout: float = 30) -> bool:
    """Whether every other session on the database ended (a session's counts reach the statistics
    when it ends)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        [(others,)] = sql(
            "select count(*) from pg_stat_activity where datname = current_database() "
            "and backend_type = 'client backend' and pid <> pg_backend_pid()"
        )
        if not others:
            return True
        time.sleep(0.1)
    return False


def burst(key: str, path: str, n: int) -> list[tuple[int, bytes]]:
    """`n` requests of `path`, each on a connection of its own, sent at the same moment."""
    ready = threading.Barrier(n)
    answers: list = [None] * n

    def one(i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", WEB_PORT, timeout=60)
        try:
            conn.connect()
            ready.wait()
            conn.request("GET", path, headers={"Authorization": f"Bearer {key}"})
            response = conn.getresponse()
            answers[i] = (response.status, response.read())
        finally:
            conn.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def concurrent_misses(seed: dict, endpoints, n: int = CONNECTIONS) -> list[dict]:
    """For the posts list (per_page=20) and the post: after a write, `n` requests of the page at once
    on the shipped web process; how many computed it. One miss's scans of posts_post are counted
    in-process first, then the burst's across the web process's sessions (ended with the process, so
    their counts are in). The same for the floor, which computes every request: the count's check."""
    from apps.posts.models import Post

    client = reader(seed)
    first_page = list(Post.objects.filter(channel_id=seed["channel"]).order_by("id").values_list("pk", flat=True)[:20])
    results = []
    for label, path, floor_path in endpoints:
        if label not in MIXED:
            continue
        edited = seed["post"] if label == POST else first_page[0]
        per_miss = {}
        for url in (path, floor_path):
            edit(edited, f"Edited before one miss of {url}")
            before = posts_scans()
            if client.get(url).status_code != 200:
                raise RuntimeError(f"{url} did not answer 200")
            per_miss[url] = posts_scans() - before
        figures = {}
        for url in (path, floor_path):
            web = start_web("web")
            try:
                # Every thread of every process opens its database connection before the burst.
                burst(seed["key"], "/v1/me", n)
                title = f"Edited before {n} concurrent requests of {url} at {time.time()}"
                edit(edited, title)
                before = posts_scans()
                answers = burst(seed["key"], url, n)
            finally:
                web.stop()
            ended = wait_for_sessions_to_end()
            scans = posts_scans() - before
            bodies = {body for _, body in answers}
            ok = all(status == 200 for status, _ in answers) and len(bodies) == 1 and title.encode() in bodies.pop()
            figures[url] = {
                "scans": scans,
                "per_miss": per_miss[url],
                "ended": ended,
                "answers_ok": ok,
                "computed": scans / per_miss[url] if per_miss[url] else math.nan,
            }
        results.append({"endpoint": label, "requests": n, **figures[path], "floor": figures[floor_path]})
        print(
            f"  {n} concurrent misses of {label}: computed {figures[path]['computed']:.1f} times "
            f"({figures[path]['scans']} scans of posts_post, {per_miss[path]} per miss); the floor "
            f"{figures[floor_path]['computed']:.1f} times",
            flush=True,
        )
    return results


# --- the run --------------------------------------------------------------------------------------


def bench_api(
    wrk_bin: str,
    duration: int,
    *,
    slices: int = SLICES,
    configs: tuple[Config, ...] | None = None,
    rounds: int = 2,
    sweep_seconds: int = 2,
) -> dict:
    seed = seed_api()
    endpoints = api_endpoints(seed)
    queries = count_queries(seed, endpoints)
    default = shipped_defaults()
    if (default.processes, default.threads) != (int(WEB_CONCURRENCY), int(WEB_THREADS)):
        # What users run is what is measured: a main run at another size says so loudly.
        print(
            f"  WARNING: the main run serves {WEB_CONCURRENCY} x {WEB_THREADS}, the shipped defaults are "
            f"{default.processes} x {default.threads} (BENCH_WEB_CONCURRENCY, BENCH_WEB_THREADS or bench/common.py)"
        )
    misses = concurrent_misses(seed, endpoints)
    mixed_pairs = [pair for pair in endpoints if pair[0] in MIXED]
    write_path = f"/v1/floor/channels/{seed['channel']}/write"
    load_before = os.getloadavg()[0]
    web = start_web("web")
    try:
        rows = measure(wrk_bin, seed["key"], web, endpoints, duration, slices=slices)
        mixed = measure(wrk_bin, seed["key"], web, mixed_pairs, duration, write_path, slices=slices)
    finally:
        boots = web.log_text().count("Spawning worker")
        web.stop()
    load_after = os.getloadavg()[0]
    for row in rows:
        row["queries"] = {which: queries[(row["endpoint"], which)] for which in ("miss", "hit", "floor")}
    configs = parse_sweep(SWEEP) if configs is None else configs
    swept = sweep(wrk_bin, seed["key"], _swept(endpoints), configs, rounds, sweep_seconds) if configs else None
    if swept:
        print(f"  {sweep_verdict(swept, default)[1]}", flush=True)
    print("  profile: CPU per request in-process", flush=True)
    return {
        "rows": rows,
        "mixed": mixed,
        "sweep": swept,
        "default": default,
        "misses": misses,
        "worker_boots": boots,
        "duration": duration,
        "slices": slices,
        "load": (load_before, load_after),
        "cpu": api_profile.cpu_per_request(seed, endpoints),
    }


def _swept(endpoints) -> list:
    """The endpoints the sweep measures, with their floors."""
    return [pair for pair in endpoints if pair[0] in SWEPT]
