from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.models import Scope
from apps.api.pagination import PagePagination
from apps.api.rendering import ResponseSerializer, UtcDateTimeField
from apps.api.schema import common_errors
from apps.channels.models import Channel, Platform
from apps.channels.services import channel_get

# Response-only serializers with explicit fields: they render prefetched rows and describe the
# schema, nothing else (no model introspection, no per-item queries, no DRF per-field lookups).


class TeamSerializer(ResponseSerializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class ChannelRefSerializer(ResponseSerializer):
    """The channel embedded in publish and unpublish responses."""

    id = serializers.IntegerField()
    title = serializers.CharField()
    platform = serializers.ChoiceField(choices=Platform.choices)


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


class ChannelResponseSerializer(serializers.Serializer):
    data = ChannelDetailSerializer()


class ChannelListView(APIView):
    required_scope = Scope.READ_CHANNELS
    pagination_class = PagePagination

    @extend_schema(
        operation_id="channels_list",
        summary="List the account's channels",
        description="Scope `read:channels`. Ordered by `id`, ascending. Paginated with `page` and `per_page`.",
        responses={200: ChannelSerializer(many=True), **common_errors(bad_request=True)},
        tags=["channels"],
    )
    def get(self, request):
        channels = Channel.objects.of_account(request.auth.account_id).with_posts_count().order_by("id")
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(channels, request, view=self)
        return paginator.get_paginated_response(ChannelSerializer(page, many=True).data)


class ChannelDetailView(APIView):
    required_scope = Scope.READ_CHANNELS

    @extend_schema(
        operation_id="channels_retrieve",
        summary="Get a channel",
        description="Scope `read:channels`. A channel of another account answers 404, like an unknown id.",
        responses={200: ChannelResponseSerializer, **common_errors(not_found=True)},
        tags=["channels"],
    )
    def get(self, request, id: int):
        channel = channel_get(account_id=request.auth.account_id, channel_id=id, with_posts_count=True)
        return Response({"data": ChannelDetailSerializer(channel).data})
