"""Health checks for operators: no authentication, no rate limit, outside /v1."""

from celery import current_app as celery_app
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET


def _check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return "ok"


def _check_broker() -> str:
    with celery_app.connection_for_read() as conn:
        # One quick try: a readiness probe must answer fast, not wait out the broker's retries.
        conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0.1, timeout=2)
    return "ok"


@never_cache
@require_GET
def healthz(request):
    """The process is alive; checks nothing else."""
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request):
    """The process can serve: the database and the broker answer. 503 names what failed."""
    checks = {}
    for name, check in (("database", _check_database), ("broker", _check_broker)):
        try:
            checks[name] = check()
        except Exception as exc:  # any failure of a dependency means "not ready", whatever its type
            checks[name] = f"error: {type(exc).__name__}"
    ready = all(value == "ok" for value in checks.values())
    return JsonResponse({"status": "ok" if ready else "unavailable", "checks": checks}, status=200 if ready else 503)
