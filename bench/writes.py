"""The write part of `make bench` (`python -m bench --only writes`, issue 53): creates and edits per
second over the API, each against its floor (bench/floor.py `create_post`, `edit_post`), and what
the two write headers cost, on the web process the Procfile runs with its default settings.

- Creates: POST /v1/channels/{id}/posts of a draft with a Markdown body of about 1 kB and three
  existing tags; the floor inserts the same post and tag links and answers the same bytes.
- Edits: PATCH /v1/channels/{id}/posts/{id} of a title; the floor updates the row it locked and
  answers the same bytes.
- The headers' cost: the same POST with a unique `Idempotency-Key` on every request, and the same
  PATCH with `If-Match` of the post's current ETag (kept fresh from each answer), each measured
  beside the plain request.

Every write names another channel and post than the writes in flight beside it (WRITE_CHANNELS
channels, EDITED posts taken in turn across wrk's threads): a post's row is locked by its edit, and
every write of a channel's posts updates the channel's row (its version and posts_count,
docs/benchmarks.md "The version rule") until it commits, so writes to one channel queue behind
each other, floor and endpoint alike. The figures are those of many clients each writing its own
channel, not of one channel's write rate.

Each variant of a write takes turns with the others in short slices, as the API part's endpoints
do with their floors (bench/load.py). Before anything is measured, the floors' answers are checked
against the endpoints' (the same bytes and ETag as GET sends), and whether the server honours
`Idempotency-Key` (it answers a repeat with `Idempotent-Replayed: true`) is recorded: until it
does, the idempotency figure is the cost of sending the header only.
"""

import itertools
import json
import os
import time
from dataclasses import dataclass, field

from bench.common import CONNECTIONS, WORK, insert_posts, make_reader, verdict
from bench.load import ROLES, WRK_THREADS, Load, cpu_snapshot, start_web, wrk

WRITE_CHANNELS = 32  # one per connection: no two writes in flight share a channel's row
EDITED = 16 * WRITE_CHANNELS  # the posts the edits take in turn (each again after 256 of a thread's requests)
TAGS = ("django", "news", "python")  # what every created post is tagged with (wrk_writes.lua)
TARGET = 0.8  # issue 53: the endpoint's least ratio to its floor's writes per second
SCRIPT = "bench/wrk_writes.lua"
CREATE, EDIT = "create", "edit"
ENDPOINT, FLOOR, IDEMPOTENCY, IF_MATCH = "endpoint", "floor", "Idempotency-Key", "If-Match"
WRITES = {
    CREATE: ("POST /v1/channels/{id}/posts", "/v1/channels/{channel}/posts", "/v1/floor/channels/{channel}/posts/new"),
    EDIT: (
        "PATCH /v1/channels/{id}/posts/{id}",
        "/v1/channels/{channel}/posts/{post}",
        "/v1/floor/channels/{channel}/posts/{post}/edit",
    ),
}
HEADER = {CREATE: IDEMPOTENCY, EDIT: IF_MATCH}  # the header whose cost each write measures
ETAGS = WORK / "etags.txt"
# Fewer, longer slices than the reads': at tens of writes per second a slice's first and last
# seconds (connections ramping up, the requests wrk left in flight) weigh more.
WRITE_SLICES = 4


@dataclass(frozen=True)
class Variant:
    """One way of sending a write: the script's settings (bench/wrk_writes.lua) and whether it
    sends If-Match (the posts' current tags are written for it before each run)."""

    name: str
    env: dict = field(default_factory=dict)
    if_match: bool = False


# --- the data -------------------------------------------------------------------------------------


def seed_writes() -> dict:
    from apps.channels.models import Channel, Team
    from apps.posts.models import Post, Tag

    account, key = make_reader("Write bench", "writer@bench.example.com", writes=True)
    team = Team.objects.create(account=account, name="Editorial")
    channels = [
        Channel.objects.create(account=account, team=team, title=f"Blog {n}", platform="blog").pk
        for n in range(1, WRITE_CHANNELS + 1)
    ]
    tags = [Tag.objects.create(account=account, name=name).pk for name in TAGS]
    # Drafts (an edit of a published post also sends post.updated, which the floor would not).
    insert_posts(channels, EDITED, status="draft", scheduled=False, tags=tags)
    # In id order the posts take the channels in turn (insert_posts): so do the requests in flight.
    edited = list(Post.objects.filter(channel_id__in=channels).order_by("id").values_list("channel_id", "pk"))
    (WORK / "writes-seed.json").write_text(json.dumps({"key": key, "channels": channels}))
    return {"key": key, "channels": channels, "edited": edited}


def _client(seed: dict):
    from django.test import Client

    return Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {seed['key']}")


def _fields(tag: str) -> dict:
    """A created post's fields, as bench/wrk_writes.lua sends them."""
    text = "Some **Markdown** body text of the post. " * 25
    return {"title": f"Bench post {tag}", "body": text, "teaser": f"Teaser of {tag}", "tags": list(TAGS)}


def check(seed: dict) -> dict:
    """In-process, before the load: each floor answers what the endpoint answers (the bytes and
    ETag a GET of the post then sends), a fresh If-Match passes and a stale one is refused, whether
    the server replays a repeated Idempotency-Key; and the queries of each variant, counted."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = _client(seed)
    # The key's last use is written at most once a minute: here, not in the counts.
    client.get("/v1/me")
    (channel, post), (other_channel, other), (third_channel, third) = seed["edited"][:3]
    queries = {}

    def send(write: str, variant: str, method: str, path: str, body: dict, status: int, headers: dict | None = None):
        with CaptureQueriesContext(connection) as captured:
            answer = client.generic(method, path, json.dumps(body), content_type="application/json", headers=headers)
        if answer.status_code != status:
            raise RuntimeError(f"{method} {path} answered {answer.status_code}, not {status}: {answer.content[:600]!r}")
        queries[(write, variant)] = len(captured)
        return answer

    def same_as_get(answer, what: str) -> None:
        data = answer.json()["data"]
        read = client.get(f"/v1/channels/{data['channel']['id']}/posts/{data['id']}")
        if (answer.content, answer["ETag"]) != (read.content, read["ETag"]):
            raise RuntimeError(
                f"{what} answered other bytes than GET:\n{answer.content[:600]!r}\n{read.content[:600]!r}"
            )

    create_path, floor_create = (WRITES[CREATE][i].format(channel=channel) for i in (1, 2))
    # Once each, uncounted: what a process does on its first write of a kind (loading code, caching
    # lookups) is not in the counts.
    for n, path in enumerate((create_path, floor_create)):
        client.post(path, {"post": _fields(f"warm-{n}")}, content_type="application/json")
    for template, (channel_id, post_id) in zip(WRITES[EDIT][1:], seed["edited"][3:5], strict=True):
        client.patch(
            template.format(channel=channel_id, post=post_id),
            {"post": {"title": "Warm"}},
            content_type="application/json",
        )
    same_as_get(send(CREATE, ENDPOINT, "POST", create_path, {"post": _fields("check-1")}, 201), "POST")
    same_as_get(send(CREATE, FLOOR, "POST", floor_create, {"post": _fields("check-2")}, 201), "the create floor")
    once = {"Idempotency-Key": "check"}
    first = send(CREATE, IDEMPOTENCY, "POST", create_path, {"post": _fields("check-3")}, 201, once)
    again = client.post(create_path, {"post": _fields("check-3")}, content_type="application/json", headers=once)
    replayed = again.get("Idempotent-Replayed") == "true" and again.content == first.content

    edit_path, floor_edit = (
        WRITES[EDIT][1].format(channel=channel, post=post),
        WRITES[EDIT][2].format(channel=other_channel, post=other),
    )
    same_as_get(send(EDIT, ENDPOINT, "PATCH", edit_path, {"post": {"title": "Checked 1"}}, 200), "PATCH")
    same_as_get(send(EDIT, FLOOR, "PATCH", floor_edit, {"post": {"title": "Checked 2"}}, 200), "the edit floor")
    third_path = WRITES[EDIT][1].format(channel=third_channel, post=third)
    read = {"If-Match": client.get(third_path)["ETag"]}
    after = send(EDIT, IF_MATCH, "PATCH", third_path, {"post": {"title": "Checked 3"}}, 200, read)["ETag"]
    # The same tag again is stale now: refused, and nothing changes.
    refused = client.generic(
        "PATCH", third_path, '{"post": {"title": "Checked 4"}}', content_type="application/json", headers=read
    )
    if refused.status_code != 412 or client.get(third_path)["ETag"] != after:
        raise RuntimeError(f"a PATCH with a stale If-Match answered {refused.status_code} or changed the post")
    return {"queries": queries, "idempotency_live": replayed}


def write_etags(seed: dict) -> None:
    """The edited posts' current ETags, as GET would send them (the floor's bytes are the
    endpoint's, check() made sure), for the If-Match variant's next run."""
    from bench import floor

    api_key = floor._key(seed["key"])
    lines = [
        f"{post} {floor._answer(floor._single_post(api_key, channel, post))['ETag']}"
        for channel, post in seed["edited"]
    ]
    ETAGS.write_text("\n".join(lines) + "\n")


# --- the load -------------------------------------------------------------------------------------


def variants(seed: dict, write: str) -> list[Variant]:
    _, path, floor_path = WRITES[write]
    targets = ",".join(f"{channel}/{post}" for channel, post in seed["edited"])
    common = {"WRK_MODE": write, "WRK_TARGETS": targets, "WRK_THREADS": str(WRK_THREADS)}
    header = (
        Variant(IDEMPOTENCY, {**common, "WRK_PATH": path, "WRK_IDEMPOTENCY": "1"})
        if write == CREATE
        else Variant(IF_MATCH, {**common, "WRK_PATH": path}, if_match=True)
    )
    return [Variant(ENDPOINT, {**common, "WRK_PATH": path}), Variant(FLOOR, {**common, "WRK_PATH": floor_path}), header]


_runs = itertools.count()


def _run(wrk_bin: str, seed: dict, variant: Variant, seconds: int) -> str:
    # Titles, slugs and idempotency keys never repeat across runs.
    env = {**variant.env, "WRK_RUN": f"{int(time.time())}r{next(_runs)}"}
    if variant.if_match:
        env["WRK_ETAGS"] = str(ETAGS)
    return wrk(wrk_bin, seed["key"], "/", seconds, env, SCRIPT)


def wait_idle(web, timeout: float = 15) -> None:
    """Until the web process has served the writes wrk left in its queue when it stopped (at tens
    of writes per second, more than the reads' fixed pause): its CPU still for a tenth of a second."""
    deadline = time.monotonic() + timeout
    used = cpu_snapshot(web.popen.pid)["web"]
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = cpu_snapshot(web.popen.pid)["web"]
        if now - used < 0.005:
            return
        used = now


def rotate(wrk_bin: str, seed: dict, web, write: str, duration: int, slices: int) -> dict[str, dict]:
    """The write's variants under load, taking turns in `slices` slices (each slice in another
    order), with the CPU each role of the machine used per request meanwhile."""
    chosen = variants(seed, write)
    seconds = max(1, duration // slices)
    for variant in chosen:  # warm: connections, code paths
        wait_idle(web)
        if variant.if_match:
            write_etags(seed)
        _run(wrk_bin, seed, variant, 2)
    loads = {variant.name: Load() for variant in chosen}
    cpu = {variant.name: dict.fromkeys(ROLES, 0.0) for variant in chosen}
    for turn in range(slices):
        for variant in chosen[turn % len(chosen) :] + chosen[: turn % len(chosen)]:
            wait_idle(web)
            if variant.if_match:
                write_etags(seed)
            before = cpu_snapshot(web.popen.pid)
            loads[variant.name].add(_run(wrk_bin, seed, variant, seconds))
            after = cpu_snapshot(web.popen.pid)
            for role in ROLES:
                cpu[variant.name][role] += after[role] - before[role]
    figures = {}
    for name, load in loads.items():
        figures[name] = load.figures()
        figures[name]["cpu_ms"] = {role: s * 1000 / max(1, figures[name]["requests"]) for role, s in cpu[name].items()}
    line = ", ".join(f"{name} {f['rps']:.0f}/s (p99 {f['p99']:.0f} ms)" for name, f in figures.items())
    print(f"  {WRITES[write][0]}: {line}", flush=True)
    return figures


def bench_writes(wrk_bin: str, duration: int, *, slices: int = WRITE_SLICES) -> dict:
    seed = seed_writes()
    checked = check(seed)
    if not checked["idempotency_live"]:
        print("  the server does not replay a repeated Idempotency-Key: the header is ignored, its cost not measured")
    load_before = os.getloadavg()[0]
    web = start_web("web")
    try:
        results = {write: rotate(wrk_bin, seed, web, write, duration, slices) for write in WRITES}
    finally:
        web.stop()
    return {
        "writes": results,
        **checked,
        "duration": duration,
        "slices": slices,
        "load": (load_before, os.getloadavg()[0]),
        "edited": len(seed["edited"]),
    }


# --- the report -----------------------------------------------------------------------------------


def _ms(figures: dict, *roles: str) -> float:
    return sum(figures["cpu_ms"][role] for role in roles)


def met(figures: dict) -> bool:
    endpoint, floor = figures[ENDPOINT], figures[FLOOR]
    clean = endpoint["non_2xx"] == 0 and endpoint["socket_errors"] == 0
    return clean and endpoint["rps"] >= TARGET * floor["rps"]


def writes_section(result: dict) -> list[str]:
    slice_seconds = max(1, result["duration"] // result["slices"])
    before, after = result["load"]
    lines = [
        f"## 10. Writes over the API (issue 53; wrk, {CONNECTIONS} connections, {result['duration']} s per variant)",
        "",
        "The Procfile's web process with its default settings (as the API part), production settings on PostgreSQL "
        "and Redis. Creates: `POST` of a draft (a Markdown body of about 1 kB, a teaser, three existing tags), a new "
        "title each, so a slug made in one query. Edits: `PATCH` of a title of one of "
        f"{result['edited']} drafts. Every write in flight names another of {WRITE_CHANNELS} channels and (edits) "
        "another post, so they do not queue on one row: each write of a channel's posts updates the channel's row "
        "(its version) until it commits. Floor: plain Django views (bench/floor.py `create_post`, `edit_post`) "
        "doing the same key lookup, the same rows (the post's columns and tag links, or the title) and answering "
        "the same bytes and ETag, checked before the load. Each write's variants take turns in "
        f"{result['slices']} slices of {slice_seconds} s (each slice in another order, after the server has served "
        "what the last one left in flight). "
        f"Load average before/after: {before:.2f}/{after:.2f}. CPU per request: the web process and PostgreSQL, "
        "summed over the variant's slices; queries counted in-process on one request.",
        "",
        "| Write | variant | writes/s | p50 ms | p99 ms | non-2xx | web ms CPU | PostgreSQL ms CPU | queries | ratio |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for write, figures in result["writes"].items():
        floor, endpoint = figures[FLOOR], figures[ENDPOINT]
        for name, f in figures.items():
            if name == ENDPOINT:
                ratio = f"{f['rps'] / floor['rps']:.2f}x the floor (target ≥{TARGET}x: {verdict(met(figures))})"
            elif name == FLOOR:
                ratio = ""
            else:
                ratio = f"{f['rps'] / endpoint['rps']:.2f}x the endpoint without it"
            label = f"with `{name}`" if name not in (ENDPOINT, FLOOR) else name
            lines.append(
                f"| `{WRITES[write][0]}` | {label} | {f['rps']:.0f} | {f['p50']:.1f} | {f['p99']:.1f} | "
                f"{f['non_2xx'] + f['socket_errors']} | {_ms(f, 'web'):.2f} | {_ms(f, 'postgres'):.2f} | "
                f"{result['queries'][(write, name)]} | {ratio} |"
            )
    lines += ["", *header_costs(result), ""]
    return lines


def header_costs(result: dict) -> list[str]:
    """What the idempotency record and the precondition cost, per request."""
    texts = []
    for write, figures in result["writes"].items():
        name, plain, with_header = HEADER[write], figures[ENDPOINT], figures[HEADER[write]]
        extra_queries = result["queries"][(write, name)] - result["queries"][(write, ENDPOINT)]
        texts.append(
            f"`{name}` on `{WRITES[write][0]}`: {with_header['rps'] / plain['rps']:.2f}x the writes per second, "
            f"{_ms(with_header, 'web', 'postgres') - _ms(plain, 'web', 'postgres'):+.2f} ms of web and PostgreSQL CPU "
            f"and {extra_queries:+d} queries per request"
        )
    live = (
        "The server replays a repeated `Idempotency-Key` (`Idempotent-Replayed: true`): its figure is the record's "
        "cost."
        if result["idempotency_live"]
        else "**The server of this run ignores `Idempotency-Key`** (a repeat was not replayed): its figure is only "
        "the header's; rerun after the idempotency records are merged."
    )
    return ["**What the headers cost**: " + "; ".join(texts) + ". " + live]
