"""`make bench`: the API, webhook and content plan benchmarks, each against its floor, webhook
isolation (a healthy endpoint's deliveries with and without hostile ones, bench/isolation.py),
reads at scale (one channel of up to 1,000,000 posts, bench/scale.py), publishing (1,000 posts
committed to a local git repository against a dulwich loop, webhooks while git remotes hang,
bench/publishing.py) and the blogs' public pages (against pages rendered on every request, and in
a channel of 100,000 posts against one of 100, bench/blog.py) and the embedded default (SQLite and the
filesystem broker) while editors save in the admin (bench/embedded.py), and a newsletter edition to
100,000 subscribers into a local SMTP sink against a plain smtplib loop (bench/newsletter.py).

Sets up its own PostgreSQL database (BENCH_DATABASE, default cps_bench, created when missing) and
Redis db 7 with the Celery queue `cps-bench`, so nothing else on the machine is disturbed; starts
the web process (config/web.py), a Celery worker and webhook receivers on ports 8400-8499 and stops them (their whole
process groups) whatever happens. Prints the results table and writes it to bench/RESULTS.md
(a run of the publishing or the blog part alone replaces only its section there). Logs of the started
processes are in bench/.work/.

    python bench/run.py [--only api,webhooks,plan,isolation,scale,publishing,blog,embedded,newsletter]
                        [--duration 20] [--newsletter-subscribers 100000]
                        [--scale-sizes 1000,20000] [--publishing-posts 1000] [--blog-sizes 100,2000]
                        [--sweep granian:2x4,gunicorn-sync:4x1] [--sweep-rounds 2] [--sweep-seconds 2]
                        [--quick]

`--quick` (or BENCH_QUICK=1) shortens the API part to a smoke run (2 s per endpoint in 2 slices, the
sweep in one round of 1 s slices); such a run writes nothing to bench/RESULTS.md.
"""

import argparse
import contextlib
import json
import math
import os
import platform
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / ".work"
RESULTS = ROOT / "bench" / "RESULTS.md"
PYTHON = sys.executable
BIN = Path(PYTHON).parent

PG_SERVER = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
DB_NAME = os.environ.get("BENCH_DATABASE", "cps_bench")
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/7")
QUEUE = "cps-bench"
# BENCH_WEB_PORT: another port for the web server of the API and blog parts, so that a second run on
# the same machine (a smoke run beside a test suite's servers) does not meet the first.
WEB_PORT, RECEIVER_PORT = int(os.environ.get("BENCH_WEB_PORT", "8401")), 8402
# The web server of the API benchmark: the Procfile's web process (granian serving config/asgi.py)
# with its default processes and threads, 3 x 2 (config/settings.py; the API part checks they still
# are, bench/api.py shipped_defaults); the API part's sweep measures the others beside it.
WEB_CONCURRENCY = os.environ.get("BENCH_WEB_CONCURRENCY", "3")
WEB_THREADS = os.environ.get("BENCH_WEB_THREADS", "2")
WORKER_CONCURRENCY = os.environ.get("BENCH_WORKER_CONCURRENCY", "2")

CONNECTIONS = 32
SLICES = 10  # turns of the endpoint and its floor in each API benchmark
# Before each slice: when wrk stops, the connections it opened last are still in the server's listen
# backlog with their requests, and the workers serve them (to closed sockets) before the next
# slice's; without a pause the floor's slow leftovers landed in the endpoint's p99 and the other way
# round (docs/benchmarks.md).
SETTLE_SECONDS = 0.5
MIXED_WRITE_EVERY = 50  # the mixed load: one write in this many requests
WEBHOOK_EVENTS = 10_000
WEBHOOK_BATCH = 500
PLAN_SIZES = (10_000, 100_000)
PARTS = ("api", "webhooks", "plan", "isolation", "scale", "publishing", "blog", "embedded", "newsletter")

ENV = {
    "DATABASE_URL": f"{PG_SERVER}/{DB_NAME}",
    "REDIS_URL": REDIS_URL,
    "CELERY_BROKER_URL": REDIS_URL,
    "CELERY_QUEUE": QUEUE,
    "ENVIRONMENT": "production",
    "SECRET_KEY": f"bench-only-{secrets.token_urlsafe(32)}",
    "DEBUG": "false",
    "ALLOWED_HOSTS": "127.0.0.1,localhost",
    # Receivers on this machine: the benchmark's own.
    "WEBHOOK_ALLOW_PRIVATE_TARGETS": "true",
    # The bench account is on the enterprise plan; this keeps that plan unlimited whatever the
    # caller's environment says, so no 429 pollutes the figures.
    "RATE_LIMIT_ENTERPRISE": "",
    "LOG_LEVEL": "INFO",
    "LOG_FORMAT": "plain",
    "DJANGO_SETTINGS_MODULE": "config.settings",
    # Production refuses to start without keys for stored credentials (the git channels' tokens).
    "FERNET_KEYS": Fernet.generate_key().decode(),
    # The publishing part's git channels commit to repositories on this machine.
    "GIT_ALLOW_LOCAL_REPOSITORIES": "true",
}
os.environ.update(ENV)
sys.path.insert(0, str(ROOT))
# bench/isolation.py imports its helpers from bench.run: this module, not a second copy of it with
# its own list of running processes to stop.
sys.modules.setdefault("bench.run", sys.modules[__name__])


# --- processes ------------------------------------------------------------------------------------


class Process:
    """A child in its own process group (the web server's and celery's children go with it)."""

    running: list["Process"] = []

    def __init__(self, name: str, args: list[str], env: dict | None = None) -> None:
        self.name = name
        self.log_path = WORK / f"{name}.log"
        self.log = self.log_path.open("w")
        self.popen = subprocess.Popen(
            args, cwd=ROOT, env=child_env(env), stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        Process.running.append(self)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_log(self, needle: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.log_text():
                return
            if self.popen.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} did not start; see {self.log_path}:\n{self.log_text()[-3000:]}")

    def stop(self) -> None:
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGTERM)
                self.popen.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError):  # whatever is left of the group (pool children, workers)
            os.killpg(self.popen.pid, signal.SIGKILL)
        if self.popen.poll() is None:
            self.popen.wait(timeout=10)
        self.log.close()
        if self in Process.running:
            Process.running.remove(self)

    @classmethod
    def stop_all(cls) -> None:
        for process in list(cls.running):
            process.stop()


def child_env(extra: dict | None = None) -> dict:
    """Started processes run the production settings unless told otherwise."""
    return {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", **(extra or {})}


def wait_http(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):  # noqa: S310 - our own server on 127.0.0.1
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer")


def http_json(url: str, data: bytes | None = None) -> dict:
    with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=10) as response:  # noqa: S310
        return json.loads(response.read())


# --- set-up ---------------------------------------------------------------------------------------


def ensure_wrk() -> str:
    path = shutil.which("wrk")
    if path:
        return path
    print("bench: installing wrk (Debian package)", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True, env=env, stdout=subprocess.DEVNULL)
    return shutil.which("wrk") or "wrk"


def ensure_database() -> None:
    import psycopg

    try:
        conn = psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        sys.exit(f"bench: PostgreSQL at {PG_SERVER} (BENCH_PG) cannot be reached: {exc}")
    with conn:
        if not conn.execute("select 1 from pg_database where datname = %s", [DB_NAME]).fetchone():
            conn.execute(f'create database "{DB_NAME}"')


def flush_redis() -> None:
    """Empty the benchmark's own Redis database (counters, the cps-bench queue)."""
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=5).flushdb()
    except redis.exceptions.ConnectionError as exc:
        sys.exit(f"bench: Redis at {REDIS_URL} (BENCH_REDIS_URL) cannot be reached: {exc}")


def setup_django() -> None:
    import django

    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    django.setup()
    import logging

    # The in-process checks below go through the request log too; the servers keep theirs.
    logging.getLogger("cps.request").setLevel(logging.WARNING)
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    call_command("flush", verbosity=0, interactive=False)


def sql(statement: str, params=None) -> list:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(statement, params or [])
        return cursor.fetchall() if cursor.description else []


def machine() -> dict:
    meminfo = Path("/proc/meminfo").read_text()
    mem_kb = int(re.search(r"MemTotal:\s+(\d+)", meminfo).group(1))
    cpu = re.search(r"model name\s*:\s*(.+)", Path("/proc/cpuinfo").read_text())
    from django import get_version

    return {
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kb / 1024 / 1024, 1),
        "cpu": cpu.group(1).strip() if cpu else platform.processor(),
        "python": platform.python_version(),
        "django": get_version(),
        "postgres": sql("show server_version")[0][0],
        "load_at_start": os.getloadavg(),
    }


def make_account(name: str, plan: str = "enterprise"):
    from apps.accounts.models import Account

    return Account.objects.create(name=name, plan=plan)


def insert_posts(channel_ids: list[int], n: int, *, status: str, scheduled: bool, tags: list[int]) -> None:
    """`n` posts spread round-robin over the channels, each with the given tags and one image."""
    sql(
        """
        insert into posts_post (title, body, teaser, slug, publication_status, scheduled_at, created_at,
                                updated_at, channel_id)
        select 'Post number ' || g, repeat('Some **Markdown** body text of the post. ', 25), 'Teaser of post ' || g,
               'post-' || g, %s, case when %s then now() - interval '1 minute' - (g %% 3600) * interval '1 second' end,
               now() - interval '2 days', now() - interval '1 day', (%s::bigint[])[1 + g %% cardinality(%s::bigint[])]
        from generate_series(1, %s) g
        """,
        [status, scheduled, channel_ids, channel_ids, n],
    )
    sql(
        """
        insert into posts_post_tags (post_id, tag_id)
        select p.id, t from posts_post p, unnest(%s::bigint[]) t where p.channel_id = any(%s)
        """,
        [tags, channel_ids],
    )
    sql(
        """
        insert into posts_media (kind, url, alt_text, width, height, position, created_at, post_id)
        select 'image', 'https://cdn.example.com/images/' || p.id || '.jpg', 'Cover image', 1200, 630, 0, now(), p.id
        from posts_post p where p.channel_id = any(%s)
        """,
        [channel_ids],
    )
    # As autovacuum leaves a table in use: statistics fresh, the visibility map set (so index-only
    # scans of posts, such as a deep page's ids, read no table pages).
    for table in ("posts_post", "posts_post_tags", "posts_media"):
        sql(f"vacuum analyze {table}")


# --- 1. API throughput --------------------------------------------------------------------------


def make_reader(name: str, email: str):
    """An enterprise account (no rate limit) with an editor and a key that reads channels and
    posts; (account, raw key)."""
    from apps.accounts.models import Scope
    from apps.accounts.services import api_key_create
    from apps.users.models import Role, User

    account = make_account(name)
    user = User.objects.create(account=account, email=email, name="Bench Reader", role=Role.EDITOR)
    _, key = api_key_create(
        account=account, user=user, name="bench", scopes=[Scope.READ_CHANNELS, Scope.READ_POSTS],
        expires_at=datetime.now(UTC) + timedelta(days=30),
    )  # fmt: skip
    return account, key


class Load:
    """wrk's figures over several runs: totals added, latency histograms merged."""

    def __init__(self) -> None:
        self.requests = self.duration_us = self.non_2xx = self.socket_errors = 0
        self.latencies: dict[int, int] = {}

    def add(self, output: str) -> None:
        for line in output.splitlines():
            kind, *numbers = line.split()[:8] or [""]
            if kind == "SUMMARY":
                requests, duration, status, *errors = (int(n) for n in numbers)
                self.requests += requests
                self.duration_us += duration
                self.non_2xx += status
                self.socket_errors += sum(errors)
            elif kind == "LAT":
                value, count = (int(n) for n in numbers)
                self.latencies[value] = self.latencies.get(value, 0) + count

    def percentile(self, percent: float) -> float:
        """In milliseconds."""
        rank, seen = math.ceil(sum(self.latencies.values()) * percent / 100), 0
        for value in sorted(self.latencies):
            seen += self.latencies[value]
            if seen >= rank:
                return value / 1000
        return math.nan

    def figures(self) -> dict:
        return {
            "rps": self.requests / (self.duration_us / 1e6),
            "requests": self.requests,
            "p50": self.percentile(50),
            "p99": self.percentile(99),
            "non_2xx": self.non_2xx,
            "socket_errors": self.socket_errors,
        }


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
ROLES = ("web", "postgres", "redis", "wrk", "other")


def cpu_snapshot(web_group: int) -> dict[str, float]:
    """CPU seconds used so far, by role: the web server's process group, PostgreSQL, Redis, the
    load generator (this process's waited-for children: the wrk runs) and everything else busy on
    the machine. A process's own time plus that of its children that ended (the web server's replaced
    workers, PostgreSQL's closed backends), so nothing that ran in between is missed."""
    import resource

    used = dict.fromkeys(ROLES, 0.0)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # ended while being read
            continue
        comm, fields = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()
        role = "web" if int(fields[2]) == web_group else "postgres" if comm == "postgres" else None
        role = role or ("redis" if comm.startswith("redis-server") else None)
        if role:
            used[role] += sum(int(tick) for tick in fields[11:15]) / CLOCK_TICKS
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    used["wrk"] = children.ru_utime + children.ru_stime
    # The whole machine (user, nice, system, irq, softirq, steal), less what the roles above used.
    busy = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    used["other"] = (sum(busy) - busy[3] - busy[4]) / CLOCK_TICKS - sum(used.values())
    return used


def wrk(wrk_bin: str, key: str | None, path: str, seconds: int, env: dict | None = None) -> str:
    """wrk's summary of `seconds` of load on `path` (with the API key `key`, or as an anonymous
    reader with None); with `env` holding WRK_WRITE_PATH, the mixed load of bench/wrk_mixed.lua (one
    write in WRK_WRITE_EVERY requests)."""
    script = "bench/wrk_mixed.lua" if env else "bench/wrk_report.lua"
    auth = ["-H", f"Authorization: Bearer {key}"] if key else []
    result = subprocess.run(
        [wrk_bin, "-t2", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency", "-s", script,
         *auth, f"http://127.0.0.1:{WEB_PORT}{path}"],
        cwd=ROOT, capture_output=True, text=True, check=True, env={**os.environ, **(env or {})},
    )  # fmt: skip
    with (WORK / "wrk.log").open("a") as log:
        log.write(f"$ wrk {path} {env or ''}\n{result.stdout}\n")
    return result.stdout


# The HTTP servers: the Procfile's web process (`python -m config.web`: granian, the request limits
# and the JSON answer to the requests it refuses itself), and gunicorn's sync or gthread worker
# serving the same WSGI application (config/wsgi.py, preloaded), which the API part compares with it.
SERVER_NAMES = {
    "web": "granian (config/web.py)",
    "gunicorn-sync": "gunicorn (sync worker)",
    "gunicorn-gthread": "gunicorn (gthread worker)",
}


def server_label(server: str, workers: str, threads: str) -> str:
    return f"{SERVER_NAMES[server]}, {workers} processes x {threads} thread{'s' if threads != '1' else ''}"


def start_web(
    server: str, workers: str = WEB_CONCURRENCY, threads: str = WEB_THREADS, settings: dict | None = None
) -> "Process":
    """The server on WEB_PORT, answering; `settings`: more of the web process's WEB_* settings."""
    env = {"DJANGO_SETTINGS_MODULE": "bench.settings", **(settings or {})}
    if server == "web":
        args = [PYTHON, "-m", "config.web"]
        env |= {"BIND": f"127.0.0.1:{WEB_PORT}", "WEB_CONCURRENCY": workers, "WEB_THREADS": threads}
    else:
        worker_class = server.removeprefix("gunicorn-")
        args = [str(BIN / "gunicorn"), "--bind", f"127.0.0.1:{WEB_PORT}", "--workers", workers, "--threads", threads,
                "--worker-class", worker_class, "--preload", "--no-control-socket", "config.wsgi"]  # fmt: skip
    web = Process(f"{server}-{workers}x{threads}{''.join(f'-{v}' for v in (settings or {}).values())}", args, env)
    wait_http(f"http://127.0.0.1:{WEB_PORT}/healthz")
    return web


def measure(
    wrk_bin: str,
    key: str | None,
    web: "Process",
    pairs,
    duration: int,
    write_path: str | None = None,
    *,
    slices: int = SLICES,
) -> list:
    """Each endpoint and its floor under load, taking turns in `slices` short slices (the first
    alternating), so whatever else the machine does in the meantime weighs on both alike."""
    env = {"WRK_WRITE_PATH": write_path, "WRK_WRITE_EVERY": str(MIXED_WRITE_EVERY)} if write_path else None
    rows = []
    for label, path, floor_path in pairs:
        for url in (path, floor_path):  # warm both: connections, caches, code paths
            wrk(wrk_bin, key, url, 2, env)
        api, floor = Load(), Load()
        cpu = dict.fromkeys(ROLES, 0.0)  # used while the endpoint (not its floor) was loaded
        for turn in range(slices):
            pair = [(api, path), (floor, floor_path)]
            for load, url in pair if turn % 2 == 0 else reversed(pair):
                time.sleep(SETTLE_SECONDS)
                before = cpu_snapshot(web.popen.pid) if load is api else None
                load.add(wrk(wrk_bin, key, url, max(1, duration // slices), env))
                if before is not None:
                    after = cpu_snapshot(web.popen.pid)
                    for role in ROLES:
                        cpu[role] += after[role] - before[role]
        api, floor = api.figures(), floor.figures()
        cpu_ms = {role: seconds * 1000 / api["requests"] for role, seconds in cpu.items()}
        rows.append({"endpoint": label, "api": api, "floor": floor, "ratio": api["rps"] / floor["rps"],
                     "cpu_ms": cpu_ms})  # fmt: skip
        kind = " mixed" if write_path else ""
        print(f"  {web.name}{kind} {label}: {api['rps']:.0f} req/s (floor {floor['rps']:.0f}), p99 {api['p99']:.1f} ms",
              flush=True)  # fmt: skip
    return rows


# --- 2. webhook delivery throughput -------------------------------------------------------------


def bench_webhooks(events: int = WEBHOOK_EVENTS) -> dict:
    from django.db import transaction
    from django.db.models import Max

    import config.celery  # noqa: F401 - the Celery app the tasks are sent with
    from apps.channels.models import Channel, Team
    from apps.posts.models import Post, Tag
    from apps.posts.serializers import posts_webhook_data
    from apps.webhooks.models import Delivery, DeliveryStatus, EventKind, WebhookEndpoint
    from apps.webhooks.services import EventInput, events_emit

    account = make_account("Webhook bench")
    endpoint = WebhookEndpoint.objects.create(account=account, url=f"http://127.0.0.1:{RECEIVER_PORT}/hook")
    team = Team.objects.create(account=account, name="Editorial")
    channel = Channel.objects.create(account=account, team=team, title="Company Blog", platform="blog")
    tags = [Tag.objects.create(account=account, name=name).pk for name in ("django", "news", "python")]
    insert_posts([channel.pk], 1, status="published", scheduled=False, tags=tags)
    # A realistic body: the post.published payload of a post with three tags and an image.
    [(_, post_id, data)] = posts_webhook_data([Post.objects.get(channel=channel).pk])
    data = {"post": data}

    receiver = Process("receiver", [PYTHON, "bench/receiver.py", str(RECEIVER_PORT), endpoint.secret])
    receiver.wait_for_log("listening")
    stats_url = f"http://127.0.0.1:{RECEIVER_PORT}/stats"
    worker = Process(
        "worker",
        [str(BIN / "celery"), "-A", "config", "worker", "--loglevel", "INFO", "--concurrency", WORKER_CONCURRENCY,
         "-Q", QUEUE, "--without-gossip", "--without-mingle", "--without-heartbeat"],
    )  # fmt: skip
    try:
        worker.wait_for_log(" ready.")
        first_commit: list[float] = []
        for start in range(0, events, WEBHOOK_BATCH):
            with transaction.atomic():
                if not first_commit:
                    # Registered before the outbox's own hook, so it runs first, right at COMMIT.
                    transaction.on_commit(lambda: first_commit.append(time.time()))
                items = [EventInput(account=account, data=data, post_id=post_id)] * WEBHOOK_BATCH
                events_emit(kind=EventKind.POST_PUBLISHED, items=items[: events - start])
        deliveries = Delivery.objects.filter(endpoint=endpoint)
        deadline = time.monotonic() + 300
        while deliveries.filter(status=DeliveryStatus.SUCCEEDED).count() < events:
            if time.monotonic() > deadline:
                raise RuntimeError(f"deliveries did not finish; see {worker.log_path}")
            time.sleep(0.2)
        last = deliveries.aggregate(last=Max("delivered_at"))["last"].timestamp()
        worker_stats = http_json(stats_url)
        attempts = sum(deliveries.values_list("attempts", flat=True))
    finally:
        worker.stop()
    try:
        bodies = WORK / "webhook-bodies.jsonl"
        with bodies.open("w") as out:
            for pk, kind, body in deliveries.values_list("pk", "event__kind", "event__body"):
                out.write(json.dumps({"delivery": str(pk), "event": kind, "body": body}) + "\n")
        http_json(f"http://127.0.0.1:{RECEIVER_PORT}/reset", data=b"")
        floor_run = subprocess.run(
            [PYTHON, "bench/webhook_floor.py", f"http://127.0.0.1:{RECEIVER_PORT}/hook", endpoint.secret, str(bodies)],
            cwd=ROOT, env=child_env(), capture_output=True, text=True, check=True,
        )  # fmt: skip
        floor = json.loads(floor_run.stdout.strip().splitlines()[-1])
        floor_stats = http_json(stats_url)
    finally:
        receiver.stop()
    seconds = last - first_commit[0]
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
    }


# --- 3. content plan ------------------------------------------------------------------------------

FLOOR_SQL = """
create temporary table moved (id bigint primary key, channel_id bigint, platform text, account_id bigint)
    on commit drop;

with due as (
    select id from posts_post where publication_status = 'scheduled' and scheduled_at <= %(now)s
    for update skip locked
), changed as (
    update posts_post p set
        publication_status = case when c.platform = 'api' then 'publishing_pending' else 'published' end,
        published_at = case when c.platform = 'api' then null else %(now)s end,
        external_id = case when c.platform = 'api' then null else p.external_id end,
        external_url = case when c.platform = 'api' then null else p.external_url end,
        updated_at = %(now)s
    from due, channels_channel c
    where p.id = due.id and c.id = p.channel_id
    returning p.id, p.channel_id, c.platform, c.account_id
)
insert into moved select * from changed;

insert into posts_apipublication (post_id, created_at, confirmed_at, external_id, external_url)
select id, %(now)s, null, null, null from moved where platform = 'api'
on conflict (post_id) do update set confirmed_at = null, external_id = null, external_url = null;

with events as (
    insert into webhooks_event (account_id, kind, post_id, created_at, body)
    select m.account_id, k.kind, p.id, %(now)s, json_build_object(
        'event', k.kind,
        'timestamp', to_char(%(now)s at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'account', json_build_object('id', a.id, 'name', a.name),
        'data', json_build_object('post', json_build_object(
            'id', p.id, 'title', p.title, 'teaser', p.teaser, 'slug', p.slug,
            'publication_status', p.publication_status,
            'created_at', to_char(p.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
            'updated_at', to_char(p.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
            'channel', json_build_object(
                'id', c.id, 'title', c.title, 'platform', c.platform,
                'team', case when t.id is null then null else json_build_object('id', t.id, 'name', t.name) end,
                'posts_count', c.posts_count),
            'body', p.body,
            'published_at', to_char(p.published_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
            'meta_title', p.meta_title, 'meta_description', p.meta_description,
            'tags', coalesce((select json_agg(json_build_object('id', tg.id, 'name', tg.name) order by tg.name, tg.id)
                              from posts_post_tags pt join posts_tag tg on tg.id = pt.tag_id
                              where pt.post_id = p.id), '[]'::json),
            'media', coalesce((select json_agg(json_build_object('id', md.id, 'kind', md.kind, 'url', md.url,
                                               'alt_text', md.alt_text, 'width', md.width, 'height', md.height)
                                               order by md.position, md.id)
                               from posts_media md where md.post_id = p.id), '[]'::json)
        ))
    )::text
    from moved m
    join posts_post p on p.id = m.id
    join channels_channel c on c.id = m.channel_id
    left join channels_team t on t.id = c.team_id
    join accounts_account a on a.id = m.account_id
    cross join lateral (select case when m.platform = 'api' then 'post.publishing_pending'
                                    else 'post.published' end as kind) k
    returning id, account_id, kind
)
insert into webhooks_delivery (id, event_id, endpoint_id, status, attempts, next_attempt_at, enqueued_at,
                               last_error, created_at, updated_at)
select gen_random_uuid(), e.id, ep.id, 'pending', 0, %(now)s, %(now)s, '', %(now)s, %(now)s
from events e join webhooks_webhookendpoint ep
  on ep.account_id = e.account_id and ep.enabled and (ep.events = '[]'::jsonb or ep.events ? e.kind);
"""


def seed_plan() -> dict:
    from apps.channels.models import Channel, Team
    from apps.posts.models import Tag
    from apps.webhooks.models import WebhookEndpoint

    account = make_account("Content plan bench", plan="professional")
    team = Team.objects.create(account=account, name="Editorial")
    channels = [
        Channel.objects.create(account=account, team=team, title="Blog", platform="blog"),
        Channel.objects.create(account=account, team=team, title="Docs", platform="git"),
        Channel.objects.create(account=account, team=None, title="LinkedIn", platform="linkedin"),
        Channel.objects.create(account=account, team=team, title="Partner feed", platform="api"),
    ]
    tags = [Tag.objects.create(account=account, name=name).pk for name in ("launch", "weekly")]
    WebhookEndpoint.objects.create(account=account, url=f"http://127.0.0.1:{RECEIVER_PORT}/hook")
    return {"account": account.pk, "channels": [c.pk for c in channels], "tags": tags}


# Fresh statistics after a run moved or wrote many rows, for the checks' plans.
ANALYZE = "analyze posts_post; analyze posts_apipublication; analyze webhooks_event; analyze webhooks_delivery"


def delete_plan_posts(account: int, where: str, params: list) -> None:
    """The account's events and deliveries, and the posts `where` picks (a condition on posts_post)
    with their publication records, tag links and media: what a content plan run leaves behind."""
    posts = f"select id from posts_post where {where}"  # noqa: S608 - the benchmark's own conditions
    sql("delete from webhooks_delivery where event_id in (select id from webhooks_event where account_id = %s)",
        [account])  # fmt: skip
    sql("delete from webhooks_event where account_id = %s", [account])
    for table in ("posts_apipublication", "posts_post_tags", "posts_media"):
        sql(f"delete from {table} where post_id in ({posts})", params)  # noqa: S608 - fixed table names
    sql(f"delete from posts_post where {where}", params)  # noqa: S608
    flush_redis()  # the run's messages for the broker: no worker reads them here


def reset_plan(seed: dict, n: int) -> None:
    channels = seed["channels"]
    delete_plan_posts(seed["account"], "channel_id = any(%s)", [channels])
    insert_posts(channels, n, status="scheduled", scheduled=True, tags=seed["tags"])
    sql(ANALYZE)


def check_plan(seed: dict, n: int) -> None:
    moved = sql("select count(*) from posts_post where channel_id = any(%s) and publication_status <> 'scheduled'",
                [seed["channels"]])[0][0]  # fmt: skip
    events = sql("select count(*) from webhooks_event where account_id = %s", [seed["account"]])[0][0]
    deliveries = sql("select count(*) from webhooks_delivery d join webhooks_event e on e.id = d.event_id "
                     "where e.account_id = %s", [seed["account"]])[0][0]  # fmt: skip
    if (moved, events, deliveries) != (n, n, n):
        raise RuntimeError(f"content plan of {n} posts: moved {moved}, events {events}, deliveries {deliveries}")


def bench_content_plan() -> dict:
    import psycopg

    seed = seed_plan()
    runs = {}
    for n in PLAN_SIZES:
        reset_plan(seed, n)
        child = subprocess.run(
            [PYTHON, "bench/content_plan_child.py"], cwd=ROOT, env=child_env(), capture_output=True, text=True
        )
        if child.returncode:
            raise RuntimeError(f"content plan run failed:\n{child.stdout}\n{child.stderr[-3000:]}")
        runs[n] = json.loads(child.stdout.strip().splitlines()[-1])
        sql(ANALYZE)
        check_plan(seed, n)
        print(f"  content plan {n} posts: {runs[n]['seconds']:.1f} s, peak {runs[n]['peak_rss_mb']:.0f} MB", flush=True)
    n = PLAN_SIZES[-1]
    reset_plan(seed, n)
    with psycopg.connect(ENV["DATABASE_URL"]) as conn:
        started = time.perf_counter()
        with conn.transaction():
            now = datetime.now(UTC)
            for statement in FLOOR_SQL.split(";\n\n"):
                conn.execute(statement, {"now": now})
        floor_seconds = time.perf_counter() - started
    sql(ANALYZE)
    check_plan(seed, n)
    flush_redis()
    print(f"  content plan floor {n} posts: {floor_seconds:.1f} s", flush=True)
    return {"runs": runs, "floor_seconds": floor_seconds, "ratio": runs[n]["seconds"] / floor_seconds}


# --- the report -----------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


def report(
    info: dict,
    api: dict | None,
    hooks: dict | None,
    plan: dict | None,
    isolation: dict | None,
    scale: dict | None,
    publishing: dict | None = None,
    blog: dict | None = None,
    embedded: dict | None = None,
    newsletter: dict | None = None,
) -> str:
    lines = [
        "# Benchmark results",
        "",
        f"Written by `make bench` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Machine: {info['cores']} cores "
        f"({info['cpu']}), {info['memory_gib']} GiB memory; Python {info['python']}, Django {info['django']}, "
        f"PostgreSQL {info['postgres']}. Load average at start: "
        + ", ".join(f"{x:.2f}" for x in info["load_at_start"])
        + ".",
        "",
    ]
    if api:
        from bench.api import api_section

        lines += api_section(api)
    if hooks:
        lines += [
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
            f"| ratio | | | {hooks['ratio']:.2f}x | {verdict(hooks['ratio'] >= 0.5)} (≥0.5x) |",
            "",
            f"Attempts: {hooks['attempts']:,} for {hooks['events']:,} deliveries; receiver: "
            f"{hooks['receiver']['received']:,} requests, {hooks['receiver']['bad_signatures']} bad signatures.",
            "",
        ]
    if plan:
        runs, n = plan["runs"], PLAN_SIZES[-1]
        flat = runs[PLAN_SIZES[-1]]["peak_rss_mb"] <= runs[PLAN_SIZES[0]]["peak_rss_mb"] * 1.25
        lines += [
            "## 3. Content plan",
            "",
            "Due scheduled posts (2 tags and 1 image each) over four channels (blog, git, linkedin, api) of one "
            "account with one webhook endpoint, moved by one `content_plan_run()` in a process of its own; every "
            "post's event and delivery written and handed to the broker. Floor: one hand-written SQL `UPDATE` "
            "plus `INSERT ... SELECT` of the records, events (bodies built with `json_build_object`) and "
            "deliveries, in one transaction, without the broker hand-over.",
            "",
            "| posts | seconds | posts/s | peak memory of the process (MB) | of which before the run (MB) |",
            "|---:|---:|---:|---:|---:|",
        ]
        for size, run in runs.items():
            lines.append(
                f"| {size:,} | {run['seconds']:.1f} | {size / run['seconds']:,.0f} | {run['peak_rss_mb']:.0f} | "
                f"{run['rss_before_run_mb']:.0f} |"
            )
        lines += [
            "",
            f"Floor at {n:,} posts: {plan['floor_seconds']:.1f} s. Ratio {plan['ratio']:.2f}x the floor: "
            f"{verdict(plan['ratio'] <= 3)} (≤3x). Memory flat in the number of posts: {verdict(flat)}.",
            "",
        ]
    if isolation:
        lines += isolation_section(isolation)
    if scale:
        from bench.scale import scale_section

        lines += scale_section(scale)
    if publishing:
        from bench.publishing import publishing_section

        lines += publishing_section(publishing)
    if blog:
        from bench.blog import blog_section

        lines += blog_section(blog)
    if embedded:
        from bench.embedded import embedded_section

        lines += embedded_section(embedded)
    if newsletter:
        from bench.newsletter import newsletter_section

        lines += newsletter_section(newsletter)
    return "\n".join(lines)


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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default=",".join(PARTS))
    parser.add_argument("--duration", type=int, default=20, help="seconds of load per API endpoint (and floor)")
    parser.add_argument("--webhook-events", type=int, default=WEBHOOK_EVENTS)
    parser.add_argument(
        "--scale-sizes",
        type=lambda text: tuple(int(n) for n in text.split(",")),
        help="posts in the channel at each step of the scale part, e.g. 1000,20000 (default 1000,100000,1000000)",
    )
    parser.add_argument("--publishing-posts", type=int, default=1000, help="posts the publishing part publishes")
    parser.add_argument(
        "--blog-sizes",
        type=lambda text: tuple(int(n) for n in text.split(",")),
        help="posts in the blog part's small and large channels, e.g. 100,2000 (default 100,100000)",
    )
    parser.add_argument("--newsletter-subscribers", type=int, default=100_000, help="the newsletter part's audience")
    from bench.api import SWEEP, parse_sweep

    parser.add_argument(
        "--sweep",
        type=parse_sweep,
        default=SWEEP,
        help="the API part's alternatives, SERVER:PROCESSESxTHREADS with commas (granian, granian-st, gunicorn-sync, "
        f"gunicorn-gthread), or none; default {SWEEP}",
    )
    parser.add_argument("--sweep-rounds", type=int, default=2, help="rounds of the API part's sweep")
    parser.add_argument("--sweep-seconds", type=int, default=2, help="seconds of each slice of the sweep")
    parser.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("BENCH_QUICK", "") not in ("", "0"),
        help="a smoke run of the API part (seconds instead of minutes); writes nothing to bench/RESULTS.md",
    )
    args = parser.parse_args()
    api_duration = 2 if args.quick else args.duration
    api_options = {"configs": args.sweep, "rounds": args.sweep_rounds, "sweep_seconds": args.sweep_seconds}
    if args.quick:
        api_options |= {"slices": 2, "rounds": 1, "sweep_seconds": 1}
    api_defaults = not args.quick and (args.duration, args.sweep_rounds, args.sweep_seconds, args.sweep) == (
        parser.get_default("duration"),
        2,
        2,
        parse_sweep(SWEEP),
    )
    parts = set(args.only.split(","))
    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "wrk.log").write_text("")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    wrk_bin = ensure_wrk() if parts & {"api", "blog"} else ""
    ensure_database()
    flush_redis()
    setup_django()
    info = machine()
    api = hooks = plan = isolation = scale = publishing = blog = embedded = newsletter = None
    try:
        if "api" in parts:
            print("bench: API throughput", flush=True)
            from bench.api import bench_api

            api = bench_api(wrk_bin, api_duration, **api_options)
        if "webhooks" in parts:
            print("bench: webhook delivery throughput", flush=True)
            hooks = bench_webhooks(args.webhook_events)
        if "plan" in parts:
            print("bench: content plan", flush=True)
            plan = bench_content_plan()
        if "isolation" in parts:
            print("bench: webhook isolation", flush=True)
            from bench.isolation import bench_isolation

            isolation = bench_isolation()
        if "scale" in parts:
            print("bench: reads at scale", flush=True)
            from bench.scale import bench_scale

            scale = bench_scale(args.scale_sizes) if args.scale_sizes else bench_scale()
        if "publishing" in parts:
            print("bench: publishing", flush=True)
            from bench.publishing import bench_publishing

            publishing = bench_publishing(args.publishing_posts)
        if "blog" in parts:
            print("bench: blog pages", flush=True)
            from bench.blog import bench_blog

            blog = bench_blog(wrk_bin, args.duration, *([args.blog_sizes] if args.blog_sizes else []))
        if "embedded" in parts:
            print("bench: the embedded default", flush=True)
            from bench.embedded import bench_embedded

            embedded = bench_embedded()
        if "newsletter" in parts:
            print("bench: newsletter", flush=True)
            from bench.newsletter import bench_newsletter

            newsletter = bench_newsletter(args.newsletter_subscribers)
    finally:
        Process.stop_all()
        flush_redis()
    text = report(info, api, hooks, plan, isolation, scale, publishing, blog, embedded, newsletter)
    text += f"\nThe whole benchmark took {math.ceil(time.monotonic() - started)} s.\n"
    print("\n" + text)
    if parts == set(PARTS) and not args.quick:
        RESULTS.write_text(text)
        print(f"bench: written to {RESULTS.relative_to(ROOT)}")
    elif parts == {"api"} and api_defaults:
        from bench.publishing import replace_section

        lines = text.split("\n")
        start = next(i for i, line in enumerate(lines) if line.startswith("## 1. "))
        end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith(("## ", "The whole benchmark took")))
        alone = (
            f"This part was run alone (`bench/run.py --only api`) on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; load "
            "average at its start: " + ", ".join(f"{x:.2f}" for x in info["load_at_start"]) + "."
        )
        section = [*lines[start : start + 2], alone, "", *lines[start + 2 : end]]
        RESULTS.write_text(replace_section(RESULTS.read_text(), section))
        print(f"bench: API section written to {RESULTS.relative_to(ROOT)}")
    elif parts == {"publishing"} and args.publishing_posts == parser.get_default("publishing_posts"):
        from bench.publishing import publishing_section, replace_section

        RESULTS.write_text(replace_section(RESULTS.read_text(), publishing_section(publishing)))
        print(f"bench: publishing section written to {RESULTS.relative_to(ROOT)}")
    elif parts == {"blog"} and args.blog_sizes is None and args.duration == parser.get_default("duration"):
        from bench.blog import blog_section
        from bench.publishing import replace_section

        alone = (
            f"This part was run alone (`bench/run.py --only blog`) on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; load "
            "average at its start: " + ", ".join(f"{x:.2f}" for x in info["load_at_start"]) + "."
        )
        section = blog_section(blog)
        RESULTS.write_text(replace_section(RESULTS.read_text(), [*section[:2], alone, "", *section[2:]]))
        print(f"bench: blog section written to {RESULTS.relative_to(ROOT)}")
    elif parts == {"embedded"}:
        from bench.embedded import embedded_section
        from bench.publishing import replace_section

        RESULTS.write_text(replace_section(RESULTS.read_text(), embedded_section(embedded)))
        print(f"bench: embedded default section written to {RESULTS.relative_to(ROOT)}")
    elif parts == {"newsletter"} and args.newsletter_subscribers == parser.get_default("newsletter_subscribers"):
        from bench.newsletter import newsletter_section
        from bench.publishing import replace_section

        RESULTS.write_text(replace_section(RESULTS.read_text(), newsletter_section(newsletter)))
        print(f"bench: newsletter section written to {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
