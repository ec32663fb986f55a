"""Local servers for the git destination's network paths: a smart-HTTP git server (dulwich's WSGI
application) behind HTTP Basic auth with a token as the password, as GitLab, Gitea and Forgejo
take it; and a host that accepts connections and never answers."""

import base64
import binascii
import os
import socket
import threading
from pathlib import Path
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from dulwich.server import FileSystemBackend
from dulwich.web import make_wsgi_chain


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):
        pass  # the test output stays readable


class _Folder(FileSystemBackend):
    # dulwich joins the URL's absolute path to the root as is, which lands outside the root.
    def open_repository(self, path):
        return super().open_repository(os.fsdecode(path).lstrip("/"))


def _password(environ) -> str | None:
    scheme, _, value = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        _user, _, password = base64.b64decode(value, validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return password


class GitHttpServer:
    """Serves the bare repositories under `root` at http://127.0.0.1:PORT/<name>.git; every request
    needs HTTP Basic auth with `token` as the password (any user name), else 401. `requests` lists
    the paths asked for, so a test can tell whether anything reached the server at all."""

    def __init__(self, root: Path, token: str) -> None:
        self.root, self.token = root, token
        self.requests: list[str] = []
        git_app = make_wsgi_chain(_Folder(str(root)))

        def app(environ, start_response):
            self.requests.append(environ["PATH_INFO"])
            if _password(environ) != self.token:
                start_response(
                    "401 Unauthorized", [("WWW-Authenticate", 'Basic realm="git"'), ("Content-Type", "text/plain")]
                )
                return [b"Authentication required\n"]
            return git_app(environ, start_response)

        self._server = make_server("127.0.0.1", 0, app, server_class=_ThreadingWSGIServer, handler_class=_QuietHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self._server.server_port}/{name}"

    def start(self) -> "GitHttpServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


class SilentHost:
    """Accepts TCP connections on 127.0.0.1 and never answers. It records whether each client
    hung up by itself; after `give_up` seconds it closes the connection (so a client without a
    timeout fails the test with a different error instead of hanging the run)."""

    def __init__(self, give_up: float = 30.0) -> None:
        self.give_up = give_up
        self.client_hung_up = threading.Event()
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/site.git"

    def _serve(self) -> None:
        while not self._stopped.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._hold, args=(connection,), daemon=True).start()

    def _hold(self, connection: socket.socket) -> None:
        connection.settimeout(self.give_up)
        with connection:
            try:
                while connection.recv(65536):  # read the request, answer nothing
                    pass
            except TimeoutError:
                return  # the client waited all along: this side gives up
            except OSError:
                pass
            self.client_hung_up.set()

    def start(self) -> "SilentHost":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=10)
        self._listener.close()
