"""Every Procfile line runs from a fresh checkout, with nothing created beforehand: no var/, no
staticfiles/, no database. The release line prepares what the others need (the database and the
collected static files); web, worker and beat then start and do their work."""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from django.conf import settings

from tests.conftest import free_port
from tests.procfile import ProcfileProcess, procfile_lines

VENV_BIN = Path(sys.prefix) / "bin"
RELEASE_TIMEOUT = 120
START_TIMEOUT = 40


def fresh_checkout(destination: Path) -> Path:
    """The files a clone would hold (those git tracks, plus new ones not ignored), copied from the
    working tree: nothing the processes create (var/, staticfiles/, db.sqlite3, .env) comes along."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=settings.BASE_DIR,
        capture_output=True,
        check=True,
        timeout=30,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = settings.BASE_DIR / name
        if source.is_file():  # a file deleted in the working tree is not part of the next commit
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def fresh_environment(**extra: str) -> dict[str, str]:
    """A new environment, as a process manager gives one: the project's virtualenv first on PATH, no
    DATABASE_URL, REDIS_URL or CELERY_* (the embedded defaults: SQLite in the checkout and the
    filesystem broker)."""
    kept = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}
    kept["PATH"] = os.pathsep.join([str(VENV_BIN), kept.get("PATH", os.defpath)])
    return {**kept, **extra}


@pytest.fixture
def run_line(tmp_path):
    """Start Procfile lines; every process group still running is killed after the test."""
    logs = tmp_path / "logs"
    logs.mkdir()
    started: list[ProcfileProcess] = []

    def run(name: str, command: str, checkout: Path, env: dict[str, str]) -> ProcfileProcess:
        process = ProcfileProcess(name, command, checkout, env, logs)
        started.append(process)
        return process

    yield run
    # All asked to stop at once, and given a few seconds together to do so.
    for process in started:
        process.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + 5
    for process in started:
        process.wait_then_kill(deadline)


def logs_of(*processes: ProcfileProcess) -> str:
    return "\n".join(f"--- {p.name} (exit {p.process.poll()}) ---\n{p.log()[-3000:]}" for p in processes)


def eventually(condition, what: str, processes: list[ProcfileProcess], timeout: float = START_TIMEOUT) -> None:
    """Poll `condition` until it holds; fail at once, with the logs, if a process ends, or after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if any(p.has_exited() for p in processes):
            pytest.fail(f"a process ended before {what}:\n{logs_of(*processes)}")
        time.sleep(0.2)
    pytest.fail(f"not in {timeout:.0f} s: {what}:\n{logs_of(*processes)}")


def get(url: str) -> requests.Response | None:
    try:
        return requests.get(url, timeout=5)
    except requests.RequestException:
        return None


def answers_200(url: str) -> bool:
    response = get(url)
    return response is not None and response.status_code == 200


def schedule_files(folder: Path, stem: str) -> list[Path]:
    """The shelve files of a beat schedule: `stem` itself or with a suffix (.db, .dat, .dir...)."""
    return sorted(folder.glob(f"{stem}*")) if folder.is_dir() else []


def test_every_procfile_line_starts_from_a_fresh_checkout(tmp_path, run_line):
    checkout = fresh_checkout(tmp_path / "checkout")
    assert not (checkout / "var").exists() and not (checkout / "staticfiles").exists()
    assert not (checkout / "db.sqlite3").exists()
    lines = procfile_lines(checkout)
    assert set(lines) == {"release", "web", "worker", "beat"}
    port = free_port()
    env = fresh_environment(PORT=str(port), CONTENT_PLAN_INTERVAL="1", WEBHOOK_SWEEP_INTERVAL="1")

    release = run_line("release", lines["release"], checkout, env)
    try:
        release.process.wait(timeout=RELEASE_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the release step did not end in {RELEASE_TIMEOUT} s:\n{logs_of(release)}")
    assert release.process.returncode == 0, logs_of(release)

    web, worker, beat = (run_line(name, lines[name], checkout, env) for name in ("web", "worker", "beat"))
    running = [web, worker, beat]
    site = f"http://127.0.0.1:{port}"

    # The web answers its health check, and the pages that need the collected static files.
    eventually(lambda: answers_200(f"{site}/healthz"), "the web answers /healthz", running)
    login = get(f"{site}/admin/login/")
    assert login is not None and login.status_code == 200, (
        f"/admin/login/ answered {login and login.status_code}:\n{logs_of(web)}"
    )
    docs = get(f"{site}/v1/docs")
    assert docs is not None and docs.status_code == 200, (
        f"/v1/docs answered {docs and docs.status_code}:\n{logs_of(web)}"
    )
    assets = re.findall(r"""(?:src|href)=["'](/static/[^"']+)["']""", docs.text)
    assert assets, f"the docs page references no static file:\n{docs.text[:2000]}"
    asset = get(f"{site}{assets[0]}")
    assert asset is not None and asset.status_code == 200, f"{assets[0]}:\n{logs_of(web)}"

    # The worker is ready; beat keeps its schedule in var/ and sends the due tasks, which the worker runs.
    eventually(lambda: " ready." in worker.log(), "the worker says it is ready", running)
    eventually(lambda: schedule_files(checkout / "var", "celerybeat-schedule"), "beat writes its schedule", running)
    eventually(lambda: "Sending due task posts.content_plan" in beat.log(), "beat sends the due content plan", running)
    eventually(
        lambda: re.search(r"Task posts\.content_plan\[[^\]]+\] succeeded", worker.log()),
        "the worker runs the content plan beat sent",
        running,
    )
    assert not any(process.has_exited() for process in running), logs_of(*running)


def test_beat_keeps_its_schedule_where_beat_schedule_file_says(tmp_path, run_line):
    """The Procfile's beat line takes the schedule's location from the settings: BEAT_SCHEDULE_FILE,
    in a folder that does not exist yet, and nothing written into the checkout (the broker's folder
    is elsewhere too, as with Redis in production, where nothing else would create var/)."""
    checkout = fresh_checkout(tmp_path / "checkout")
    schedule = tmp_path / "state" / "beat" / "schedule"
    env = fresh_environment(
        BEAT_SCHEDULE_FILE=str(schedule), FILESYSTEM_BROKER_DIR=str(tmp_path / "broker"), CONTENT_PLAN_INTERVAL="1"
    )

    beat = run_line("beat", procfile_lines(checkout)["beat"], checkout, env)

    eventually(lambda: "Sending due task posts.content_plan" in beat.log(), "beat sends the due content plan", [beat])
    assert schedule_files(schedule.parent, schedule.name), logs_of(beat)
    assert not (checkout / "var").exists(), logs_of(beat)


def unix_socket_paths(group: int) -> list[str]:
    """The paths of the unix sockets open in a process group (a control socket would be one)."""
    inodes = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[2]) == group:
                for fd in (stat.parent / "fd").iterdir():
                    with contextlib.suppress(OSError):
                        target = os.readlink(fd)
                        if target.startswith("socket:["):
                            inodes.add(target[len("socket:[") : -1])
    rows = (line.split() for line in Path("/proc/net/unix").read_text().splitlines()[1:])
    return [row[7] for row in rows if len(row) > 7 and row[6] in inodes]


def test_the_web_line_reads_the_checkouts_env_file_and_opens_no_control_socket(tmp_path, run_line):
    """The web process reads its settings as Django does, the .env file beside manage.py included
    (here the port it listens on), and leaves nothing behind in HOME or XDG_RUNTIME_DIR, where
    gunicorn's control socket was, shared by every instance of the same user."""
    checkout = fresh_checkout(tmp_path / "checkout")
    port = free_port()
    (checkout / ".env").write_text(f"PORT={port}\nWEB_CONCURRENCY=1\n")
    home, runtime = tmp_path / "home", tmp_path / "run"
    home.mkdir()
    runtime.mkdir()
    env = fresh_environment(HOME=str(home), XDG_RUNTIME_DIR=str(runtime))
    assert "PORT" not in env

    web = run_line("web", procfile_lines(checkout)["web"], checkout, env)

    eventually(lambda: answers_200(f"http://127.0.0.1:{port}/healthz"), "the web answers on the .env's PORT", [web])
    assert unix_socket_paths(web.process.pid) == [], logs_of(web)
    assert list(home.iterdir()) == [] and list(runtime.iterdir()) == []
