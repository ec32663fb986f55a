"""`make bench`: the API, webhook and content plan benchmarks, each against its floor, webhook
isolation (a healthy endpoint's deliveries with and without hostile ones, bench/isolation.py),
reads at scale (one channel of up to 1,000,000 posts, bench/scale.py), publishing (1,000 posts
committed to a local git repository against a dulwich loop, webhooks while git remotes hang,
bench/publishing.py) and the blogs' public pages (against pages rendered on every request, and in
a channel of 100,000 posts against one of 100, bench/blog.py) and the embedded default (SQLite and the
filesystem broker) while editors save in the admin (bench/embedded.py), a newsletter edition to
100,000 subscribers into a local SMTP sink against a plain smtplib loop (bench/newsletter.py), and
the API's creates and edits against plain-Django inserts and updates, with what If-Match and
Idempotency-Key cost (bench/writes.py), and the change feed's pages in a channel of 1,000,000 posts
against one of 1,000 (bench/feed.py), and a 5 MB photograph uploaded through the web process against
a plain Pillow open -> strip -> save, its copies made, and a stored image served (bench/media.py), and the
Settings area's calendar with 2,000 items in a month (bench/calendar.py).

Sets up its own PostgreSQL database (BENCH_DATABASE, default cps_bench, created when missing) and
Redis db 7 with the Celery queue `cps-bench`, so nothing else on the machine is disturbed; starts
the web process (config/web.py), a Celery worker and webhook receivers on ports 8400-8499 and stops them (their whole
process groups) whatever happens. Prints the results table and writes it to bench/RESULTS.md
(a run of the publishing or the blog part alone replaces only its section there). Logs of the started
processes are in bench/.work/.

    python -m bench [--only api,webhooks,plan,isolation,scale,publishing,blog,embedded,newsletter,writes,feed,media,
                            calendar]
                    [--duration 20] [--media-uploads 20] [--newsletter-subscribers 100000]
                    [--scale-sizes 1000,20000] [--publishing-posts 1000] [--blog-sizes 100,2000]
                    [--feed-sizes 1000,20000]
                    [--sweep granian:2x4,gunicorn-sync:4x1] [--sweep-rounds 2] [--sweep-seconds 2]
                    [--quick]

`--quick` (or BENCH_QUICK=1) shortens the API and write parts to a smoke run (2 s per endpoint or
write variant in 2 slices, the sweep in one round of 1 s slices); such a run writes nothing to
bench/RESULTS.md.
"""

import argparse
import math
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from bench import (
    api,
    blog,
    calendar,
    embedded,
    feed,
    isolation,
    media,
    newsletter,
    plan,
    publishing,
    scale,
    webhooks,
    writes,
)
from bench.api_report import api_section
from bench.blog_report import blog_section
from bench.common import (
    RESULTS,
    ROOT,
    WORK,
    Process,
    configure,
    ensure_database,
    flush_redis,
    load_text,
    machine,
    setup_django,
    write_section,
)
from bench.load import ensure_wrk
from bench.publishing_report import publishing_section
from bench.scale_report import scale_section
from bench.sweep import SWEEP, parse_sweep


@dataclass(frozen=True)
class Part:
    """One part of the benchmark: what it prints when it starts, how it runs (with the parsed
    arguments and wrk's path) and its section of the results."""

    title: str
    run: Callable[[argparse.Namespace, str], dict]
    section: Callable[[dict], list[str]]


def _api(args: argparse.Namespace, wrk_bin: str) -> dict:
    options = {"configs": args.sweep, "rounds": args.sweep_rounds, "sweep_seconds": args.sweep_seconds}
    if args.quick:
        options |= {"slices": 2, "rounds": 1, "sweep_seconds": 1}
    return api.bench_api(wrk_bin, 2 if args.quick else args.duration, **options)


def _scale(args: argparse.Namespace, wrk_bin: str) -> dict:
    return scale.bench_scale(args.scale_sizes) if args.scale_sizes else scale.bench_scale()


def _writes(args: argparse.Namespace, wrk_bin: str) -> dict:
    return writes.bench_writes(wrk_bin, 2, slices=2) if args.quick else writes.bench_writes(wrk_bin, args.duration)


def _feed(args: argparse.Namespace, wrk_bin: str) -> dict:
    return feed.bench_feed(args.feed_sizes) if args.feed_sizes else feed.bench_feed()


def _blog(args: argparse.Namespace, wrk_bin: str) -> dict:
    return blog.bench_blog(wrk_bin, args.duration, *([args.blog_sizes] if args.blog_sizes else []))


# In the order they run and stand in bench/RESULTS.md.
PARTS = {
    "api": Part("API throughput", _api, api_section),
    "webhooks": Part(
        "webhook delivery throughput",
        lambda args, _: webhooks.bench_webhooks(args.webhook_events),
        webhooks.webhooks_section,
    ),
    "plan": Part("content plan", lambda *_: plan.bench_content_plan(), plan.plan_section),
    "isolation": Part("webhook isolation", lambda *_: isolation.bench_isolation(), isolation.isolation_section),
    "scale": Part("reads at scale", _scale, scale_section),
    "publishing": Part(
        "publishing", lambda args, _: publishing.bench_publishing(args.publishing_posts), publishing_section
    ),
    "blog": Part("blog pages", _blog, blog_section),
    "embedded": Part("the embedded default", lambda *_: embedded.bench_embedded(), embedded.embedded_section),
    "newsletter": Part(
        "newsletter",
        lambda args, _: newsletter.bench_newsletter(args.newsletter_subscribers),
        newsletter.newsletter_section,
    ),
    "writes": Part("writes over the API", _writes, writes.writes_section),
    "feed": Part("change feed", _feed, feed.feed_section),
    "media": Part(
        "media uploads",
        lambda args, wrk_bin: media.bench_media(wrk_bin, args.duration, args.media_uploads),
        media.media_section,
    ),
    "calendar": Part("calendar", lambda *_: calendar.bench_calendar(), calendar.calendar_section),
}


def _sizes(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in text.split(","))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description="The benchmarks of `make bench` (docs/benchmarks.md)."
    )
    parser.add_argument("--only", default=",".join(PARTS))
    parser.add_argument(
        "--duration",
        type=int,
        default=20,
        help="seconds of load per API endpoint (and floor), write variant, blog page and served image",
    )
    parser.add_argument("--webhook-events", type=int, default=webhooks.WEBHOOK_EVENTS)
    parser.add_argument(
        "--scale-sizes",
        type=_sizes,
        help="posts in the channel at each step of the scale part, e.g. 1000,20000 (default 1000,100000,1000000)",
    )
    parser.add_argument("--publishing-posts", type=int, default=1000, help="posts the publishing part publishes")
    parser.add_argument(
        "--blog-sizes",
        type=_sizes,
        help="posts in the blog part's small and large channels, e.g. 100,2000 (default 100,100000)",
    )
    parser.add_argument(
        "--feed-sizes",
        type=_sizes,
        help="posts in the change feed part's channel at each step, e.g. 1000,20000 (default 1000,1000000)",
    )
    parser.add_argument(
        "--media-uploads", type=int, default=media.UPLOADS, help="timed uploads of the media part's photograph"
    )
    parser.add_argument("--newsletter-subscribers", type=int, default=100_000, help="the newsletter part's audience")
    parser.add_argument(
        "--sweep",
        type=parse_sweep,
        default=SWEEP,
        help="the API part's alternatives, SERVER:PROCESSESxTHREADS with commas (granian, granian-st, gunicorn-sync, "
        f"gunicorn-gthread), or none; default {SWEEP}",
    )
    parser.add_argument("--sweep-rounds", type=int, default=2, help="rounds of the API part's sweep")
    parser.add_argument("--sweep-seconds", type=int, default=2, help="seconds of each slice of the sweep")
    parser.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("BENCH_QUICK", "") not in ("", "0"),
        help="a smoke run of the API and write parts (seconds instead of minutes); writes nothing to bench/RESULTS.md",
    )
    return parser


def report(info: dict, results: dict[str, dict]) -> str:
    lines = [
        "# Benchmark results",
        "",
        f"Written by `make bench` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Machine: {info['cores']} cores "
        f"({info['cpu']}), {info['memory_gib']} GiB memory; Python {info['python']}, Django {info['django']}, "
        f"PostgreSQL {info['postgres']}. Load average at start: " + load_text(info["load_at_start"]) + ".",
        "",
    ]
    for name, result in results.items():
        if result:
            lines += PARTS[name].section(result)
    return "\n".join(lines)


def _alone(section: list[str], part: str, info: dict) -> list[str]:
    """The section with a line saying it was run alone, when, and the load at its start."""
    alone = (
        f"This part was run alone (`python -m bench --only {part}`) on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; load "
        "average at its start: " + load_text(info["load_at_start"]) + "."
    )
    return [*section[:2], alone, "", *section[2:]]


def _at_defaults(args: argparse.Namespace, parser: argparse.ArgumentParser, *names: str) -> bool:
    return all(getattr(args, name) == parser.get_default(name) for name in names)


def _api_at_defaults(args: argparse.Namespace, parser: argparse.ArgumentParser) -> bool:
    # The sweep's default is parsed from its text only when it is given.
    return (
        not args.quick
        and _at_defaults(args, parser, "duration", "sweep_rounds", "sweep_seconds")
        and args.sweep == parse_sweep(SWEEP)
    )


def write_results(text: str, args: argparse.Namespace, parser: argparse.ArgumentParser, info: dict, results: dict):
    """The whole of bench/RESULTS.md after a whole run; one part's section after a run of that part
    alone with its default sizes; nothing after a smoke run or other sizes."""
    parts = set(args.only.split(","))
    if parts == set(PARTS) and not args.quick:
        RESULTS.write_text(text)
        print(f"bench: written to {RESULTS.relative_to(ROOT)}")
    elif parts == {"api"} and _api_at_defaults(args, parser):
        write_section(_alone(api_section(results["api"]), "api", info), "API")
    elif parts == {"publishing"} and _at_defaults(args, parser, "publishing_posts"):
        write_section(publishing_section(results["publishing"]), "publishing")
    elif parts == {"blog"} and args.blog_sizes is None and _at_defaults(args, parser, "duration"):
        write_section(_alone(blog_section(results["blog"]), "blog", info), "blog")
    elif parts == {"embedded"}:
        write_section(embedded.embedded_section(results["embedded"]), "embedded default")
    elif parts == {"newsletter"} and _at_defaults(args, parser, "newsletter_subscribers"):
        write_section(newsletter.newsletter_section(results["newsletter"]), "newsletter")
    elif parts == {"writes"} and not args.quick and _at_defaults(args, parser, "duration"):
        write_section(_alone(writes.writes_section(results["writes"]), "writes", info), "writes")
    elif parts == {"feed"} and args.feed_sizes is None:
        write_section(_alone(feed.feed_section(results["feed"]), "feed", info), "change feed")
    elif parts == {"media"} and _at_defaults(args, parser, "duration", "media_uploads"):
        write_section(_alone(media.media_section(results["media"]), "media", info), "media")
    elif parts == {"calendar"}:
        write_section(_alone(calendar.calendar_section(results["calendar"]), "calendar", info), "calendar")


def main() -> int:
    parser = build_parser()
    args = parser.parse_args()
    chosen = set(args.only.split(","))
    configure()
    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "wrk.log").write_text("")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    wrk_bin = ensure_wrk() if chosen & {"api", "blog", "writes", "media"} else ""
    ensure_database()
    flush_redis()
    setup_django()
    info = machine()
    results: dict[str, dict] = {}
    try:
        for name, part in PARTS.items():
            if name in chosen:
                print(f"bench: {part.title}", flush=True)
                results[name] = part.run(args, wrk_bin)
    finally:
        Process.stop_all()
        flush_redis()
    text = report(info, results)
    text += f"\nThe whole benchmark took {math.ceil(time.monotonic() - started)} s.\n"
    print("\n" + text)
    write_results(text, args, parser, info, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
