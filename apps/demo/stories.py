"""Demo stories of one account, for `seed_demo`: one story sent to every channel and scheduled, with
each destination's own words where it needs them; one planned (a plan, which publishes nothing); an
undated draft for the calendar's tray. Found again by title on a second run, not added twice."""

from datetime import timedelta

from django.utils import timezone

from apps.accounts.models import Account
from apps.channels.models import Channel
from apps.posts.writing import Writer
from apps.stories.models import Story
from apps.stories.services import ChannelChoice, story_create

LAUNCH = "Spring release: what is new"
ROADMAP = "Our roadmap for the year"
IDEAS = "Ideas: what customers told us"


def seed_stories(account: Account, channels: dict[str, Channel]) -> dict[str, int]:
    """The demo stories by label, as ids."""
    editor = Writer(may_publish=True)
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    specs = {
        "scheduled": {
            "title": LAUNCH,
            "body": "# Spring release\n\nFaster pages, a calendar of everything planned, and stories that reach "
            "every channel at once.",
            "teaser": "Faster pages, a calendar, and stories for every channel.",
            "tag_names": ["release", "news"],
            "publication_status": "scheduled",
            "scheduled_at": now + timedelta(days=6, hours=9),
            "channels": [
                ChannelChoice(channels["blog"].pk),
                ChannelChoice(channels["git"].pk),
                ChannelChoice(
                    channels["linkedin"].pk,
                    {
                        "teaser": "Our spring release is out: a calendar of everything planned, and one story to "
                        "every channel. #release"
                    },
                ),
                ChannelChoice(channels["mastodon"].pk),
                ChannelChoice(channels["bluesky"].pk),
                ChannelChoice(
                    channels["newsletter"].pk,
                    {"title": "Spring release: your monthly letter", "teaser": "What is new this spring."},
                ),
                ChannelChoice(channels["api"].pk),
            ],
        },
        "planned": {
            "title": ROADMAP,
            "body": "# Roadmap\n\nWhat we plan to build this year.",
            "planned_for": now + timedelta(days=12, hours=10),
            "channels": [ChannelChoice(channels["blog"].pk), ChannelChoice(channels["linkedin"].pk)],
        },
        "undated": {
            "title": IDEAS,
            "body": "Notes from customer interviews, to be written up.",
            "channels": [ChannelChoice(channels["blog"].pk)],
        },
    }
    stories = {}
    for label, spec in specs.items():
        story = Story.objects.filter(account=account, title=spec["title"]).first()
        stories[label] = (story or story_create(account_id=account.pk, writer=editor, **spec)).pk
    return stories
