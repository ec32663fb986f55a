"""Part 3 of `make bench`: the content plan against its floor.

Due scheduled posts (2 tags and 1 image each) over four channels (blog, git, linkedin, api) of one
account with one webhook endpoint, taken by one `content_plan_run()` in a process of its own
(bench/content_plan_child.py) at each of PLAN_SIZES, as the service takes them (OUTCOME): the
blog's posts published and the api channel's handed to the external system, each with its event
and delivery; the git and LinkedIn channels' posts handed to their destinations, a queued publish
job each; all of it handed to the broker. Floor: FLOOR_SQL, one hand-written `UPDATE` plus
`INSERT ... SELECT` of the same records, jobs, events and deliveries in one transaction, without
the broker hand-over.

The git and LinkedIn channels have no destination set up: the plan hands their posts over without
reading it (a worker would), and no worker runs here. Part 6 measures the publication itself.
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
# Issue 58's target for the run at the largest size against its floor (it was 3x before).
RATIO_TARGET = 1.5
# Fresh statistics after a run moved or wrote many rows, for the checks' plans.
ANALYZE = (
    "analyze posts_post; analyze posts_apipublication; analyze publishing_publicationjob; analyze webhooks_event; "
    "analyze webhooks_delivery"
)
# What a run leaves of each channel's due posts: (their status, the event each has). A git or
# LinkedIn post stays `scheduled` until its destination confirms; its queued publish job for its
# scheduled time says it was handed over. The PLAN_SIZES are multiples of four: a quarter each.
OUTCOME = {
    "blog": ("published", "post.published"),
    "git": ("scheduled", None),
    "linkedin": ("scheduled", None),
    "api": ("publishing_pending", "post.publishing_pending"),
}
# The rows the service writes (apps/posts/content_plan.py), column for column: the posts, the api
# posts' publication records, the destination posts' publish jobs (as jobs_enqueue writes them), the
# others' events and one delivery per event; checked against a run's rows when it was written (event
# bodies equal as JSON). %(destinations)s: apps.channels.models.DESTINATION_PLATFORMS.
FLOOR_SQL = """
create temporary table due (id bigint primary key, channel_id bigint, platform text, account_id bigint,
                            scheduled_at timestamptz, title text)
    on commit drop;

insert into due
select p.id, p.channel_id, c.platform, c.account_id, p.scheduled_at, p.title
from posts_post p join channels_channel c on c.id = p.channel_id
where p.publication_status = 'scheduled' and p.scheduled_at <= %(now)s
  and not exists (select from publishing_publicationjob j
                  where j.post_id = p.id and j.action = 'publish' and j.scheduled_for = p.scheduled_at)
for update of p skip locked;

update posts_post p set
    publication_status = case when d.platform = 'api' then 'publishing_pending' else 'published' end,
    published_at = case when d.platform = 'api' then null else %(now)s end,
    external_id = null, external_url = null, updated_at = %(now)s
from due d
where p.id = d.id and d.platform <> all(%(destinations)s);

insert into posts_apipublication (post_id, created_at, confirmed_at, external_id, external_url)
select id, %(now)s, null, null, null from due where platform = 'api'
on conflict (post_id) do update set confirmed_at = null, external_id = null, external_url = null;

insert into publishing_publicationjob (channel_id, post_id, title, action, state, scheduled_for, attempts,
                                       next_attempt_at, locked_by, last_error, reference, path, url, created_at,
                                       updated_at)
select channel_id, id, left(title, 300), 'publish', 'queued', scheduled_at, 0, %(now)s, '', '', '', '', '', %(now)s,
       %(now)s
from due where platform = any(%(destinations)s);

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
                               from posts_media md where md.post_id = p.id), '[]'::json),
            'external_id', p.external_id, 'external_url', p.external_url,
            'story', (select json_build_object('id', sp.story_id) from stories_storypost sp where sp.post_id = p.id)
        ))
    )::text
    from due m
    join posts_post p on p.id = m.id
    join channels_channel c on c.id = m.channel_id
    left join channels_team t on t.id = c.team_id
    join accounts_account a on a.id = m.account_id
    cross join lateral (select case when m.platform = 'api' then 'post.publishing_pending'
                                    else 'post.published' end as kind) k
    where m.platform <> all(%(destinations)s)
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


def delete_posts(where: str, params: list) -> None:
    """The posts `where` picks (a condition on posts_post) with their publication records, tag
    links and media."""
    posts = f"select id from posts_post where {where}"  # noqa: S608 - the benchmark's own conditions
    for table in ("posts_apipublication", "posts_post_tags", "posts_media"):
        sql(f"delete from {table} where post_id in ({posts})", params)  # noqa: S608 - fixed table names
    sql(f"delete from posts_post where {where}", params)  # noqa: S608


def delete_plan_posts(account: int, where: str, params: list) -> None:
    """The account's events and deliveries, and the posts `where` picks with all they have: what a
    content plan run leaves behind (its publish jobs aside: finish_jobs)."""
    sql(
        "delete from webhooks_delivery where event_id in (select id from webhooks_event where account_id = %s)",
        [account],
    )
    sql("delete from webhooks_event where account_id = %s", [account])
    delete_posts(where, params)
    flush_redis()  # the run's messages for the broker: no worker reads them here


def finish_jobs(channels: list[int]) -> None:
    """The channels' queued jobs succeeded, as their destination would leave them. They are kept,
    as every finished job is (nothing prunes them): deleted, the table's statistics would say it is
    empty while a run writes tens of thousands of jobs, and PostgreSQL would plan the content
    plan's "not handed over yet" (NOT EXISTS a job) as a scan of every job for every post."""
    sql(
        "update publishing_publicationjob set state = 'succeeded', finished_at = now(), updated_at = now() "
        "where channel_id = any(%s) and state = 'queued'",
        [channels],
    )


def reset_plan(seed: dict, n: int) -> None:
    channels = seed["channels"]
    finish_jobs(channels)
    delete_plan_posts(seed["account"], "channel_id = any(%s)", [channels])
    insert_posts(channels, n, status="scheduled", scheduled=True, tags=seed["tags"])
    sql(ANALYZE)


def plan_outcome(seed: dict) -> tuple[list, list]:
    """What the channels' posts are after a run: (platform, status, posts, of which with a queued
    publish job for their scheduled time, with an API publication record) for each platform and
    status; (kind, events, deliveries) for each kind of the account's events."""
    posts = sql(
        """
        select c.platform, p.publication_status, count(*), count(j.id), count(a.id)
        from posts_post p join channels_channel c on c.id = p.channel_id
        left join publishing_publicationjob j
          on j.post_id = p.id and j.action = 'publish' and j.state = 'queued' and j.scheduled_for = p.scheduled_at
        left join posts_apipublication a on a.post_id = p.id
        where p.channel_id = any(%s)
        group by 1, 2 order by 1, 2
        """,
        [seed["channels"]],
    )
    events = sql(
        "select e.kind, count(distinct e.id), count(d.id) from webhooks_event e "
        "left join webhooks_delivery d on d.event_id = e.id where e.account_id = %s group by 1 order by 1",
        [seed["account"]],
    )
    return [tuple(row) for row in posts], [tuple(row) for row in events]


def expected_outcome(n: int) -> tuple[list, list]:
    """plan_outcome after a run over `n` posts, as OUTCOME says (a quarter of them per channel)."""
    share = n // len(OUTCOME)
    posts = sorted(
        (platform, status, share, share if kind is None else 0, share if platform == "api" else 0)
        for platform, (status, kind) in OUTCOME.items()
    )
    events = sorted((kind, share, share) for _, kind in OUTCOME.values() if kind)
    return posts, events


def check_plan(seed: dict, n: int) -> None:
    found, expected = plan_outcome(seed), expected_outcome(n)
    if found != expected:
        raise RuntimeError(f"content plan of {n} posts: found {found}, expected {expected}")


def run_floor() -> float:
    """FLOOR_SQL in one transaction; its seconds."""
    import psycopg

    from apps.channels.models import DESTINATION_PLATFORMS

    destinations = sorted(DESTINATION_PLATFORMS)
    with psycopg.connect(DATABASE_URL) as conn:
        started = time.perf_counter()
        with conn.transaction():
            params = {"now": datetime.now(UTC), "destinations": destinations}
            for statement in FLOOR_SQL.split(";\n\n"):
                conn.execute(statement, params)
        return time.perf_counter() - started


def bench_content_plan() -> dict:
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
    floor_seconds = run_floor()
    sql(ANALYZE)
    check_plan(seed, n)
    # The posts handed over are still `scheduled`, their jobs queued: a later part's content plan
    # run would scan them and its worker take the jobs on (their channels have no destination).
    finish_jobs(seed["channels"])
    delete_posts("channel_id = any(%s) and publication_status = 'scheduled'", [seed["channels"]])
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
        "account with one webhook endpoint, taken by one `content_plan_run()` in a process of its own: the blog's "
        "posts published and the api channel's handed to the external system (`publishing_pending`), each with "
        "its event and delivery; the git and LinkedIn channels' posts handed to their destinations (a queued "
        "publish job each, the post `scheduled` until the destination confirms); all of it handed to the "
        "broker. Floor: one hand-written SQL `UPDATE` plus `INSERT ... SELECT` of the records, jobs, events "
        "(bodies built with `json_build_object`) and deliveries, in one transaction, without the broker "
        "hand-over.",
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
        f"{verdict(plan['ratio'] <= RATIO_TARGET)} (≤{RATIO_TARGET}x). "
        f"Memory flat in the number of posts: {verdict(flat)}.",
        "",
    ]
