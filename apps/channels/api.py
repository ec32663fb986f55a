from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.models import Scope
from apps.api import representations
from apps.api.pagination import PagePagination
from apps.api.schema import common_errors
from apps.channels.models import Channel
from apps.channels.selectors import channel_get, channel_version
from apps.channels.serializers import ChannelDetailSerializer, ChannelSerializer


class ChannelResponseSerializer(serializers.Serializer):
    data = ChannelDetailSerializer()


class ChannelListView(APIView):
    required_scope = Scope.READ_CHANNELS
    pagination_class = PagePagination

    @extend_schema(
        operation_id="channels_list",
        summary="List the account's channels",
        description="Scope `read:channels`. Ordered by `id`, ascending. Paginated with `page` and `per_page` "
        "(or its shorthand `limit`).",
        responses={200: ChannelSerializer(many=True), **common_errors(bad_request=True)},
        tags=["channels"],
    )
    def get(self, request):
        channels = Channel.objects.of_account(request.auth.account_id).listed().order_by("id")
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
    @representations.cached(channel_version, of="id")
    def get(self, request, id: int):
        channel = channel_get(account_id=request.auth.account_id, channel_id=id, listed=True)
        return Response({"data": ChannelDetailSerializer(channel).data})
