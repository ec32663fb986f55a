"""What every part of `make bench` shares: the benchmark's settings, the processes it starts and
stops, SQL, accounts and keys, and bench/RESULTS.md.

Nothing here acts when imported: `configure()` sets the environment the benchmark and the processes
it starts run with, `setup_django()` prepares its database; bench/__main__.py calls both.
"""

import contextlib
import json
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

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / ".work"
RESULTS = ROOT / "bench" / "RESULTS.md"
PYTHON = sys.executable
BIN = Path(PYTHON).parent

PG_SERVER = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
DB_NAME = os.environ.get("BENCH_DATABASE", "cps_bench")
DATABASE_URL = f"{PG_SERVER}/{DB_NAME}"
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/7")
QUEUE = "cps-bench"
# BENCH_WEB_PORT: another port for the web server of the API and blog parts, so that a second run on
# the same machine (a smoke run beside a test suite's servers) does not meet the first.
WEB_PORT, RECEIVER_PORT = int(os.environ.get("BENCH_WEB_PORT", "8401")), 8402
# The web server of the API benchmark: the Procfile's web process (granian serving config/server/)
# with its default processes and threads, 3 x 2 (config/settings/web.py; the API part checks they still
# are, bench/api.py shipped_defaults); the API part's sweep measures the others beside it.
WEB_CONCURRENCY = os.environ.get("BENCH_WEB_CONCURRENCY", "3")
WEB_THREADS = os.environ.get("BENCH_WEB_THREADS", "2")
WORKER_CONCURRENCY = os.environ.get("BENCH_WORKER_CONCURRENCY", "2")
CONNECTIONS = 32


def bench_env() -> dict[str, str]:
    """The settings of the benchmark's processes (fresh secrets each run): its own database, Redis
    db and queue, so nothing else on the machine is disturbed."""
    from cryptography.fernet import Fernet

    return {
        "DATABASE_URL": DATABASE_URL,
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
        # Uploads in a folder of the benchmark's own (the media part empties it), served by the web process.
        "MEDIA_STORAGE_URL": f"file://{WORK / 'media'}",
    }


def configure() -> None:
    """The benchmark's settings into this process's environment, which every started process inherits."""
    os.environ.update(bench_env())


# --- processes ------------------------------------------------------------------------------------


class Process:
    """A child in its own process group (the web server's and celery's children go with it)."""

    running: list["Process"] = []

    def __init__(self, name: str, args: list[str], env: dict | None = None) -> None:
        self.name = name
        self.log_path = WORK / f"{name}.log"
        self.log = self.log_path.open("w")
        self.popen = subprocess.Popen(
            args,
            cwd=ROOT,
            env=child_env(env),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
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

    def kill(self) -> None:
        """SIGKILL to the whole group at once: a warm shutdown would wait out the work in flight
        (hanging attempts, jobs), of which nothing is measured any more."""
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)

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


def worker(name: str, env: dict | None = None) -> Process:
    """The Procfile's worker (`celery -A config worker`) on the bench's queue; not yet waited for."""
    return Process(
        name,
        [
            str(BIN / "celery"),
            "-A",
            "config",
            "worker",
            "--loglevel",
            "INFO",
            "--concurrency",
            WORKER_CONCURRENCY,
            "-Q",
            QUEUE,
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        env,
    )


def receiver(name: str, port: int, secret: str, *options: str) -> Process:
    """A webhook receiver process (bench/receiver.py) on 127.0.0.1:`port`; not yet waited for."""
    return Process(name, [PYTHON, "-m", "bench.receiver", str(port), secret, *options])


def content_plan_child() -> dict:
    """One content plan run in a process of its own (bench/content_plan_child.py): its JSON line."""
    child = subprocess.run(
        [PYTHON, "-m", "bench.content_plan_child"], cwd=ROOT, env=child_env(), capture_output=True, text=True
    )
    if child.returncode:
        raise RuntimeError(f"content plan run failed:\n{child.stdout}\n{child.stderr[-3000:]}")
    return json.loads(child.stdout.strip().splitlines()[-1])


def fresh_directory(path: Path) -> Path:
    """`path` emptied of an earlier run's files, and there."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


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
    """Django in this process on the benchmark's settings (with the floor's routes), its database
    migrated and emptied."""
    import logging

    import django
    from django.core.management import call_command

    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    django.setup()
    # The in-process checks below go through the request log too; the servers keep theirs.
    logging.getLogger("cps.request").setLevel(logging.WARNING)
    call_command("migrate", verbosity=0, interactive=False)
    call_command("flush", verbosity=0, interactive=False)


def machine() -> dict:
    from django import get_version

    meminfo = Path("/proc/meminfo").read_text()
    mem_kb = int(re.search(r"MemTotal:\s+(\d+)", meminfo).group(1))
    cpu = re.search(r"model name\s*:\s*(.+)", Path("/proc/cpuinfo").read_text())
    return {
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kb / 1024 / 1024, 1),
        "cpu": cpu.group(1).strip() if cpu else platform.processor(),
        "python": platform.python_version(),
        "django": get_version(),
        "postgres": sql("show server_version")[0][0],
        "load_at_start": os.getloadavg(),
    }


# --- SQL, accounts and keys -----------------------------------------------------------------------


def sql(statement: str, params=None) -> list:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(statement, params or [])
        return cursor.fetchall() if cursor.description else []


def delete_pending_deliveries() -> None:
    """Pending deliveries earlier parts left behind (the content plan's: their broker messages were
    dropped, their receiver is gone), which delivery code sweeping for due work would take on."""
    sql("delete from webhooks_attempt where delivery_id in (select id from webhooks_delivery where status = 'pending')")
    sql("delete from webhooks_delivery where status = 'pending'")


def make_account(name: str, plan: str = "enterprise"):
    from apps.accounts.models import Account

    return Account.objects.create(name=name, plan=plan)


def make_reader(name: str, email: str, *, writes: bool = False):
    """An enterprise account (no rate limit) with an editor and a key that reads channels and
    posts (and, with `writes`, writes posts: the editor's role has articles.write); (account, raw key)."""
    from apps.accounts.models import Scope
    from apps.users.credentials import api_key_create
    from apps.users.models import Role, User, default_permissions_for

    account = make_account(name)
    user = User.objects.create(
        account=account,
        email=email,
        name="Bench Reader",
        role=Role.EDITOR,
        permissions=default_permissions_for(Role.EDITOR),
    )
    scopes = [Scope.READ_CHANNELS, Scope.READ_POSTS, *([Scope.WRITE_POSTS] if writes else [])]
    _, key = api_key_create(
        account=account, user=user, name="bench", scopes=scopes, expires_at=datetime.now(UTC) + timedelta(days=30)
    )
    return account, key


def make_blog(account, tags: tuple[str, ...] = ("django", "news", "python")):
    """An "Editorial" team's "Company Blog" in the account, and the account's tags; (channel, tag ids)."""
    from apps.channels.models import Channel, Team
    from apps.posts.models import Tag

    team = Team.objects.create(account=account, name="Editorial")
    channel = Channel.objects.create(account=account, team=team, title="Company Blog", platform="blog")
    return channel, [Tag.objects.create(account=account, name=name).pk for name in tags]


def published_payload(account) -> tuple[dict, int]:
    """A realistic webhook body: the post.published payload of a post with three tags and an image,
    in a blog of the account; (data, post id)."""
    from apps.posts.models import Post
    from apps.posts.serializers import posts_webhook_data

    channel, tags = make_blog(account)
    insert_posts([channel.pk], 1, status="published", scheduled=False, tags=tags)
    [(_, post_id, data)] = posts_webhook_data([Post.objects.get(channel=channel).pk])
    return {"post": data}, post_id


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


# --- the report -----------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


def load_text(load: tuple[float, ...]) -> str:
    return ", ".join(f"{x:.2f}" for x in load)


def replace_section(text: str, section: list[str]) -> str:
    """bench/RESULTS.md with this part's section replaced (or added before the closing line), the
    other parts' figures left as they are."""
    lines = text.split("\n")
    closing = next((i for i, line in enumerate(lines) if line.startswith("The whole benchmark took")), len(lines))
    if section[0] in lines:
        start = lines.index(section[0])
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ") or i == closing), len(lines))
    else:
        start = end = closing
    lines[start:end] = section
    return "\n".join(lines)


def write_section(section: list[str], what: str) -> None:
    """Replace one part's section of bench/RESULTS.md."""
    RESULTS.write_text(replace_section(RESULTS.read_text(), section))
    print(f"bench: {what} section written to {RESULTS.relative_to(ROOT)}")
