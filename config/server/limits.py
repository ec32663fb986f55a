"""The requests refused before the application sees them, decided by the request line and headers
alone, and the JSON answers of every refusal of this package.

Why it exists: granian bounds only the whole head (process.py's HEAD_BUFFER_BYTES) and the number
of header fields (100), and answers what it refuses with an empty body; gunicorn, which this service
ran on before, also limited the request line (4094 bytes: 414) and each header field (8190 bytes:
431), and clients kept those answers. Django's WSGI handler checks neither. A refusal here answers
the API's JSON error envelope with a fixed message, never the refused input.
"""

import json

# gunicorn's limits, which this service answered before granian (longer request lines answer 414,
# longer header fields 431). granian itself refuses more than 100 header fields, and a head larger
# than config/server/process.py's HEAD_BUFFER_BYTES, with an empty 431 before anything here runs.
LIMIT_REQUEST_LINE = 4094  # bytes: method, target and version
LIMIT_REQUEST_FIELDS = 100
LIMIT_REQUEST_FIELD_SIZE = 8190  # bytes, name and value of one header field

# Codes shared with the application are its codes (apps/api/errors.py STATUS_CODES; config imports
# no app, and tests/ops/test_server_refusals.py keeps the two in step).
REFUSAL_CODES = {
    400: "bad_request",
    408: "request_timeout",
    414: "uri_too_long",
    417: "expectation_failed",
    431: "request_header_fields_too_large",
    500: "internal_error",
}
REFUSAL_MESSAGES = {
    400: "The request is not valid HTTP/1.1.",
    408: "The request body did not arrive in time.",
    414: f"The request line is longer than {LIMIT_REQUEST_LINE} bytes.",
    417: "Only the expectation 100-continue is supported.",
    431: (
        f"The request has more than {LIMIT_REQUEST_FIELDS} header fields, "
        f"or a header field longer than {LIMIT_REQUEST_FIELD_SIZE} bytes."
    ),
    500: "The server failed to handle the request.",
}
# The headers of the application's data responses, and no caching: 414 is cacheable by default.
# The connection is closed after a refusal whatever the request asked.
REFUSAL_HEADERS = (
    (b"content-type", b"application/json"),
    (b"x-api-version", b"1"),
    (b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
    (b"connection", b"close"),
)


class Refused(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def refusal_messages(status: int) -> list[dict]:
    """The ASGI messages of a refusal: `{"error": {"code", "message"}}` with a fixed message."""
    server_error = status >= 500
    code = REFUSAL_CODES.get(status, "internal_error" if server_error else "bad_request")
    message = REFUSAL_MESSAGES.get(status, REFUSAL_MESSAGES[500 if server_error else 400])
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [*REFUSAL_HEADERS, (b"content-length", str(len(body)).encode())]
    return [
        {"type": "http.response.start", "status": status, "headers": headers},
        {"type": "http.response.body", "body": body},
    ]


def check_head(scope: dict) -> None:
    """The refusals decided by the request line and headers alone."""
    target = scope.get("raw_path") or scope["path"].encode()
    query = scope.get("query_string") or b""
    line = len(scope["method"]) + 1 + len(target) + (len(query) + 1 if query else 0) + len(" HTTP/1.1")
    if line > LIMIT_REQUEST_LINE:
        raise Refused(414)
    headers = scope["headers"]
    if len(headers) > LIMIT_REQUEST_FIELDS:
        raise Refused(431)
    for name, value in headers:
        if len(name) + len(value) + 2 > LIMIT_REQUEST_FIELD_SIZE:
            raise Refused(431)
        if name == b"expect" and value.strip().lower() != b"100-continue":
            raise Refused(417)
