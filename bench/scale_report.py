"""The section of bench/RESULTS.md of the scale part (bench/scale.py)."""

from bench.common import verdict
from bench.scale import (
    DUE_POSTS,
    FLAT,
    MIN_ROUNDS,
    PLAN_RUNS,
    PLAN_TARGET,
    READ_SECONDS,
    READS,
    ROUNDS,
    WARMUP_ROUNDS,
)


def scale_section(result: dict) -> list[str]:
    return [*_intro(result), *_times(result), *_footprints(result), *_closing(result), *_explains(result)]


def _intro(result: dict) -> list[str]:
    sizes = result["sizes"]
    small, large = sizes[0], sizes[-1]
    size_cells = " | ".join(f"{size:,} posts" for size in sizes)
    return [
        "## 5. Reads at scale (issue 19)",
        "",
        f"One channel (platform `api`) grown to {', '.join(f'{size:,}' for size in sizes)} posts in turn with "
        "raw SQL, vacuumed, analyzed and checkpointed after each growth, beside a reference channel of "
        f"{small:,} posts. At each size, five reads of the grown channel and the same five of the reference "
        "channel through Django's test client in this process (the whole middleware stack and the views on "
        "PostgreSQL, the representation cache off, so every request is computed), all ten taking turns: "
        f"{WARMUP_ROUNDS} rounds of warm-up, then up to {ROUNDS} rounds (at least {MIN_ROUNDS}, stopped after "
        f"{READ_SECONDS} s): "
        + ", ".join(f"{result['rounds'][size]} at {size:,}" for size in sizes)
        + ". The deep page is the middle one, the deepest there is without anchors (a page nearer the end than "
        "the start is counted from the end of the index); it starts from the channel's page anchor before it "
        "(every 1,000th post id, in Redis: apps/posts/page_anchors.py). The cursor page is the same posts, "
        "reached with `meta.next_cursor` of the page before it (checked: the same ids). Content plan: "
        f"{DUE_POSTS:,} due posts (two tags and an image each) added to a channel, moved by one "
        "`content_plan_run()` in a process of its own with one webhook endpoint (events and deliveries written), "
        f"then deleted again; {PLAN_RUNS} runs in the grown channel and {PLAN_RUNS} in the reference channel, "
        "taking turns, at each size.",
        "",
        f"**The ratio is the grown channel's median over the reference channel's, measured in the same rounds at "
        f"{large:,} posts** (as the issue measured a channel of 123 posts beside one of 300,000), so the machine's "
        "own drift between sizes, which moved even the channel detail by half in an earlier run, is not in it.",
        "",
        f"| Read (median ms / p90 ms) | {size_cells} | reference ({small:,}) at {large:,} | ratio | target | |",
        f"|---|{'---:|' * len(sizes)}---:|---:|---|---|",
    ]


def _times(result: dict) -> list[str]:
    sizes = result["sizes"]
    large = sizes[-1]
    reads, plan = result["reads"], result["plan"]
    lines = []
    reference = result["reference"][large]
    for key, label, target in READS:
        cells = " | ".join(f"{reads[size][key]['median_ms']:.2f} / {reads[size][key]['p90_ms']:.2f}" for size in sizes)
        base = reference[key]["median_ms"]
        ratio = reads[large][key]["median_ms"] / base
        lines.append(
            f"| {label} | {cells} | {base:.2f} / {reference[key]['p90_ms']:.2f} | {ratio:.2f}x | ≤{target}x "
            f"| {verdict(ratio <= target)} |"
        )
    plan_base = result["plan_reference"][large]["us_per_post"]
    plan_ratio = plan[large]["us_per_post"] / plan_base
    cells = " | ".join(f"{plan[size]['us_per_post']:.0f} µs" for size in sizes)
    return [
        *lines,
        f"| content plan, per post ({DUE_POSTS:,} due; median of {PLAN_RUNS} runs) | {cells} | {plan_base:.0f} µs "
        f"| {plan_ratio:.2f}x | ≤{PLAN_TARGET}x | {verdict(plan_ratio <= PLAN_TARGET)} |",
        "",
    ]


def _footprints(result: dict) -> list[str]:
    sizes = result["sizes"]
    small, large = sizes[0], sizes[-1]
    reads = result["reads"]
    size_cells = " | ".join(f"{size:,} posts" for size in sizes)
    lines = [
        "Queries and memory: queries of one request (`CaptureQueriesContext`) and the peak of Python memory one "
        "request allocated (`tracemalloc`), each read in a request of its own; for the content plan the peak "
        f"resident memory of its process. Flat: the largest size's peak at most {FLAT}x the smallest's.",
        "",
        f"| | {size_cells} | flat |",
        f"|---|{'---:|' * len(sizes)}---|",
    ]
    for key, label, _ in READS:
        cells = " | ".join(
            f"{reads[size][key]['queries']} queries, {reads[size][key]['peak_kib']:,.0f} KiB" for size in sizes
        )
        flat = reads[large][key]["peak_kib"] <= reads[small][key]["peak_kib"] * FLAT
        lines.append(f"| {label} | {cells} | {verdict(flat)} |")
    return lines


def _closing(result: dict) -> list[str]:
    sizes = result["sizes"]
    small, large = sizes[0], sizes[-1]
    plan = result["plan"]
    runs = "; ".join(
        f"{size:,}: "
        + ", ".join(f"{us:.0f}" for us in plan[size]["runs_us_per_post"])
        + " (reference "
        + ", ".join(f"{us:.0f}" for us in result["plan_reference"][size]["runs_us_per_post"])
        + ")"
        for size in sizes
    )
    cells = " | ".join(f"{plan[size]['peak_rss_mb']:.0f} MB" for size in sizes)
    flat = plan[large]["peak_rss_mb"] <= plan[small]["peak_rss_mb"] * FLAT
    return [
        f"| content plan (peak RSS) | {cells} | {verdict(flat)} |",
        "",
        f"The content plan's runs, µs per post: {runs}.",
        "",
        "`recount_posts` on the channel (its row locked while counted; best of 3, no drift found): "
        + ", ".join(f"{result['recount_ms'][size]:.0f} ms at {size:,}" for size in sizes)
        + ".",
        "",
        "Making the channel's page anchors (every 1,000th id, one statement; a deep page pays it once per "
        "`posts_ids_version`, which appending and editing posts keep; best of 3): "
        + ", ".join(f"{result['anchors_ms'][size]:.0f} ms at {size:,}" for size in sizes)
        + ".",
        "",
        "Growing the channel (insert, then vacuum analyze): "
        + ", ".join(f"{result['grow_seconds'][size]:.0f} s to {size:,}" for size in sizes)
        + f". The part took {result['seconds']:.0f} s.",
        "",
    ]


def _explains(result: dict) -> list[str]:
    large = result["sizes"][-1]
    lines = []
    for key, title in (("deep", "the middle page"), ("cursor", "the cursor page"), ("last", "the last page")):
        statements = result["explain"].get(key, [])
        lines += [
            "<details>",
            f"<summary>EXPLAIN (ANALYZE, BUFFERS) of {title} at {large:,} posts: its {len(statements)} "
            f"statement{'' if len(statements) == 1 else 's'} on posts_post</summary>",
            "",
        ]
        for statement in statements:
            lines += ["```sql", statement["sql"], f"-- parameters: {statement['params']}", "```", ""]
            lines += ["```text", *statement["plan"], "```", ""]
        lines += ["</details>", ""]
    return lines
