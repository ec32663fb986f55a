"""The API part's sweep (bench/api.py): the cached reads and `/v1/me` with their floors on other
servers and sizes than the shipped web process's, each started afresh in turns; the fastest marked,
and whether the shipped defaults are it."""

import math
import subprocess
import time
from dataclasses import dataclass

from bench.common import PYTHON, ROOT, child_env
from bench.load import SETTLE_SECONDS, Load, start_web, wrk


@dataclass(frozen=True)
class Config:
    """One server of the sweep: `granian` (config/web.py) in a runtime mode, or gunicorn's `sync`
    or `gthread` worker serving config/wsgi.py."""

    server: str  # granian, gunicorn-sync, gunicorn-gthread
    processes: int
    threads: int
    mode: str = "mt"  # granian's WEB_RUNTIME_MODE

    @classmethod
    def parse(cls, text: str) -> "Config":
        """`granian:2x4`, `granian-st:2x4`, `gunicorn-sync:4x1`, `gunicorn-gthread:2x4`."""
        name, _, size = text.strip().partition(":")
        processes, _, threads = size.partition("x")
        server, mode = name, "mt"
        if name.startswith("granian-"):
            server, mode = "granian", name.removeprefix("granian-")
        if server not in ("granian", "gunicorn-sync", "gunicorn-gthread") or mode not in ("mt", "st"):
            raise ValueError(f"unknown server {name!r} (granian, granian-st, gunicorn-sync, gunicorn-gthread)")
        if not (processes.isdigit() and threads.isdigit() and int(processes) > 0 and int(threads) > 0):
            raise ValueError(f"size {size!r} is not PROCESSESxTHREADS")
        if server == "gunicorn-sync" and threads != "1":
            raise ValueError("gunicorn's sync worker runs one thread per process")
        return cls(server, int(processes), int(threads), mode)

    @property
    def name(self) -> str:
        return {
            "granian": f"granian (config/web.py, {self.mode} runtime)",
            "gunicorn-sync": "gunicorn (sync worker)",
            "gunicorn-gthread": "gunicorn (gthread worker)",
        }[self.server]

    @property
    def size(self) -> str:
        return f"{self.processes} x {self.threads}"

    def start(self):
        workers, threads = str(self.processes), str(self.threads)
        if self.server == "granian":
            return start_web("web", workers, threads, {"WEB_RUNTIME_MODE": self.mode})
        return start_web(self.server, workers, threads)


# On 2 cores: two processes (one a core), three (the default) and four, with 1-4 threads each (a
# first sweep found one process, and eight threads, slower: bench/RESULTS.md of 2026-11-26 09:52);
# the other runtime mode at the default size; gunicorn's sync worker (the benchmark's main run
# before issue 30) and its gthread worker (the Procfile's before granian).
SWEEP = (
    "granian:2x2,granian:2x4,granian:3x2,granian:3x3,granian:3x4,granian:4x1,granian:4x2,granian-st:3x2,"
    "gunicorn-sync:4x1,gunicorn-gthread:3x2"
)


def parse_sweep(text: str) -> tuple[Config, ...]:
    return () if text.strip() in ("", "none") else tuple(Config.parse(item) for item in text.split(","))


def shipped_defaults() -> Config:
    """What the Procfile's `web:` line runs here: config/settings/ read as the web process reads it
    (with .env, without the WEB_* variables of the environment the benchmark was started from)."""
    env = {name: value for name, value in child_env().items() if not name.startswith("WEB_")}
    show = "import config.settings as s; print(s.WEB_CONCURRENCY, s.WEB_THREADS, s.WEB_RUNTIME_MODE)"
    out = subprocess.run([PYTHON, "-c", show], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    processes, threads, mode = out.stdout.split()
    return Config("granian", int(processes), int(threads), mode)


def sweep(wrk_bin: str, key: str, pairs: list, configs: tuple[Config, ...], rounds: int, seconds: int) -> dict:
    """Each configuration started afresh in every round (the order reversed every other round, so
    the machine's drift weighs on all alike), its endpoints and their floors taking turns in one
    slice of `seconds` each per round."""
    loads: dict[tuple, Load] = {}
    per_round: dict[tuple, list[float]] = {}
    for turn in range(rounds):
        for config in configs if turn % 2 == 0 else configs[::-1]:
            web = config.start()
            try:
                for label, path, floor_path in pairs:
                    for url in (path, floor_path):  # connections, caches, code paths
                        wrk(wrk_bin, key, url, 1)
                    order = [("api", path), ("floor", floor_path)]
                    for which, url in order if turn % 2 == 0 else order[::-1]:
                        time.sleep(SETTLE_SECONDS)
                        slice_load = Load()
                        output = wrk(wrk_bin, key, url, seconds)
                        slice_load.add(output)
                        loads.setdefault((config, label, which), Load()).add(output)
                        per_round.setdefault((config, label, which), []).append(slice_load.figures()["rps"])
            finally:
                web.stop()
            print(f"  sweep round {turn + 1}/{rounds}: {config.name} {config.size}", flush=True)
    rows = []
    for config in configs:
        for label, _, _ in pairs:
            api, floor = loads[(config, label, "api")].figures(), loads[(config, label, "floor")].figures()
            rows.append(
                {
                    "config": config,
                    "endpoint": label,
                    "api": api,
                    "floor": floor,
                    "ratio": api["rps"] / floor["rps"],
                    "rounds": per_round[(config, label, "api")],
                }
            )
    return {"rows": rows, "configs": configs, "rounds": rounds, "seconds": seconds}


def scores(sweep_result: dict) -> list[tuple[Config, float, list[float]]]:
    """Each configuration's geometric mean of req/s over the swept endpoints, and the same per round;
    fastest first."""
    by_config: dict[Config, list[dict]] = {}
    for row in sweep_result["rows"]:
        by_config.setdefault(row["config"], []).append(row)

    def geomean(values) -> float:
        values = list(values)
        return math.exp(sum(math.log(v) for v in values) / len(values)) if all(v > 0 for v in values) else 0.0

    ranked = []
    for config, rows in by_config.items():
        rounds = [geomean(row["rounds"][i] for row in rows) for i in range(sweep_result["rounds"])]
        ranked.append((config, geomean(row["api"]["rps"] for row in rows), rounds))
    return sorted(ranked, key=lambda item: -item[1])


def sweep_verdict(sweep_result: dict, default: Config) -> tuple[bool | None, str]:
    ranked = scores(sweep_result)
    fastest, best, best_rounds = ranked[0]
    mine = next(((score, rounds) for config, score, rounds in ranked if config == default), None)
    if mine is None:
        return None, f"The shipped defaults ({default.name}, {default.size}) were not in the sweep."
    if fastest == default:
        return True, f"The shipped defaults ({default.name}, {default.size}) are the fastest measured: met."
    score, rounds = mine
    if len(rounds) < 2:
        spread = "one round, so no spread between rounds to weigh the difference against"
    elif min(best_rounds) > max(rounds):
        spread = "its slowest round faster than their fastest"
    else:
        spread = "not in every round: within the spread between rounds"
    return False, (
        f"The shipped defaults ({default.name}, {default.size}) are **not** the fastest measured: "
        f"{fastest.name}, {fastest.size} is, {best / score:.2f}x their req/s (geometric mean over the endpoints; "
        f"{spread})."
    )


def sweep_section(swept: dict, default: Config) -> list[str]:
    fastest = {}
    for row in swept["rows"]:
        if row["api"]["rps"] > fastest.get(row["endpoint"], 0):
            fastest[row["endpoint"]] = row["api"]["rps"]
    lines = [
        f"**The alternatives**: the cached reads and `/v1/me`, each with its floor on the same server, on every "
        f"server and size below, started afresh in each of {swept['rounds']} round(s) (the order reversed every "
        f"other round); in each round every endpoint and its floor take one slice of {swept['seconds']} s each, in "
        "turns. ★: the fastest for that endpoint. The shipped defaults: "
        f"{default.name}, {default.size} (config/settings/web.py).",
        "",
        "| Server | processes x threads | Endpoint | req/s | p50 ms | p99 ms | floor req/s | ratio |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in swept["rows"]:
        config, a, f = row["config"], row["api"], row["floor"]
        star = " ★" if a["rps"] == fastest[row["endpoint"]] else ""
        shipped = " (shipped)" if config == default else ""
        lines.append(
            f"| {config.name}{shipped} | {config.size} | `{row['endpoint']}` | {a['rps']:.0f}{star} | {a['p50']:.1f} | "
            f"{a['p99']:.1f} | {f['rps']:.0f} | {row['ratio']:.2f}x |"
        )
    ranked = scores(swept)
    best = ranked[0][1]
    lines += [
        "",
        "Ranked by the geometric mean of the three endpoints' req/s (per round beside it: the spread "
        "between rounds is the noise of this run):",
        "",
        "| Server | processes x threads | req/s (geometric mean) | of the fastest | per round |",
        "|---|---|---:|---:|---|",
    ]
    for config, score, rounds in ranked:
        shipped = " (shipped)" if config == default else ""
        lines.append(
            f"| {config.name}{shipped} | {config.size} | {score:.0f} | {score / best:.2f} | "
            + ", ".join(f"{value:.0f}" for value in rounds)
            + " |"
        )
    return [*lines, "", sweep_verdict(swept, default)[1], ""]
