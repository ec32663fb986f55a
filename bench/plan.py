"""Part 3 of `make bench`: the content plan against its floor.

Due scheduled posts (2 tags and 1 image each) over four channels (blog, git, linkedin, api) of one
account with one webhook endpoint, moved by one `content_plan_run()` in a process of its own
(bench/content_plan_child.py) at each of PLAN_SIZES; every post's event and delivery written and
handed to the broker. Floor: FLOOR_SQL, one hand-written `UPDATE` plus `INSERT ... SELECT` of the
records, events and deliveries in one transaction, without the broker hand-over.
"""

import time
from datetime import UTC, datetime

from bench.common import (
    DATABASE_URL,
    RECEIVER_PORT,
    content_plan_child,
    flush_redis,
    insert_posts,
    make_account,
    sql,
    verdict,
)

PLAN_SIZES = (10_000, 100_000)
# Fresh statistics after a run moved or wrote many rows, for the checks' plans.
ANALYZE = "analyze posts_post; analyze posts_apipublication; analyze webhooks_event; analyze webhooks_delivery"

FLOOR_SQL = """
create temporary table moved (id bigint primary key, channel_id bigint, platform text, account_id bigint)
    on commit drop;

with due as (
    select id from posts_post where publication_status = 'scheduled' and scheduled_at <= %(now)s
    for update skip locked
), changed as (
    update posts_post p set
        publication_status = case when c.platform = 'api' then 'publishing_pending' else 'published' end,
        published_at = case when c.platform = 'api' then null else %(now)s end,
        external_id = case when c.platform = 'api' then null else p.external_id end,
        external_url = case when c.platform = 'api' then null else p.external_url end,
        updated_at = %(now)s
    from due, channels_channel c
    where p.id = due.id and c.id = p.channel_id
    returning p.id, p.channel_id, c.platform, c.account_id
)
insert into moved select * from changed;

insert into posts_apipublication (post_id, created_at, confirmed_at, external_id, external_url)
select id, %(now)s, null, null, null from moved where platform = 'api'
on conflict (post_id) do update set confirmed_at = null, external_id = null, external_url = null;

with events as (
    insert into webhooks_event (account_id, kind, post_id, created_at, body)
    select m.account_id, k.kind, p.id, %(now)s, json_build_object(
        'event', k.kind,
        'timestamp', to_char(%(now)s at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'account', json_build_object('id', a.id, 'name', a.name),
        'data', json_build_object('post', json_build_object(
            'id', p.id, 'title', p.title, 'teaser', p.teaser, 'slug', p.slug,
            'publication_status', p.publication_status,
            'created_at', to_char(p.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
            'updated_at', to_char(p.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
            'channel', json_build_object(
                'id', c.id, 'title', c.title, 'platform', c.platform,
                'team', case when t.id is null then null else json_build_object('id', t.id, 'name', t.name) end,
                'posts_count', c.posts_count),
            'body', p.body,
            'published_at', to_char(p.published_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
            'meta_title', p.meta_title, 'meta_description', p.meta_description,
            'tags', coalesce((select json_agg(json_build_object('id', tg.id, 'name', tg.name) order by tg.name, tg.id)
                              from posts_post_tags pt join posts_tag tg on tg.id = pt.tag_id
                              where pt.post_id = p.id), '[]'::json),
            'media', coalesce((select json_agg(json_build_object('id', md.id, 'kind', md.kind, 'url', md.url,
                                               'alt_text', md.alt_text, 'width', md.width, 'height', md.height)
                                               order by md.position, md.id)
                               from posts_media md where md.post_id = p.id), '[]'::json)
        ))
    )::text
    from moved m
    join posts_post p on p.id = m.id
    join channels_channel c on c.id = m.channel_id
    left join channels_team t on t.id = c.team_id
    join accounts_account a on a.id = m.account_id
    cross join lateral (select case when m.platform = 'api' then 'post.publishing_pending'
                                    else 'post.published' end as kind) k
    returning id, account_id, kind
)
insert into webhooks_delivery (id, event_id, endpoint_id, status, attempts, next_attempt_at, enqueued_at,
                               last_error, created_at, updated_at)
select gen_random_uuid(), e.id, ep.id, 'pending', 0, %(now)s, %(now)s, '', %(now)s, %(now)s
from events e join webhooks_webhookendpoint ep
  on ep.account_id = e.account_id and ep.enabled and (ep.events = '[]'::jsonb or ep.events ? e.kind);
"""


def seed_plan() -> dict:
    from apps.channels.models import Channel, Team
    from apps.posts.models import Tag
    from apps.webhooks.models import WebhookEndpoint

    account = make_account("Content plan bench", plan="professional")
    team = Team.objects.create(account=account, name="Editorial")
    channels = [
        Channel.objects.create(account=account, team=team, title="Blog", platform="blog"),
        Channel.objects.create(account=account, team=team, title="Docs", platform="git"),
        Channel.objects.create(account=account, team=None, title="LinkedIn", platform="linkedin"),
        Channel.objects.create(account=account, team=team, title="Partner feed", platform="api"),
    ]
    tags = [Tag.objects.create(account=account, name=name).pk for name in ("launch", "weekly")]
    WebhookEndpoint.objects.create(account=account, url=f"http://127.0.0.1:{RECEIVER_PORT}/hook")
    return {"account": account.pk, "channels": [c.pk for c in channels], "tags": tags}


def delete_plan_posts(account: int, where: str, params: list) -> None:
    """The account's events and deliveries, and the posts `where` picks (a condition on posts_post)
    with their publication records, tag links and media: what a content plan run leaves behind."""
    posts = f"select id from posts_post where {where}"  # noqa: S608 - the benchmark's own conditions
    sql("delete from webhooks_delivery where event_id in (select id from webhooks_event where account_id = %s)",
        [account])  # fmt: skip
    sql("delete from webhooks_event where account_id = %s", [account])
    for table in ("posts_apipublication", "posts_post_tags", "posts_media"):
        sql(f"delete from {table} where post_id in ({posts})", params)  # noqa: S608 - fixed table names
    sql(f"delete from posts_post where {where}", params)  # noqa: S608
    flush_redis()  # the run's messages for the broker: no worker reads them here


def reset_plan(seed: dict, n: int) -> None:
    channels = seed["channels"]
    delete_plan_posts(seed["account"], "channel_id = any(%s)", [channels])
    insert_posts(channels, n, status="scheduled", scheduled=True, tags=seed["tags"])
    sql(ANALYZE)


def check_plan(seed: dict, n: int) -> None:
    moved = sql("select count(*) from posts_post where channel_id = any(%s) and publication_status <> 'scheduled'",
                [seed["channels"]])[0][0]  # fmt: skip
    events = sql("select count(*) from webhooks_event where account_id = %s", [seed["account"]])[0][0]
    deliveries = sql("select count(*) from webhooks_delivery d join webhooks_event e on e.id = d.event_id "
                     "where e.account_id = %s", [seed["account"]])[0][0]  # fmt: skip
    if (moved, events, deliveries) != (n, n, n):
        raise RuntimeError(f"content plan of {n} posts: moved {moved}, events {events}, deliveries {deliveries}")


def bench_content_plan() -> dict:
    import psycopg

    seed = seed_plan()
    runs = {}
    for n in PLAN_SIZES:
        reset_plan(seed, n)
        runs[n] = content_plan_child()
        sql(ANALYZE)
        check_plan(seed, n)
        print(f"  content plan {n} posts: {runs[n]['seconds']:.1f} s, peak {runs[n]['peak_rss_mb']:.0f} MB", flush=True)
    n = PLAN_SIZES[-1]
    reset_plan(seed, n)
    with psycopg.connect(DATABASE_URL) as conn:
        started = time.perf_counter()
        with conn.transaction():
            now = datetime.now(UTC)
            for statement in FLOOR_SQL.split(";\n\n"):
                conn.execute(statement, {"now": now})
        floor_seconds = time.perf_counter() - started
    sql(ANALYZE)
    check_plan(seed, n)
    flush_redis()
    print(f"  content plan floor {n} posts: {floor_seconds:.1f} s", flush=True)
    return {"runs": runs, "floor_seconds": floor_seconds, "ratio": runs[n]["seconds"] / floor_seconds}


def plan_section(plan: dict) -> list[str]:
    runs, n = plan["runs"], PLAN_SIZES[-1]
    flat = runs[PLAN_SIZES[-1]]["peak_rss_mb"] <= runs[PLAN_SIZES[0]]["peak_rss_mb"] * 1.25
    lines = [
        "## 3. Content plan",
        "",
        "Due scheduled posts (2 tags and 1 image each) over four channels (blog, git, linkedin, api) of one "
        "account with one webhook endpoint, moved by one `content_plan_run()` in a process of its own; every "
        "post's event and delivery written and handed to the broker. Floor: one hand-written SQL `UPDATE` "
        "plus `INSERT ... SELECT` of the records, events (bodies built with `json_build_object`) and "
        "deliveries, in one transaction, without the broker hand-over.",
        "",
        "| posts | seconds | posts/s | peak memory of the process (MB) | of which before the run (MB) |",
        "|---:|---:|---:|---:|---:|",
    ]
    for size, run in runs.items():
        lines.append(
            f"| {size:,} | {run['seconds']:.1f} | {size / run['seconds']:,.0f} | {run['peak_rss_mb']:.0f} | "
            f"{run['rss_before_run_mb']:.0f} |"
        )
    return [
        *lines,
        "",
        f"Floor at {n:,} posts: {plan['floor_seconds']:.1f} s. Ratio {plan['ratio']:.2f}x the floor: "
        f"{verdict(plan['ratio'] <= 3)} (≤3x). Memory flat in the number of posts: {verdict(flat)}.",
        "",
    ]
