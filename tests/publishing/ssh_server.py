"""A local SSH git server for the git destination's ssh:// path: asyncssh in a thread of its own
(its own event loop), public-key auth for one authorized key, and for each `git-upload-pack '<path>'`
or `git-receive-pack '<path>'` the `git` CLI's own upload-pack or receive-pack on a bare repository
under `root`: the commands a git host runs for a client of an ssh:// remote."""

import asyncio
import contextlib
import logging
import os
import shlex
import shutil
import threading
from pathlib import Path

import asyncssh

GIT = shutil.which("git")
COMMANDS = {"git-upload-pack": "upload-pack", "git-receive-pack": "receive-pack"}
CHUNK = 64 * 1024

# A line per connection, auth and channel at INFO: the tests' output stays readable.
asyncssh.set_log_level(logging.WARNING)


def new_key() -> asyncssh.SSHKey:
    return asyncssh.generate_private_key("ssh-ed25519")


def private_openssh(key: asyncssh.SSHKey) -> str:
    """The key as `ssh-keygen` writes it (-----BEGIN OPENSSH PRIVATE KEY-----)."""
    return key.export_private_key("openssh").decode()


def public_line(key: asyncssh.SSHKey) -> str:
    """`ssh-ed25519 AAAA...`: the key's public half as authorized_keys and known_hosts hold it."""
    return key.export_public_key("openssh").decode().split("\n")[0].strip()


class GitSshServer:
    """Serves the bare repositories under `root` at ssh://git@127.0.0.1:PORT/<name>, accepting the
    user `git` with `authorized_key` (an SSHKey) only. `commands` lists the git commands run, so a
    test can tell whether a connection got past the host key and the authentication."""

    def __init__(self, root: Path, authorized_key: asyncssh.SSHKey, host_key: asyncssh.SSHKey | None = None) -> None:
        if GIT is None:
            raise RuntimeError("the `git` CLI is not installed")
        self.root = root.resolve()
        self.authorized = authorized_key.public_data
        self.host_key = host_key or new_key()
        self.port = 0
        self.commands: list[str] = []
        self.hang = False  # True: take each command and never answer (a host that hangs after the login)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="git-ssh-server", daemon=True)
        self._acceptor: asyncssh.SSHAcceptor | None = None
        self._connections: set[asyncssh.SSHServerConnection] = set()

    # --- what a test needs ------------------------------------------------------------------

    def url(self, name: str) -> str:
        return f"ssh://git@127.0.0.1:{self.port}/{name}"

    def known_hosts(self) -> str:
        """The known_hosts line `ssh-keyscan -p PORT 127.0.0.1` prints for this server."""
        return f"[127.0.0.1]:{self.port} {public_line(self.host_key)}"

    def start(self) -> "GitSshServer":
        if not self._thread.is_alive():
            self._thread.start()
        self._call(self._listen())
        return self

    def restart(self, host_key: asyncssh.SSHKey) -> None:
        """Stop and listen again on the same port with another host key (a host whose key changed)."""
        self._call(self._close())
        self.host_key = host_key
        self._call(self._listen())

    def stop(self) -> None:
        if self._thread.is_alive():
            self._call(self._close())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> "GitSshServer":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    # --- the server -------------------------------------------------------------------------

    def _call(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=30)

    async def _listen(self) -> None:
        server = self

        class _Server(asyncssh.SSHServer):
            def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
                self.conn = conn
                server._connections.add(conn)

            def connection_lost(self, exc: Exception | None) -> None:
                server._connections.discard(self.conn)

            def begin_auth(self, username: str) -> bool:
                return True  # always authenticate

            def public_key_auth_supported(self) -> bool:
                return True

            def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
                return username == "git" and key.public_data == server.authorized

        self._acceptor = await asyncssh.create_server(
            _Server,
            "127.0.0.1",
            self.port,
            server_host_keys=[self.host_key],
            process_factory=self._serve,
            encoding=None,
            line_editor=False,
            allow_scp=False,
        )
        self.port = self._acceptor.get_port()

    async def _close(self) -> None:
        if self._acceptor is not None:
            self._acceptor.close()
            await self._acceptor.wait_closed()
            self._acceptor = None
        for conn in list(self._connections):
            conn.close()
            await conn.wait_closed()
        self._connections.clear()

    def _repository(self, path: str) -> Path | None:
        target = (self.root / path.lstrip("/")).resolve()
        return target if target.is_relative_to(self.root) and (target / "objects").is_dir() else None

    async def _serve(self, process: asyncssh.SSHServerProcess) -> None:
        """Run the asked-for git command, wiring the channel to its stdin, stdout and stderr; the
        exit status goes back once all its output has."""
        argv = shlex.split(process.command or "")
        repository = self._repository(argv[1]) if len(argv) == 2 and argv[0] in COMMANDS else None
        if repository is None:
            process.stderr.write(f"fatal: '{process.command}' is not a repository command here\n".encode())
            process.exit(128)
            return
        self.commands.append(argv[0])
        if self.hang:
            with contextlib.suppress(OSError, asyncssh.Error):
                await process.stdin.read()  # until the client goes away
            process.exit(255)
            return
        env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
        protocol = process.env.get("GIT_PROTOCOL")  # dulwich asks for protocol v2 (ssh -o SetEnv)
        if protocol:
            env["GIT_PROTOCOL"] = protocol
        git = await asyncio.create_subprocess_exec(
            GIT,
            COMMANDS[argv[0]],
            str(repository),
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )

        async def into_git() -> None:
            try:
                while data := await process.stdin.read(CHUNK):
                    git.stdin.write(data)
                    await git.stdin.drain()
            except (OSError, asyncssh.Error):
                pass  # the client went away or git stopped reading: git sees its stdin close
            finally:
                git.stdin.close()

        async def out_of_git(source: asyncio.StreamReader, target) -> None:
            try:
                while data := await source.read(CHUNK):
                    target.write(data)
                    await target.drain()
            except (OSError, asyncssh.Error):
                pass  # the client went away: git's output has nowhere to go

        feeding = asyncio.ensure_future(into_git())
        await asyncio.gather(out_of_git(git.stdout, process.stdout), out_of_git(git.stderr, process.stderr))
        status = await git.wait()
        feeding.cancel()
        process.exit(status)
