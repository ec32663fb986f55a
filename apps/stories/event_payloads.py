"""The `data` of the story.* events (apps.core.events), described for the OpenAPI schema's webhooks."""

from rest_framework import serializers

from apps.core.events import describe_payloads
from apps.stories.events import StoryEvent
from apps.stories.serializers import StorySerializer


class StoryEventDataSerializer(serializers.Serializer):
    story = StorySerializer(help_text="The story at the time of the event, with each destination's state in `posts`.")


describe_payloads(
    {StoryEvent.PUBLISHED: StoryEventDataSerializer, StoryEvent.PARTIALLY_PUBLISHED: StoryEventDataSerializer}
)
