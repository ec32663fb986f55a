"""Part 1 of `make bench` (`bench/run.py --only api`): the API's reads against their floors
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
  started afresh in turns; the fastest marked, and whether the shipped defaults are it.
"""

import http.client
import json
import math
import os
import subprocess
import threading
import time
from dataclasses import dataclass

from bench.run import (
    CONNECTIONS,
    MIXED_WRITE_EVERY,
    PYTHON,
    ROLES,
    ROOT,
    SETTLE_SECONDS,
    SLICES,
    WEB_CONCURRENCY,
    WEB_PORT,
    WEB_THREADS,
    WORK,
    Load,
    child_env,
    insert_posts,
    make_reader,
    measure,
    server_label,
    sql,
    start_web,
    verdict,
    wrk,
)

LIST_POSTS = 1000
LIST_20 = "GET /v1/channels/{id}/posts?per_page=20"
LIST_100 = "GET /v1/channels/{id}/posts?per_page=100"
POST = "GET /v1/channels/{id}/posts/{id}"
ME = "GET /v1/me"
# Issue 39: (least ratio to the floor's req/s, highest p99 in ms or None), at CONNECTIONS connections.
TARGETS = {LIST_20: (3, 50), LIST_100: (3, 50), POST: (3, 50), ME: (1.5, None)}
MIXED = (LIST_20, POST)
MIXED_TARGET = 2.5  # the mixed load's least ratio to its floor
SWEPT = (LIST_20, POST, ME)


@dataclass(frozen=True)
class Config:
    """One server of the sweep: `granian` (config/web.py) in a runtime mode, or gunicorn's `sync`
    or `gthread` worker serving config/wsgi.py."""

    server: str  # granian, gunicorn-sync, gunicorn-gthread
    processes: int
    threads: int
    mode: str = "mt"  # granian's WEB_RUNTIME_MODE

    @classmethod
    def parse(cls, text: str) -> "Config":
        """`granian:2x4`, `granian-st:2x4`, `gunicorn-sync:4x1`, `gunicorn-gthread:2x4`."""
        name, _, size = text.strip().partition(":")
        processes, _, threads = size.partition("x")
        server, mode = name, "mt"
        if name.startswith("granian-"):
            server, mode = "granian", name.removeprefix("granian-")
        if server not in ("granian", "gunicorn-sync", "gunicorn-gthread") or mode not in ("mt", "st"):
            raise ValueError(f"unknown server {name!r} (granian, granian-st, gunicorn-sync, gunicorn-gthread)")
        if not (processes.isdigit() and threads.isdigit() and int(processes) > 0 and int(threads) > 0):
            raise ValueError(f"size {size!r} is not PROCESSESxTHREADS")
        if server == "gunicorn-sync" and threads != "1":
            raise ValueError("gunicorn's sync worker runs one thread per process")
        return cls(server, int(processes), int(threads), mode)

    @property
    def name(self) -> str:
        return {
            "granian": f"granian (config/web.py, {self.mode} runtime)",
            "gunicorn-sync": "gunicorn (sync worker)",
            "gunicorn-gthread": "gunicorn (gthread worker)",
        }[self.server]

    @property
    def size(self) -> str:
        return f"{self.processes} x {self.threads}"

    def start(self):
        workers, threads = str(self.processes), str(self.threads)
        if self.server == "granian":
            return start_web("web", workers, threads, {"WEB_RUNTIME_MODE": self.mode})
        return start_web(self.server, workers, threads)


# On 2 cores: two processes (one a core), three (the default) and four, with 1-4 threads each (a
# first sweep found one process, and eight threads, slower: bench/RESULTS.md of 2026-11-26 09:52);
# the other runtime mode at the default size; gunicorn's sync worker (the benchmark's main run
# before issue 30) and its gthread worker (the Procfile's before granian).
SWEEP = (
    "granian:2x2,granian:2x4,granian:3x2,granian:3x3,granian:3x4,granian:4x1,granian:4x2,granian-st:3x2,"
    "gunicorn-sync:4x1,gunicorn-gthread:3x2"
)


def parse_sweep(text: str) -> tuple[Config, ...]:
    return () if text.strip() in ("", "none") else tuple(Config.parse(item) for item in text.split(","))


def shipped_defaults() -> Config:
    """What the Procfile's `web:` line runs here: config/settings.py read as the web process reads it
    (with .env, without the WEB_* variables of the environment the benchmark was started from)."""
    env = {name: value for name, value in child_env().items() if not name.startswith("WEB_")}
    show = "import config.settings as s; print(s.WEB_CONCURRENCY, s.WEB_THREADS, s.WEB_RUNTIME_MODE)"
    out = subprocess.run([PYTHON, "-c", show], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    processes, threads, mode = out.stdout.split()
    return Config("granian", int(processes), int(threads), mode)


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
    sql("insert into posts_media (kind, url, alt_text, width, height, position, created_at, post_id) "
        "values ('video', 'https://cdn.example.com/v.mp4', '', null, null, 1, now(), %s)", [post.pk])  # fmt: skip
    # For trying things by hand against the bench database after a run.
    (WORK / "seed.json").write_text(json.dumps({"key": key, "channel": channel.pk, "post": post.pk}))
    return {"key": key, "channel": channel.pk, "post": post.pk}


def api_endpoints(seed: dict) -> list[tuple[str, str, str]]:
    """(label, path of the real endpoint, path of its floor)."""
    channel, post = seed["channel"], seed["post"]
    return [
        (LIST_20, f"/v1/channels/{channel}/posts?per_page=20", f"/v1/floor/channels/{channel}/posts?per_page=20"),
        (LIST_100, f"/v1/channels/{channel}/posts?per_page=100", f"/v1/floor/channels/{channel}/posts?per_page=100"),
        (POST, f"/v1/channels/{channel}/posts/{post}", f"/v1/floor/channels/{channel}/posts/{post}"),
        (ME, "/v1/me", "/v1/floor/me"),
    ]


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
            raise RuntimeError(f"the floor of {label} answers other JSON:\n{body[:600]!r}\n{floor_body[:600]!r}")
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
                "scans": scans, "per_miss": per_miss[url], "ended": ended, "answers_ok": ok,
                "computed": scans / per_miss[url] if per_miss[url] else math.nan,
            }  # fmt: skip
        results.append({"endpoint": label, "requests": n, **figures[path], "floor": figures[floor_path]})
        print(
            f"  {n} concurrent misses of {label}: computed {figures[path]['computed']:.1f} times "
            f"({figures[path]['scans']} scans of posts_post, {per_miss[path]} per miss); the floor "
            f"{figures[floor_path]['computed']:.1f} times",
            flush=True,
        )
    return results


# --- the sweep ------------------------------------------------------------------------------------


def sweep(wrk_bin: str, seed: dict, configs: tuple[Config, ...], rounds: int, seconds: int) -> dict:
    """Each configuration started afresh in every round (the order reversed every other round, so
    the machine's drift weighs on all alike), its endpoints and their floors taking turns in one
    slice of `seconds` each per round."""
    pairs = [pair for pair in api_endpoints(seed) if pair[0] in SWEPT]
    loads: dict[tuple, Load] = {}
    per_round: dict[tuple, list[float]] = {}
    for turn in range(rounds):
        for config in configs if turn % 2 == 0 else configs[::-1]:
            web = config.start()
            try:
                for label, path, floor_path in pairs:
                    for url in (path, floor_path):  # connections, caches, code paths
                        wrk(wrk_bin, seed["key"], url, 1)
                    order = [("api", path), ("floor", floor_path)]
                    for which, url in order if turn % 2 == 0 else order[::-1]:
                        time.sleep(SETTLE_SECONDS)
                        slice_load = Load()
                        output = wrk(wrk_bin, seed["key"], url, seconds)
                        slice_load.add(output)
                        loads.setdefault((config, label, which), Load()).add(output)
                        per_round.setdefault((config, label, which), []).append(slice_load.figures()["rps"])
            finally:
                web.stop()
            print(f"  sweep round {turn + 1}/{rounds}: {config.name} {config.size}", flush=True)
    rows = []
    for config in configs:
        for label, _, _ in pairs:
            api, floor = loads[(config, label, "api")].figures(), loads[(config, label, "floor")].figures()
            rows.append({"config": config, "endpoint": label, "api": api, "floor": floor,
                         "ratio": api["rps"] / floor["rps"], "rounds": per_round[(config, label, "api")]})  # fmt: skip
    return {"rows": rows, "configs": configs, "rounds": rounds, "seconds": seconds}


def scores(sweep_result: dict) -> list[tuple[Config, float, list[float]]]:
    """Each configuration's geometric mean of req/s over the swept endpoints, and the same per round;
    fastest first."""
    by_config: dict[Config, list[dict]] = {}
    for row in sweep_result["rows"]:
        by_config.setdefault(row["config"], []).append(row)

    def geomean(values) -> float:
        values = list(values)
        return math.exp(sum(math.log(v) for v in values) / len(values)) if all(v > 0 for v in values) else 0.0

    ranked = []
    for config, rows in by_config.items():
        rounds = [geomean(row["rounds"][i] for row in rows) for i in range(sweep_result["rounds"])]
        ranked.append((config, geomean(row["api"]["rps"] for row in rows), rounds))
    return sorted(ranked, key=lambda item: -item[1])


def sweep_verdict(sweep_result: dict, default: Config) -> tuple[bool | None, str]:
    ranked = scores(sweep_result)
    fastest, best, best_rounds = ranked[0]
    mine = next(((score, rounds) for config, score, rounds in ranked if config == default), None)
    if mine is None:
        return None, f"The shipped defaults ({default.name}, {default.size}) were not in the sweep."
    if fastest == default:
        return True, f"The shipped defaults ({default.name}, {default.size}) are the fastest measured: met."
    score, rounds = mine
    if len(rounds) < 2:
        spread = "one round, so no spread between rounds to weigh the difference against"
    elif min(best_rounds) > max(rounds):
        spread = "its slowest round faster than their fastest"
    else:
        spread = "not in every round: within the spread between rounds"
    return False, (
        f"The shipped defaults ({default.name}, {default.size}) are **not** the fastest measured: "
        f"{fastest.name}, {fastest.size} is, {best / score:.2f}x their req/s (geometric mean over the endpoints; "
        f"{spread})."
    )


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
            f"{default.processes} x {default.threads} (BENCH_WEB_CONCURRENCY, BENCH_WEB_THREADS or bench/run.py)"
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
    swept = sweep(wrk_bin, seed, configs, rounds, sweep_seconds) if configs else None
    if swept:
        print(f"  {sweep_verdict(swept, default)[1]}", flush=True)
    from bench import api_profile

    print("  profile: CPU per request in-process", flush=True)
    return {"rows": rows, "mixed": mixed, "sweep": swept, "default": default, "misses": misses,
            "worker_boots": boots, "duration": duration, "slices": slices, "load": (load_before, load_after),
            "cpu": api_profile.cpu_per_request(seed, endpoints)}  # fmt: skip


# --- the report -----------------------------------------------------------------------------------


def target_text(label: str) -> str:
    least, p99 = TARGETS[label]
    return f"≥{least}x" + (f", p99 <{p99} ms" if p99 else "")


def met(label: str, row: dict) -> bool:
    least, p99 = TARGETS[label]
    a = row["api"]
    return row["ratio"] >= least and (p99 is None or a["p99"] < p99) and a["non_2xx"] == 0 and a["socket_errors"] == 0


def api_section(api: dict) -> list[str]:
    rows = api["rows"]
    by_label = {row["endpoint"]: row for row in rows}
    q20, q100 = by_label[LIST_20]["queries"]["miss"], by_label[LIST_100]["queries"]["miss"]
    slice_seconds = max(1, api["duration"] // api["slices"])
    lines = [
        f"## 1. API throughput (wrk, {CONNECTIONS} connections, {api['duration']} s per run, from 127.0.0.1)",
        "",
        f"{server_label('web', WEB_CONCURRENCY, WEB_THREADS)}, the Procfile's web process with production "
        "settings on PostgreSQL and Redis. Floor: a plain Django view (bench/floor.py, no DRF) computing every "
        "answer from the database (the key's query without the cache, the same queries as a miss) as "
        "byte-identical JSON, served by the same server and middleware. Each "
        f"endpoint and its floor take turns in {api['slices']} slices of {slice_seconds} s (the first "
        f"alternating, {SETTLE_SECONDS} s apart for the server to finish the last slice's requests); latencies "
        f"are merged from wrk's histograms. Load average before/after: {api['load'][0]:.2f}/{api['load'][1]:.2f}. "
        f"Worker processes booted: {api['worker_boots']}.",
        "",
        "| Endpoint | req/s | p50 ms | p99 ms | floor req/s | floor p50 ms | floor p99 ms | ratio | non-2xx "
        "| queries on a miss / on a hit (floor) | target |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        a, f, q = row["api"], row["floor"], row["queries"]
        lines.append(
            f"| `{row['endpoint']}` | {a['rps']:.0f} | {a['p50']:.1f} | {a['p99']:.1f} | {f['rps']:.0f} | "
            f"{f['p50']:.1f} | {f['p99']:.1f} | {row['ratio']:.2f}x | {a['non_2xx'] + f['non_2xx']} | "
            f"{q['miss']} / {q['hit']} ({q['floor']}) | {target_text(row['endpoint'])}: "
            f"{verdict(met(row['endpoint'], row))} |"
        )
    hits = "; ".join(f"`{row['endpoint']}` {row['queries']['hit']}" for row in rows)
    none = all(row["queries"]["hit"] == 0 for row in rows)
    lines += [
        "",
        "Repeated reads of one URL (the polling case): after the first request the endpoints answer from "
        "the cache (docs/benchmarks.md), the floor computes every answer. **Queries on a hit**, counted "
        "in-process (`CaptureQueriesContext`, the benchmark's production settings on PostgreSQL and Redis) on "
        f"the second of two identical requests: {hits} ({verdict(none)}: none). On a miss (the first request "
        f"after an edit of a post on the page): {q20} at per_page=20, {q100} at per_page=100 "
        f"({verdict(q20 == q100)}: constant in page size).",
        "",
    ]
    lines += misses_section(api["misses"])
    lines += mixed_section(api)
    if api["sweep"]:
        lines += sweep_section(api["sweep"], api["default"])
    lines += api_notes(api)
    return lines


def misses_section(misses: list[dict]) -> list[str]:
    if not misses:
        return []
    n = misses[0]["requests"]
    lines = [
        f"**Concurrent misses of one page** (target: computed once): after an edit of a post the page shows, "
        f"{n} requests of the page sent at the same moment, each on a connection of its own, to the shipped web "
        "process. Counted by PostgreSQL: the scans of `posts_post` across the burst (the web process stopped "
        "after it, so its sessions' counts are in), over those of one miss measured in-process just before. "
        "The floor, which computes every request, is counted the same way, on a server of its own: the check "
        "that the count sees every computation.",
        "",
        "| Endpoint | requests | scans of posts_post | per miss | computed | answers | floor: computed | "
        "target: once |",
        "|---|---:|---:|---:|---:|---|---:|---|",
    ]

    def times(m: dict) -> str:
        return "n/a" if math.isnan(m["computed"]) else f"{m['computed']:.1f}"

    for m in misses:
        ok = not math.isnan(m["computed"]) and m["computed"] < 1.5 and m["ended"] and m["answers_ok"]
        answers = "all 200, one body, the edit in it" if m["answers_ok"] else "**not all the same 200 with the edit**"
        lines.append(
            f"| `{m['endpoint']}` | {m['requests']} | {m['scans']} | {m['per_miss']} | {times(m)} | {answers} | "
            f"{times(m['floor'])} | {verdict(ok)} |"
        )
    if not all(m["ended"] and m["floor"]["ended"] for m in misses):
        lines += ["", "Some of the web process's sessions had not ended when counted: the figure may be low."]
    return [*lines, ""]


def mixed_section(api: dict) -> list[str]:
    lines = [
        f"**Mixed load**: the same {CONNECTIONS} connections, one request in {MIXED_WRITE_EVERY} a write (an "
        "editor's save of a post on the channel's first page through `post_update_content`, bench/floor.py "
        "`write`), the others the read; the floor's run gets the same writes. Requests per second count both.",
        "",
        f"| Endpoint | req/s | p50 ms | p99 ms | floor req/s | floor p99 ms | ratio | target: ≥{MIXED_TARGET}x |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in api["mixed"]:
        a, f = row["api"], row["floor"]
        ok = row["ratio"] >= MIXED_TARGET and a["socket_errors"] == 0
        lines.append(
            f"| `{row['endpoint']}` | {a['rps']:.0f} | {a['p50']:.1f} | {a['p99']:.1f} | {f['rps']:.0f} | "
            f"{f['p99']:.1f} | {row['ratio']:.2f}x | {verdict(ok)} |"
        )
    return [*lines, ""]


def sweep_section(swept: dict, default: Config) -> list[str]:
    fastest = {}
    for row in swept["rows"]:
        if row["api"]["rps"] > fastest.get(row["endpoint"], 0):
            fastest[row["endpoint"]] = row["api"]["rps"]
    lines = [
        f"**The alternatives**: the cached reads and `/v1/me`, each with its floor on the same server, on every "
        f"server and size below, started afresh in each of {swept['rounds']} round(s) (the order reversed every "
        f"other round); in each round every endpoint and its floor take one slice of {swept['seconds']} s each, in "
        "turns. ★: the fastest for that endpoint. The shipped defaults: "
        f"{default.name}, {default.size} (config/settings.py).",
        "",
        "| Server | processes x threads | Endpoint | req/s | p50 ms | p99 ms | floor req/s | ratio |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in swept["rows"]:
        config, a, f = row["config"], row["api"], row["floor"]
        star = " ★" if a["rps"] == fastest[row["endpoint"]] else ""
        shipped = " (shipped)" if config == default else ""
        lines.append(
            f"| {config.name}{shipped} | {config.size} | `{row['endpoint']}` | {a['rps']:.0f}{star} | {a['p50']:.1f} | "
            f"{a['p99']:.1f} | {f['rps']:.0f} | {row['ratio']:.2f}x |"
        )
    ranked = scores(swept)
    best = ranked[0][1]
    lines += [
        "",
        "Ranked by the geometric mean of the three endpoints' req/s (per round beside it: the spread "
        "between rounds is the noise of this run):",
        "",
        "| Server | processes x threads | req/s (geometric mean) | of the fastest | per round |",
        "|---|---|---:|---:|---|",
    ]
    for config, score, rounds in ranked:
        shipped = " (shipped)" if config == default else ""
        lines.append(
            f"| {config.name}{shipped} | {config.size} | {score:.0f} | {score / best:.2f} | "
            + ", ".join(f"{value:.0f}" for value in rounds)
            + " |"
        )
    return [*lines, "", sweep_verdict(swept, default)[1], ""]


def api_notes(api: dict) -> list[str]:
    """The profile of the API benchmark and the targets it missed, as measured (explanations: docs/benchmarks.md)."""
    lines = [
        "Profile (bench/api_profile.py): CPU per request measured in-process (Django's test client, no "
        "network), the endpoint and its floor taking turns.",
        "",
        "| Endpoint | API ms CPU | floor ms CPU | ratio |",
        "|---|---:|---:|---:|",
    ]
    for label, (cpu_api, cpu_floor) in api["cpu"].items():
        lines.append(f"| `{label}` | {cpu_api:.2f} | {cpu_floor:.2f} | {cpu_floor / cpu_api:.2f}x |")
    cores = os.cpu_count()
    lines += [
        "",
        "Where the machine's CPU went while each endpoint was loaded over HTTP (process CPU time per request, "
        "summed over the endpoint's slices), and what that allows: the most requests per second "
        f"{cores} cores give at that cost, and the least mean latency that leaves at {CONNECTIONS} connections.",
        "",
        "| Endpoint | web ms | PostgreSQL ms | Redis ms | wrk ms | other ms | total ms | ceiling req/s "
        f"| least mean latency at {CONNECTIONS} connections |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in api["rows"]:
        cpu = row["cpu_ms"]
        total = sum(cpu.values())
        cells = " | ".join(f"{cpu[role]:.2f}" for role in ROLES)
        lines.append(
            f"| `{row['endpoint']}` | {cells} | {total:.2f} | {cores * 1000 / total:.0f} | "
            f"{CONNECTIONS * total / cores:.0f} ms |"
        )
    missed = [row for row in api["rows"] if not met(row["endpoint"], row)]
    if missed:
        lines += [
            "",
            "**The misses**: "
            + "; ".join(
                f"`{row['endpoint']}` {row['ratio']:.2f}x, p99 {row['api']['p99']:.0f} ms "
                f"(target {target_text(row['endpoint'])}; floor p99 {row['floor']['p99']:.0f} ms)"
                for row in missed
            )
            + f". Mean latency at {CONNECTIONS} busy connections ({CONNECTIONS} / throughput): "
            + "; ".join(f"{CONNECTIONS / row['api']['rps'] * 1000:.0f} ms" for row in missed)
            + ".",
        ]
    return [*lines, ""]
