"""Part 10 of `make bench`: the change feed (GET /v1/channels/{id}/changes, issue 53) as a channel grows.

One channel grown to 1,000 and then 1,000,000 posts (raw SQL, vacuumed and analyzed, as part 5
grows its channel), beside a reference channel of the smallest size. At each size, EDITS posts
spread through each channel are edited (one statement each), and two reads of each channel,
all four taking turns, through Django's test client in this process: the feed's first page (no
cursor: the channel's posts from the start) and the page of a cursor taken just before the edits
(the first of the edited posts, in their single form). Target: the grown channel's medians within
1.5x of the reference channel's, measured at the same time.

The feed hands out only what every older transaction on the server has left behind (its horizon):
before timing, each page is read until it is full.
"""

import json
import time
from urllib.parse import urlencode

from bench.common import make_reader, sql, verdict
from bench.reads import Rounds, footprint, time_reads
from bench.scale import VACUUM, _grow

SIZES = (1_000, 1_000_000)
PER_PAGE = 20
EDITS = 100
TARGET = 1.5
TIMING = Rounds(warmup=10, most=200, least=30, seconds=30)
READS = (
    ("first", "first page `/changes?per_page=20`"),
    ("cursor", f"page by cursor after {EDITS} edits `/changes?cursor=<c>&per_page=20`"),
)
# How long a page may wait for the server's older transactions (other sessions') to end.
HORIZON_WAIT = 120


def bench_feed(sizes=SIZES) -> dict:
    from django.test import Client

    sizes = sorted(sizes)
    started = time.monotonic()
    seed = _seed()
    client = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {seed['key']}")
    client.get("/v1/me")  # records the key's last use, which is then not written again for a minute
    _grow(seed["reference"], 0, sizes[0])
    result = {"sizes": sizes, "reads": {}, "reference": {}, "rounds": {}, "grow_seconds": {}}
    size_now = 0
    for size in sizes:
        grow_started = time.monotonic()
        _grow(seed["channel"], size_now, size)
        size_now = size
        result["grow_seconds"][size] = time.monotonic() - grow_started
        paths = _paths(client, seed["channel"])
        reference = _paths(client, seed["reference"])
        both = {("grown", key): path for key, path in paths.items()}
        both |= {("reference", key): path for key, path in reference.items()}
        times, result["rounds"][size] = time_reads(client, both, TIMING)
        figures = {key: times[("grown", key)] | footprint(client, path) for key, path in paths.items()}
        result["reads"][size] = figures
        result["reference"][size] = {key: times[("reference", key)] for key in reference}
        medians = {key: (figures[key]["median_ms"], result["reference"][size][key]["median_ms"]) for key, _ in READS}
        print(
            f"  {size:,} posts: "
            + ", ".join(f"{key} {grown:.2f} ms (reference {ref:.2f})" for key, (grown, ref) in medians.items())
            + f" ({result['rounds'][size]} rounds; growing took {result['grow_seconds'][size]:.0f} s)",
            flush=True,
        )
    result["seconds"] = time.monotonic() - started
    return result


def _seed() -> dict:
    from apps.channels.models import Channel

    account, key = make_reader("Feed bench", "feed@bench.example.com")
    channel = Channel.objects.create(account=account, team=None, title="Followed blog", platform="blog")
    reference = Channel.objects.create(account=account, team=None, title="Reference blog", platform="blog")
    return {"channel": channel.pk, "reference": reference.pk, "key": key}


def _body(client, path: str) -> dict:
    response = client.get(path)
    if response.status_code != 200:
        raise RuntimeError(f"{path} answered {response.status_code}: {response.content[:500]!r}")
    return json.loads(response.content)


def _full_page(client, path: str) -> list[dict]:
    """The page's items once it is full: the feed hands out only what every older transaction on
    the server has left behind (other sessions' too), so a write shows once they have ended."""
    deadline = time.monotonic() + HORIZON_WAIT
    while len(items := _body(client, path)["data"]) < PER_PAGE:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path}: not a full page after {HORIZON_WAIT} s (a transaction left open?)")
        time.sleep(0.2)
    return items


def _paths(client, channel_id: int) -> dict[str, str]:
    """The two reads' paths: the first page, and the page of a cursor at the feed's end (made from
    the channel's last position, as a client that followed the whole feed holds it) after EDITS
    posts spread through the channel are edited. Each checked once."""
    from apps.posts.changes import Cursor, Position, cursor_text

    changes = f"/v1/channels/{channel_id}/changes"
    first = f"{changes}?per_page={PER_PAGE}"
    _full_page(client, first)
    [(position, last_id)] = sql(
        "select change_position, id from posts_post where channel_id = %s order by change_position desc, id desc "
        "limit 1",
        [channel_id],
    )
    cursor = cursor_text(Cursor(channel_id, Position(position, last_id), 0))
    edited = sql(
        "update posts_post set title = title || ' (edited)' where id in "
        "(select id from posts_post where channel_id = %s order by random() limit %s) returning id",
        [channel_id, EDITS],
    )
    for table in VACUUM[:1]:
        sql(f"vacuum analyze {table}")
    by_cursor = f"{changes}?{urlencode({'cursor': cursor, 'per_page': PER_PAGE})}"
    if not {item["id"] for item in _full_page(client, by_cursor)} <= {pk for (pk,) in edited}:
        raise RuntimeError(f"{by_cursor}: a post that was not edited")
    return {"first": first, "cursor": by_cursor}


def feed_section(result: dict) -> list[str]:
    sizes = result["sizes"]
    small, large = sizes[0], sizes[-1]
    lines = [
        "## 11. Change feed (issue 53)",
        "",
        f"One blog channel grown to {', '.join(f'{size:,}' for size in sizes)} posts in turn with raw SQL, vacuumed "
        f"and analyzed, beside a reference channel of {small:,} posts. At each size, {EDITS} posts of each channel "
        "edited in one statement, then two reads of each channel through Django's test client in this process (the "
        "middleware and the view on PostgreSQL), all four taking turns: "
        + ", ".join(f"{result['rounds'][size]} rounds at {size:,}" for size in sizes)
        + f". The cursor page is the first {PER_PAGE} edited posts in their single form, after a cursor at the "
        "end of the feed taken before the edits. Target: at "
        f"{large:,} posts each median within {TARGET}x of the reference channel's.",
        "",
        "| read | " + " | ".join(f"{size:,} posts: median (p90), queries" for size in sizes) + " | reference "
        f"({small:,}) at {large:,} | ratio | target |",
        "|---|" + "---|" * len(sizes) + "---|---|---|",
    ]
    for key, label in READS:
        cells = [
            f"{result['reads'][size][key]['median_ms']:.2f} ms ({result['reads'][size][key]['p90_ms']:.2f}), "
            f"{result['reads'][size][key]['queries']}"
            for size in sizes
        ]
        reference = result["reference"][large][key]["median_ms"]
        ratio = result["reads"][large][key]["median_ms"] / reference
        lines.append(
            f"| {label} | "
            + " | ".join(cells)
            + f" | {reference:.2f} ms | {ratio:.2f}x | ≤{TARGET}x: {verdict(ratio <= TARGET)} |"
        )
    lines += ["", f"The part took {result['seconds']:.0f} s.", ""]
    return lines
