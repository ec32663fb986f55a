from datetime import datetime

from django.core.validators import URLValidator
from django.db import models
from django.db.models import F
from django.db.models.functions import Coalesce


class PublicationStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    SCHEDULED = "scheduled", "Scheduled"
    PUBLISHING_PENDING = "publishing_pending", "Publishing pending"
    PUBLISHED = "published", "Published"


class MediaKind(models.TextChoices):
    IMAGE = "image", "Image"
    VIDEO = "video", "Video"
    AUDIO = "audio", "Audio"
    DOCUMENT = "document", "Document"


# Only web addresses: an external_url or a media URL is something a reader's browser opens.
http_url_validator = URLValidator(schemes=["http", "https"])

TITLE_MAX_LENGTH = 300
SLUG_MAX_LENGTH = 200
META_TITLE_MAX_LENGTH = 300
META_DESCRIPTION_MAX_LENGTH = 1000
TEASER_MAX_LENGTH = 2000
EXTERNAL_ID_MAX_LENGTH = 255
URL_MAX_LENGTH = 2000
TAG_NAME_MAX_LENGTH = 100

# What a change of a post's state writes (apps/posts/services.py), for save(update_fields=...).
POST_STATE_FIELDS = ("publication_status", "scheduled_at", "published_at", "external_id", "external_url", "updated_at")


class Tag(models.Model):
    """A label of an account's posts; names are unique per account (case-sensitive)."""

    account = models.ForeignKey("accounts.Account", on_delete=models.CASCADE, related_name="tags")
    name = models.CharField(max_length=TAG_NAME_MAX_LENGTH)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["account", "name"], name="tag_unique_name_per_account")]

    def __str__(self) -> str:
        return self.name


def shown_at():
    """When a published post is shown as published: its `published_at`, or (written by a path that
    left it empty, such as a bulk load) its creation. The public site orders and dates by it."""
    return Coalesce("published_at", "created_at")


class PostQuerySet(models.QuerySet):
    def of_account(self, account_id: int) -> "PostQuerySet":
        return self.filter(channel__account_id=account_id)


class Post(models.Model):
    # The spec types `teaser` and `slug` as strings: a post without a teaser has "", and every post
    # has a slug (the services fill an empty one from the title). The SEO texts are null when absent.
    channel = models.ForeignKey("channels.Channel", on_delete=models.CASCADE, related_name="posts")
    title = models.CharField(max_length=TITLE_MAX_LENGTH)
    body = models.TextField(blank=True, default="", help_text="Markdown.")
    teaser = models.CharField(max_length=TEASER_MAX_LENGTH, blank=True, default="")
    slug = models.SlugField(
        max_length=SLUG_MAX_LENGTH,
        blank=True,
        help_text="Unique within the channel. Left empty, it is made from the title.",
    )
    publication_status = models.CharField(
        max_length=24, choices=PublicationStatus.choices, default=PublicationStatus.DRAFT
    )
    scheduled_at = models.DateTimeField(null=True, blank=True, help_text="When the content plan publishes the post.")
    published_at = models.DateTimeField(null=True, blank=True)
    meta_title = models.CharField(max_length=META_TITLE_MAX_LENGTH, null=True, blank=True)  # noqa: DJ001
    meta_description = models.CharField(max_length=META_DESCRIPTION_MAX_LENGTH, null=True, blank=True)  # noqa: DJ001
    external_id = models.CharField(max_length=EXTERNAL_ID_MAX_LENGTH, null=True, blank=True)  # noqa: DJ001
    external_url = models.URLField(  # noqa: DJ001
        max_length=URL_MAX_LENGTH, null=True, blank=True, validators=[http_url_validator]
    )
    tags = models.ManyToManyField(Tag, blank=True, related_name="posts")
    # The uploaded images its body shows (`![alt](/media/<name>)`), kept by the content services
    # from the body: what a destination carries with it, and what the media library must not delete.
    body_media = models.ManyToManyField("media.Medium", blank=True, related_name="shown_in", editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # The post's place in its channel's change feed (apps/posts/changes.py): written by the
    # database's triggers (posts 0006) at every change of the post or of what its single form
    # shows, whatever Python wrote into it.
    change_position = models.BigIntegerField(default=0, db_default=0, editable=False)

    objects = PostQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["channel", "id"], name="post_channel_id"),
            models.Index(fields=["channel", "publication_status", "id"], name="post_channel_status_id"),
            models.Index(fields=["channel", "updated_at"], name="post_channel_updated"),
            # A blog's pages: its published posts, newest first (apps/posts/selectors.py).
            models.Index(
                F("channel"), F("publication_status"), shown_at().desc(), F("id").desc(), name="post_channel_public"
            ),
            # The content plan's scan for scheduled posts whose time has come.
            models.Index(fields=["publication_status", "scheduled_at"], name="post_status_scheduled"),
            # The change feed's pages: a channel's posts in the order their changes committed.
            models.Index(fields=["channel", "change_position", "id"], name="post_channel_changes"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["channel", "slug"],
                name="post_unique_slug_per_channel",
                violation_error_message="Another post of this channel already has this slug.",
                violation_error_code="unique",
            ),
            # The services always fill it; this keeps any other writer (raw SQL, a fixture) honest.
            models.CheckConstraint(
                condition=~models.Q(slug=""),
                name="post_slug_not_empty",
                violation_error_message="A post needs a slug.",
                violation_error_code="required",
            ),
        ]

    def __str__(self) -> str:
        return self.title


class Media(models.Model):
    """A file attached to a post. `width`/`height` are pixels, known for images and videos only."""

    post = models.ForeignKey(Post, on_delete=models.CASCADE, related_name="media")
    # The uploaded medium it shows (its url, size and kind are copied from it), or null for a file
    # that lives elsewhere. A draft's attachment goes with the medium; a live post's keeps it
    # (apps/media/services.py refuses the deletion).
    medium = models.ForeignKey(
        "media.Medium", null=True, blank=True, on_delete=models.CASCADE, related_name="attachments"
    )
    kind = models.CharField(max_length=16, choices=MediaKind.choices, default=MediaKind.IMAGE)
    url = models.URLField(max_length=URL_MAX_LENGTH, validators=[http_url_validator])
    alt_text = models.CharField(max_length=500, blank=True, default="")
    width = models.PositiveIntegerField(null=True, blank=True)
    height = models.PositiveIntegerField(null=True, blank=True)
    position = models.PositiveSmallIntegerField(default=0, help_text="Order within the post, from 0.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["position", "id"]
        verbose_name_plural = "media"

    def __str__(self) -> str:
        return self.url


class ApiPublication(models.Model):
    """The record of a post on an `api` channel that entered the external publishing workflow.

    Created when the post becomes `publishing_pending`; `confirmed_at` and the external fields are
    set when the external system confirms (publish) and cleared when it unpublishes. The record
    stays, so a post that enters the workflow again reuses it.
    """

    post = models.OneToOneField(Post, on_delete=models.CASCADE, related_name="api_publication")
    created_at = models.DateTimeField(auto_now_add=True)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    external_id = models.CharField(max_length=EXTERNAL_ID_MAX_LENGTH, null=True, blank=True)  # noqa: DJ001
    external_url = models.URLField(max_length=URL_MAX_LENGTH, null=True, blank=True)  # noqa: DJ001

    class Meta:
        verbose_name = "API publication record"

    def __str__(self) -> str:
        return f"API publication of post {self.post_id}"

    def confirm(self, *, at: datetime, external_id: str | None, external_url: str | None) -> None:
        self.confirmed_at = at
        self.external_id = external_id
        self.external_url = external_url

    def reset(self) -> None:
        self.confirmed_at = None
        self.external_id = None
        self.external_url = None


class PostDeletion(models.Model):
    """A post that left a channel (deleted, or moved to another channel): the change feed's
    tombstone, kept CHANGES_RETENTION. Written by the database's triggers (posts 0006), which
    Django's cascades (a channel deleted with its posts) pass through too; hence plain ids, no
    foreign keys: the post, and perhaps its channel, are gone."""

    post_id = models.BigIntegerField()
    channel_id = models.BigIntegerField()
    deleted_at = models.DateTimeField()
    # As Post.change_position: where the deletion stands in the channel's feed.
    position = models.BigIntegerField()

    class Meta:
        indexes = [
            models.Index(fields=["channel_id", "position", "post_id"], name="postdeletion_channel_feed"),
            # A post moved back into a channel drops its tombstone there.
            models.Index(fields=["post_id"], name="postdeletion_post"),
            # The retention sweep (apps/posts/changes.py).
            models.Index(fields=["deleted_at"], name="postdeletion_deleted_at"),
        ]

    def __str__(self) -> str:
        return f"Deletion of post {self.post_id} from channel {self.channel_id}"


class ChangeFeedState(models.Model):
    """One row (id 1): the change feed's `floor`, the highest position of a tombstone the
    retention sweep deleted (a cursor at or below it may have missed a deletion: 410); and, on
    SQLite only, `clock`, the last position given to a change (PostgreSQL uses transaction ids)."""

    floor = models.BigIntegerField(default=0)
    clock = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"Change feed floor {self.floor}"
