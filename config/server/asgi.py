"""The ASGI application granian serves (`config.server.asgi:application`): the Django application of
config/wsgi.py, handed only whole requests.

Why it exists: Django's own ASGI handler runs each request on a new thread, so with a new database
connection, and granian's WSGI interface gives a slow body a thread (see streaming.py). Here
granian reads and writes the sockets in Rust, this reads each body in the event loop, and the
application runs on a pool of WEB_THREADS threads made in each worker process, each keeping its
database connection (CONN_MAX_AGE). A body dripped a byte at a time waits in the event loop, never
on a thread. Reading every body also keeps the connection usable for the client's next request when
the application answered without looking at the body (a 401, a 404).
"""

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings

from apps.core.http import body_limit
from config.server.answers import answer_key
from config.server.environ import build_environ
from config.server.limits import Refused, check_head, refusal_messages
from config.server.recording import ANSWER_KEY, fast_reads, record
from config.server.streaming import read_body, run_application
from config.wsgi import application as django_application

log = logging.getLogger("cps.web")


class Server:
    """The ASGI application granian calls (one instance per worker process after the fork)."""

    def __init__(self, wsgi_application) -> None:
        self.wsgi = wsgi_application
        self.threads = settings.WEB_THREADS
        self.body_timeout = settings.WEB_BODY_TIMEOUT
        self.networks = settings.FORWARDED_ALLOW_IPS
        self._executor: ThreadPoolExecutor | None = None
        # Cached reads answered before Django (config/server/fast_reads.py), or None: Django answers all.
        self.fast = fast_reads()

    @property
    def executor(self) -> ThreadPoolExecutor:
        # Made on the first request, in the worker: threads do not survive the fork of a preloaded
        # master.
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.threads, thread_name_prefix="web")
        return self._executor

    async def __call__(self, scope: dict, receive, send) -> None:
        if scope["type"] != "http":
            return
        try:
            check_head(scope)
            environ = build_environ(scope, self.networks)
            max_body = body_limit(scope["path"], scope["method"])
            body, close = await read_body(environ, receive, max_body=max_body, timeout=self.body_timeout)
        except Refused as refusal:
            log.warning("Refused a request from ip=%s: %s", (scope.get("client") or ("-",))[0], refusal.status)
            for message in refusal_messages(refusal.status):
                await send(message)
            return
        if body is None:  # the client went away
            return
        if await self.answered_before_django(scope, environ, send):
            return
        environ["wsgi.input"] = body
        loop = asyncio.get_running_loop()
        try:
            messages = await loop.run_in_executor(self.executor, self.run, environ, close, loop, send)
        finally:
            body.close()
        for message in messages:
            await send(message)

    async def answered_before_django(self, scope: dict, environ: dict, send) -> bool:
        """Whether the fast path answered; otherwise, when it may answer this request another time,
        the request is marked for Django's answer to be recorded."""
        key = self.fast and answer_key(self.fast.namespace, scope, environ["wsgi.url_scheme"])
        if not key:
            return False
        messages = await self.fast.answer(environ, key)
        if messages is None:
            if self.fast.to_record(key):
                environ[ANSWER_KEY] = key
            return False
        for message in messages:
            await send(message)
        return True

    def run(self, environ: dict, close: bool, loop, send) -> list[dict]:
        """On a thread of the pool: the application's answer, recorded when the fast path may give it."""
        messages = run_application(self.wsgi, environ, close, loop, send)
        if ANSWER_KEY in environ:
            try:
                if record(environ, messages):
                    self.fast.remember(environ[ANSWER_KEY])
            except Exception:
                log.exception("Recording an answer for the fast path failed")
        return messages


application = Server(django_application)
