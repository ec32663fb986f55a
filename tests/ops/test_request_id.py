"""The request id (X-Request-ID) on every log record of the request, and in the Celery tasks it enqueues."""

import json
import logging
from pathlib import Path

import pytest
from django.http import HttpResponse
from django.urls import path

from apps.api.observability import RequestIdFilter, current_request_id
from config.celery import REQUEST_ID_HEADER
from config.celery import app as celery_app
from tests.conftest import requires_broker, wait_until
from tests.ops.test_request_log import run_django

app_logger = logging.getLogger("cps.test.request_id")


def logging_view(request):
    app_logger.warning("something worth a line")
    return HttpResponse("ok")


def conflict_view(request):
    return HttpResponse("taken", status=409)


def enqueuing_view(request):
    celery_app.send_task(request.GET.get("task", "tests.request_id_probe"))
    return HttpResponse("enqueued")


urlpatterns = [
    path("_test/log", logging_view),
    path("_test/conflict", conflict_view),
    path("_test/enqueue", enqueuing_view),
]

pytestmark = pytest.mark.urls(__name__)


class Console:
    """What the console handler of settings.LOGGING writes (its filters, its formatter), kept in memory."""

    def __init__(self, handler: logging.Handler) -> None:
        self.records: list[logging.LogRecord] = []
        self.lines: list[str] = []
        self.handler = handler

    def of(self, logger_name: str) -> list[tuple[logging.LogRecord, str]]:
        return [(r, line) for r, line in zip(self.records, self.lines, strict=True) if r.name == logger_name]


@pytest.fixture
def console():
    root = logging.getLogger()
    [configured] = [h for h in root.handlers if any(isinstance(f, RequestIdFilter) for f in h.filters)]
    captured = Console(configured)

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            captured.lines.append(self.format(record))
            captured.records.append(record)

    capture = Capture()
    capture.filters = list(configured.filters)
    capture.setFormatter(configured.formatter)
    root.addHandler(capture)
    yield captured
    root.removeHandler(capture)


def test_a_record_logged_in_a_view_carries_the_request_id(client, console):
    response = client.get("/_test/log", HTTP_X_REQUEST_ID="req-view-1")
    assert response["X-Request-ID"] == "req-view-1"
    [(record, line)] = console.of("cps.test.request_id")
    assert record.request_id == "req-view-1"
    assert "[req-view-1] something worth a line" in line
    [(_, access_line)] = console.of("cps.request")
    assert "[req-view-1]" in access_line


def test_a_generated_request_id_is_the_one_on_the_records(client, console):
    response = client.get("/_test/log")
    [(record, _)] = console.of("cps.test.request_id")
    assert record.request_id == response["X-Request-ID"]


def test_djangos_warning_for_an_error_response_carries_the_request_id(client, console):
    client.get("/_test/conflict", HTTP_X_REQUEST_ID="req-conflict-1")
    # Once: the middleware writes it while the id is set, and Django's handler then leaves it.
    [(record, line)] = console.of("django.request")
    assert record.getMessage() == "Conflict: /_test/conflict"
    assert record.request_id == "req-conflict-1"
    assert "[req-conflict-1]" in line


def test_records_outside_a_request_show_none_and_the_id_is_reset_after_the_response(client, console):
    client.get("/_test/log", HTTP_X_REQUEST_ID="req-before")
    assert current_request_id.get() is None
    app_logger.warning("between requests")
    (record, line) = console.of("cps.test.request_id")[-1]
    assert record.request_id == "-"
    assert "[-] between requests" in line


def test_the_json_format_writes_the_request_id():
    result = run_django(
        "from apps.api.observability import current_request_id; current_request_id.set('req-json-1'); "
        "logging.getLogger('cps.test').warning('inside')",
        LOG_FORMAT="json",
    )
    [line] = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert line["message"] == "inside" and line["request_id"] == "req-json-1"


# --- Tasks enqueued by a request ---


@pytest.fixture
def memory_broker(use_broker):
    """Tasks are published to kombu's in-process broker, from which the test reads the messages."""
    use_broker("memory://")

    def published() -> list:
        messages = []
        with (
            celery_app.connection_for_read() as connection,
            connection.SimpleQueue(celery_app.conf.task_default_queue) as queue,
        ):
            while queue.qsize():
                message = queue.get(timeout=1)
                message.ack()
                messages.append(message)
        return messages

    return published


def test_a_task_published_in_a_request_carries_its_id_in_the_headers(client, memory_broker):
    client.get("/_test/enqueue", HTTP_X_REQUEST_ID="req-task-1")
    [message] = memory_broker()
    assert message.headers["task"] == "tests.request_id_probe"
    assert message.headers[REQUEST_ID_HEADER] == "req-task-1"


def test_a_task_published_outside_a_request_carries_no_request_id(memory_broker):
    celery_app.send_task("tests.request_id_probe")
    [message] = memory_broker()
    assert REQUEST_ID_HEADER not in message.headers


@requires_broker
@pytest.mark.django_db(transaction=True)
def test_the_workers_log_lines_of_the_task_carry_the_id_of_the_request(client, start_worker):
    worker = start_worker()
    client.get("/_test/enqueue?task=accounts.prune_sso_tokens", HTTP_X_REQUEST_ID="req-worker-1")

    def succeeded() -> list[str]:
        log = Path(worker.log.name).read_text()
        return [line for line in log.splitlines() if "Task accounts.prune_sso_tokens[" in line and "succeeded" in line]

    wait_until(lambda: succeeded(), timeout=30)
    [line] = succeeded()
    assert "[req-worker-1]" in line, worker.log_tail()


# --- the web server ---


def test_the_web_server_writes_no_access_log_of_its_own_unless_asked(settings):
    from config.server.process import server_options

    settings.WEB_ACCESS_LOG = False
    assert server_options(settings)["log_access"] is False
    settings.WEB_ACCESS_LOG = True
    assert server_options(settings)["log_access"] is True
