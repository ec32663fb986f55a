"""Part 7 of `make bench`: the blog channels' public pages (issue 31).

1. **Seed.** Two blog channels of one account: a small one (SIZES[0] posts) and a large one
   (SIZES[-1]), filled with `bulk_create` in batches of BATCH, as a bulk load writes them (the
   database's triggers keep each channel's version and `posts_count` per statement). Every post has
   a Markdown body of about 2 kB (headings, a list, a code block, a table, a link, an image), a
   teaser, two of the account's four common tags and a cover image; one post in DRAFT_EVERY is a
   draft, so the pages filter on the status as they do in use. A fifth tag is on RARE_POSTS posts of
   each channel, spread from its oldest to its newest (a rare tag of a large blog). Then `vacuum
   analyze` and `checkpoint`, as autovacuum leaves a table in use (part 5 does the same).
2. **Throughput.** The Procfile's web process with its default settings (the page cache on) serves
   the large channel's index and one of its post pages at 32 connections (wrk), each taking turns
   with its floor in slices, as the API part does (`measure` in bench/load.py). Floor: a plain Django
   view (bench/floor.py) that renders the same page from the database on every request: the blog's
   own view code without the page cache, so the same queries, Markdown rendering, template and
   headers, and byte-identical pages (checked before anything is measured). Target: at least
   TARGET_RATIO times the floor's req/s, with p99 under 100 ms.
3. **Cost against the channel's size.** In this process through Django's test client (the whole
   middleware stack and the views on PostgreSQL): six pages of each channel, all twelve taking turns
   in the same rounds, once computed (`API_CACHE_SECONDS=0`: every request renders, what a page costs
   after an edit) and once from the cache (what a page costs while nothing changes). The ratio is
   the large channel's median over the small one's; target: within FLAT_TARGET. Queries and the
   peak of Python memory of one computed request of each page, too.
"""

import os
import time
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from bench.common import make_account, sql
from bench.load import measure, start_web
from bench.reads import Rounds, footprint, time_reads

SIZES = (100, 100_000)
BATCH = 2_000
DRAFT_EVERY = 20
TAGS = ("django", "python", "release", "notes")
# A tag on as many posts in either channel, spread over each: few in the large one.
RARE_TAG, RARE_POSTS = "security", 12
TARGET_RATIO = 3
P99_TARGET_MS = 100
FLAT_TARGET = 1.5
WARMUP_ROUNDS = 10
# Rounds of the ten reads in each mode, stopped early (after at least MIN_ROUNDS) once the mode has
# been measured for READ_SECONDS.
ROUNDS, MIN_ROUNDS, READ_SECONDS = 200, 30, 45
TIMING = Rounds(warmup=WARMUP_ROUNDS, most=ROUNDS, least=MIN_ROUNDS, seconds=READ_SECONDS)
# (key, label); the targets are on the index and the post page, the others are measured
# with the same rule.
PAGES = (
    ("index", "index `/blog/{handle}/`"),
    ("older", "an older page `?before=<the middle post>`"),
    ("tag", "a tag page `/tags/{tag}/` (a tag on half the posts)"),
    ("rare", f"a rare tag's page (a tag on {RARE_POSTS} posts)"),
    ("post", "a post page `/blog/{handle}/{slug}/`"),
    ("feed", "the Atom feed `feed.xml`"),
)
TARGETED = ("index", "post")
MODES = (("computed", "computed (cache off)"), ("cached", "from the page cache"))


def bench_blog(wrk_bin: str, duration: int, sizes=SIZES) -> dict:
    sizes = tuple(sorted(sizes))
    if len(sizes) != 2 or sizes[0] < DRAFT_EVERY * 2:
        raise ValueError(f"the blog part needs two channel sizes of at least {DRAFT_EVERY * 2} posts, e.g. 100,2000")
    started = time.monotonic()
    channels, seed_seconds = _seed(sizes)
    paths = {which: _paths(channel) for which, channel in channels.items()}
    queries = _check(paths)
    print(
        f"  seeded {sizes[0]:,} and {sizes[1]:,} posts in {seed_seconds:.0f} s; "
        + ", ".join(f"{key} {queries['large'][key]['computed']} queries" for key, _ in PAGES),
        flush=True,
    )
    cost = _cost(paths)
    for mode, _ in MODES:
        print(
            f"  {mode}: "
            + ", ".join(
                f"{key} {cost[mode]['large'][key]['median_ms']:.2f} ms "
                f"({cost[mode]['large'][key]['median_ms'] / cost[mode]['small'][key]['median_ms']:.2f}x)"
                for key, _ in PAGES
            ),
            flush=True,
        )
    large = paths["large"]
    pairs = [
        ("GET /blog/{handle}/", large["index"], large["floor_index"]),
        ("GET /blog/{handle}/{slug}/", large["post"], large["floor_post"]),
    ]
    load_before = os.getloadavg()[0]
    web = start_web("web")
    try:
        rows = measure(wrk_bin, None, web, pairs, duration)
    finally:
        web.stop()
    load_after = os.getloadavg()[0]
    return {
        "sizes": sizes,
        "published": {which: channel["published"] for which, channel in channels.items()},
        "seed_seconds": seed_seconds,
        "queries": queries,
        "cost": cost,
        "rows": rows,
        "duration": duration,
        "load": (load_before, load_after),
        "page_bytes": {key: len(queries["large"][key]["bytes"]) for key in ("index", "post")},
        "seconds": time.monotonic() - started,
    }


# --- the seed -------------------------------------------------------------------------------------


def _body(n: int) -> str:
    """About 2 kB of the Markdown a blog post holds."""
    return f"""Post {n} opens with a paragraph of **strong** and *emphasised* words, `inline code` and [a link to
the project](https://example.com/projects/{n}), long enough to wrap on a phone and to make a teaser of.

## What changed in release {n}

- The first item of a list, with a [reference](https://example.com/notes/{n}#first)
- A second item, with `code`
- A third item that runs on for a little while, as items in real posts do

```python
def handler(request, post_id={n}):
    return render(request, "post.html", {{"id": post_id}})
```

| Setting | Default | Meaning |
|:--|--:|:--|
| `PAGE_SIZE` | 10 | posts per page |
| `FEED_SIZE` | {n % 50} | posts in the feed |

> A quotation from someone who tried release {n} and had something to say about it.

![A diagram of release {n}](https://cdn.example.com/images/{n}/diagram.png "Release {n}")

### Upgrading

A closing paragraph with a footnote[^1], some more text about upgrading from the release before and
what to look out for, and a last sentence that ends the post.

[^1]: The footnote of post {n}.
"""


def _seed(sizes: tuple[int, int]) -> tuple[dict, float]:
    from apps.channels.models import Channel, Team
    from apps.posts.models import Tag

    started = time.monotonic()
    account = make_account("Blog bench")
    team = Team.objects.create(account=account, name="Editorial")
    tags = [Tag.objects.create(account=account, name=name) for name in TAGS]
    rare = Tag.objects.create(account=account, name=RARE_TAG)
    channels = {}
    for which, size in zip(("small", "large"), sizes, strict=True):
        channel = Channel.objects.create(
            account=account,
            team=team,
            title=f"Engineering Notes ({which})",
            platform="blog",
            handle=f"bench-{which}",
            description="What the engineering team ships, and why.",
            time_zone="Europe/Berlin",
        )
        _fill(channel, size, tags)
        _tag_spread(channel, rare)
        channels[which] = {"id": channel.pk, "handle": channel.handle, "size": size}
    for table in ("posts_post", "posts_post_tags", "posts_media", "channels_channel"):
        sql(f"vacuum analyze {table}")
    sql("checkpoint")
    for channel in channels.values():
        [(channel["published"],)] = sql(
            "select count(*) from posts_post where channel_id = %s and publication_status = 'published'",
            [channel["id"]],
        )
    return channels, time.monotonic() - started


def _fill(channel, size: int, tags: list) -> None:
    """`size` posts, newest last, in batches of BATCH: each batch's posts, tag links and media in
    three `bulk_create`s."""
    from django.db import transaction

    from apps.posts.models import Media, Post, PublicationStatus

    Link = Post.tags.through
    newest = datetime.now(UTC) - timedelta(hours=1)
    for start in range(0, size, BATCH):
        numbers = range(start + 1, min(size, start + BATCH) + 1)
        with transaction.atomic():
            posts = Post.objects.bulk_create(
                [
                    Post(
                        channel=channel,
                        title=f"Release notes, part {n}: what changed and why",
                        slug=f"release-{n}",
                        body=_body(n),
                        teaser=f"The changes of release {n}, and how to upgrade.",
                        publication_status=PublicationStatus.DRAFT
                        if n % DRAFT_EVERY == 0
                        else PublicationStatus.PUBLISHED,
                        published_at=None if n % DRAFT_EVERY == 0 else newest - timedelta(minutes=size - n),
                    )
                    for n in numbers
                ]
            )
            Link.objects.bulk_create(
                [
                    Link(post_id=post.pk, tag_id=tags[(n + shift) % len(tags)].pk)
                    for n, post in zip(numbers, posts, strict=True)
                    for shift in (0, 1)
                ]
            )
            Media.objects.bulk_create(
                [
                    Media(
                        post=post,
                        kind="image",
                        url=f"https://cdn.example.com/images/{n}/cover.jpg",
                        alt_text=f"The cover of release {n}",
                        width=1200,
                        height=630,
                    )
                    for n, post in zip(numbers, posts, strict=True)
                ]
            )


def _tag_spread(channel, tag) -> None:
    """`tag` on RARE_POSTS published posts of the channel, evenly spread from its oldest to its newest."""
    from apps.posts.models import Post, PublicationStatus

    ids = list(
        Post.objects.filter(channel=channel, publication_status=PublicationStatus.PUBLISHED)
        .order_by("id")
        .values_list("id", flat=True)
    )
    step = len(ids) / RARE_POSTS
    Link = Post.tags.through
    Link.objects.bulk_create([Link(post_id=ids[int(i * step)], tag_id=tag.pk) for i in range(RARE_POSTS)])


def _paths(channel: dict) -> dict[str, str]:
    """The six pages of a channel (the post and the older page are its middle post's) and the
    floor's two."""
    from apps.posts import selectors

    published = selectors.published_posts(channel["id"]).order_by("-shown_at", "-id")
    middle = published[channel["published"] // 2]
    base = f"/blog/{channel['handle']}/"
    return {
        "index": base,
        "older": f"{base}?{urlencode({'before': str(selectors.PageCursor.of(middle))})}",
        "tag": f"{base}tags/{TAGS[0]}/",
        "rare": f"{base}tags/{RARE_TAG}/",
        "post": f"{base}{middle.slug}/",
        "feed": f"{base}feed.xml",
        "floor_index": f"/floor{base}",
        "floor_post": f"/floor{base}{middle.slug}/",
    }


def _client():
    from django.test import Client

    return Client(HTTP_HOST="127.0.0.1")


def _check(paths: dict) -> dict:
    """Each page once computed, then twice with the cache (a miss that stores it, then a hit): a 200
    with a full page, the same bytes every way and from the floor; the queries of each."""
    from django.conf import settings
    from django.test import override_settings

    client = _client()
    found = {}
    for which, channel_paths in paths.items():
        found[which] = {}
        for key, _ in PAGES:
            path = channel_paths[key]
            with override_settings(API_CACHE_SECONDS=0):
                computed, count = _get(client, path)
            figures = {"computed": count, "bytes": computed.content}
            for mode in ("miss", "cached"):
                response, figures[mode] = _get(client, path)
                if response.content != computed.content:
                    raise RuntimeError(f"{path} answers other bytes from the cache ({mode}) than computed")
            if key in ("index", "post"):
                floor, figures["floor"] = _get(client, channel_paths[f"floor_{key}"])
                if floor.content != computed.content:
                    raise RuntimeError(
                        f"the floor of {path} answers another page:\n"
                        f"{computed.content[:600]!r}\n{floor.content[:600]!r}"
                    )
            shown = computed.content.count(b'<article class="summary">') + computed.content.count(b"<entry>")
            full = {"post": 0, "feed": settings.BLOG_FEED_SIZE, "rare": min(RARE_POSTS, settings.BLOG_PAGE_SIZE)}
            if shown != full.get(key, settings.BLOG_PAGE_SIZE):
                raise RuntimeError(f"{path} does not show a full page of posts ({shown})")
            found[which][key] = figures
    return found


def _get(client, path: str):
    """The response (a 200) and the number of queries it took."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    if response.status_code != 200:
        raise RuntimeError(f"{path} answered {response.status_code}: {response.content[:500]!r}")
    return response, len(queries)


# --- the cost of a page against the channel's size -------------------------------------------------


def _cost(paths: dict) -> dict:
    from django.conf import settings
    from django.test import override_settings

    client = _client()
    reads = {(which, key): paths[which][key] for which in ("small", "large") for key, _ in PAGES}
    result = {}
    for mode, _ in MODES:
        with override_settings(API_CACHE_SECONDS=0 if mode == "computed" else settings.API_CACHE_SECONDS):
            times, rounds = time_reads(client, reads, TIMING)
            result[mode] = {which: {key: times[(which, key)] for key, _ in PAGES} for which in ("small", "large")}
            result[mode]["rounds"] = rounds
            if mode == "computed":
                result["footprint"] = {
                    which: {key: footprint(client, paths[which][key]) for key, _ in PAGES}
                    for which in ("small", "large")
                }
    return result
