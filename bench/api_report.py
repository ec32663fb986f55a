"""The section of bench/RESULTS.md of the API part (bench/api.py)."""

import math
import os

from bench.api import MIXED_TARGET, TARGETS
from bench.api_endpoints import LIST_20, LIST_100
from bench.common import CONNECTIONS, WEB_CONCURRENCY, WEB_THREADS, verdict
from bench.load import MIXED_WRITE_EVERY, ROLES, SETTLE_SECONDS, server_label
from bench.sweep import sweep_section


def target_text(label: str) -> str:
    least, p99 = TARGETS[label]
    return f"≥{least}x" + (f", p99 <{p99} ms" if p99 else "")


def met(label: str, row: dict) -> bool:
    least, p99 = TARGETS[label]
    a = row["api"]
    return row["ratio"] >= least and (p99 is None or a["p99"] < p99) and a["non_2xx"] == 0 and a["socket_errors"] == 0


def api_section(api: dict) -> list[str]:
    rows = api["rows"]
    by_label = {row["endpoint"]: row for row in rows}
    q20, q100 = by_label[LIST_20]["queries"]["miss"], by_label[LIST_100]["queries"]["miss"]
    slice_seconds = max(1, api["duration"] // api["slices"])
    lines = [
        f"## 1. API throughput (wrk, {CONNECTIONS} connections, {api['duration']} s per run, from 127.0.0.1)",
        "",
        f"{server_label('web', WEB_CONCURRENCY, WEB_THREADS)}, the Procfile's web process with production "
        "settings on PostgreSQL and Redis. Floor: a plain Django view (bench/floor.py, no DRF) computing every "
        "answer from the database (the key's query without the cache, the same queries as a miss) as "
        "byte-identical JSON, served by the same server and middleware. Each "
        f"endpoint and its floor take turns in {api['slices']} slices of {slice_seconds} s (the first "
        f"alternating, {SETTLE_SECONDS} s apart for the server to finish the last slice's requests); latencies "
        f"are merged from wrk's histograms. Load average before/after: {api['load'][0]:.2f}/{api['load'][1]:.2f}. "
        f"Worker processes booted: {api['worker_boots']}.",
        "",
        "| Endpoint | req/s | p50 ms | p99 ms | floor req/s | floor p50 ms | floor p99 ms | ratio | non-2xx "
        "| queries on a miss / on a hit (floor) | target |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        a, f, q = row["api"], row["floor"], row["queries"]
        lines.append(
            f"| `{row['endpoint']}` | {a['rps']:.0f} | {a['p50']:.1f} | {a['p99']:.1f} | {f['rps']:.0f} | "
            f"{f['p50']:.1f} | {f['p99']:.1f} | {row['ratio']:.2f}x | {a['non_2xx'] + f['non_2xx']} | "
            f"{q['miss']} / {q['hit']} ({q['floor']}) | {target_text(row['endpoint'])}: "
            f"{verdict(met(row['endpoint'], row))} |"
        )
    hits = "; ".join(f"`{row['endpoint']}` {row['queries']['hit']}" for row in rows)
    none = all(row["queries"]["hit"] == 0 for row in rows)
    lines += [
        "",
        "Repeated reads of one URL (the polling case): after the first request the endpoints answer from "
        "the cache (docs/benchmarks.md), the floor computes every answer. **Queries on a hit**, counted "
        "in-process (`CaptureQueriesContext`, the benchmark's production settings on PostgreSQL and Redis) on "
        f"the second of two identical requests: {hits} ({verdict(none)}: none). On a miss (the first request "
        f"after an edit of a post on the page): {q20} at per_page=20, {q100} at per_page=100 "
        f"({verdict(q20 == q100)}: constant in page size).",
        "",
    ]
    lines += misses_section(api["misses"])
    lines += mixed_section(api)
    if api["sweep"]:
        lines += sweep_section(api["sweep"], api["default"])
    lines += api_notes(api)
    return lines


def misses_section(misses: list[dict]) -> list[str]:
    if not misses:
        return []
    n = misses[0]["requests"]
    lines = [
        f"**Concurrent misses of one page** (target: computed once): after an edit of a post the page shows, "
        f"{n} requests of the page sent at the same moment, each on a connection of its own, to the shipped web "
        "process. Counted by PostgreSQL: the scans of `posts_post` across the burst (the web process stopped "
        "after it, so its sessions' counts are in), over those of one miss measured in-process just before. "
        "The floor, which computes every request, is counted the same way, on a server of its own: the check "
        "that the count sees every computation.",
        "",
        "| Endpoint | requests | scans of posts_post | per miss | computed | answers | floor: computed | "
        "target: once |",
        "|---|---:|---:|---:|---:|---|---:|---|",
    ]

    def times(m: dict) -> str:
        return "n/a" if math.isnan(m["computed"]) else f"{m['computed']:.1f}"

    for m in misses:
        ok = not math.isnan(m["computed"]) and m["computed"] < 1.5 and m["ended"] and m["answers_ok"]
        answers = "all 200, one body, the edit in it" if m["answers_ok"] else "**not all the same 200 with the edit**"
        lines.append(
            f"| `{m['endpoint']}` | {m['requests']} | {m['scans']} | {m['per_miss']} | {times(m)} | {answers} | "
            f"{times(m['floor'])} | {verdict(ok)} |"
        )
    if not all(m["ended"] and m["floor"]["ended"] for m in misses):
        lines += ["", "Some of the web process's sessions had not ended when counted: the figure may be low."]
    return [*lines, ""]


def mixed_section(api: dict) -> list[str]:
    lines = [
        f"**Mixed load**: the same {CONNECTIONS} connections, one request in {MIXED_WRITE_EVERY} a write (an "
        "editor's save of a post on the channel's first page through `post_update_content`, bench/floor.py "
        "`write`), the others the read; the floor's run gets the same writes. Requests per second count both.",
        "",
        f"| Endpoint | req/s | p50 ms | p99 ms | floor req/s | floor p99 ms | ratio | target: ≥{MIXED_TARGET}x |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in api["mixed"]:
        a, f = row["api"], row["floor"]
        ok = row["ratio"] >= MIXED_TARGET and a["socket_errors"] == 0
        lines.append(
            f"| `{row['endpoint']}` | {a['rps']:.0f} | {a['p50']:.1f} | {a['p99']:.1f} | {f['rps']:.0f} | "
            f"{f['p99']:.1f} | {row['ratio']:.2f}x | {verdict(ok)} |"
        )
    return [*lines, ""]


def api_notes(api: dict) -> list[str]:
    """The profile of the API benchmark and the targets it missed, as measured (explanations: docs/benchmarks.md)."""
    lines = [
        "Profile (bench/api_profile.py): CPU per request measured in-process (Django's test client, no "
        "network), the endpoint and its floor taking turns.",
        "",
        "| Endpoint | API ms CPU | floor ms CPU | ratio |",
        "|---|---:|---:|---:|",
    ]
    for label, (cpu_api, cpu_floor) in api["cpu"].items():
        lines.append(f"| `{label}` | {cpu_api:.2f} | {cpu_floor:.2f} | {cpu_floor / cpu_api:.2f}x |")
    cores = os.cpu_count()
    lines += [
        "",
        "Where the machine's CPU went while each endpoint was loaded over HTTP (process CPU time per request, "
        "summed over the endpoint's slices), and what that allows: the most requests per second "
        f"{cores} cores give at that cost, and the least mean latency that leaves at {CONNECTIONS} connections.",
        "",
        "| Endpoint | web ms | PostgreSQL ms | Redis ms | wrk ms | other ms | total ms | ceiling req/s "
        f"| least mean latency at {CONNECTIONS} connections |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in api["rows"]:
        cpu = row["cpu_ms"]
        total = sum(cpu.values())
        cells = " | ".join(f"{cpu[role]:.2f}" for role in ROLES)
        lines.append(
            f"| `{row['endpoint']}` | {cells} | {total:.2f} | {cores * 1000 / total:.0f} | "
            f"{CONNECTIONS * total / cores:.0f} ms |"
        )
    missed = [row for row in api["rows"] if not met(row["endpoint"], row)]
    if missed:
        lines += [
            "",
            "**The misses**: "
            + "; ".join(
                f"`{row['endpoint']}` {row['ratio']:.2f}x, p99 {row['api']['p99']:.0f} ms "
                f"(target {target_text(row['endpoint'])}; floor p99 {row['floor']['p99']:.0f} ms)"
                for row in missed
            )
            + f". Mean latency at {CONNECTIONS} busy connections ({CONNECTIONS} / throughput): "
            + "; ".join(f"{CONNECTIONS / row['api']['rps'] * 1000:.0f} ms" for row in missed)
            + ".",
        ]
    return [*lines, ""]
