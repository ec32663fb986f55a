"""Part 13 of `make bench`: the Settings area's calendar (issue 56) with 2,000 items in a month.

One account with three channels and an editor in Europe/Berlin; March 2027 (the change to summer time
is in it) holds 2,000 items spread over its days and hours: 700 planned stories and 300 scheduled
ones (each on one or two channels, so 1,500 posts of stories), 600 scheduled and 400 published posts
that belong to no story; and 50 undated drafts in the tray. Written with bulk inserts (what is read
is rows, however they were made). The editor signs in to the Procfile's web process (default
settings) as a browser does and opens the month, then the week of 15 March, in turns. Target: the month
answers in under a second (p90), in a number of queries that does not grow with the items (counted
through Django's test client in this process, as bench/reads.py does).
"""

import random
import statistics
import time
from datetime import UTC, datetime, timedelta

from bench.admin_editors import form_fields
from bench.common import make_account, verdict
from bench.load import start_web
from bench.reads import percentile

ITEMS = 2_000
PLANNED, SCHEDULED, LONE_SCHEDULED, LONE_PUBLISHED, UNDATED = 700, 300, 600, 400, 50
MONTH = datetime(2027, 3, 1, tzinfo=UTC)
WARMUP, ROUNDS = 3, 20
TARGET_MS = 1000
PASSWORD = "calendar-bench-editor-7d2e"  # noqa: S105
EMAIL = "calendar@bench.example.com"


def bench_calendar() -> dict:
    import requests
    from django.urls import reverse

    from bench.common import WEB_PORT

    started = time.monotonic()
    seed_started = time.monotonic()
    user = _seed()
    seed_seconds = time.monotonic() - seed_started
    calendar = reverse("admin:calendar")
    paths = {"month": f"{calendar}?date=2027-03-15", "week": f"{calendar}?view=week&date=2027-03-15"}
    queries = {name: _queries(user, path) for name, path in paths.items()}
    # Plain HTTP on this machine: the cookies go without the Secure flag a TLS proxy's site keeps.
    web = start_web("web", settings={"SESSION_COOKIE_SECURE": "false", "CSRF_COOKIE_SECURE": "false"})
    try:
        base = f"http://127.0.0.1:{WEB_PORT}"
        session = requests.Session()
        _sign_in(session, base)
        times, sizes = _time_pages(session, base, paths)
    finally:
        web.stop()
    result = {"times": times, "sizes": sizes, "queries": queries, "seed_seconds": seed_seconds}
    result["seconds"] = time.monotonic() - started
    for name in paths:
        print(
            f"  {name}: median {statistics.median(times[name]):.0f} ms, p90 {percentile(times[name], 90):.0f} ms, "
            f"{sizes[name] / 1024:.0f} KiB, {queries[name]} queries",
            flush=True,
        )
    return result


def _time_pages(session, base: str, paths: dict) -> tuple[dict, dict]:
    for _ in range(WARMUP):
        for path in paths.values():
            session.get(base + path, timeout=60)
    times = {name: [] for name in paths}
    sizes = {}
    for _ in range(ROUNDS):
        for name, path in paths.items():
            before = time.perf_counter()
            response = session.get(base + path, timeout=60)
            times[name].append((time.perf_counter() - before) * 1000)
            if response.status_code != 200 or "cal-card" not in response.text:
                raise RuntimeError(f"{path} answered {response.status_code}: {response.text[:500]!r}")
            sizes[name] = len(response.content)
    return times, sizes


def _sign_in(session, base: str) -> None:
    url = f"{base}/admin/login/?next=/admin/"
    page = session.get(url, timeout=30)
    data = dict(form_fields(page.text, "login-form")) | {"username": EMAIL, "password": PASSWORD}
    signed_in = session.post(url, data=data, allow_redirects=False, timeout=30)
    if signed_in.status_code != 302:
        raise RuntimeError(f"{EMAIL} could not sign in: HTTP {signed_in.status_code}")


def _queries(user, path: str) -> int:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user, backend="apps.settings_area.access.AccessBackend")
    client.get(path)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    if response.status_code != 200:
        raise RuntimeError(f"{path} answered {response.status_code}")
    return len(captured)


def _seed():
    from apps.channels.models import Channel, Team
    from apps.posts.models import Post
    from apps.stories.models import Story, StoryPost
    from apps.users.models import Role, User, default_permissions_for

    account = make_account("Calendar bench")
    team = Team.objects.create(account=account, name="Editorial")
    channels = [
        Channel.objects.create(account=account, team=team, title="Company Blog", platform="blog"),
        Channel.objects.create(account=account, team=None, title="Product Blog", platform="blog"),
        Channel.objects.create(account=account, team=team, title="Partner API", platform="api"),
    ]
    user = User.objects.create_user(EMAIL, PASSWORD, account=account, role=Role.EDITOR, timezone="Europe/Berlin")
    user.permissions = default_permissions_for(Role.EDITOR)
    user.save()
    rng = random.Random(56)

    def when() -> datetime:
        return MONTH + timedelta(minutes=rng.randrange(31 * 24 * 60))

    kinds = ["planned"] * PLANNED + ["scheduled"] * SCHEDULED + ["undated"] * UNDATED
    stories = Story.objects.bulk_create([_story(account, n, kind, when) for n, kind in enumerate(kinds)])
    posts, links = [], []
    for story in stories:
        for channel in rng.sample(channels, rng.choice((1, 2))):
            posts.append(_post(channel, len(posts), story.publication_status, story.scheduled_at))
            links.append(story)
    posts = Post.objects.bulk_create(posts)
    StoryPost.objects.bulk_create([StoryPost(story=story, post=post) for story, post in zip(links, posts, strict=True)])
    lone = [_post(rng.choice(channels), len(posts) + n, "scheduled", when()) for n in range(LONE_SCHEDULED)]
    lone += [
        _post(rng.choice(channels), len(posts) + len(lone) + n, "published", when()) for n in range(LONE_PUBLISHED)
    ]
    Post.objects.bulk_create(lone)
    return user


def _story(account, n: int, kind: str, when):
    from apps.stories.models import Story

    story = Story(account=account, title=f"Story {n}: an announcement of some length", body="Text.")
    if kind == "planned":
        story.planned_for = when()
    elif kind == "scheduled":
        story.publication_status, story.scheduled_at = "scheduled", when()
    return story


def _post(channel, n: int, status: str, at: datetime | None):
    from apps.posts.models import Post

    post = Post(channel=channel, title=f"Post {n}", body="Text.", slug=f"calendar-{n}", publication_status=status)
    if status == "published":
        post.published_at = at
    elif status == "scheduled":
        post.scheduled_at = at
    return post


def calendar_section(result: dict) -> list[str]:
    month_p90 = percentile(result["times"]["month"], 90)
    lines = [
        "## Calendar (issue 56)",
        "",
        f"{ITEMS:,} items in March 2027 in one account ({PLANNED} planned and {SCHEDULED} scheduled stories on one or "
        f"two of three channels, {LONE_SCHEDULED} scheduled and {LONE_PUBLISHED} published posts of no story) and "
        f"{UNDATED} undated drafts, written in {result['seed_seconds']:.0f} s. An editor in Europe/Berlin signed in "
        f"to the Procfile's web process opens the month and the week of 15 March in turns: {WARMUP} rounds untimed, "
        f"{ROUNDS} timed, from the request to the last byte. Queries: one request through Django's test client in "
        f"this process. Target: the month's p90 under {TARGET_MS} ms.",
        "",
        "| page | median ms | p90 ms | KiB | queries | target |",
        "|---|---|---|---|---|---|",
    ]
    for name, times in result["times"].items():
        target = f"<{TARGET_MS} ms: {verdict(month_p90 < TARGET_MS)}" if name == "month" else ""
        lines.append(
            f"| {name} | {statistics.median(times):.0f} | {percentile(times, 90):.0f} | "
            f"{result['sizes'][name] / 1024:.0f} | {result['queries'][name]} | {target} |"
        )
    lines += ["", f"The part took {result['seconds']:.0f} s.", ""]
    return lines
