"""The embedded default (`make run` with no settings: SQLite and the filesystem broker) while editors
save posts in the Settings area and the worker delivers the webhooks their saves send.

    python -m bench.embedded [--editors 5] [--saves 50] [--write]

Everything runs in a temporary directory of its own (database file, broker folder, beat's schedule):
the Procfile's web, worker and beat lines with their default settings, a webhook receiver in this
process (tests/receiver.py) and `--editors` threads, each signed in to the admin as an editor of its
own and saving its own published post through the change form (the page fetched, its CSRF token
and fields sent back with a new title), `--saves` times each. Each save of a published post sends
`post.updated`, so every save is an event to deliver.

Prints saves and events delivered per second, the time from a save to its delivery, and the errors:
answers of 400 or more, edits not stored or not delivered, "database is locked" in any process's log,
deliveries received twice, attempts not recorded. `--write` puts the section into bench/RESULTS.md
(`make bench` runs it as its `embedded` part). tests/ops/test_embedded_default.py drives the same
run and asserts that every error count is zero.
"""

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import requests

from bench.admin_editors import PASSWORD, Editor, Saves
from bench.common import BIN, ROOT, write_section
from tests.procfile import ProcfileProcess, procfile_lines
from tests.receiver import Receiver

LOCKED = re.compile(r"database (table )?is locked", re.IGNORECASE)

SETUP = """
import json
from django.utils import timezone
from apps.accounts.models import Account
from apps.channels.models import Channel
from apps.posts.models import Post
from apps.users.models import User
from apps.webhooks.services import endpoint_save

account = Account.objects.create(name="Embedded default")
channel = Channel.objects.create(account=account, title="Company Blog", platform="blog")
editors = []
for n in range({editors}):
    user = User.objects.create_user(f"editor{{n}}@embedded.example.com", {password!r}, account=account, role="editor")
    post = Post.objects.create(
        channel=channel, title=f"Editor {{n}}'s post", slug=f"editor-{{n}}-post", body="Body.",
        publication_status="published", published_at=timezone.now(),
    )
    editors.append({{"email": user.email, "post": post.pk}})
endpoint = endpoint_save(account=account, url={url!r}, events=["post.updated"])
print(json.dumps({{"editors": editors, "endpoint": endpoint.pk}}))
"""

REPORT = """
import json
from apps.posts.models import Post
from apps.webhooks.models import Attempt, Delivery
print(json.dumps({
    "titles": {str(pk): title for pk, title in Post.objects.values_list("pk", "title")},
    "attempts": [[str(d), s] for d, s in Attempt.objects.values_list("delivery_id", "response_status")],
    "deliveries": {str(pk): [status, n] for pk, status, n in Delivery.objects.values_list("pk", "status", "attempts")},
}))
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class EmbeddedDefault:
    """The Procfile's processes on a database file and broker folder of their own, in `directory`."""

    def __init__(self, directory: Path, receiver_url: str, **env: str) -> None:
        self.directory = directory
        self.receiver_url = receiver_url
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.logs = directory / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        # A fresh environment, as `make run` gives one from a shell with nothing set: none of the
        # caller's DATABASE_URL, REDIS_URL or CELERY_* (a test run on PostgreSQL has them).
        kept = {name: os.environ[name] for name in ("HOME", "LANG", "TMPDIR") if name in os.environ}
        self.env = {
            **kept,
            "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", os.defpath)]),
            "DATABASE_URL": f"sqlite:///{directory / 'db.sqlite3'}",
            "REDIS_URL": "",
            "CELERY_BROKER_URL": "filesystem://",
            "FILESYSTEM_BROKER_DIR": str(directory / "broker"),
            "BEAT_SCHEDULE_FILE": str(directory / "beat-schedule"),
            "GIT_CACHE_DIR": str(directory / "git-cache"),
            "PORT": str(self.port),
            # As `make run` sets it: the receiver is on this machine.
            "WEBHOOK_ALLOW_PRIVATE_TARGETS": "true",
            **env,
        }
        self.processes: dict[str, ProcfileProcess] = {}
        self.seed: dict = {}

    def manage(self, *args: str) -> str:
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if result.returncode != 0:
            raise RuntimeError(f"manage.py {args[0]} failed:\n{result.stderr[-3000:]}")
        return result.stdout

    def prepare(self, editors: int) -> dict:
        self.manage("migrate", "--noinput", "-v0")
        setup = SETUP.format(editors=editors, password=PASSWORD, url=self.receiver_url)
        self.seed = json.loads(self.manage("shell", "-c", setup).strip().splitlines()[-1])
        return self.seed

    def start(self, names: tuple[str, ...] = ("web", "worker", "beat")) -> None:
        """Start these Procfile lines and wait until they serve; all are stopped if one does not start."""
        lines = procfile_lines(ROOT)
        for name in names:
            self.processes[name] = ProcfileProcess(name, lines[name], ROOT, self.env, self.logs)
        deadline = time.monotonic() + 60
        try:
            while not all(self._ready(name) for name in names):
                for process in self.processes.values():
                    if process.has_exited():
                        raise RuntimeError(f"{process.name} ended at start-up:\n{process.log()[-3000:]}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"not started in 60 s:\n{self.logs_text()}")
                time.sleep(0.2)
        except BaseException:
            self.stop()
            raise

    def _ready(self, name: str) -> bool:
        if name == "worker":
            return " ready." in self.processes[name].log()
        return name != "web" or self._answers()

    def _answers(self) -> bool:
        try:
            return requests.get(f"{self.url}/healthz", timeout=1).status_code == 200
        except requests.RequestException:
            return False

    def stop(self) -> None:
        for process in self.processes.values():
            process.signal_group(signal.SIGTERM)
        for process in self.processes.values():
            process.stop()

    def logs_text(self) -> str:
        return "\n".join(f"--- {p.name} ---\n{p.log()[-3000:]}" for p in self.processes.values())

    def locked_lines(self) -> list[str]:
        """Lines of any process's log that say "database is locked"."""
        return [line for p in self.processes.values() for line in p.log().splitlines() if LOCKED.search(line)]

    def report(self) -> dict:
        return json.loads(self.manage("shell", "-c", REPORT).strip().splitlines()[-1])


def edit(site: EmbeddedDefault, *, saves: int) -> Saves:
    """Every editor signs in, then saves their post `saves` times, all at once."""
    done = Saves()
    editors = [Editor(site.url, e["email"], e["post"]) for e in site.seed["editors"]]
    for editor in editors:
        editor.sign_in()
    start = threading.Barrier(len(editors))

    def run(number: int, editor: Editor) -> None:
        start.wait()
        for n in range(saves):
            try:
                editor.save(f"Editor {number}'s post, save {n}", done)
            except requests.RequestException as exc:
                with done.lock:
                    done.failures.append(f"{editor.email}: {exc}")

    threads = [threading.Thread(target=run, args=pair) for pair in enumerate(editors)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return done


@dataclass
class Outcome:
    saves: Saves
    seconds: float  # from the first save to the last delivery
    received: list  # the receiver's requests
    report: dict  # the database afterwards
    locked: list[str]
    seed: dict  # the editors and their posts
    lags: list[float]  # seconds from each save to its delivery, sorted
    editing: float  # seconds the editors took

    @property
    def delivery_ids(self) -> Counter:
        return Counter(str(uuid.UUID(r.headers["X-Service-Delivery"])) for r in self.received)

    @property
    def received_titles(self) -> set[str]:
        return {json.loads(r.body)["data"]["post"]["title"] for r in self.received}

    @property
    def lost_edits(self) -> list[str]:
        """Saves answered as done whose post does not hold them (the last save of each post)."""
        titles = self.report["titles"]
        return [ts[-1] for pk, ts in self.saves.saved.items() if titles[str(pk)] != ts[-1]]

    @property
    def undelivered(self) -> list[str]:
        """Saves answered as done whose event the receiver never got."""
        received = self.received_titles
        return sorted(t for ts in self.saves.saved.values() for t in ts if t not in received)

    @property
    def sent_twice(self) -> list[str]:
        return [d for d, n in self.delivery_ids.items() if n > 1]

    @property
    def unrecorded(self) -> Counter:
        """Requests the receiver answered that no attempt records (and attempts it never answered)."""
        recorded = Counter(d.replace("-", "") for d, status in self.report["attempts"] if status == 200)
        received = Counter(d.replace("-", "") for d in self.delivery_ids.elements())
        return (received - recorded) + (recorded - received)

    @property
    def errors(self) -> int:
        return (
            len(self.saves.failures)
            + len(self.lost_edits)
            + len(self.undelivered)
            + len(self.locked)
            + len(self.sent_twice)
            + sum(self.unrecorded.values())
        )


def run(
    directory: Path,
    *,
    editors: int = 5,
    saves: int = 50,
    wait: float = 60,
    **env: str,
) -> Outcome:
    """The whole run: prepare, start, edit, wait for the deliveries (at most `wait` s), stop, report.
    `env`: settings of the processes beside the embedded default's."""
    receiver = Receiver().start()
    site = EmbeddedDefault(directory, receiver.url, **env)
    try:
        site.prepare(editors)
        site.start()
        began = time.time()
        done = edit(site, saves=saves)
        editing = time.time() - began
        expected = sum(len(titles) for titles in done.saved.values())
        deadline = time.monotonic() + wait
        while len(receiver.requests) < expected and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1)  # a delivery sent twice, or one more attempt, shows in this second
    finally:
        site.stop()
        receiver.stop()
    received = list(receiver.requests)
    ended = max((r.at for r in received), default=time.time())
    lags = sorted(
        r.at - done.saved_at[title]
        for r in received
        if (title := json.loads(r.body)["data"]["post"]["title"]) in done.saved_at
    )
    return Outcome(done, ended - began, received, site.report(), site.locked_lines(), site.seed, lags, editing)


def percentile(values: list[float], share: float) -> float:
    return values[min(len(values) - 1, int(len(values) * share))] if values else 0.0


def figures(outcome: Outcome) -> dict:
    saves = sum(len(t) for t in outcome.saves.saved.values())
    delivered = len(outcome.delivery_ids)
    return {
        "editors": len(outcome.seed["editors"]),
        "saves": saves,
        "editing_seconds": outcome.editing,
        "saves_per_second": saves / outcome.editing,
        "delivered": delivered,
        "seconds": outcome.seconds,
        "events_per_second": delivered / outcome.seconds,
        "lag_p50_ms": percentile(outcome.lags, 0.5) * 1000,
        "lag_p99_ms": percentile(outcome.lags, 0.99) * 1000,
        "lag_max_ms": max(outcome.lags, default=0) * 1000,
        "errors": outcome.errors,
        "error_kinds": {
            "answers of 400 or more": outcome.saves.errors,
            "failed saves": len(outcome.saves.failures),
            "lost edits": len(outcome.lost_edits),
            "saves not delivered": len(outcome.undelivered),
            "'database is locked' in a log": len(outcome.locked),
            "deliveries sent twice": len(outcome.sent_twice),
            "attempts not recorded": sum(outcome.unrecorded.values()),
        },
        "statuses": dict(sorted(outcome.saves.statuses.items())),
        "failures": (outcome.saves.failures + outcome.locked)[:10],
    }


def bench_embedded(editors: int = 5, saves: int = 50) -> dict:
    """The run in a temporary directory (removed afterwards); its figures, with the load before it."""
    load, at = os.getloadavg(), datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="cps-embedded-") as directory:
        return figures(run(Path(directory), editors=editors, saves=saves)) | {"load_at_start": load, "at": at}


SECTION = "## 8. The embedded default (issue 33)"


def embedded_section(f: dict) -> list[str]:
    kinds = ", ".join(f"{name} {count}" for name, count in f["error_kinds"].items())
    return [
        SECTION,
        "",
        f"`make run`'s processes (the Procfile's web, worker and beat with their default settings) on SQLite and "
        f"the filesystem broker, on a database of their own (bench/embedded.py). {f['editors']} editors save their "
        "own published post through the admin's change form at once (the page fetched, then posted with its CSRF "
        f"token), each save a `post.updated` delivered to a receiver on this machine. Run on {f['at']:%Y-%m-%d %H:%M} "
        "UTC; load average at start: " + ", ".join(f"{x:.2f}" for x in f["load_at_start"]) + ".",
        "",
        "| Saves | saves/s | events delivered | events/s | save to delivery p50 ms | p99 ms | max ms | errors |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {f['saves']} | {f['saves_per_second']:.1f} | {f['delivered']} | {f['events_per_second']:.1f} | "
        f"{f['lag_p50_ms']:.0f} | {f['lag_p99_ms']:.0f} | {f['lag_max_ms']:.0f} | {f['errors']} |",
        "",
        f"Events per second: deliveries received over the time from the first save to the last delivery. Errors: "
        f"{kinds}. Target: no error ({'met' if f['errors'] == 0 else '**missed**'}).",
        "",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--editors", type=int, default=5)
    parser.add_argument("--saves", type=int, default=50, help="saves per editor")
    parser.add_argument("--write", action="store_true", help="replace this part's section of bench/RESULTS.md")
    args = parser.parse_args()
    result = bench_embedded(args.editors, args.saves)
    section = embedded_section(result)
    print("\n".join(section))
    for line in result["failures"]:
        print("  " + line[:300])
    if args.write:
        write_section(section, "embedded default")
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
