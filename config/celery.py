import os
import signal
from contextvars import Token

from celery import Celery
from celery.signals import (
    before_task_publish,
    import_modules,
    setup_logging,
    task_postrun,
    task_prerun,
    worker_process_init,
    worker_process_shutdown,
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("cps")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# The message header that carries the id of the request that enqueued a task (X-Request-ID).
REQUEST_ID_HEADER = "request_id"


@import_modules.connect
def _refuse_to_start_on_errors(**kwargs) -> None:
    """The worker and beat run the start-up checks (config/checks.py) before their first task or
    schedule, as manage.py's commands do: an error stops them with its message. Celery's own Django
    fixup runs the checks too, but does not stop on their errors."""
    from config.checks import refuse_to_start_on_errors

    refuse_to_start_on_errors()


@setup_logging.connect
def _log_through_django_settings(**kwargs) -> None:
    """The worker and beat log through settings.LOGGING, as the web process does (LOG_FORMAT, LOG_LEVEL,
    every record with its request id), instead of Celery replacing the root logger's handlers."""
    from logging.config import dictConfig

    from django.conf import settings

    dictConfig(settings.LOGGING)


@before_task_publish.connect
def _send_request_id(headers=None, **kwargs) -> None:
    """A task enqueued while a request (or a task) is handled carries that request's id."""
    from apps.api.observability import current_request_id

    request_id = current_request_id.get()
    if request_id and headers is not None:
        headers.setdefault(REQUEST_ID_HEADER, request_id)


# The request id each running task replaced, by task id: restored when the task ends.
_request_id_tokens: dict[str, Token] = {}


@task_prerun.connect
def _take_request_id(task_id=None, task=None, **kwargs) -> None:
    """The task's log records carry the id of the request that enqueued it (none: the one around it,
    for a task run eagerly inside a request)."""
    from apps.api.observability import current_request_id

    request_id = getattr(task.request, REQUEST_ID_HEADER, None) or current_request_id.get()
    _request_id_tokens[task_id] = current_request_id.set(request_id)


@task_postrun.connect
def _drop_request_id(task_id=None, **kwargs) -> None:
    from apps.api.observability import current_request_id

    token = _request_id_tokens.pop(task_id, None)
    if token is not None:
        current_request_id.reset(token)


@task_prerun.connect
@task_postrun.connect
def _recycle_database_connections(**kwargs) -> None:
    """Around each task what Django does around each request: a connection past CONN_MAX_AGE or
    broken by an error is closed, and the next one used is health-checked (CONN_HEALTH_CHECKS).
    Reusing connections spares PostgreSQL a new backend per task (see CELERY_DB_REUSE_MAX)."""
    from django.db import close_old_connections

    close_old_connections()


@worker_process_init.connect
def _stop_with_the_main_process(**kwargs) -> None:
    """A pool process ignores SIGTERM, as Celery has it ignore SIGINT: the main process's warm
    shutdown ends it once its task is done, and it then lets its attempts in flight end and records
    them (apps/webhooks/tasks.py). honcho (`make run`), systemd and Heroku send SIGTERM to every
    process of the worker; taken by a pool process, it stopped the task where it was (a delivery
    claimed but not yet sent waited for its lease to run out) and the pool started a new process in
    its place, which the shutdown then waited for."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


@worker_process_shutdown.connect
def _close_database_connections(**kwargs) -> None:
    """A reused connection is closed when its process ends, so PostgreSQL does not keep it."""
    from django.db import connections

    connections.close_all()
