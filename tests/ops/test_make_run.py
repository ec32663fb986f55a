"""How `make run` ends: Ctrl-C (or make's SIGTERM) stops its processes under honcho, and make
reports no error for it (it said "make: *** [Makefile:38: run] Interrupt", or Error 143)."""

import contextlib
import os
import shutil
import signal
import subprocess
import sys

import pytest

from bench.embedded import ROOT, EmbeddedDefault
from tests.conftest import wait_until

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")


@pytest.fixture
def make_run(tmp_path):
    """The run target's last step (the Makefile's START, with this interpreter) on the web process and
    beat of an embedded default of its own; an empty env file instead of the checkout's .env."""
    output = tmp_path / "make.log"
    env = EmbeddedDefault(tmp_path, "http://127.0.0.1:9").env
    with output.open("w") as log:
        make = subprocess.Popen(
            [
                "make",
                "--no-print-directory",
                f"PY={sys.executable}",
                f"PORT={env['PORT']}",
                "RUN_PROCESSES=-e /dev/null web beat",
                "--eval",
                "run-test: ; $(START)",
                "run-test",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until(
            lambda: (
                ("Listening at" in output.read_text() and "beat: Starting" in output.read_text())
                or make.poll() is not None
            ),
            timeout=60,
        )
        assert make.poll() is None, output.read_text()
        yield make, output
    finally:
        if make.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(make.pid, signal.SIGKILL)
            make.wait(timeout=10)


def test_ctrl_c_stops_make_run_without_an_error_from_make(make_run):
    make, output = make_run
    os.killpg(make.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group
    make.wait(timeout=60)
    text = output.read_text()
    assert "SIGINT received" in text
    assert "web.1 stopped" in text and "beat.1 stopped" in text
    assert "make: ***" not in text, text[-2000:]
    # make itself then ends as Ctrl-C ends any program (and says nothing): its recipe exited 0.
    assert make.returncode == -signal.SIGINT


def test_sigterm_to_make_stops_its_processes_and_make_reports_no_error(make_run):
    make, output = make_run
    make.terminate()  # make passes it on to its recipe, which is honcho itself
    make.wait(timeout=60)
    text = output.read_text()
    assert "SIGTERM received" in text
    assert "web.1 stopped" in text and "beat.1 stopped" in text
    assert "make: ***" not in text, text[-2000:]
