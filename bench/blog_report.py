"""The section of bench/RESULTS.md of the blog part (bench/blog.py)."""

from bench.blog import (
    BATCH,
    DRAFT_EVERY,
    FLAT_TARGET,
    MIN_ROUNDS,
    MODES,
    P99_TARGET_MS,
    PAGES,
    RARE_POSTS,
    READ_SECONDS,
    ROUNDS,
    TARGET_RATIO,
    TARGETED,
    WARMUP_ROUNDS,
)
from bench.common import CONNECTIONS, WEB_CONCURRENCY, WEB_THREADS, verdict
from bench.load import ROLES, server_label


def blog_section(result: dict) -> list[str]:
    small, large = result["sizes"]
    published, cost, queries = result["published"], result["cost"], result["queries"]
    rows = result["rows"]
    lines = [
        "## 7. Blog pages (issue 31)",
        "",
        f"Two blog channels of one account, filled with `bulk_create` in batches of {BATCH:,}: {small:,} and "
        f"{large:,} posts ({published['small']:,} and {published['large']:,} published; one in {DRAFT_EVERY} is a "
        "draft), each with a Markdown body of about 2 kB (headings, a list, a code block, a table, a link, an image, "
        f"a footnote), a teaser, two of four tags and a cover image, and a fifth tag on {RARE_POSTS} posts of "
        "each channel; vacuumed, analyzed and checkpointed "
        f"(seeding took {result['seed_seconds']:.0f} s).",
        "",
        f"**Throughput** (wrk, {CONNECTIONS} connections, {result['duration']} s per page and as much for its floor, "
        f"in slices taking turns as in part 1), the {large:,}-post channel's index and the page of its middle post "
        f"(pages of {result['page_bytes']['index']:,} and {result['page_bytes']['post']:,} bytes), "
        f"{server_label('web', WEB_CONCURRENCY, WEB_THREADS)}, the Procfile's web process with production "
        "settings: pages served from the page cache under the channel's version. Floor: a plain Django view "
        "(bench/floor.py) rendering the same page from the database on every request (the blog's view code "
        "without the cache: the same queries, Markdown rendering and template; checked byte for byte before the "
        "run). Load average "
        f"before/after: {result['load'][0]:.2f}/{result['load'][1]:.2f}.",
        "",
        "| Page | req/s | p50 ms | p99 ms | floor req/s | floor p50 ms | floor p99 ms | ratio | non-2xx "
        "| queries: hit, miss (floor) | target |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row, key in zip(rows, ("index", "post"), strict=True):
        a, f = row["api"], row["floor"]
        ok = (
            row["ratio"] >= TARGET_RATIO
            and a["p99"] < P99_TARGET_MS
            and a["non_2xx"] + a["socket_errors"] + f["non_2xx"] == 0
        )
        q = queries["large"][key]
        lines.append(
            f"| `{row['endpoint']}` | {a['rps']:.0f} | {a['p50']:.1f} | {a['p99']:.1f} | {f['rps']:.0f} | "
            f"{f['p50']:.1f} | {f['p99']:.1f} | {row['ratio']:.2f}x | {a['non_2xx'] + f['non_2xx']} | "
            f"{q['cached']}, {q['miss']} ({q['floor']}) | ≥{TARGET_RATIO}x, p99 <{P99_TARGET_MS} ms: {verdict(ok)} |"
        )
    lines += [
        "",
        "Where the machine's CPU went while each page was loaded (process CPU time per request, the page's "
        "slices only):",
        "",
        f"| Page | {' | '.join(f'{role} ms' for role in ROLES)} | total ms |",
        f"|---|{'---:|' * (len(ROLES) + 1)}",
    ]
    for row in rows:
        cpu = row["cpu_ms"]
        lines.append(
            f"| `{row['endpoint']}` | {' | '.join(f'{cpu[role]:.2f}' for role in ROLES)} | {sum(cpu.values()):.2f} |"
        )
    lines += [
        "",
        f"**Cost against the channel's size**: six pages of each channel through Django's test client in the "
        "benchmark's process (the whole middleware stack and the views on PostgreSQL), all twelve taking turns in the "
        f"same rounds ({WARMUP_ROUNDS} of warm-up, then up to {ROUNDS}, at least {MIN_ROUNDS}, stopped after "
        f"{READ_SECONDS} s): computed (`API_CACHE_SECONDS=0`, every request renders: a page's cost right after an "
        f"edit; {cost['computed']['rounds']} rounds) and from the page cache ({cost['cached']['rounds']} rounds). "
        f"The older page is the one `?before=` the channel's middle post; the post page is that post's. Ratio: the "
        f"{large:,}-post channel's median over the {small:,}-post channel's; the issue's target (≤{FLAT_TARGET}x) "
        "is on the index and the post page, the other pages are held to the same rule.",
        "",
        f"| Page (median ms / p90 ms) | computed, {small:,} | computed, {large:,} | ratio | cached, {small:,} "
        f"| cached, {large:,} | ratio | target ≤{FLAT_TARGET}x |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for key, label in PAGES:
        cells, ok = [], True
        for mode, _ in MODES:
            s, g = cost[mode]["small"][key], cost[mode]["large"][key]
            ratio = g["median_ms"] / s["median_ms"]
            ok = ok and ratio <= FLAT_TARGET
            cells += [
                f"{s['median_ms']:.2f} / {s['p90_ms']:.2f}",
                f"{g['median_ms']:.2f} / {g['p90_ms']:.2f}",
                f"{ratio:.2f}x",
            ]
        lines.append(f"| {label}{'' if key in TARGETED else ' *'} | {' | '.join(cells)} | {verdict(ok)} |")
    footprint = result["cost"]["footprint"]
    lines += [
        "",
        "\\* not a target of the issue. Queries and the peak of Python memory of one computed request "
        "(`CaptureQueriesContext`, `tracemalloc`, each in a request of its own):",
        "",
        f"| Page | {small:,} posts | {large:,} posts |",
        "|---|---:|---:|",
    ]
    for key, label in PAGES:
        cells = " | ".join(
            f"{footprint[which][key]['queries']} queries, {footprint[which][key]['peak_kib']:,.0f} KiB"
            for which in ("small", "large")
        )
        lines.append(f"| {label} | {cells} |")
    lines += ["", f"The part took {result['seconds']:.0f} s.", ""]
    return lines
