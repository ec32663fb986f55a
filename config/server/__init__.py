"""The web server glue: what granian (config/server/process.py, started by `python -m config.web`)
serves, and how. Django's application is WSGI (config/wsgi.py); granian runs it through its ASGI
interface, and this package hands it only whole requests, on WEB_THREADS threads per process.

- `limits.py`: gunicorn's request-line and header-field limits, and the JSON answers of refusals.
- `environ.py`: the ASGI scope as a WSGI environ, the scheme from a trusted proxy's headers only.
- `streaming.py`: the body read in the event loop within WEB_BODY_TIMEOUT, the application run on a
  thread, a large answer sent in parts.
- `asgi.py`: the ASGI `application` that puts them together.
- `process.py`: granian's options and the start-up checks of the web process.
- `fast_reads.py` (with `answers.py`, `recording.py`, `page_recording.py`): cached API reads and
  cached blog pages answered again in the event loop, before Django, from what Django answered.

Why it exists, rather than a library's: granian's WSGI interface streams a body into the
application's thread as it arrives, so a slow body holds a thread and its database connection with
no timeout; asgiref's WsgiToAsgi reads every body without a timeout or a size limit and runs the
application on one thread per process; Django's ASGI handler runs each request on a new thread, so
with a new database connection (docs/benchmarks.md, "The web server (issue 30)"). Importing this
package loads nothing of Django's: the web process checks its settings before the application is
imported.
"""
