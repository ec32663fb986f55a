"""How channels look from outside: in the API and embedded in posts (and so in webhook bodies)."""

from rest_framework import serializers

from apps.channels.models import platform_choices
from apps.core.serializers import ResponseSerializer, UtcDateTimeField

# Response-only serializers with explicit fields: they render prefetched rows and describe the
# schema, nothing else (no model introspection, no per-item queries, no DRF per-field lookups).


class TeamSerializer(ResponseSerializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class PlatformField(serializers.ChoiceField):
    """A channel's platform. Its choices are read from the registry when asked (the schema's enum):
    the destination packages register their kinds after this module is loaded."""

    def __init__(self, **kwargs) -> None:
        super().__init__(choices=(), **kwargs)

    @property
    def choices(self) -> dict:
        return dict(platform_choices())

    @choices.setter
    def choices(self, value) -> None:
        pass  # ChoiceField.__init__ sets them; they are the registry's

    def to_representation(self, value) -> str:
        return str(value)


class ChannelRefSerializer(ResponseSerializer):
    """The channel embedded in publish and unpublish responses."""

    id = serializers.IntegerField()
    title = serializers.CharField()
    platform = PlatformField()


class ChannelSerializer(ChannelRefSerializer):
    """The list form, also embedded in posts."""

    team = TeamSerializer(allow_null=True, help_text="null when the channel has no team.")
    posts_count = serializers.IntegerField(help_text="Number of posts in the channel, in any status.")

    _last: tuple = (None, None)

    def to_representation(self, instance) -> dict:
        # The posts of a list page share one channel object: render it once per response.
        if instance is not self._last[0]:
            self._last = (instance, super().to_representation(instance))
        return self._last[1]


class ChannelDetailSerializer(ChannelSerializer):
    """The single-channel form."""

    created_at = UtcDateTimeField()
    updated_at = UtcDateTimeField()
    image_width = serializers.IntegerField(help_text="Default image width for the channel, in pixels.")
    url = serializers.CharField(
        allow_null=True,
        help_text="The channel's public address (a blog channel's site); null for channels without one.",
    )
