"""A story: one text written once and sent to several channels of an account, each of which gets its
post of it (the spec's posts, unchanged). The story keeps the shared text and what is asked of its
posts (a status and a time); each post keeps its own state on its destination; the story's state
is read from theirs (apps/stories/states.py)."""

from django.conf import settings
from django.db import models

from apps.core.fields import JSONField
from apps.posts.models import (
    META_DESCRIPTION_MAX_LENGTH,
    META_TITLE_MAX_LENGTH,
    TEASER_MAX_LENGTH,
    TITLE_MAX_LENGTH,
)

# The fields of a story a channel may override; an empty override falls back to the story's.
OVERRIDABLE = ("title", "body", "teaser", "meta_title", "meta_description")


class StoryStatus(models.TextChoices):
    """What is asked of the story's posts (the posts' own statuses say what happened)."""

    DRAFT = "draft", "Draft"
    SCHEDULED = "scheduled", "Scheduled"
    PUBLISHED = "published", "Published"


class StoryState(models.TextChoices):
    """What happened, read from the posts' states on their destinations."""

    DRAFT = "draft", "Draft"
    SCHEDULED = "scheduled", "Scheduled"
    PUBLISHING = "publishing", "Publishing"
    PUBLISHED = "published", "Published"
    PARTIALLY_PUBLISHED = "partially_published", "Partially published"
    FAILED = "failed", "Failed"


class DestinationState(models.TextChoices):
    """One post of a story on its channel's destination."""

    DRAFT = "draft", "Draft"
    SCHEDULED = "scheduled", "Scheduled"
    PUBLISHING = "publishing", "Publishing"
    PUBLISHED = "published", "Published"
    FAILED = "failed", "Failed"


class Story(models.Model):
    account = models.ForeignKey("accounts.Account", on_delete=models.CASCADE, related_name="stories")
    title = models.CharField(max_length=TITLE_MAX_LENGTH)
    body = models.TextField(blank=True, default="", help_text="Markdown.")
    teaser = models.CharField(max_length=TEASER_MAX_LENGTH, blank=True, default="")
    meta_title = models.CharField(max_length=META_TITLE_MAX_LENGTH, blank=True, default="")
    meta_description = models.CharField(max_length=META_DESCRIPTION_MAX_LENGTH, blank=True, default="")
    tags = models.ManyToManyField("posts.Tag", blank=True, related_name="stories")
    # The media items every post of the story gets, as the posts' write API takes them:
    # [{"medium": id, "alt_text": ...} or {"url": ..., "kind", "alt_text", "width", "height"}].
    media = JSONField(default=list, blank=True)
    publication_status = models.CharField(max_length=16, choices=StoryStatus.choices, default=StoryStatus.DRAFT)
    # When its posts publish (a commitment: the content plan publishes them then).
    scheduled_at = models.DateTimeField(null=True, blank=True)
    # When it is meant to go out (a plan: publishes nothing), for the calendar.
    planned_for = models.DateTimeField(null=True, blank=True)
    # The last state a story.* event announced ("" while none): each state is announced once, and
    # again only after the story left it (a retry that publishes a partial story announces it).
    announced = models.CharField(max_length=24, blank=True, default="", editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "stories"
        indexes = [
            models.Index(fields=["account", "-id"], name="story_account_newest"),
            # The calendar's months and weeks: an account's stories by their time.
            models.Index(fields=["account", "scheduled_at"], name="story_account_scheduled"),
            models.Index(fields=["account", "planned_for"], name="story_account_planned"),
        ]

    def __str__(self) -> str:
        return self.title


class StoryPost(models.Model):
    """The post of a story on one of its channels, with the fields this channel overrides."""

    story = models.ForeignKey(Story, on_delete=models.CASCADE, related_name="links")
    post = models.OneToOneField("posts.Post", on_delete=models.CASCADE, related_name="story_link")
    # {field: text} for the fields of OVERRIDABLE this channel shows its own way; absent or empty:
    # the story's text.
    overrides = JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"Post {self.post_id} of story {self.story_id}"


class CalendarFeed(models.Model):
    """A user's iCalendar feed of their account's schedule: a secret address a calendar app reads
    without signing in (apps/stories/feeds.py). The secret is the credential, so only its digest is
    stored, as an API key's is; the address is shown once, when made. Revoking deletes the row."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="calendar_feed")
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    # When the current secret was made (a replacement makes a new one).
    created_at = models.DateTimeField(editable=False)
    last_read_at = models.DateTimeField(null=True, blank=True, editable=False)

    def __str__(self) -> str:
        return f"Calendar feed of {self.user_id}"
