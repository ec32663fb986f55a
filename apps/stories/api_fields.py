"""The body of the stories' writes: the story's fields in a `story` object, its posts' fields as the
posts' write API takes them (apps/posts/write_api.py), plus what only a story has (its plan, its
channels and what each overrides)."""

from rest_framework import serializers

from apps.api.request_fields import StrictCharField, StrictSerializer
from apps.posts.models import META_DESCRIPTION_MAX_LENGTH, META_TITLE_MAX_LENGTH, TEASER_MAX_LENGTH, TITLE_MAX_LENGTH
from apps.posts.write_api import PostFieldsSerializer
from apps.stories.models import StoryStatus

# Fields of the story's representation that a client reads but does not write.
READ_ONLY_FIELDS = ("id", "state", "posts", "created_at", "updated_at")
# More channels than an account reasonably sends one text to is a mistake, not a story.
CHANNELS_MAX = 50
OVERRIDE = "Empty or null: the story's text."


def _override(max_length: int | None = None) -> StrictCharField:
    return StrictCharField(required=False, allow_blank=True, allow_null=True, max_length=max_length, help_text=OVERRIDE)


class OverridesFieldsSerializer(StrictSerializer):
    """The fields one channel shows its own way (a social network's commentary, an e-mail's subject
    and preview line, a shorter blog title); a field absent, empty or null is the story's."""

    title = _override(TITLE_MAX_LENGTH)
    body = _override()
    teaser = _override(TEASER_MAX_LENGTH)
    meta_title = _override(META_TITLE_MAX_LENGTH)
    meta_description = _override(META_DESCRIPTION_MAX_LENGTH)


class ChannelEntrySerializer(StrictSerializer):
    """A channel the story is sent to: the account's channel, once in the list."""

    id = serializers.IntegerField(min_value=1, help_text="A channel of the account (/v1/channels).")
    overrides = OverridesFieldsSerializer(
        required=False,
        help_text="The channel's own texts; they replace the channel's overrides. Absent: a new channel overrides "
        "nothing, a channel already chosen keeps its overrides.",
    )


class StoryFieldsSerializer(PostFieldsSerializer):
    """A story's writable fields: those of a post but its `slug` (each post makes its own), a status
    asked of every post, a plan, and the channels. On PATCH every field is optional and only those
    sent change."""

    read_only_fields = READ_ONLY_FIELDS

    slug = None
    publication_status = serializers.ChoiceField(
        choices=StoryStatus.choices,
        required=False,
        help_text="What is asked of every post of the story: `draft` (default on create); `scheduled` with a future "
        "`scheduled_at`; `published`: publish now (an `api` channel's post is scheduled for now, and the content "
        "plan hands it to the external system). `state` says what happened.",
    )
    scheduled_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="When the story's posts publish (a commitment); only with `publication_status` `scheduled` (now or "
        "already), and in the future (400 `future`).",
    )
    planned_for = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="When the story is meant to go out, for the calendar: a plan, which publishes nothing. Null: none.",
    )
    channels = serializers.ListField(
        child=ChannelEntrySerializer(),
        required=False,
        max_length=CHANNELS_MAX,
        help_text="The channels the story is sent to, each with its overrides: each gets its post of the story. On "
        "PATCH the list replaces the channels: a new one gets its post (in the story's status), one left out has "
        "its post deleted (`articles.delete`), as a post's delete does.",
    )


class StoryBodySerializer(StrictSerializer):
    """The body of POST: the story's fields in a `story` object; `title` is required."""

    story = StoryFieldsSerializer()


class StoryChangesSerializer(StoryFieldsSerializer):
    """The fields to change; those not sent stay as they are."""

    title = StrictCharField(max_length=TITLE_MAX_LENGTH, required=False)


class StoryChangesBodySerializer(StrictSerializer):
    """The body of PATCH: the fields to change in a `story` object (none, or no `story`: nothing changes)."""

    story = StoryChangesSerializer(required=False)
