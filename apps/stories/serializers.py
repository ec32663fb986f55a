"""Every shape of a story, in one module: the API's form (`data` of /v1/stories) and the `data.story`
of the story.* webhook events, the same."""

from rest_framework import serializers

from apps.channels.serializers import ChannelRefSerializer
from apps.core.serializers import UtcDateTimeField
from apps.posts.models import PublicationStatus
from apps.posts.serializers import PublicationSerializer, TagSerializer
from apps.stories.models import OVERRIDABLE, DestinationState, StoryState, StoryStatus


class OverridesSerializer(serializers.Serializer):
    """The fields a channel shows its own way; a field absent is the story's text."""

    title = serializers.CharField(required=False)
    body = serializers.CharField(required=False)
    teaser = serializers.CharField(required=False)
    meta_title = serializers.CharField(required=False)
    meta_description = serializers.CharField(required=False)

    def to_representation(self, instance):
        return {name: instance[name] for name in OVERRIDABLE if instance.get(name)}


class StoryPostSerializer(serializers.Serializer):
    """The story's post on one of its channels."""

    id = serializers.IntegerField(source="post_id", help_text="The post's id (/v1/channels/{channel}/posts/{id}).")
    title = serializers.CharField(help_text="The post's title: the story's, or the channel's override.")
    channel = ChannelRefSerializer()
    publication_status = serializers.ChoiceField(choices=PublicationStatus.choices)
    state = serializers.ChoiceField(
        choices=DestinationState.choices,
        help_text="What the post is on its destination: `publishing` while a job or the external system has it, "
        "`failed` when its publication failed for good (POST /v1/stories/{id}/retry tries it again).",
    )
    scheduled_at = UtcDateTimeField(allow_null=True)
    published_at = UtcDateTimeField(allow_null=True)
    publication = PublicationSerializer(
        allow_null=True, help_text="The post's latest publication job on its channel's destination; null where none."
    )
    url = serializers.CharField(allow_null=True, help_text="Where readers find the post, once published.")
    overrides = OverridesSerializer(help_text="The fields this channel overrides.")


class MediaItemSerializer(serializers.Serializer):
    medium = serializers.IntegerField(required=False, allow_null=True)
    url = serializers.CharField(required=False)
    kind = serializers.CharField(required=False)
    alt_text = serializers.CharField(required=False)
    width = serializers.IntegerField(required=False, allow_null=True)
    height = serializers.IntegerField(required=False, allow_null=True)

    def to_representation(self, instance):
        return dict(instance)


class StorySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    body = serializers.CharField(help_text="Markdown.")
    teaser = serializers.CharField()
    meta_title = serializers.SerializerMethodField()
    meta_description = serializers.SerializerMethodField()
    # The tags' own order (name, id): prefetched for a page of stories, read for one.
    tags = TagSerializer(many=True, source="tags.all")
    media = MediaItemSerializer(many=True, help_text="The media every post of the story gets, as written.")
    publication_status = serializers.ChoiceField(
        choices=StoryStatus.choices, help_text="What is asked of the story's posts: `state` says what happened."
    )
    scheduled_at = UtcDateTimeField(allow_null=True, help_text="When its posts publish, while `scheduled`.")
    planned_for = UtcDateTimeField(allow_null=True, help_text="When it is planned to go out: publishes nothing.")
    state = serializers.ChoiceField(choices=StoryState.choices)
    created_at = UtcDateTimeField()
    updated_at = UtcDateTimeField()
    posts = StoryPostSerializer(many=True, source="destinations")

    def get_meta_title(self, story) -> str | None:
        return story.meta_title or None

    def get_meta_description(self, story) -> str | None:
        return story.meta_description or None


def story_webhook_data(story) -> dict:
    """A story (read by apps/stories/selectors.with_destinations) as `data.story` of its events."""
    return StorySerializer(story).data
