"""HTTP load for the API and blog parts of `make bench`: the web servers they start, wrk's runs and
their figures merged, and the CPU each role of the machine used meanwhile."""

import math
import os
import shutil
import subprocess
import time
from pathlib import Path

from bench.common import (
    BIN,
    CONNECTIONS,
    PYTHON,
    ROOT,
    WEB_CONCURRENCY,
    WEB_PORT,
    WEB_THREADS,
    WORK,
    Process,
    wait_http,
)

SLICES = 10  # turns of the endpoint and its floor in each API benchmark
# Before each slice: when wrk stops, the connections it opened last are still in the server's listen
# backlog with their requests, and the workers serve them (to closed sockets) before the next
# slice's; without a pause the floor's slow leftovers landed in the endpoint's p99 and the other way
# round (docs/benchmarks.md).
SETTLE_SECONDS = 0.5
MIXED_WRITE_EVERY = 50  # the mixed load: one write in this many requests
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
ROLES = ("web", "postgres", "redis", "wrk", "other")
WRK_THREADS = 2  # wrk's threads (the connections are shared among them)


def ensure_wrk() -> str:
    path = shutil.which("wrk")
    if path:
        return path
    print("bench: installing wrk (Debian package)", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True, env=env, stdout=subprocess.DEVNULL)
    return shutil.which("wrk") or "wrk"


class Load:
    """wrk's figures over several runs: totals added, latency histograms merged."""

    def __init__(self) -> None:
        self.requests = self.duration_us = self.non_2xx = self.socket_errors = 0
        self.latencies: dict[int, int] = {}

    def add(self, output: str) -> None:
        for line in output.splitlines():
            kind, *numbers = line.split()[:8] or [""]
            if kind == "SUMMARY":
                requests, duration, status, *errors = (int(n) for n in numbers)
                self.requests += requests
                self.duration_us += duration
                self.non_2xx += status
                self.socket_errors += sum(errors)
            elif kind == "LAT":
                value, count = (int(n) for n in numbers)
                self.latencies[value] = self.latencies.get(value, 0) + count

    def percentile(self, percent: float) -> float:
        """In milliseconds."""
        rank, seen = math.ceil(sum(self.latencies.values()) * percent / 100), 0
        for value in sorted(self.latencies):
            seen += self.latencies[value]
            if seen >= rank:
                return value / 1000
        return math.nan

    def figures(self) -> dict:
        return {
            "rps": self.requests / (self.duration_us / 1e6),
            "requests": self.requests,
            "p50": self.percentile(50),
            "p99": self.percentile(99),
            "non_2xx": self.non_2xx,
            "socket_errors": self.socket_errors,
        }


def cpu_snapshot(web_group: int) -> dict[str, float]:
    """CPU seconds used so far, by role: the web server's process group, PostgreSQL, Redis, the
    load generator (this process's waited-for children: the wrk runs) and everything else busy on
    the machine. A process's own time plus that of its children that ended (the web server's replaced
    workers, PostgreSQL's closed backends), so nothing that ran in between is missed."""
    import resource

    used = dict.fromkeys(ROLES, 0.0)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # ended while being read
            continue
        comm, fields = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()
        role = "web" if int(fields[2]) == web_group else "postgres" if comm == "postgres" else None
        role = role or ("redis" if comm.startswith("redis-server") else None)
        if role:
            used[role] += sum(int(tick) for tick in fields[11:15]) / CLOCK_TICKS
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    used["wrk"] = children.ru_utime + children.ru_stime
    # The whole machine (user, nice, system, irq, softirq, steal), less what the roles above used.
    busy = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    used["other"] = (sum(busy) - busy[3] - busy[4]) / CLOCK_TICKS - sum(used.values())
    return used


def wrk(
    wrk_bin: str,
    key: str | None,
    path: str,
    seconds: int,
    env: dict | None = None,
    script: str | None = None,
    headers: tuple[str, ...] = (),
) -> str:
    """wrk's summary of `seconds` of load on `path` (with the API key `key`, or as an anonymous
    reader with None, and `headers` besides); with `env` holding WRK_WRITE_PATH, the mixed load of
    bench/wrk_mixed.lua (one write in WRK_WRITE_EVERY requests); with `script`, that script's
    requests (reading `env`)."""
    script = script or ("bench/wrk_mixed.lua" if env else "bench/wrk_report.lua")
    auth = ["-H", f"Authorization: Bearer {key}"] if key else []
    auth += [option for header in headers for option in ("-H", header)]
    result = subprocess.run(
        [
            wrk_bin,
            f"-t{WRK_THREADS}",
            f"-c{CONNECTIONS}",
            f"-d{seconds}s",
            "--latency",
            "-s",
            script,
            *auth,
            f"http://127.0.0.1:{WEB_PORT}{path}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
    )
    with (WORK / "wrk.log").open("a") as log:
        log.write(f"$ wrk {path} {env or ''}\n{result.stdout}\n")
    return result.stdout


# The HTTP servers: the Procfile's web process (`python -m config.web`: granian, the request limits
# and the JSON answer to the requests it refuses itself), and gunicorn's sync or gthread worker
# serving the same WSGI application (config/wsgi.py, preloaded), which the API part compares with it.
SERVER_NAMES = {
    "web": "granian (config/web.py)",
    "gunicorn-sync": "gunicorn (sync worker)",
    "gunicorn-gthread": "gunicorn (gthread worker)",
}


def server_label(server: str, workers: str, threads: str) -> str:
    return f"{SERVER_NAMES[server]}, {workers} processes x {threads} thread{'s' if threads != '1' else ''}"


def start_web(
    server: str, workers: str = WEB_CONCURRENCY, threads: str = WEB_THREADS, settings: dict | None = None
) -> Process:
    """The server on WEB_PORT, answering; `settings`: more of the web process's WEB_* settings."""
    env = {"DJANGO_SETTINGS_MODULE": "bench.settings", **(settings or {})}
    if server == "web":
        args = [PYTHON, "-m", "config.web"]
        env |= {"BIND": f"127.0.0.1:{WEB_PORT}", "WEB_CONCURRENCY": workers, "WEB_THREADS": threads}
    else:
        worker_class = server.removeprefix("gunicorn-")
        args = [
            str(BIN / "gunicorn"),
            "--bind",
            f"127.0.0.1:{WEB_PORT}",
            "--workers",
            workers,
            "--threads",
            threads,
            "--worker-class",
            worker_class,
            "--preload",
            "--no-control-socket",
            "config.wsgi",
        ]
    web = Process(f"{server}-{workers}x{threads}{''.join(f'-{v}' for v in (settings or {}).values())}", args, env)
    wait_http(f"http://127.0.0.1:{WEB_PORT}/healthz")
    return web


def measure(
    wrk_bin: str,
    key: str | None,
    web: Process,
    pairs,
    duration: int,
    write_path: str | None = None,
    *,
    slices: int = SLICES,
) -> list:
    """Each endpoint and its floor under load, taking turns in `slices` short slices (the first
    alternating), so whatever else the machine does in the meantime weighs on both alike."""
    env = {"WRK_WRITE_PATH": write_path, "WRK_WRITE_EVERY": str(MIXED_WRITE_EVERY)} if write_path else None
    rows = []
    for label, path, floor_path in pairs:
        for url in (path, floor_path):  # warm both: connections, caches, code paths
            wrk(wrk_bin, key, url, 2, env)
        api, floor = Load(), Load()
        cpu = dict.fromkeys(ROLES, 0.0)  # used while the endpoint (not its floor) was loaded
        for turn in range(slices):
            pair = [(api, path), (floor, floor_path)]
            for load, url in pair if turn % 2 == 0 else reversed(pair):
                time.sleep(SETTLE_SECONDS)
                before = cpu_snapshot(web.popen.pid) if load is api else None
                load.add(wrk(wrk_bin, key, url, max(1, duration // slices), env))
                if before is not None:
                    after = cpu_snapshot(web.popen.pid)
                    for role in ROLES:
                        cpu[role] += after[role] - before[role]
        api, floor = api.figures(), floor.figures()
        cpu_ms = {role: seconds * 1000 / api["requests"] for role, seconds in cpu.items()}
        rows.append(
            {"endpoint": label, "api": api, "floor": floor, "ratio": api["rps"] / floor["rps"], "cpu_ms": cpu_ms}
        )
        kind = " mixed" if write_path else ""
        print(
            f"  {web.name}{kind} {label}: {api['rps']:.0f} req/s (floor {floor['rps']:.0f}), p99 {api['p99']:.1f} ms",
            flush=True,
        )
    return rows
