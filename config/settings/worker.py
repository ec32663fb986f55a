"""Celery: the broker, the worker, and beat's schedule (the one place periodic work is defined;
an app's `conf` module adds its own entries, see config/settings/__init__.py)."""

from pathlib import Path

from apps.core import env
from config.settings.database import REDIS_URL
from config.settings.environment import VAR_DIR
from config.settings.publishing import PUBLISH_SWEEP_INTERVAL
from config.settings.webhooks import WEBHOOK_SWEEP_INTERVAL

CELERY_BROKER_URL = env.text("CELERY_BROKER_URL", REDIS_URL or "filesystem://")
# Publishing must fail fast when the broker is down (the default retries for seconds inside the
# request); the outbox's sweeper hands the deliveries over once the broker is back.
CELERY_BROKER_TRANSPORT_OPTIONS: dict = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.1,
    "interval_max": 0.2,
    "socket_connect_timeout": 2,
}
if CELERY_BROKER_URL == "filesystem://":
    # kombu's filesystem transport, its messages written whole before a worker can see them (config/broker.py).
    CELERY_BROKER_TRANSPORT = "config.broker:Transport"
    _broker_dir = Path(env.text("FILESYSTEM_BROKER_DIR", str(VAR_DIR / "broker")))
    for _sub in ("queue", "processed", "control"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        # kombu's exchange tables; its default is a `control/` folder in the working directory.
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
        # The worker looks for new messages this often once its processes are busy or the folder
        # is empty (kombu's default, 1 s, let it start 2 tasks a second: a delivery per save).
        "polling_interval": 0.05,
    }
CELERY_TASK_DEFAULT_QUEUE = env.text("CELERY_QUEUE", "celery")
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
# A worker killed mid-task leaves the message unacknowledged, so another worker runs it again;
# tasks are written to be safe to run twice.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# One message per worker process at a time: a delivery task (a batch of deliveries) is never
# parked behind a slow one in another process's prefetch buffer. Raise it by env for throughput.
CELERY_WORKER_PREFETCH_MULTIPLIER = env.positive_int("CELERY_WORKER_PREFETCH_MULTIPLIER", 1)
# Celery's Django fixup opens a new database connection for every task unless this is set (then
# it closes them every N tasks); config/celery.py applies CONN_MAX_AGE and CONN_HEALTH_CHECKS
# around each task instead, as Django does around each request.
CELERY_DB_REUSE_MAX = 1000
CELERY_TASK_SOFT_TIME_LIMIT = env.positive_int("CELERY_TASK_SOFT_TIME_LIMIT", 120)
CELERY_TASK_TIME_LIMIT = env.positive_int("CELERY_TASK_TIME_LIMIT", 180)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"

# --- Periodic work: beat's schedule (a destination kind's own entries come from its `conf` module) ---
CONTENT_PLAN_INTERVAL = env.positive_int("CONTENT_PLAN_INTERVAL", 60)
CELERY_BEAT_SCHEDULE = {
    "posts.content_plan": {"task": "posts.content_plan", "schedule": float(CONTENT_PLAN_INTERVAL)},
    "posts.sweep_changes": {"task": "posts.sweep_changes", "schedule": 3600.0},
    "webhooks.sweep": {"task": "webhooks.sweep", "schedule": float(WEBHOOK_SWEEP_INTERVAL)},
    "webhooks.prune_history": {"task": "webhooks.prune_history", "schedule": 3600.0},
    "publishing.sweep": {"task": "publishing.sweep", "schedule": float(PUBLISH_SWEEP_INTERVAL)},
    "accounts.prune_sso_tokens": {"task": "accounts.prune_sso_tokens", "schedule": 3600.0},
    "users.sweep_idempotency_records": {"task": "users.sweep_idempotency_records", "schedule": 3600.0},
}
# Where beat keeps the last run of each entry (a shelve file: a suffix such as `.db` may be added).
# `celery beat` reads it from here when no --schedule is given; its folder is made at start-up so
# beat runs from a fresh checkout. A string: celery appends the shelve suffixes to it.
CELERY_BEAT_SCHEDULE_FILENAME = env.text("BEAT_SCHEDULE_FILE", str(VAR_DIR / "celerybeat-schedule"))
Path(CELERY_BEAT_SCHEDULE_FILENAME).parent.mkdir(parents=True, exist_ok=True)
