"""`python -m bench.api_fast [--duration 5] [--rounds 2]`: the cached reads with and without the web process's fast path
(config/server/fast_reads.py, WEB_FAST_READS), back to back on the same data and machine, at
CONNECTIONS connections: req/s, p99 and the web process's CPU per request. No floors and no sweep
(the API part has them): before and after of one change, in turns, so the load of the machine weighs
on both alike.
"""

import argparse
import os
import sys
import time

from bench.api import seed_api
from bench.api_endpoints import LIST_20, LIST_100, ME, POST, api_endpoints
from bench.common import WORK, Process, configure, ensure_database, flush_redis, setup_django
from bench.load import SETTLE_SECONDS, Load, cpu_snapshot, ensure_wrk, start_web, wrk

ENDPOINTS = (LIST_20, LIST_100, POST, ME)
# "false" first: main's path (every request through Django), then the fast path.
SETTINGS = {"django": {"WEB_FAST_READS": "false"}, "fast": {"WEB_FAST_READS": "true"}}


def bench_fast_reads(wrk_bin: str, duration: int, rounds: int = 2) -> dict:
    seed = seed_api()
    paths = [(label, path) for label, path, _ in api_endpoints(seed) if label in ENDPOINTS]
    loads = {(which, label): Load() for which in SETTINGS for label, _ in paths}
    cpu = dict.fromkeys(loads, 0.0)
    load_before = os.getloadavg()
    for turn in range(rounds):
        order = list(SETTINGS) if turn % 2 == 0 else list(reversed(SETTINGS))
        for which in order:
            web = start_web("web", settings=SETTINGS[which])
            try:
                for label, path in paths:
                    wrk(wrk_bin, seed["key"], path, 1)  # warm: records the answers, fills the caches
                    time.sleep(SETTLE_SECONDS)
                    before = cpu_snapshot(web.popen.pid)["web"]
                    loads[which, label].add(wrk(wrk_bin, seed["key"], path, duration))
                    cpu[which, label] += cpu_snapshot(web.popen.pid)["web"] - before
            finally:
                web.stop()
    rows = []
    for label, _ in paths:
        row = {"endpoint": label}
        for which in SETTINGS:
            figures = loads[which, label].figures()
            row[which] = {**figures, "cpu_ms": cpu[which, label] * 1000 / max(1, figures["requests"])}
        row["ratio"] = row["fast"]["rps"] / row["django"]["rps"]
        rows.append(row)
        print(
            f"  {label}: {row['django']['rps']:.0f} -> {row['fast']['rps']:.0f} req/s ({row['ratio']:.2f}x), "
            f"p99 {row['django']['p99']:.1f} -> {row['fast']['p99']:.1f} ms, web CPU "
            f"{row['django']['cpu_ms']:.3f} -> {row['fast']['cpu_ms']:.3f} ms/request",
            flush=True,
        )
    return {"rows": rows, "load": (load_before, os.getloadavg()), "duration": duration, "rounds": rounds}


def fast_reads_section(result: dict) -> list[str]:
    load = " / ".join(f"{one[0]:.2f}" for one in result["load"])
    lines = [
        "## Cached reads before Django (issue 58)",
        "",
        f"Each endpoint {result['rounds']} x {result['duration']} s at the shipped sizes, with "
        f"WEB_FAST_READS=false and true in turns; load average (1 min) before / after: {load}.",
        "",
        "| Endpoint | Django req/s | Fast req/s | Ratio | Django p99 | Fast p99 | Web CPU/request Django | Fast |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        django, fast = row["django"], row["fast"]
        lines.append(
            f"| `{row['endpoint']}` | {django['rps']:.0f} | {fast['rps']:.0f} | {row['ratio']:.2f}x | "
            f"{django['p99']:.1f} ms | {fast['p99']:.1f} ms | {django['cpu_ms']:.3f} ms | {fast['cpu_ms']:.3f} ms |"
        )
    return [*lines, ""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=5, help="seconds of each endpoint's load in each round")
    parser.add_argument("--rounds", type=int, default=2, help="turns of each setting")
    args = parser.parse_args()
    configure()
    WORK.mkdir(parents=True, exist_ok=True)
    wrk_bin = ensure_wrk()
    ensure_database()
    flush_redis()
    setup_django()
    try:
        result = bench_fast_reads(wrk_bin, args.duration, args.rounds)
    finally:
        Process.stop_all()
        flush_redis()
    print("\n".join(fast_reads_section(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
