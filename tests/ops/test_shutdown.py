"""Stopping the worker while a webhook attempt is in flight: the attempt ends and is recorded, so
its delivery is neither left leased until the lease runs out nor sent again.

Process managers send SIGTERM to every process of the worker (honcho under `make run`, systemd,
Heroku), then SIGKILL to what is left after a while (honcho: 5 s unless `make run` says otherwise).
These tests run the embedded default (bench/embedded.py: SQLite and the filesystem broker in a
directory of their own) against a receiver that answers slowly.
"""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from bench.embedded import ROOT, EmbeddedDefault
from tests.conftest import wait_until
from tests.receiver import Receiver

STATE = """
from apps.webhooks.models import Attempt, Delivery
print([(d.status, d.attempts, d.locked_until is None) for d in Delivery.objects.all()])
print([a.response_status for a in Attempt.objects.all()])
"""


@pytest.fixture
def slow_receiver():
    receiver = Receiver().start()
    yield receiver
    receiver.stop()


def embedded(tmp_path, receiver: Receiver) -> EmbeddedDefault:
    site = EmbeddedDefault(tmp_path, receiver.url)
    site.prepare(1)
    return site


def save_a_post(site: EmbeddedDefault) -> None:
    """An edit of a published post: one `post.updated` delivery, handed to the broker on commit."""
    post = site.seed["editors"][0]["post"]
    site.manage(
        "shell",
        "-c",
        "from apps.posts.models import Post; from apps.posts.services import post_update_content; "
        f"post_update_content(post=Post.objects.get(pk={post}), title='Edited before stopping')",
    )


def deliveries_and_attempts(site: EmbeddedDefault) -> list[str]:
    return site.manage("shell", "-c", STATE).strip().splitlines()[-2:]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_ctrl_c_on_make_run_lets_the_worker_record_an_attempt_that_outlasts_honchos_own_wait(tmp_path, slow_receiver):
    """Ctrl-C: the terminal sends SIGINT to make and honcho, honcho SIGTERM to web, worker and beat.
    Beat stops at once; honcho's own wait would SIGKILL the worker 5 s later, in the middle of an
    attempt that takes 8 s. The Makefile's honcho waits STOP_WAIT seconds."""
    slow_receiver.default = (200, 8.0)
    site = embedded(tmp_path, slow_receiver)
    output = tmp_path / "honcho.log"
    # The run target's own honcho command (the Makefile's HONCHO, with this interpreter), on the
    # worker and beat only; an empty env file instead of the checkout's .env.
    target = "stop-test: ; $(HONCHO) start -e /dev/null worker beat"
    with output.open("w") as log:
        make = subprocess.Popen(
            ["make", "-s", "--no-print-directory", f"PY={sys.executable}", "--eval", target, "stop-test"],
            cwd=ROOT,
            env=site.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until(lambda: " ready." in output.read_text() or make.poll() is not None, timeout=60)
        assert make.poll() is None, output.read_text()
        save_a_post(site)
        wait_until(lambda: slow_receiver.in_flight == 1, timeout=20, step=0.05)
        os.killpg(make.pid, signal.SIGINT)
        make.wait(timeout=60)
    finally:
        if make.poll() is None:  # failed above: honcho stops its processes as on Ctrl-C, else all are killed
            os.killpg(make.pid, signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                make.wait(timeout=60)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(make.pid, signal.SIGKILL)
    text = output.read_text()
    assert "sending SIGTERM to worker" in text
    assert "sending SIGKILL" not in text, text[-3000:]
    assert re.search(r"webhook attempt delivery=\S+ .* status=200", text), text[-3000:]
    assert deliveries_and_attempts(site) == ["[('succeeded', 1, True)]", "[200]"]
    assert len(slow_receiver.requests) == 1


def test_a_worker_sent_sigterm_with_all_its_processes_ends_its_task_and_records_the_attempt_in_flight(
    tmp_path, slow_receiver
):
    """The pool processes leave stopping to the main process: none is stopped mid-task or replaced
    while the worker shuts down, and no message goes back to the queue unacknowledged."""
    slow_receiver.default = (200, 3.0)
    site = embedded(tmp_path, slow_receiver)
    site.start(("worker",))
    worker = site.processes["worker"]
    try:
        save_a_post(site)
        wait_until(lambda: slow_receiver.in_flight == 1, timeout=20, step=0.05)
        stopping = time.monotonic()
        worker.signal_group(signal.SIGTERM)
        worker.process.wait(timeout=30)
        took = time.monotonic() - stopping
    finally:
        worker.stop(timeout=1)
    log = worker.log()
    assert "Warm shutdown" in log
    assert "exited with 'signal 15 (SIGTERM)'" not in log
    assert "unacknowledged" not in log
    assert re.search(r"Task webhooks.deliver\[\S+\] succeeded", log), log[-3000:]
    assert deliveries_and_attempts(site) == ["[('succeeded', 1, True)]", "[200]"]
    assert len(slow_receiver.requests) == 1
    # The attempt's 3 s, and the worker's own stopping (its broker loop waits up to 2 s at a time).
    assert took < 15, log[-3000:]
