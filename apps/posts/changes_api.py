"""The change feed's endpoint (apps/posts/changes.py has how it is read): for clients that keep a copy
of a channel's posts."""

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, PolymorphicProxySerializer, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.models import Scope
from apps.api.pagination import positive_int_param
from apps.api.schema import common_errors, error
from apps.channels.selectors import channel_get
from apps.core.serializers import UtcDateTimeField
from apps.posts.changes import Deletion, channel_changes, cursor_read, cursor_text
from apps.posts.serializers import PostDetailSerializer


@extend_schema_field({"type": "boolean", "enum": [True]})
class AlwaysTrueField(serializers.BooleanField):
    pass


class PostDeletedSerializer(serializers.Serializer):
    """A post that left the channel (deleted, or moved to another channel): remove your copy."""

    id = serializers.IntegerField()
    deleted = AlwaysTrueField(help_text="Always `true`: what tells a deletion from a post.")
    deleted_at = UtcDateTimeField()


CHANGE_ITEM = PolymorphicProxySerializer(
    component_name="ChangeItem",
    serializers=[PostDetailSerializer, PostDeletedSerializer],
    resource_type_field_name=None,
)


class ChangesMetaSerializer(serializers.Serializer):
    next_cursor = serializers.CharField(
        help_text="Never null: pass it back as `cursor` for the changes after this page. On a page with no "
        "items it stands where the request's cursor did: up to date, ask again later."
    )
    per_page = serializers.IntegerField(min_value=1)
    has_more = serializers.BooleanField(
        help_text="More changes are ready now: ask again at once. False: up to date (poll later)."
    )


class ChangesResponseSerializer(serializers.Serializer):
    data = serializers.ListField(child=CHANGE_ITEM)
    meta = ChangesMetaSerializer()


def _change_items(items: list) -> list[dict]:
    # One serializer for the page's posts: each nested form is rendered the cheap way once.
    posts = iter(PostDetailSerializer([item for item in items if not isinstance(item, Deletion)], many=True).data)
    return [
        PostDeletedSerializer({"id": item.id, "deleted": True, "deleted_at": item.deleted_at}).data
        if isinstance(item, Deletion)
        else next(posts)
        for item in items
    ]


class ChannelChangesView(APIView):
    required_scope = Scope.READ_POSTS

    @extend_schema(
        operation_id="channel_changes_list",
        summary="Follow the changes of a channel's posts",
        description=(
            "Scope `read:posts`. For clients that keep a copy of a channel's posts. Without `cursor`: every post of "
            "the channel in its single form, `per_page` at a time (no deletions). With the `meta.next_cursor` of "
            "the previous page: each post changed since, in its latest single form (once, however often it "
            "changed), and each post that left the channel since (deleted, or moved to another channel) as "
            '`{"id": ..., "deleted": true, "deleted_at": ...}`, in the order the changes committed. A change is '
            "an edit of the post, of its tags or media, or a rename of one of its tags.\n\n"
            "`meta.next_cursor` is never null: a page with no items gives back the same place (up to date, ask "
            "again later); `meta.has_more` says whether more changes are ready now. Exact under concurrent "
            "writes: a client that follows the cursors never misses a committed change; a change committed by "
            "a transaction still running elsewhere waits until no older transaction is running.\n\n"
            "Deletions are kept `CHANGES_RETENTION` (30 days by default): a cursor issued longer ago, or older "
            "than the deletions still kept, answers 410 `cursor_expired`: start over without a cursor. A cursor "
            "altered, cut short or of another channel answers 400 `VALIDATION_ERROR` on field `cursor`."
        ),
        parameters=[
            OpenApiParameter(
                "cursor",
                str,
                description="The `meta.next_cursor` of the previous page of this channel's feed; none for a "
                "first sync.",
            ),
            OpenApiParameter(
                "per_page",
                {"type": "integer", "minimum": 1},
                description=f"Items per page (default {settings.PAGE_SIZE_DEFAULT}, larger values are capped at "
                f"{settings.PAGE_SIZE_MAX}).",
            ),
        ],
        responses={
            200: ChangesResponseSerializer,
            **common_errors(not_found=True, bad_request=True),
            410: error("The cursor is too old: start over without a cursor.", "cursor_expired"),
        },
        tags=["posts"],
    )
    # Not kept by the representation cache: its entries are keyed by the channel's version, but
    # the horizon a page is read up to moves with every transaction on the database.
    def get(self, request, channel_id: int):
        params = request.query_params
        per_page = min(positive_int_param(params, "per_page", settings.PAGE_SIZE_DEFAULT), settings.PAGE_SIZE_MAX)
        raw = params.get("cursor", "")
        cursor = cursor_read(raw, channel_id=channel_id) if raw else None
        channel = channel_get(account_id=request.auth.account_id, channel_id=channel_id, listed=True)
        page = channel_changes(channel=channel, cursor=cursor, size=per_page)
        # Nothing new: the cursor sent is the answer (the "same cursor": up to date, ask again
        # later). Its age is its last change's, so a client idle past CHANGES_RETENTION starts over.
        next_cursor = raw if raw and not page.items else cursor_text(page.next)
        meta = {"next_cursor": next_cursor, "per_page": per_page, "has_more": page.more}
        return Response({"data": _change_items(page.items), "meta": meta})
