"""A request's body read in the event loop, and the application's answer sent back from its thread.

Why it exists: granian's WSGI interface streams a body into the application's thread as it arrives
(a blocked `wsgi.input.read`), so a client dripping its body holds a thread, and with it a database
connection, with no timeout; and a body the application did not read left the connection unusable
for the client's next request. asgiref's WsgiToAsgi reads the whole body first, but with no timeout
and no size limit (even one the application refuses from its headers), and runs the application
through sync_to_async, on one thread per process. Here the body is read within WEB_BODY_TIMEOUT
(then 408) and up to MAX_REQUEST_BODY_BYTES (more on an upload's path, REQUEST_BODY_LIMITS), and
the application runs on one of WEB_THREADS threads.
"""

import asyncio
import io
import logging
import tempfile
from typing import BinaryIO

from config.server.limits import Refused, refusal_messages

log = logging.getLogger("cps.web")

# A response body larger than this is sent in parts as the application produces it (static files,
# streaming responses); anything smaller goes in one message once the application returned.
STREAM_AFTER_BYTES = 256 * 1024
# A request body larger than this waits for the application in a temporary file.
SPOOL_AFTER_BYTES = 1024 * 1024


class ClientGone(Exception):
    """The client closed the connection while a large answer was being sent."""


async def read_body(environ: dict, receive, *, max_body: int, timeout: float) -> tuple[BinaryIO | None, bool]:
    """The whole body as a file at its start (None when the client went away), and whether to close
    the connection after the answer. A body the application refuses from the headers alone (larger
    than `max_body`, or chunked: apps/api/middleware.py answers 413 and 411) is left unread: empty,
    closing. Past SPOOL_AFTER_BYTES the body goes to a temporary file, not memory (an upload)."""
    declared = environ.get("CONTENT_LENGTH", "").strip()
    if "HTTP_TRANSFER_ENCODING" in environ:
        return io.BytesIO(), True
    if not declared.isdigit() or int(declared) == 0:
        return io.BytesIO(), False  # granian refuses a malformed Content-Length itself
    if int(declared) > max_body:
        return io.BytesIO(), True
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    # Closed by the caller once the application answered (asgi.py), or here when the read fails.
    body = tempfile.SpooledTemporaryFile(max_size=SPOOL_AFTER_BYTES)  # noqa: SIM115
    while True:
        remaining = deadline - loop.time()
        try:
            if remaining <= 0:
                raise TimeoutError
            message = await asyncio.wait_for(receive(), remaining)
        except TimeoutError:
            body.close()
            raise Refused(408) from None
        if message["type"] == "http.disconnect":
            body.close()
            return None, True
        body.write(message.get("body", b""))
        if not message.get("more_body", False):
            body.seek(0)
            return body, False


def run_application(wsgi, environ: dict, close: bool, loop, send) -> list[dict]:
    """Runs on a thread of the pool: the application's answer as ASGI messages. A large body is
    sent in parts from here (waiting for each send, so a slow reader holds back the producer);
    what is left is returned for the event loop to send."""
    started: dict = {}

    def start_response(status: str, headers: list, exc_info=None) -> None:
        kept = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]
        if close:
            kept = [(name, value) for name, value in kept if name != b"connection"] + [(b"connection", b"close")]
        started["message"] = {"type": "http.response.start", "status": int(status[:3]), "headers": kept}

    async def sending(message: dict) -> None:
        # granian's send() returns an awaitable that is not a coroutine, which
        # run_coroutine_threadsafe refuses (a TypeError that read as a client gone: every answer
        # past STREAM_AFTER_BYTES was granian's bare 500).
        await send(message)

    def send_now(message: dict) -> None:
        try:
            asyncio.run_coroutine_threadsafe(sending(message), loop).result()
        except Exception as exc:
            raise ClientGone from exc

    try:
        result = wsgi(environ, start_response)
    except Exception:
        log.exception("The application failed before answering")
        return refusal_messages(500)
    pending, size, streaming = [], 0, False
    try:
        for chunk in result:
            if not chunk:
                continue
            pending.append(chunk)
            size += len(chunk)
            if size >= STREAM_AFTER_BYTES:
                if not streaming:
                    send_now(started["message"])
                    streaming = True
                send_now({"type": "http.response.body", "body": b"".join(pending), "more_body": True})
                pending, size = [], 0
    except ClientGone:
        return []
    except Exception:
        log.exception("The application failed while answering")
        if not streaming:
            return refusal_messages(500)
        pending = []
    finally:
        if hasattr(result, "close"):
            result.close()  # Django's request_finished: database connections are checked here
    last = {"type": "http.response.body", "body": b"".join(pending)}
    return [last] if streaming else [started["message"], last]
