"""Part 5 of `make bench`: reads and the content plan as one channel grows (issue 19).

One channel of one account grows to each size in turn (raw SQL, as autovacuum would leave it:
vacuumed and analyzed; then checkpointed), beside a reference channel of the smallest size. At
each size, through Django's test client in this process (the whole middleware stack and the
views, real PostgreSQL, the representation cache off so every request is computed), five reads of
each channel, all ten taking turns: the channel's detail, the first page of its posts, the middle
page (the deepest there is: later pages are counted from the end of the index), the same page
reached with the cursor of the page before it, and the last page. Then 10,000 due posts are added
to a channel, moved by one content plan run in a process of its own (bench/content_plan_child.py)
and deleted again, three times in each channel, taking turns. Each target is judged on the grown
channel's figure over the reference channel's, measured at the same time.
"""

import json
import math
import re
import time
from urllib.parse import urlencode

from bench.common import content_plan_child, make_reader, sql
from bench.plan import ANALYZE, delete_plan_posts
from bench.reads import Rounds, footprint, time_reads

SIZES = (1_000, 100_000, 1_000_000)
PER_PAGE = 20
DUE_POSTS = 10_000
PLAN_RUNS = 3
WARMUP_ROUNDS = 10
# Rounds of the five reads at each size, stopped early (after at least MIN_ROUNDS) once a size has
# been measured for READ_SECONDS, so slow reads cannot stretch the part past a few minutes.
ROUNDS, MIN_ROUNDS, READ_SECONDS = 200, 30, 60
TIMING = Rounds(warmup=WARMUP_ROUNDS, most=ROUNDS, least=MIN_ROUNDS, seconds=READ_SECONDS)
# (key, label, target: the most the largest size's figure may be of the smallest's)
READS = (
    ("detail", "channel detail `GET /v1/channels/{id}`", 1.5),
    ("page1", "posts page 1 `?per_page=20`", 1.5),
    ("deep", "deep page, the middle one `?page=<pages/2>&per_page=20`", 3),
    ("cursor", "cursor page at the same depth `?cursor=<c>&per_page=20`", 1.5),
    ("last", "last page `?page=<last>&per_page=20`", 1.5),
)
PLAN_TARGET = 1.5
# As part 3 judges it: the largest size's peak within a quarter of the smallest's.
FLAT = 1.25
# What a growth or a due batch writes, as autovacuum leaves a table in use: the visibility map set
# (index-only scans see it), statistics fresh.
VACUUM = ("posts_post", "posts_post_tags", "posts_media", "posts_apipublication", "webhooks_event", "webhooks_delivery")
# A reference to posts_post itself, not to posts_post_tags and the like.
POSTS_TABLE = re.compile(r"\bposts_post\b")


def bench_scale(sizes=SIZES) -> dict:
    from django.test import Client, override_settings

    sizes = sorted(sizes)
    if sizes[0] <= PER_PAGE:
        raise ValueError(f"the scale part needs more than {PER_PAGE} posts at each size (a page before the last)")
    started = time.monotonic()
    seed = _seed()
    client = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {seed['key']}")
    client.get("/v1/me")  # records the key's last use, which is then not written again for a minute
    _grow(seed["reference"], 0, sizes[0])
    result = {
        "sizes": sizes,
        "reads": {},
        "reference": {},
        "rounds": {},
        "plan": {},
        "plan_reference": {},
        "grow_seconds": {},
        "explain": {},
        "recount_ms": {},
        "anchors_ms": {},
    }
    size_now = 0
    for size in sizes:
        grow_started = time.monotonic()
        _grow(seed["channel"], size_now, size)
        size_now = size
        result["grow_seconds"][size] = time.monotonic() - grow_started
        with override_settings(API_CACHE_SECONDS=0):
            paths = _read_paths(client, seed["channel"], size)
            reference = _read_paths(client, seed["reference"], sizes[0])
            # The grown channel's reads and the reference channel's take turns in the same rounds,
            # so a slower moment of the machine weighs on both alike.
            both = {("grown", key): path for key, path in paths.items()}
            both |= {("reference", key): path for key, path in reference.items()}
            times, result["rounds"][size] = time_reads(client, both, TIMING)
            figures = {key: times[("grown", key)] for key in paths}
            result["reference"][size] = {key: times[("reference", key)] for key in reference}
            for key, path in paths.items():
                figures[key] |= footprint(client, path)
            if size == sizes[-1]:
                result["explain"] = {key: _explain(client, paths[key]) for key in ("deep", "cursor", "last")}
        result["reads"][size] = figures
        result["recount_ms"][size] = _recount_ms(seed["channel"], size)
        result["anchors_ms"][size] = _anchors_ms(seed["channel"], size)
        result["plan"][size], result["plan_reference"][size] = _plan_per_post(seed)
        print(
            f"  {size:,} posts: "
            + ", ".join(f"{key} {figures[key]['median_ms']:.2f} ms" for key, _, _ in READS)
            + f", content plan {result['plan'][size]['us_per_post']:.0f} µs/post "
            f"({result['rounds'][size]} rounds; growing took {result['grow_seconds'][size]:.0f} s)",
            flush=True,
        )
    result["seconds"] = time.monotonic() - started
    return result


def _seed() -> dict:
    from apps.channels.models import Channel, Team
    from apps.posts.models import Tag
    from apps.webhooks.models import WebhookEndpoint

    account, key = make_reader("Scale bench", "scale@bench.example.com")
    team = Team.objects.create(account=account, name="Editorial")
    channel = Channel.objects.create(account=account, team=team, title="Partner feed", platform="api")
    # The smallest size, kept beside the grown channel and read in the same rounds: the yardstick.
    reference = Channel.objects.create(account=account, team=team, title="Reference feed", platform="api")
    tags = [Tag.objects.create(account=account, name=name).pk for name in ("launch", "weekly")]
    # The content plan writes every moved post's event and delivery, as in production; nothing
    # delivers them here (no worker), they are deleted after each run.
    WebhookEndpoint.objects.create(account=account, url="http://127.0.0.1:8499/hook")
    return {"account": account.pk, "channel": channel.pk, "reference": reference.pk, "tags": tags, "key": key}


def _grow(channel_id: int, start: int, stop: int) -> None:
    """Posts `start + 1` to `stop` of the channel, published. The list form has no tags or media,
    so these posts have none; the body is a paragraph of Markdown, as a post's row would hold."""
    sql(
        """
        insert into posts_post (title, body, teaser, slug, publication_status, published_at, created_at,
                                updated_at, channel_id)
        select 'Post number ' || g, repeat('Some **Markdown** body text of the post. ', 10), 'Teaser of post ' || g,
               'post-' || g, 'published', now() - interval '1 day', now() - interval '2 days',
               now() - interval '1 day', %s
        from generate_series(%s, %s) g
        """,
        [channel_id, start + 1, stop],
    )
    for table in VACUUM:
        sql(f"vacuum analyze {table}")
    # The growth's writes to disk now: a checkpoint that they triggered would otherwise run during
    # the timed reads (it slowed every read at 1,000,000 posts, the channel detail too, by half).
    sql("checkpoint")


# --- the reads ----------------------------------------------------------------------------------


def _get(client, path: str) -> dict:
    """The response's JSON, after checking it is a 200 with something in it."""
    response = client.get(path)
    if response.status_code != 200:
        raise RuntimeError(f"{path} answered {response.status_code}: {response.content[:500]!r}")
    body = json.loads(response.content)
    if not body.get("data"):
        raise RuntimeError(f"{path} answered no data: {response.content[:500]!r}")
    return body


def _ids(body: dict) -> list[int]:
    return [post["id"] for post in body["data"]]


def _read_paths(client, channel_id: int, size: int) -> dict[str, str]:
    """The five reads' paths at this size, each checked once: the channel counts every post, the
    cursor of the page before the middle one leads to the middle page's posts, the last page ends
    with the channel's last post."""
    posts = f"/v1/channels/{channel_id}/posts"
    paths = {"detail": f"/v1/channels/{channel_id}", "page1": f"{posts}?per_page={PER_PAGE}"}
    counted = _get(client, paths["detail"])["data"]["posts_count"]
    meta = _get(client, paths["page1"])["meta"]
    if counted != size or meta["count"] != size:
        raise RuntimeError(f"a channel of {size:,} posts: posts_count {counted:,}, posts list count {meta['count']:,}")
    # Pages past the middle are counted from the end of the index: the middle is the deepest.
    last = meta["pages"]
    middle = (last + 1) // 2
    paths["deep"] = f"{posts}?page={middle}&per_page={PER_PAGE}"
    before = f"{posts}?page={middle - 1}&per_page={PER_PAGE}"
    before_meta = _get(client, before)["meta"]
    if "next_cursor" not in before_meta:
        raise RuntimeError(
            f"{before}: meta has no next_cursor ({sorted(before_meta)}): the posts list has no cursor in this code "
            "(issue 19), so the cursor page cannot be measured"
        )
    cursor = before_meta["next_cursor"]
    if not cursor:
        raise RuntimeError(f"{before}: meta.next_cursor is {cursor!r} although page {middle} follows")
    # Opaque: it may hold characters a query string must escape.
    paths["cursor"] = f"{posts}?{urlencode({'cursor': cursor, 'per_page': PER_PAGE})}"
    paths["last"] = f"{posts}?page={last}&per_page={PER_PAGE}"
    deep, by_cursor = _ids(_get(client, paths["deep"])), _ids(_get(client, paths["cursor"]))
    if deep != by_cursor:
        raise RuntimeError(f"the middle page and the cursor page differ: {deep} against {by_cursor}")
    [(last_id,)] = sql("select max(id) from posts_post where channel_id = %s", [channel_id])
    if _ids(_get(client, paths["last"]))[-1] != last_id:
        raise RuntimeError(f"the last page does not end with the channel's last post {last_id}")
    return paths


def _explain(client, path: str) -> list[dict]:
    """EXPLAIN (ANALYZE, BUFFERS) of each statement on posts_post that the request ran. Taken from
    the database wrapper, as sent with its parameters, rather than from the query log's rendering."""
    from django.db import connection

    statements = []

    def record(execute, statement, params, many, context):
        if POSTS_TABLE.search(statement):
            statements.append((statement, params))
        return execute(statement, params, many, context)

    with connection.execute_wrapper(record):
        client.get(path)
    explained = []
    with connection.cursor() as cursor:
        for statement, params in statements:
            cursor.execute(f"explain (analyze, buffers) {statement}", params)
            explained.append(
                {"sql": statement, "params": list(params or ()), "plan": [row[0] for row in cursor.fetchall()]}
            )
    return explained


def _recount_ms(channel_id: int, size: int) -> float:
    """How long `recount_posts` holds the channel's row (its lock, count and compare), best of 3."""
    from apps.channels.services import channel_posts_recount

    times = []
    for _ in range(3):
        before = time.perf_counter()
        recount = channel_posts_recount(channel_id=channel_id)
        times.append((time.perf_counter() - before) * 1000)
        if (recount.stored, recount.counted) != (size, size):
            raise RuntimeError(f"a channel of {size:,} posts: stored {recount.stored:,}, counted {recount.counted:,}")
    return min(times)


def _anchors_ms(channel_id: int, size: int) -> float:
    """How long making the channel's page anchors takes (the one statement that reads them; best of
    3), which a deep page pays once per `posts_ids_version` (apps/posts/page_anchors.py)."""
    from apps.posts import page_anchors

    times = []
    for _ in range(3):
        before = time.perf_counter()
        _, anchors = page_anchors._read_anchors(channel_id)
        times.append((time.perf_counter() - before) * 1000)
        if len(anchors) != math.ceil(size / page_anchors.SPACING):
            raise RuntimeError(f"a channel of {size:,} posts: {len(anchors):,} anchors")
    return min(times)


# --- the content plan -----------------------------------------------------------------------------


def _plan_per_post(seed: dict) -> tuple[dict, dict]:
    """The content plan's cost per post in the grown channel and in the reference channel, runs of
    the two taking turns: the median of PLAN_RUNS runs each, with every run's figure (single runs
    of one size took from 321 to 523 µs per post in two benchmarks on this machine)."""
    runs = {channel: [] for channel in (seed["reference"], seed["channel"])}
    for _ in range(PLAN_RUNS):
        for channel, done in runs.items():
            done.append(_plan_run(seed, channel))
    medians = []
    for done in runs.values():
        done.sort(key=lambda run: run["us_per_post"])
        medians.append(done[len(done) // 2] | {"runs_us_per_post": [run["us_per_post"] for run in done]})
    reference, grown = medians
    return grown, reference


def _plan_run(seed: dict, channel: int) -> dict:
    """One content plan run over DUE_POSTS due posts beside the channel's others, which are then
    deleted again with what the run wrote, so the channel is back to its size."""
    account = seed["account"]
    [(last_id,)] = sql("select coalesce(max(id), 0) from posts_post")
    new_posts = "select id from posts_post where channel_id = %s and id > %s"
    # Posts with what part 3's have (two tags, an image), so their events carry the same payload.
    sql(
        """
        insert into posts_post (title, body, teaser, slug, publication_status, scheduled_at, created_at,
                                updated_at, channel_id)
        select 'Due post ' || g, repeat('Some **Markdown** body text of the post. ', 25), 'Teaser of due post ' || g,
               'due-' || g, 'scheduled', now() - interval '1 minute' - (g %% 3600) * interval '1 second',
               now() - interval '2 days', now() - interval '1 day', %s
        from generate_series(1, %s) g
        """,
        [channel, DUE_POSTS],
    )
    sql(
        f"insert into posts_post_tags (post_id, tag_id) select p.id, t from ({new_posts}) p, unnest(%s::bigint[]) t",  # noqa: S608
        [channel, last_id, seed["tags"]],
    )
    sql(
        f"""
        insert into posts_media (kind, url, alt_text, width, height, position, created_at, post_id)
        select 'image', 'https://cdn.example.com/images/' || p.id || '.jpg', 'Cover image', 1200, 630, 0, now(), p.id
        from ({new_posts}) p
        """,  # noqa: S608
        [channel, last_id],
    )
    sql(ANALYZE)
    run = content_plan_child()
    [(events, deliveries)] = sql(
        "select count(distinct e.id), count(d.id) from webhooks_event e "
        "left join webhooks_delivery d on d.event_id = e.id where e.account_id = %s",
        [account],
    )
    if (run["moved"], events, deliveries) != (DUE_POSTS, DUE_POSTS, DUE_POSTS):
        raise RuntimeError(
            f"content plan of {DUE_POSTS:,} due posts: moved {run['moved']:,}, events {events:,}, "
            f"deliveries {deliveries:,}"
        )
    delete_plan_posts(account, "channel_id = %s and id > %s", [channel, last_id])
    for table in VACUUM:
        sql(f"vacuum analyze {table}")
    return {
        "seconds": run["seconds"],
        "us_per_post": run["seconds"] * 1e6 / run["moved"],
        "peak_rss_mb": run["peak_rss_mb"],
    }
