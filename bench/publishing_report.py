"""The section of bench/RESULTS.md of the publishing part (bench/publishing.py)."""

from bench.common import verdict
from bench.isolation import arrival_percentile
from bench.publishing import REPACK_EVERY
from bench.publishing_webhooks import ARRIVAL_TIMEOUT, HANGING_JOBS, ROUNDS, STREAM_EVENTS, STREAM_RATE


def _late(value: float | None) -> str:
    return f"> {ARRIVAL_TIMEOUT * 1000:,}" if value is None else f"{value:,.0f}"


def publishing_section(pub: dict) -> list[str]:
    p, n, ratio = pub["pipeline"], pub["pipeline"]["posts"], pub["ratio"]
    floor_seconds, hooks = pub["floor_seconds"], pub["webhooks"]
    job_ms, first, last = p["job_ms"], p["job_ms"][:REPACK_EVERY], p["job_ms"][-REPACK_EVERY:]
    alone, hanging = hooks["alone"], hooks["hanging"]
    p99_ok = hanging["p99"] is not None and hanging["p99"] < 2000

    def hook_row(label: str, run: dict, target: str) -> str:
        cells = " | ".join(_late(run[key]) for key in ("p50", "p99", "max"))
        per_round = ", ".join(_late(value) for value in run["p99_per_round"])
        return f"| {label} | {run['received']} of {run['events']} | {cells} | {per_round} | {target} |"

    return [
        "## 6. Publishing (issue 29)",
        "",
        f"Measured on {pub['measured_at']:%Y-%m-%d %H:%M} UTC; load average at the part's start "
        + ", ".join(f"{x:.2f}" for x in pub["load_at_start"])
        + ", at its end "
        + ", ".join(f"{x:.2f}" for x in pub["load_at_end"])
        + f". A git channel (`git_destination_save`) committing to a local bare repository, {n:,} draft posts "
        f"(3 tags each; files of {pub['file_bytes']:,.0f} bytes on average, the default path template), their "
        "publish jobs written by `jobs_enqueue` (as the content plan writes them) and carried out by a Celery "
        f"worker as the Procfile starts it (concurrency {pub['concurrency']}, `PUBLISH_WORKERS` "
        f"{pub['publish_workers']}, a git cache of its own). Floor: a plain dulwich loop making the same commits "
        "(the pipeline's files, messages and author, read back from its repository) into a fresh bare repository, "
        "per file one fetch into a local cache repository, a commit on the fetched head and a push; its branch "
        f"ends with the pipeline's tree. Both in batches of {REPACK_EVERY} jobs or commits, the remote repacked "
        "between two batches as a git server's `git gc --auto` would (dulwich leaves one pack per push, and "
        "every later fetch and push reads them all), outside the time: the pipeline's time is the sum of its "
        "batches' times from the start of the enqueue to the last job's `finished_at`.",
        "",
        "| | commits | seconds | jobs/s | ms per job | target |",
        "|---|---:|---:|---:|---:|---|",
        f"| pipeline (jobs + Celery worker) | {n:,} | {p['seconds']:.1f} | {n / p['seconds']:.1f} | "
        f"{p['seconds'] * 1000 / n:.1f} | |",
        f"| floor (dulwich loop) | {n:,} | {floor_seconds:.1f} | {n / floor_seconds:.1f} | "
        f"{floor_seconds * 1000 / n:.1f} | |",
        f"| ratio pipeline / floor | | {ratio:.2f}x | | | {verdict(ratio <= 1.5)} (≤1.5x) |",
        "",
        "Each commit costs more than the one before, in the pipeline and the floor alike: a push has dulwich "
        "work out what to send by walking every ancestor of the remote's head in the local cache, so its cost "
        "grows with the branch's history. The first and the last batch:",
        "",
        "| batch | pipeline ms per job | floor ms per commit | ratio |",
        "|---|---:|---:|---:|",
        *(
            f"| {label} ({index * REPACK_EVERY + 1:,}-{min(n, (index + 1) * REPACK_EVERY):,}) | "
            f"{p['batch_seconds'][index] * 1000 / size:.1f} | {pub['floor_batch_seconds'][index] * 1000 / size:.1f} | "
            f"{p['batch_seconds'][index] / pub['floor_batch_seconds'][index]:.2f}x |"
            for label, index in (("first", 0), ("last", len(p["batch_seconds"]) - 1))
            for size in [min(n, (index + 1) * REPACK_EVERY) - index * REPACK_EVERY]
        ),
        "",
        f"{p['attempts']:,} attempts, {p['published']:,} posts published; each batch's enqueue took "
        f"{min(p['enqueue_seconds']) * 1000:,.0f}-{max(p['enqueue_seconds']) * 1000:,.0f} ms. Each job's own time "
        "in the worker's log (`job_run`: carrying it out and recording it), p50 / p99: "
        f"{_nearest(job_ms, 50)} / {_nearest(job_ms, 99)} ms over all jobs, {_nearest(first, 50)} / "
        f"{_nearest(first, 99)} ms over the first {len(first)}, {_nearest(last, 50)} / {_nearest(last, 99)} ms over "
        f"the last {len(last)}; in all {sum(job_ms) / 1000:.1f} s of the pipeline's {p['seconds']:.1f} s.",
        "",
        f"**Webhook delivery while git remotes hang.** One webhook endpoint (a receiver process on 127.0.0.1) gets "
        f"streams of {STREAM_EVENTS} single-event transactions at {STREAM_RATE}/s (latency: the receiver's arrival "
        "time of each delivery less its event's commit, as in part 4), each through a fresh Celery worker "
        f"(concurrency {pub['concurrency']}, default settings); {ROUNDS} rounds of a stream without and a stream "
        "with hanging remotes, taking turns. With hanging remotes: three git channels whose remotes are TCP "
        f"servers that accept and never answer, {HANGING_JOBS} queued publish jobs each, the stream started once "
        "each channel's first job is running and connected (it holds its thread until `PUBLISH_TIMEOUT`, "
        f"{hooks['publish_timeout']} s, longer than a stream).",
        "",
        "| Run | deliveries | latency p50 ms | p99 ms | max ms | p99 ms of each round | target |",
        "|---|---:|---:|---:|---:|---|---|",
        hook_row("without hanging remotes", alone, ""),
        hook_row("with three hanging git remotes", hanging, f"p99 <2 s: {verdict(p99_ok)}"),
        "",
        "Hanging jobs still running when each stream with hanging remotes ended: "
        + ", ".join(str(i["running_after_stream"]) for i in hooks["hanging_info"])
        + f" (of {3 * HANGING_JOBS}: each channel's jobs are claimed as a batch, its first holding a thread); "
        f"the hanging channels' jobs succeeded: {sum(i['succeeded'] for i in hooks['hanging_info'])}. "
        f"The part took {pub['seconds']:.0f} s.",
        "",
    ]


def _nearest(values: list[int], percent: float) -> str:
    value = arrival_percentile(values, percent)
    return "n/a" if value is None else f"{value:,}"
