"""A hanging repository delays no other channel's publishing and no webhook delivery: a real Celery
worker (the Procfile's, two processes) on Redis and PostgreSQL, real remotes on 127.0.0.1."""

import contextlib
import json
import socket
import threading

import pytest
from django.db import transaction

from apps.posts.editor_status import post_publish_now
from apps.posts.services import post_create
from apps.publishing.git.services import GitSettings, git_destination_save
from apps.publishing.models import PublicationJob
from apps.webhooks.services import event_emit
from tests.conftest import requires_broker, wait_until
from tests.factories import AccountFactory, ChannelFactory, WebhookEndpointFactory
from tests.publishing.conftest import files, front_matter, make_bare_repository

pytestmark = [requires_broker, pytest.mark.django_db(transaction=True)]

PUBLISH_TIMEOUT = 20
# Well within PUBLISH_TIMEOUT: what arrives by then did not wait for a hanging remote to time out.
ARRIVAL = 15


class SilentRemote:
    """A TCP server that accepts every connection, reads what is sent and never answers: a git
    remote that hangs. `open` counts the connections its clients still hold."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.open = 0
        self.accepted = 0
        self._connections: list[socket.socket] = []
        self._stopped = False
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return  # stopped
            with self._lock:
                if self._stopped:
                    connection.close()
                    return
                self._connections.append(connection)
                self.open += 1
                self.accepted += 1
            threading.Thread(target=self._drain, args=(connection,), daemon=True).start()

    def _drain(self, connection: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while connection.recv(65536):
                pass
        with self._lock:
            self.open -= 1

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
        # shutdown() wakes the thread blocked in accept(); close() alone leaves the socket
        # listening (and a client's retry hanging again) until that call returns.
        with contextlib.suppress(OSError):
            self.server.shutdown(socket.SHUT_RDWR)
        self.server.close()
        with self._lock:
            for connection in self._connections:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
                connection.close()


@pytest.fixture
def silent_remote():
    remote = SilentRemote()
    yield remote
    # Stopped before the worker (fixtures end in reverse order): its hanging jobs end at once.
    remote.stop()


def git_channel_to(url: str, **channel):
    channel = ChannelFactory(platform="git", **channel)
    git_destination_save(
        channel=channel,
        settings=GitSettings(repository_url=url, author_name="Pat Publisher", author_email="pat@example.com"),
    )
    return channel


def test_three_hanging_repositories_delay_neither_another_channels_publication_nor_a_webhook_delivery(
    start_worker, silent_remote, receiver, private_targets, tmp_path
):
    worker = start_worker(
        PUBLISH_TIMEOUT=PUBLISH_TIMEOUT,
        GIT_ALLOW_LOCAL_REPOSITORIES="true",
        WEBHOOK_ALLOW_PRIVATE_TARGETS="true",
        GIT_CACHE_DIR=tmp_path / "worker-git-cache",
    )
    hanging = [git_channel_to(f"{silent_remote.url}/site-{n}.git") for n in range(3)]
    for channel in hanging:
        post_publish_now(post_id=post_create(channel=channel, title=f"Stuck on {channel.title}").pk)
    wait_until(lambda: silent_remote.open == 3, timeout=ARRIVAL)

    bare = make_bare_repository(tmp_path / "healthy.git")
    healthy_account = AccountFactory()
    WebhookEndpointFactory(account=healthy_account, url=receiver.url, events=["post.published"])
    healthy = git_channel_to(str(bare), account=healthy_account)
    post = post_create(channel=healthy, title="Gets through", body="Hello.")
    post_publish_now(post_id=post.pk)
    other_account = AccountFactory()
    WebhookEndpointFactory(account=other_account, url=receiver.url, events=["post.updated"])
    with transaction.atomic():
        event_emit(account=other_account, kind="post.updated", data={"post": {"id": 1}})

    wait_until(lambda: bool(files(bare)), timeout=ARRIVAL)
    [(path, content)] = files(bare).items()
    assert front_matter(content)[0]["title"] == "Gets through", worker.log_tail()
    arrived = receiver.wait_for(2, timeout=ARRIVAL)
    assert sorted(json.loads(r.body)["event"] for r in arrived) == ["post.published", "post.updated"]
    # ...while the three still hang: their connections open, their jobs running.
    assert silent_remote.open == 3 and silent_remote.accepted == 3
    assert set(PublicationJob.objects.filter(channel__in=hanging).values_list("state", "attempts")) == {
        ("running", 1)
    }, worker.log_tail()
    assert PublicationJob.objects.get(post_id=post.pk).path == path
