"""Every shape of a post, in one module: the API's list, single-post and workflow forms, the
`data.post` and `data.publication` of webhook bodies, and the document a publishing destination
writes (a file with its front matter, a social post's text, an edition mailed). Change how a
post looks here, and every reader of it follows.

The API's forms render the rows the selectors read (selectors.py plans each form's columns: a field
added here needs its column there, or tests/posts/test_read_columns.py fails); the serializers
decide no SQL. apps/api/representations.py keeps rendered responses, keyed by a digest of the code
that makes them.
"""

from collections.abc import Iterable
from datetime import datetime

from rest_framework import serializers

from apps.channels.models import Channel
from apps.channels.serializers import ChannelRefSerializer, ChannelSerializer
from apps.core.destinations import Document
from apps.core.lookups import AnyOf
from apps.core.markdown import markdown_text, summary
from apps.core.serializers import ResponseSerializer, UtcDateTimeField
from apps.posts import selectors
from apps.posts.models import MediaKind, Post, PublicationStatus
from apps.publishing.models import JobAction, JobState
from apps.publishing.selectors import publication_row


class TagSerializer(ResponseSerializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class MediaSerializer(ResponseSerializer):
    id = serializers.IntegerField()
    medium = serializers.IntegerField(
        allow_null=True, help_text="The uploaded medium it shows (/v1/media/{id}); null for an external address."
    )
    kind = serializers.ChoiceField(choices=MediaKind.choices)
    url = serializers.CharField()
    alt_text = serializers.CharField(help_text="Empty when not given.")
    width = serializers.IntegerField(allow_null=True, help_text="Pixels; null when not known.")
    height = serializers.IntegerField(allow_null=True, help_text="Pixels; null when not known.")


class StoryRefSerializer(ResponseSerializer):
    id = serializers.IntegerField(help_text="The story's id (/v1/stories/{id}).")


class PostListItemSerializer(ResponseSerializer):
    """The list form (no `body`)."""

    id = serializers.IntegerField()
    title = serializers.CharField()
    teaser = serializers.CharField(help_text="Short summary; an empty string when the post has none.")
    slug = serializers.CharField(
        min_length=1, help_text="URL-safe identifier, unique in the channel; made from the title when not given."
    )
    publication_status = serializers.ChoiceField(choices=PublicationStatus.choices)
    created_at = UtcDateTimeField()
    updated_at = UtcDateTimeField()
    channel = ChannelSerializer()


class PostContentSerializer(PostListItemSerializer):
    """The post with all it holds: the single-post form and the `data.post` of webhook deliveries
    (the spec's "full post at the time of the event", so the external references too)."""

    body = serializers.CharField(help_text="Markdown.")
    published_at = UtcDateTimeField(allow_null=True)
    meta_title = serializers.CharField(allow_null=True)
    meta_description = serializers.CharField(allow_null=True)
    tags = TagSerializer(many=True)
    media = MediaSerializer(many=True)
    external_id = serializers.CharField(
        allow_null=True, help_text="Set by the publish call on `api` channels; null otherwise."
    )
    external_url = serializers.CharField(
        allow_null=True, help_text="Set by the publish call on `api` channels; null otherwise."
    )
    story = StoryRefSerializer(
        allow_null=True,
        help_text="The story the post is its channel's post of (/v1/stories); null for a post of its own.",
    )


class RecipientsSerializer(ResponseSerializer):
    """The recipients of a post that its destination mails, by the state of their delivery."""

    total = serializers.IntegerField(help_text="Recipients when the send started (confirmed, not suppressed).")
    pending = serializers.IntegerField(help_text="Not sent yet (waiting for their turn or a retry).")
    sent = serializers.IntegerField(help_text="Accepted by the mail server or provider.")
    failed = serializers.IntegerField(help_text="Refused for good (a hard bounce suppresses the address).")
    suppressed = serializers.IntegerField(
        help_text="Skipped: unsubscribed, suppressed or erased since the send started."
    )
    uncertain = serializers.IntegerField(
        help_text="Being sent when the sender stopped (a crash, a lost connection): may or may not have arrived. Never "
        "sent again unless an account member decides so in the Settings area."
    )


class PublicationSerializer(ResponseSerializer):
    """The post's latest publication job on its channel's destination."""

    id = serializers.IntegerField()
    action = serializers.ChoiceField(choices=JobAction.choices)
    state = serializers.ChoiceField(choices=JobState.choices)
    attempts = serializers.IntegerField()
    last_error = serializers.CharField(
        allow_null=True, help_text="What went wrong last, as a sentence; null when nothing did."
    )
    reference = serializers.CharField(
        allow_null=True, help_text="The destination's reference (a commit id, a post's id)."
    )
    url = serializers.CharField(
        allow_null=True, help_text="The post's page, where the channel has a web address for it."
    )
    updated_at = UtcDateTimeField()
    recipients = RecipientsSerializer(
        allow_null=True,
        help_text="The recipient counts of a post its destination mails, once its send has started; null for "
        "other posts.",
    )


class PostDetailSerializer(PostContentSerializer):
    """The single-post form: the full post, where readers find it, and its publication on the
    channel's destination."""

    scheduled_at = UtcDateTimeField(
        allow_null=True,
        help_text="When the content plan publishes the post, while it is `scheduled`; null in every other status.",
    )
    url = serializers.CharField(
        allow_null=True,
        help_text="Where readers find the post, once `published`: its page on the channel's blog (blog channels), "
        "the page its destination reported, or `external_url` (api channels). Null otherwise.",
    )
    publication = PublicationSerializer(
        allow_null=True,
        help_text="The latest publication job of a post of a channel that publishes through a destination; null "
        "where there is none.",
    )


class PostWorkflowResultSerializer(PostContentSerializer):
    """The post returned by publish and unpublish: the single-post form whose channel has only
    `id`, `title` and `platform`."""

    channel = ChannelRefSerializer()
    # The spec's publish and unpublish answers: the post's own fields (its story is in its single form).
    story = None


def publication_webhook_data(job) -> dict:
    """A job as `data.publication` of webhook bodies: the API's `publication` object."""
    return PublicationSerializer(publication_row(job)).data


def posts_webhook_data(post_ids: Iterable[int], channels: dict | None = None) -> list[tuple[Channel, int, dict]]:
    """(channel with its account, post id, `data.post`) for each post, in id order.

    `channels` (id -> channel, with its account and posts_count), when given, is used and filled
    in: a caller rendering many batches reads each channel once.
    """
    return rows_webhook_data(
        selectors.post_rows(Post.objects.filter(AnyOf("id", post_ids)), selectors.CONTENT_COLUMNS, channels=channels)
    )


def rows_webhook_data(rows: list) -> list[tuple[Channel, int, dict]]:
    """posts_webhook_data of rows read with selectors.CONTENT_COLUMNS: no query."""
    # One serializer for the batch: each channel is rendered once, not once per post.
    data = PostContentSerializer(rows, many=True).data
    return [(row.channel, row.id, item) for row, item in zip(rows, data, strict=True)]


def post_webhook_data(post: Post, *, channel: Channel | None = None) -> dict:
    """`data.post` of one post; `channel` (with its account and team), when the caller has read it,
    is not read again."""
    [(_, _, data)] = posts_webhook_data([post.pk], None if channel is None else {channel.pk: channel})
    return data


def document(
    post: Post,
    *,
    action: str,
    published_at: datetime | None,
    link: str | None,
    tags: list[str] | None = None,
    images: tuple | None = None,
) -> Document:
    """The post as a destination writes it (a file with its front matter, a social post's
    text, an edition mailed), for a job of `action`; `link` is its page on the account's blog.
    `tags` (by name) and `images` (selectors.post_images) are read for it when not given."""
    return Document(
        post_id=post.pk,
        title=post.title,
        slug=post.slug,
        body=post.body,
        # A first publication is dated by its job (the same on every attempt); an update keeps the
        # post's date and says when it changed.
        published_at=post.published_at or published_at or post.updated_at,
        tags=list(post.tags.order_by("name").values_list("name", flat=True)) if tags is None else tags,
        description=description(post),
        teaser=post.teaser,
        updated_at=post.updated_at if action == JobAction.UPDATE else None,
        link=link,
        images=selectors.post_images(post) if images is None else images,
    )


# --- What readers are shown of a post before its body: the blog's lists, its pages' descriptions,
# the feed, the front matter's `description`.


def excerpt(post, *, limit: int) -> str:
    """The post in a list: its teaser, else the beginning of its body as plain text."""
    return summary(post.teaser, post.body, limit=limit)


def description(post, *, limit: int | None = None) -> str | None:
    """The post's description (search results, shares, front matter): its meta description, else
    its teaser, else (given a `limit`) the beginning of its body; None when it has none."""
    if post.meta_description or post.teaser or limit is None:
        return post.meta_description or post.teaser or None
    return markdown_text(post.body, limit=limit)
