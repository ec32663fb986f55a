"""Demo channels and posts of one account, for `seed_demo` (apps/demo/seed.py).

Running it again finds everything by name or slug instead of adding more, and puts the posts of
the `api` channel back into their documented states, so the publish walkthrough of the README
can be repeated after a fresh `seed_demo`.
"""

from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone
from dulwich.repo import Repo

from apps.accounts.models import Account
from apps.channels.models import Channel, Platform, Team
from apps.demo.pictures import demo_cover
from apps.demo.stories import seed_stories
from apps.posts.api_workflow import post_mark_publishing_pending, post_publish
from apps.posts.editor_status import post_set_status
from apps.posts.lifecycle import posts_put
from apps.posts.models import ApiPublication, Post, PublicationStatus, Tag
from apps.posts.services import MediaInput, post_create
from apps.publishing.git.models import GitDestination
from apps.publishing.git.services import GitSettings, git_destination_save
from apps.publishing.newsletter.services import ImportRow, subscribers_import
from apps.publishing.services import channel_run

TEAMS = ("Editorial", "Engineering")
TAGS = ("news", "howto", "release", "python", "django")
# label in seed_demo's output: (title, platform, team or None)
CHANNELS = {
    "blog": ("Company Blog", Platform.BLOG, "Editorial"),
    "git": ("Docs Site", "git", "Engineering"),
    "linkedin": ("LinkedIn Page", "linkedin", None),
    "mastodon": ("Mastodon", "mastodon", None),
    "bluesky": ("Bluesky", "bluesky", None),
    "newsletter": ("Company Newsletter", "newsletter", "Editorial"),
    "api": ("Partner Feed", Platform.API, "Editorial"),
}
ARCHIVE_SIZE = 120  # posts of the blog, to page through
ARCHIVE_STATUSES = (PublicationStatus.PUBLISHED, PublicationStatus.PUBLISHED, PublicationStatus.DRAFT)
# label in seed_demo's output: (slug, title) of the `api` channel's workflow posts
API_POSTS = {
    "pending_with_record": ("awaiting-confirmation", "Awaiting confirmation by the partner"),
    "pending_without_record": ("pending-without-record", "Pending, but never handed over (no record)"),
    "published_with_record": ("confirmed-by-partner", "Confirmed by the partner"),
    "draft": ("partner-draft", "A draft for the partner feed"),
    "scheduled_past": ("scheduled-time-passed", "Scheduled, its time has passed"),
    "scheduled_future": ("scheduled-next-week", "Scheduled for next week"),
}
IMAGE = "https://picsum.photos/seed/{}/1200/630"
# The newsletter's confirmed readers, at a domain that takes no mail (RFC 2606).
SUBSCRIBERS = {
    "ada@example.com": "Ada Lovelace",
    "grace@example.com": "Grace Hopper",
    "alan@example.com": "Alan Turing",
    "katherine@example.com": "Katherine Johnson",
}


def _post(channel: Channel, slug: str, title: str, **content) -> Post:
    post = Post.objects.filter(channel=channel, slug=slug).first()
    return post or post_create(channel=channel, slug=slug, title=title, body=f"# {title}\n\nDemo content.", **content)


def demo_repository(account: Account) -> Path:
    return Path(settings.VAR_DIR) / "demo-git" / f"account-{account.pk}.git"


def _seed_git_destination(channel: Channel) -> str | None:
    """Point the demo git channel at a local bare repository under var/ (where local repositories
    are allowed: `make run` allows them), so publishing makes real commits. Elsewhere (a seed run
    by hand, without `make run`'s GIT_ALLOW_LOCAL_REPOSITORIES) the channel keeps the repository it
    has, if any, which is the one reported."""
    if not settings.GIT_ALLOW_LOCAL_REPOSITORIES:
        destination = GitDestination.objects.filter(channel=channel).first()
        return destination.repository_url if destination else None
    path = demo_repository(channel.account)
    if not (path / "objects").is_dir():
        path.mkdir(parents=True, exist_ok=True)
        repo = Repo.init_bare(str(path))
        # HEAD names the branch the channel publishes to, so `git log` there shows its commits.
        repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
        repo.close()
    git_destination_save(
        channel=channel,
        settings=GitSettings(
            repository_url=str(path),
            author_name="Demo Publisher",
            author_email="publisher@example.com",
            post_url_template="https://docs.example.com/posts/{slug}/",
        ),
    )
    return str(path)


def _seed_direct_channel(channel: Channel, tags: dict[str, Tag]) -> None:
    """Posts in each status a directly publishing channel has. A git channel with its demo
    repository publishes through the pipeline, here and now; a git or social channel without a
    destination gets its published post written straight into its state, being demo data."""
    now = timezone.now()
    for status in (PublicationStatus.DRAFT, PublicationStatus.SCHEDULED, PublicationStatus.PUBLISHED):
        post = _post(
            channel,
            f"{channel.platform}-{status}",
            f"{channel.title}: a {status} post",
            teaser=f"A {status} post on {channel.title}.",
            tags=[tags["news"], tags["howto"]] if status == PublicationStatus.PUBLISHED else [],
            media=[MediaInput(medium=demo_cover(channel.account).pk)],
        )
        scheduled_at = now + timedelta(days=3) if status == PublicationStatus.SCHEDULED else None
        published_without_destination = status == PublicationStatus.PUBLISHED and not hasattr(
            channel, "git_destination"
        )
        if published_without_destination and channel.publishes_through_destination:
            posts_put(post_ids=[post.pk], status=status, now=now)
            continue
        post_set_status(post_id=post.pk, status=status, scheduled_at=scheduled_at)
    if channel.publishes_through_destination and hasattr(channel, "git_destination"):
        channel_run(channel.pk)


def _seed_archive(channel: Channel) -> None:
    """Many posts to page through; written in bulk, straight into their states, being demo data."""
    now = timezone.now()
    existing = set(channel.posts.filter(slug__startswith="archive-").values_list("slug", flat=True))
    missing = []
    for number in range(1, ARCHIVE_SIZE + 1):
        slug = f"archive-{number:03d}"
        if slug in existing:
            continue
        status = ARCHIVE_STATUSES[number % len(ARCHIVE_STATUSES)]
        missing.append(
            Post(
                channel=channel,
                slug=slug,
                title=f"Archive post {number}",
                body=f"Archived article number {number}.",
                teaser=f"From the archive, number {number}.",
                publication_status=status,
                published_at=now - timedelta(days=number) if status == PublicationStatus.PUBLISHED else None,
            )
        )
    Post.objects.bulk_create(missing)


def _seed_subscribers(channel: Channel) -> None:
    """A few people who opted in (as a person running a newsletter imports them); on a second run
    those there already, or who unsubscribed meanwhile, are left as they are."""
    rows = (
        ImportRow(line=line, email=email, name=name) for line, (email, name) in enumerate(SUBSCRIBERS.items(), start=1)
    )
    subscribers_import(channel=channel, rows=rows, confirmed=True)


def _seed_api_channel(channel: Channel, tags: dict[str, Tag]) -> dict[str, int]:
    now = timezone.now()
    posts = {}
    for label, (slug, title) in API_POSTS.items():
        post = _post(channel, slug, title, teaser=f"{title}.")
        # Back to a clean draft outside the workflow, then through the services into the state.
        ApiPublication.objects.filter(post=post).delete()
        posts_put(post_ids=[post.pk], status=PublicationStatus.DRAFT, now=now, scheduled_at=None)
        posts[label] = post.pk
    post_set_status(
        post_id=posts["scheduled_past"], status="scheduled", scheduled_at=now - timedelta(hours=1), allow_past=True
    )
    post_set_status(post_id=posts["scheduled_future"], status="scheduled", scheduled_at=now + timedelta(days=7))
    post_mark_publishing_pending(post_id=posts["pending_with_record"])
    published = post_mark_publishing_pending(post_id=posts["published_with_record"])
    post_publish(
        post_id=published.pk,
        channel_id=channel.pk,
        account=channel.account,
        external_id="partner-1001",
        external_url="https://partner.example.com/articles/1001",
    )
    published.tags.set([tags["release"], tags["news"]])
    if not published.media.exists():
        published.media.create(url=IMAGE.format(f"{channel.pk}-confirmed"), alt_text="Cover", width=1200, height=630)
    # The workflow never leaves a post pending without its record; the demo does, so that the
    # `no_publication` rule can be tried.
    posts_put(post_ids=[posts["pending_without_record"]], status=PublicationStatus.PUBLISHING_PENDING, now=now)
    return posts


def seed_content(account: Account) -> dict:
    """Teams, one channel per platform (one without a team), posts in every status of every
    platform, 120+ posts on the blog, the `api` workflow cases, tags and media, the
    newsletter's confirmed subscribers, and stories (apps/demo/stories.py)."""
    teams = {name: Team.objects.get_or_create(account=account, name=name)[0] for name in TEAMS}
    tags = {name: Tag.objects.get_or_create(account=account, name=name)[0] for name in TAGS}
    channels = {}
    for label, (title, platform, team) in CHANNELS.items():
        channels[label], _ = Channel.objects.update_or_create(
            account=account, title=title, defaults={"platform": platform, "team": teams.get(team)}
        )
    for label, description in (("blog", "News and notes"), ("newsletter", "A letter a month")):
        if not channels[label].description:
            channels[label].description = f"{description} from {account.name}."
            channels[label].save(update_fields=["description"])
    repository = _seed_git_destination(channels["git"])
    channels["git"].refresh_from_db()
    for label in ("blog", "git", "linkedin", "mastodon", "bluesky", "newsletter"):
        _seed_direct_channel(channels[label], tags)
    _seed_archive(channels["blog"])
    _seed_subscribers(channels["newsletter"])
    api_posts = _seed_api_channel(channels["api"], tags)
    return {
        "channels": {label: channel.pk for label, channel in channels.items()},
        "posts": api_posts,
        "stories": seed_stories(account, channels),
        "git_repository": repository,
        "blog_url": channels["blog"].public_url(),
        "newsletter_url": channels["newsletter"].public_url(),
    }
