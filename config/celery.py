import os

from celery import Celery
from celery.signals import task_postrun, task_prerun, worker_process_shutdown

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("cps")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def _recycle_database_connections(**kwargs) -> None:
    """Around each task what Django does around each request: a connection past CONN_MAX_AGE or
    broken by an error is closed, and the next one used is health-checked (CONN_HEALTH_CHECKS).
    Reusing connections spares PostgreSQL a new backend per task (see CELERY_DB_REUSE_MAX)."""
    from django.db import close_old_connections

    close_old_connections()


@worker_process_shutdown.connect
def _close_database_connections(**kwargs) -> None:
    """A reused connection is closed when its process ends, so PostgreSQL does not keep it."""
    from django.db import connections

    connections.close_all()
