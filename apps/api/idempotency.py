"""`Idempotency-Key` on the API's writes: a retried request gets the answer the first one got, and
nothing happens a second time.

`@idempotent` decorates a view's unsafe-method handler (post, put, patch, delete), as
`representations.cached` decorates `get`. The handler runs after DRF's initial(): a request refused
for its key, its scope or its rate limit (401, 403, 429) never reaches it and is never kept.

With the header, in one transaction: PostgreSQL's advisory lock for the (API key, method, path,
key) (not had: another request with this key is running, 409 `idempotency_request_in_progress`);
the kept answer, replayed when the body is the same (compared as parsed JSON) and refused with 422
`idempotency_key_reused` when not; otherwise the handler, whose answer is kept in the same
transaction as its effects (its events go to the webhooks outbox in it, its jobs are enqueued on
commit). A 2xx and the 4xx of the request's own checks are kept; a 5xx, or anything unexpected,
rolls everything back and keeps nothing. Without the header the handler runs as before.

The records are kept by the module settings.IDEMPOTENCY_STORE names (apps/users/idempotency.py:
the answers belong to API keys), which this layer never imports: `store()` is what it asks.
"""

import re
from functools import wraps
from importlib import import_module

from django.conf import settings
from django.db import transaction
from django.http import HttpResponse
from rest_framework.exceptions import ErrorDetail, ValidationError

from apps.api.errors import error_response
from apps.core.http import content_length

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
KEY_MAX_LENGTH = 255
# Printable ASCII, a space only between other characters (a server drops spaces around a header's
# value, so a key that began or ended with one would not be the key it names).
KEY_PATTERN = r"^[!-~](?:[ -~]*[!-~])?$"
KEY_RULE = (
    f"1 to {KEY_MAX_LENGTH} printable ASCII characters (letters, digits, punctuation; spaces only between "
    "them), such as a UUID."
)
# Seconds a request whose key is in use by another, still running, is asked to wait.
IN_PROGRESS_RETRY_AFTER = 1
# The headers of an answer that a replay repeats; the others are the HTTP layer's, set again.
KEPT_HEADERS = ("Content-Type", "Location", "ETag", "Retry-After")
# 401, 403 and 429 depend on the key's state, its owner's role or the hour, not on the request: a
# retry must be judged again.
NOT_KEPT = frozenset({401, 403, 429})

_key_format = re.compile(KEY_PATTERN)


def store():
    """The module that keeps the answers (settings.IDEMPOTENCY_STORE): its RequestScope, Answer,
    RequestKeyTaken, body_fingerprint, request_lock, record_find, record_store and record_answer."""
    return import_module(settings.IDEMPOTENCY_STORE)


def idempotent(handler):
    """Decorate an unsafe-method handler of an APIView; the OpenAPI schema of every decorated operation
    gets the header, the replay header and the 409 and 422 (apps/api/schema.py)."""

    @wraps(handler)
    def run(view, request, *args, **kwargs):
        raw = request.META.get("HTTP_IDEMPOTENCY_KEY")
        if raw is None or request.auth is None:
            return handler(view, request, *args, **kwargs)
        records = store()
        scope = records.RequestScope(
            api_key_id=request.auth.pk, method=request.method, path=request.path, key=checked(raw)
        )
        # Parsed before anything is locked or stored: a body that is not JSON is a 400 of its own.
        fingerprint = records.body_fingerprint(request.data, has_body=bool(content_length(request)))
        try:
            with transaction.atomic():
                if not records.request_lock(scope):
                    return in_progress()
                record = records.record_find(scope)
                if record is not None:
                    return answer_again(records, record, fingerprint)
                response = run_handler(handler, view, request, *args, **kwargs)
                if response.status_code >= 500:
                    raise RolledBack(response)
                if kept(response):
                    records.record_store(scope, fingerprint=fingerprint, answer=answer_of(records, response))
                return response
        except RolledBack as failed:
            return failed.response
        except records.RequestKeyTaken:
            # Another request with this key committed first; this one's effects are rolled back.
            record = records.record_find(scope)
            return in_progress() if record is None else answer_again(records, record, fingerprint)

    run.idempotent = True
    return run


def is_idempotent(handler) -> bool:
    return getattr(handler, "idempotent", False)


def checked(raw: str) -> str:
    if not raw:
        rule = "blank"
    elif len(raw) > KEY_MAX_LENGTH:
        rule = "max_length"
    elif not _key_format.fullmatch(raw):
        rule = "invalid"
    else:
        return raw
    raise ValidationError({HEADER: [ErrorDetail(f"The {HEADER} header must be {KEY_RULE}", code=rule)]})


class RolledBack(Exception):
    """Leaves the transaction with its effects undone, carrying the answer to send."""

    def __init__(self, response):
        super().__init__(response.status_code)
        self.response = response


def run_handler(handler, view, request, *args, **kwargs):
    """The handler's response, rendered, its refusals included (as DRF's dispatch would answer them)."""
    try:
        # A savepoint: a handler that fails half-way leaves nothing behind, and the transaction usable.
        with transaction.atomic():
            response = handler(view, request, *args, **kwargs)
    except Exception as exc:
        response = view.handle_exception(exc)
    response = view.finalize_response(request, response, *args, **kwargs)
    if hasattr(response, "render"):
        response.render()
    return response


def kept(response) -> bool:
    status = response.status_code
    return not response.streaming and 200 <= status < 500 and not 300 <= status < 400 and status not in NOT_KEPT


def answer_of(records, response):
    headers = {name: response[name] for name in KEPT_HEADERS if response.has_header(name)}
    return records.Answer(status=response.status_code, body=response.content, headers=headers)


def answer_again(records, record, fingerprint: str) -> HttpResponse:
    if record.fingerprint != fingerprint:
        return error_response(
            422,
            "idempotency_key_reused",
            f"This {HEADER} was sent before with a different request body: a key names one request. Send a new "
            "key for a new request.",
        )
    answer = records.record_answer(record)
    response = HttpResponse(answer.body, status=answer.status)
    del response["Content-Type"]
    for name, value in answer.headers.items():
        response[name] = value
    response[REPLAYED_HEADER] = "true"
    return response


def in_progress():
    return error_response(
        409,
        "idempotency_request_in_progress",
        f"A request with this {HEADER} is still running; retry after {IN_PROGRESS_RETRY_AFTER} second(s) to get "
        "its answer.",
        headers={"Retry-After": str(IN_PROGRESS_RETRY_AFTER)},
    )
