"""Reaching an ssh:// repository with the `ssh` client: the channel's deploy key and known hosts
in a temporary folder, the host's key checked against them and nothing else, and the client
killed when the job's time is up."""

import base64
import binascii
import shlex
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dulwich.client import GitClient, SSHGitClient, SubprocessSSHVendor, SubprocessWrapper

from apps.core.destinations import PublishError
from apps.publishing.git.failures import did_not_answer
from apps.publishing.git.remote import Credentials, Remote, keyscan_command

_OPENSSH_KEY_MAGIC = b"openssh-key-v1\0"


@contextmanager
def ssh_client(remote: Remote, credentials: Credentials, *, timeout: float) -> Iterator[tuple[GitClient, str]]:
    """A dulwich client that runs `ssh` with the channel's key and known hosts, and the path to give it."""
    _check_credentials(remote, credentials)
    with tempfile.TemporaryDirectory(prefix="cps-ssh-") as folder:
        command = _ssh_command(Path(folder), credentials, timeout)
        vendor = _SSHUntilDeadline(time.monotonic() + timeout)
        try:
            yield (
                SSHGitClient(remote.host, port=remote.port, username=remote.user, ssh_command=command, vendor=vendor),
                remote.path,
            )
        except Exception as exc:
            if vendor.expired.is_set():
                raise PublishError(did_not_answer()) from exc
            raise
        finally:
            vendor.cancel()


def _check_credentials(remote: Remote, credentials: Credentials) -> None:
    if not credentials.ssh_key:
        raise PublishError(
            "An ssh:// repository needs a private key (a deploy key) in the channel's git settings.", permanent=True
        )
    if not credentials.known_hosts.strip():
        raise PublishError(
            f"An ssh:// repository needs the host's public key: add the output of {keyscan_command(remote)} "
            "(checked against the host's published fingerprints) to the known hosts field.",
            permanent=True,
        )
    if _passphrase_protected(credentials.ssh_key):
        raise PublishError(
            "The private key is protected by a passphrase, and ssh runs here with no one to type it: use a deploy "
            "key made without one (ssh-keygen -t ed25519 -N '').",
            permanent=True,
        )


def _ssh_command(folder: Path, credentials: Credentials, timeout: float) -> str:
    """The ssh command line, with the key and known hosts written into `folder`."""
    key_file, hosts_file = folder / "key", folder / "known_hosts"
    # Plain \n line ends: a browser's form sends \r\n, and ssh cannot read a key with them.
    key_file.write_text(_lines(credentials.ssh_key))
    key_file.chmod(0o600)
    hosts_file.write_text(_lines(credentials.known_hosts))
    seconds = max(1, int(timeout))
    # The host's key must be the one given: never accept-new, never the machine's own files.
    return " ".join(
        shlex.quote(part)
        for part in (
            "ssh",
            "-F",
            "/dev/null",
            "-i",
            str(key_file),
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            f"UserKnownHostsFile={hosts_file}",
            "-o",
            "GlobalKnownHostsFile=/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            f"ConnectTimeout={seconds}",
            "-o",
            f"ServerAliveInterval={seconds}",
            "-o",
            "ServerAliveCountMax=1",
        )
    )


def _lines(text: str) -> str:
    return "\n".join(line.strip() for line in text.strip().splitlines()) + "\n"


def _passphrase_protected(key: str) -> bool:
    """Whether the private key is encrypted: PEM says so in its header; the OpenSSH format names
    its cipher ("none" when it is not) right after its magic."""
    if "ENCRYPTED" in key:  # "Proc-Type: 4,ENCRYPTED", "BEGIN ENCRYPTED PRIVATE KEY"
        return True
    if "BEGIN OPENSSH PRIVATE KEY" not in key:
        return False
    try:
        data = base64.b64decode("".join(line.strip() for line in key.splitlines() if "-----" not in line))
    except (binascii.Error, ValueError):
        return False  # ssh says what it cannot read (describe_failure)
    if not data.startswith(_OPENSSH_KEY_MAGIC):
        return False
    start = len(_OPENSSH_KEY_MAGIC) + 4
    size = int.from_bytes(data[len(_OPENSSH_KEY_MAGIC) : start], "big")
    return data[start : start + size] not in (b"none", b"")


class _SSHUntilDeadline(SubprocessSSHVendor):
    """The `ssh` client, killed when the job's time is up. ServerAlive* only notices a host that
    stops answering altogether: one that keeps the connection alive and sends nothing (a hung git
    on the other side) would otherwise hold the job forever."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.expired = threading.Event()
        self._timers: list[threading.Timer] = []

    def run_command(self, *args, **kwargs) -> SubprocessWrapper:
        wrapper = super().run_command(*args, **kwargs)
        timer = threading.Timer(max(0.0, self.deadline - time.monotonic()), self._expire, args=(wrapper.proc,))
        timer.daemon = True
        self._timers.append(timer)
        timer.start()
        return wrapper

    def _expire(self, proc) -> None:
        if proc.poll() is None:
            self.expired.set()
            proc.kill()

    def cancel(self) -> None:
        for timer in self._timers:
            timer.cancel()
