from datetime import UTC, datetime
from operator import attrgetter

from django.db.models import prefetch_related_objects
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    extend_schema,
)
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.models import Scope
from apps.api import representations
from apps.api.idempotency import idempotent
from apps.api.pagination import CursorPagePagination
from apps.api.request_fields import QueryFilterSerializer, StrictCharField, StrictSerializer
from apps.api.schema import common_errors, error
from apps.channels.selectors import channel_get, channel_version
from apps.posts.api_workflow import post_publish, post_unpublish
from apps.posts.models import (
    EXTERNAL_ID_MAX_LENGTH,
    TAG_NAME_MAX_LENGTH,
    URL_MAX_LENGTH,
    Post,
    PublicationStatus,
    http_url_validator,
)
from apps.posts.selectors import channel_posts_page, post_channel_version
from apps.posts.serializers import (
    PostListItemSerializer,
    PostWorkflowResultSerializer,
)
from apps.posts.write_api import PostCreate, PostEdit, PostResponseSerializer, single_post

# --- response envelopes ------------------------------------------------------------------------


class PostWorkflowResponseSerializer(serializers.Serializer):
    data = PostWorkflowResultSerializer()


# --- reading -----------------------------------------------------------------------------------


class PublicationStatusListField(serializers.CharField):
    default_error_messages = {
        "invalid_choice": "Unknown status {values}; expected one or more of "
        + ", ".join(PublicationStatus.values)
        + ", comma separated."
    }

    def to_internal_value(self, data) -> list[str]:
        statuses = [part.strip() for part in super().to_internal_value(data).split(",")]
        unknown = [status for status in statuses if status not in PublicationStatus.values]
        if unknown:
            self.fail("invalid_choice", values=", ".join(repr(status) for status in unknown))
        return statuses


class PostFilterSerializer(QueryFilterSerializer):
    """Filters of the posts list: an extension of the spec. An empty value is no filter."""

    publication_status = PublicationStatusListField(
        required=False,
        help_text="Only posts in one of these statuses, comma separated, e.g. `draft,scheduled`.",
    )
    tag = StrictCharField(
        required=False, max_length=TAG_NAME_MAX_LENGTH, help_text="Only posts with the tag of this exact name."
    )
    updated_since = serializers.DateTimeField(
        required=False,
        help_text="Only posts updated at or after this ISO 8601 time, e.g. `2025-01-31T12:00:00Z` "
        "(a time without offset is UTC; send `+` in an offset as `%2B`).",
    )


def posts_list_key(channel_id: int, filters: dict) -> str:
    """Names the list a cursor belongs to: the channel and the filters, written one way whatever
    way the query wrote them (status order, time zone of `updated_since`)."""
    canonical = {
        name: sorted(set(value))
        if isinstance(value, list)
        else value.astimezone(UTC).isoformat()
        if isinstance(value, datetime)
        else value
        for name, value in filters.items()
    }
    return f"channel-posts:{channel_id}:{sorted(canonical.items())!r}"


class ChannelPostListView(PostCreate, APIView):
    required_scopes = {"GET": Scope.READ_POSTS, "POST": Scope.WRITE_POSTS}
    pagination_class = CursorPagePagination

    @extend_schema(
        operation_id="channel_posts_list",
        summary="List the posts of a channel",
        description=(
            "Scope `read:posts`. The list form has no `body`. Ordered by `id`, ascending (oldest first), so "
            "pages do not shift while posts are added. `limit` is shorthand for `per_page`.\n\n"
            "**Filters (an extension of the spec):** `publication_status` (comma separated), `tag` (exact name), "
            "`updated_since` (ISO 8601, inclusive). `meta.count` counts the posts that match the filters; "
            "without filters that is every post of the channel. A bad filter value answers 400 "
            "`VALIDATION_ERROR`, checked before the channel is looked up.\n\n"
            "**Cursor (an extension of the spec), for full syncs:** every page's `meta.next_cursor` (null on the "
            "last page) passed back as `cursor` returns the next `per_page` posts, with the same filters. A page "
            "reached by cursor costs the same at any depth, as does `page=N` without filters (with filters, a deeper "
            "`page` costs more); a sync "
            "by cursor sees no post twice and gets posts added meanwhile at its end. Its `meta` is `count`, "
            "`per_page` and `next_cursor` (no page number). A cursor that was altered, or that another list "
            "(another channel, other filters) gave, answers 400 `VALIDATION_ERROR` on field `cursor`, as does "
            "`cursor` with `page`."
        ),
        parameters=[
            PostFilterSerializer,
            # A comma-separated list is an array in the form style without explode.
            OpenApiParameter(
                "publication_status",
                {"type": "array", "items": {"type": "string", "enum": PublicationStatus.values}},
                style="form",
                explode=False,
                description=PostFilterSerializer().fields["publication_status"].help_text,
            ),
        ],
        responses={200: PostListItemSerializer(many=True), **common_errors(not_found=True, bad_request=True)},
        tags=["posts"],
    )
    @representations.cached(channel_version, of="channel_id")
    def get(self, request, channel_id: int):
        filters = PostFilterSerializer.from_query(request.query_params)
        channel = channel_get(account_id=request.auth.account_id, channel_id=channel_id, listed=True)
        paginator = self.pagination_class()
        window = paginator.window(request, list_key=posts_list_key(channel.pk, filters))
        rows, count = channel_posts_page(channel=channel, filters=filters, window=window)
        page = paginator.settle(rows, count, id_of=attrgetter("id"))
        return paginator.get_paginated_response(PostListItemSerializer(page, many=True).data)


class ChannelPostDetailView(PostEdit, APIView):
    required_scopes = {"GET": Scope.READ_POSTS, "PATCH": Scope.WRITE_POSTS, "DELETE": Scope.WRITE_POSTS}

    @extend_schema(
        operation_id="channel_posts_retrieve",
        summary="Get a post of a channel",
        description=(
            "Scope `read:posts`. 404 `not_found` with message `Resource not found.` for an unknown channel, "
            "`Post not found.` for an unknown post or a post of another channel. Another account's ids are unknown."
        ),
        responses={200: PostResponseSerializer, **common_errors(not_found=True)},
        tags=["posts"],
    )
    @representations.cached(channel_version, of="channel_id")
    def get(self, request, channel_id: int, id: int):
        return Response(self.detail(request, channel_id, id))


class PostDetailView(APIView):
    required_scope = Scope.READ_POSTS

    @extend_schema(
        operation_id="posts_retrieve",
        summary="Get a post by id alone (convenience alias)",
        description=(
            "Scope `read:posts`. The same single-post form as `GET /v1/channels/{channel_id}/posts/{id}`, for "
            "clients that know only the post's id (the getting-started sample calls it). Posts of other "
            "accounts answer 404 `not_found`."
        ),
        responses={200: PostResponseSerializer, **common_errors(not_found=True)},
        tags=["posts"],
    )
    @representations.cached(post_channel_version, of="id")
    def get(self, request, id: int):
        return Response({"data": single_post(Post.objects.of_account(request.auth.account_id).filter(pk=id))})


# --- the publishing workflow ---------------------------------------------------------------


class PublishFieldsSerializer(StrictSerializer):
    """The external system's references to the publication."""

    external_id = StrictCharField(
        required=False,
        allow_null=True,
        max_length=EXTERNAL_ID_MAX_LENGTH,
        help_text=f"The external system's identifier of the publication (at most {EXTERNAL_ID_MAX_LENGTH} "
        "characters). Omitted or null: stored as null.",
    )
    external_url = StrictCharField(
        required=False,
        allow_null=True,
        max_length=URL_MAX_LENGTH,
        validators=[http_url_validator],
        help_text=f"An http(s) URL where the post was published (at most {URL_MAX_LENGTH} characters). "
        "Omitted or null: stored as null.",
    )


class PublishBodySerializer(StrictSerializer):
    """The optional body of the publish call. Unknown fields, at either level, are a 400."""

    post = PublishFieldsSerializer(
        required=False, allow_null=True, help_text="Optional; omitted or null sets no external fields."
    )


WORKFLOW_RULE_BROKEN = error(
    "A rule of the workflow forbids it, checked in this order: the channel's platform is not `api`; the post is "
    "not in the status the call needs; the post has no API publication record.",
    "only_api_platform",
    "invalid_status",
    "no_publication",
)


class PostPublishView(APIView):
    required_scope = Scope.WRITE_POSTS

    @extend_schema(
        operation_id="channel_posts_publish",
        summary="Confirm publication of a post awaiting it (api channels)",
        description=(
            "Scope `write:posts`. `publishing_pending` -> `published`: sets `published_at` and stores `external_id` "
            "and `external_url` from the optional body (null when not given).\n\n"
            "Checked in this order: 401; 403 without `write:posts`; 400 `VALIDATION_ERROR` for a body that is not "
            "JSON, a `post` that is not an object, a non-string field, an `external_url` that is not an http(s) "
            "URL, a value too long or an unknown field; 404 `not_found` for an unknown channel or post (or a post of "
            "another channel); 422 `only_api_platform`; 422 `invalid_status` (not `publishing_pending`); 422 "
            "`no_publication`. An empty body, or none, is fine. Two simultaneous calls on one post give one 200 "
            "and one 422 `invalid_status`."
        ),
        request=PublishBodySerializer,
        responses={
            200: PostWorkflowResponseSerializer,
            **common_errors(not_found=True, bad_request=True),
            422: WORKFLOW_RULE_BROKEN,
        },
        examples=[
            OpenApiExample(
                "With external references",
                value={"post": {"external_id": "ext-42", "external_url": "https://partner.example.com/posts/42"}},
                request_only=True,
            )
        ],
        tags=["publishing"],
    )
    @idempotent
    def patch(self, request, channel_id: int, id: int):
        body = PublishBodySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        fields = body.validated_data.get("post") or {}
        post = post_publish(post_id=id, channel_id=channel_id, account=request.auth.account, **fields)
        prefetch_related_objects([post], "tags", "media")
        return Response({"data": PostWorkflowResultSerializer(post).data})


class PostUnpublishView(APIView):
    required_scope = Scope.WRITE_POSTS

    @extend_schema(
        operation_id="channel_posts_unpublish",
        summary="Revert a published post to draft (api channels)",
        description=(
            "Scope `write:posts`. `published` -> `draft`: `published_at`, `external_id` and `external_url` become "
            "null. Takes no body (a body is ignored). Checked in this order: 401; 403 without `write:posts`; 404 "
            "`not_found`; 422 `only_api_platform`; 422 `invalid_status` (not `published`); 422 `no_publication`."
        ),
        request=None,
        responses={200: PostWorkflowResponseSerializer, **common_errors(not_found=True), 422: WORKFLOW_RULE_BROKEN},
        tags=["publishing"],
    )
    @idempotent
    def patch(self, request, channel_id: int, id: int):
        post = post_unpublish(post_id=id, channel_id=channel_id, account=request.auth.account)
        prefetch_related_objects([post], "tags", "media")
        return Response({"data": PostWorkflowResultSerializer(post).data})
