"""The writes of posts over the API (create, edit, delete), with the single-post form they answer
and its ETag. The views of apps/posts/api.py take them in (a URL has one view for all its methods)."""

from django.core.validators import validate_slug
from django.utils.cache import set_response_etag
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from apps.api.idempotency import idempotent
from apps.api.permissions import require_permission
from apps.api.preconditions import answer_headers, etag_of, precondition, write_headers
from apps.api.request_fields import StrictCharField, StrictSerializer
from apps.api.schema import (
    PreconditionDetailSerializer,
    common_errors,
    error,
    error_with_details,
)
from apps.channels.selectors import channel_get
from apps.core.errors import NotFound
from apps.posts.lifecycle import POST_NOT_FOUND
from apps.posts.models import (
    META_DESCRIPTION_MAX_LENGTH,
    META_TITLE_MAX_LENGTH,
    SLUG_MAX_LENGTH,
    TAG_NAME_MAX_LENGTH,
    TEASER_MAX_LENGTH,
    TITLE_MAX_LENGTH,
    Post,
    PostQuerySet,
    PublicationStatus,
)
from apps.posts.selectors import post_details
from apps.posts.serializers import PostDetailSerializer
from apps.posts.services import MediaInput
from apps.posts.write_media import MediaEntrySerializer
from apps.posts.writing import Writer, post_write, post_write_delete, post_write_new
from apps.users.models import Permission


class PostResponseSerializer(serializers.Serializer):
    data = PostDetailSerializer()


def single_post(posts: PostQuerySet, channels: dict | None = None) -> dict:
    """The single-post form of the one post of `posts`, or 404 `not_found` (see post_rows for
    `channels`)."""
    rows = post_details(posts, channels=channels)
    if not rows:
        raise NotFound(POST_NOT_FOUND)
    return PostDetailSerializer(rows[0]).data


# --- writing ---------------------------------------------------------------------------------

# Fields of the single-post form that a client reads but does not write: the service keeps them.
READ_ONLY_FIELDS = (
    "id",
    "channel",
    "created_at",
    "updated_at",
    "published_at",
    "external_id",
    "external_url",
    "url",
    "publication",
)
# Statuses a write may ask for; `publishing_pending` is refused by the workflow's rules (422), not as a typo.
WRITABLE_STATUSES = PublicationStatus.choices


class PostFieldsSerializer(StrictSerializer):
    """A post's writable fields. On PATCH every field is optional and only those sent change."""

    read_only_fields = READ_ONLY_FIELDS

    title = StrictCharField(max_length=TITLE_MAX_LENGTH, help_text="Required when creating.")
    body = StrictCharField(required=False, allow_blank=True, help_text="Markdown.")
    teaser = StrictCharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        max_length=TEASER_MAX_LENGTH,
        help_text="Short summary; empty or null stores an empty teaser.",
    )
    slug = StrictCharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        max_length=SLUG_MAX_LENGTH,
        validators=[validate_slug],
        help_text="Unique in the channel (400 `unique` otherwise). Absent on create, empty or null: made from the "
        "title.",
    )
    tags = serializers.ListField(
        child=StrictCharField(max_length=TAG_NAME_MAX_LENGTH),
        required=False,
        max_length=100,
        help_text="Tag names (the account's tags; a new name makes a tag). On PATCH the list replaces the post's tags.",
    )
    media = serializers.ListField(
        child=MediaEntrySerializer(),
        required=False,
        max_length=50,
        help_text='The post\'s media items, in order: `{"medium": id, "alt_text": ...}` for an uploaded image, '
        '`{"url": ...}` for one that lives elsewhere. On PATCH the list replaces the post\'s media.',
    )
    meta_title = StrictCharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        max_length=META_TITLE_MAX_LENGTH,
        help_text="SEO title override; empty or null: none.",
    )
    meta_description = StrictCharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        max_length=META_DESCRIPTION_MAX_LENGTH,
        help_text="SEO description override; empty or null: none.",
    )
    publication_status = serializers.ChoiceField(
        choices=WRITABLE_STATUSES,
        required=False,
        help_text="`draft` (default on create); `scheduled` with a future `scheduled_at`; `published`: publish now, "
        "as Publish now in the Settings area (a blog post is published at once; a post of a channel with a "
        "destination is handed to it and shows `published` once it confirms). On `api` channels only `draft` and "
        "`scheduled` (422 `invalid_status`): the content plan and the publish endpoint do the rest.",
    )
    scheduled_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="When the content plan publishes the post; only with `publication_status` `scheduled` (now or "
        "already), and in the future (400 `future`).",
    )


class PostBodySerializer(StrictSerializer):
    """The body of POST: the post's fields in a `post` object, as the publish call wraps its own."""

    post = PostFieldsSerializer()


class PostChangesSerializer(PostFieldsSerializer):
    """The fields to change; those not sent stay as they are."""

    title = StrictCharField(max_length=TITLE_MAX_LENGTH, required=False)


class PostChangesBodySerializer(StrictSerializer):
    """The body of PATCH: the fields to change in a `post` object (none, or no `post`: nothing changes)."""

    post = PostChangesSerializer(required=False)


def enveloped_fields(request, body_serializer: type[StrictSerializer], name: str) -> dict:
    """The validated fields of a body that wraps them in one object, `name` (`post`, `story`)."""
    body = body_serializer(data=request.data)
    if not body.is_valid():
        errors = body.errors
        # The wrapper is an envelope: an error of a wrapped field names the field (`title`), as the
        # services' own errors do (`slug`, `scheduled_at`).
        raise serializers.ValidationError(errors[name] if isinstance(errors.get(name), dict) else errors)
    return body.validated_data.get(name, {})


def _post_body(request, body_serializer: type[StrictSerializer]) -> dict:
    return enveloped_fields(request, body_serializer, "post")


CONTENT_NAMES = ("title", "body", "teaser", "slug", "meta_title", "meta_description")


def _split(fields: dict) -> dict:
    """The service's arguments from the validated fields: only what was sent."""
    arguments = {"content": {name: fields[name] for name in CONTENT_NAMES if name in fields}}
    if "media" in fields:
        arguments["content"]["media"] = [MediaInput(**entry) for entry in fields["media"]]
    for given, argument in (("tags", "tag_names"), ("publication_status", "status"), ("scheduled_at", "scheduled_at")):
        if given in fields:
            arguments[argument] = fields[given]
    return arguments


def request_writer(request) -> Writer:
    """What the key's owner may do beyond writing content (articles.publish)."""
    return Writer(may_publish=Permission.ARTICLES_PUBLISH in request.user.permissions)


class _PostWrites:
    """What the single post's writes share: its representation as GET sends it, with its ETag."""

    def detail(self, request, channel_id: int, post_id: int) -> dict:
        channel = channel_get(account_id=request.auth.account_id, channel_id=channel_id, listed=True)
        return {"data": single_post(Post.objects.filter(channel_id=channel.pk, pk=post_id), {channel.pk: channel})}

    def _precondition(self, request, channel_id: int):
        return precondition(
            request,
            etag=lambda post: etag_of(request, self, self.detail(request, channel_id, post.pk)),
            updated_at=lambda post: post.updated_at,
        )

    def _answer(self, request, channel_id: int, post_id: int, **options) -> Response:
        response = Response(self.detail(request, channel_id, post_id), **options)
        # The tag of the bytes sent, as GET's: set once they are rendered (rendered once).
        response.add_post_render_callback(set_response_etag)
        return response


PRECONDITION_FAILED = error(
    "The resource changed since the client read it (If-Match or If-Unmodified-Since); nothing was changed. "
    "`details` has the current `ETag` and `updated_at`: read the resource again and retry.",
    "precondition_failed",
    envelope=error_with_details("PreconditionFailedError", PreconditionDetailSerializer()),
    example_details={"current_etag": '"3e5d1f0c2b7a9e4d6c8b0a1f2e3d4c5b"', "updated_at": "2026-01-31T12:00:00Z"},
)
PERMISSION_DENIED = error(
    "The key lacks the endpoint's scope, or its owner lacks the permission the change needs (`articles.write`, "
    "`articles.publish`, `articles.delete`); the message names it.",
    "insufficient_scope",
    "permission_denied",
)
POST_RULE_BROKEN = error(
    "A rule of the workflow forbids the status change: `publishing_pending` or `published` asked for on an `api` "
    "channel (or a published `api` post taken out of `published` here, which is the unpublish endpoint's); a "
    "channel whose destination is not set up cannot publish.",
    "invalid_status",
    "not_set_up",
)
WRITE_HEADERS = write_headers("post")
# The headers of a write's answer, for the schema.
ETAG, LOCATION = answer_headers("post")


class PostCreate(_PostWrites):
    """POST on a channel's posts."""

    @extend_schema(
        operation_id="channel_posts_create",
        summary="Create a post in a channel",
        description=(
            "Scope `write:posts`; the key's owner needs `articles.write`, and `articles.publish` for a post created "
            "`scheduled` or `published`. The body wraps the post's fields in `post`; `title` is required. A new "
            "tag name makes the tag. Answers 201 with the single-post form, its `Location` and `ETag`.\n\n"
            "Checked in this order: 401; 403 (scope, then `articles.write`); 400 `VALIDATION_ERROR` (the body's "
            "shape: each field's type and length, unknown fields `unknown_field`, read-only fields such as `id` "
            "`read_only`); 404 `not_found` for a channel not of the key's account; 400 for the post's rules (`slug` "
            "`unique`, `scheduled_at` `future`); 403 without `articles.publish` for a status other than `draft`; "
            "422 for a status the workflow forbids. Nothing is created when any check fails."
        ),
        request=PostBodySerializer,
        parameters=[LOCATION, ETAG],
        responses={
            201: PostResponseSerializer,
            **common_errors(not_found=True, bad_request=True),
            403: PERMISSION_DENIED,
            422: POST_RULE_BROKEN,
        },
        examples=[
            OpenApiExample(
                "A draft",
                value={"post": {"title": "Hello", "body": "# Hello\n\nFirst words.", "tags": ["news"]}},
                request_only=True,
            ),
            OpenApiExample(
                "Scheduled",
                value={
                    "post": {
                        "title": "Launch",
                        "publication_status": "scheduled",
                        "scheduled_at": "2030-01-31T09:00:00Z",
                    }
                },
                request_only=True,
            ),
        ],
        tags=["posts"],
    )
    @idempotent
    def post(self, request, channel_id: int):
        require_permission(request.user, Permission.ARTICLES_WRITE)
        fields = _post_body(request, PostBodySerializer)
        channel = channel_get(account_id=request.auth.account_id, channel_id=channel_id)
        arguments = _split(fields)
        post = post_write_new(channel=channel, writer=request_writer(request), **arguments)
        location = request.build_absolute_uri(f"/v1/channels/{channel.pk}/posts/{post.pk}")
        response = self._answer(request, channel.pk, post.pk, status=status.HTTP_201_CREATED)
        response["Location"] = location
        return response


class PostEdit(_PostWrites):
    """PATCH and DELETE on a post of a channel."""

    @extend_schema(
        operation_id="channel_posts_update",
        summary="Edit a post: its content, tags, status or schedule",
        description=(
            "Scope `write:posts`; the key's owner needs `articles.write`, and `articles.publish` to change the "
            "status or the planned time. The body wraps the fields to change in `post`; those not sent stay as they "
            "are. An edit of a published post updates it where it is published and sends `post.updated`, as an edit "
            "in the Settings area does. `published` -> `draft` takes the post down from its destination. On `api` "
            "channels only the publish and unpublish endpoints move a post in and out of `published`.\n\n"
            "**No lost update:** send the `ETag` you read as `If-Match` (or the post's `updated_at` as "
            "`If-Unmodified-Since`); if the post changed meanwhile the answer is 412 `precondition_failed`, "
            "with `details.current_etag` and `details.updated_at`, and nothing changes: read it again, reapply, "
            "retry. The tag covers all the representation shows, the embedded channel's `posts_count` too. "
            "Without a precondition, the last writer wins.\n\n"
            "Checked in this order: 401; 403 (scope, then `articles.write`); 400 (the body's shape); 404; 412; "
            "400 (the post's rules); 403 without `articles.publish`; 422. All or nothing."
        ),
        request=PostChangesBodySerializer,
        parameters=[*WRITE_HEADERS, ETAG],
        responses={
            200: PostResponseSerializer,
            **common_errors(not_found=True, bad_request=True),
            403: PERMISSION_DENIED,
            412: PRECONDITION_FAILED,
            422: POST_RULE_BROKEN,
        },
        examples=[OpenApiExample("Fix a typo", value={"post": {"title": "Hello, world"}}, request_only=True)],
        tags=["posts"],
    )
    @idempotent
    def patch(self, request, channel_id: int, id: int):
        require_permission(request.user, Permission.ARTICLES_WRITE)
        fields = _post_body(request, PostChangesBodySerializer)
        channel = channel_get(account_id=request.auth.account_id, channel_id=channel_id)
        post_write(
            post_id=id,
            channel_id=channel.pk,
            writer=request_writer(request),
            check=self._precondition(request, channel.pk),
            **_split(fields),
        )
        return self._answer(request, channel.pk, id)

    @extend_schema(
        operation_id="channel_posts_destroy",
        summary="Delete a post",
        description=(
            "Scope `write:posts`; the key's owner needs `articles.delete`. A published post is taken down from its "
            "destination first, as a delete in the Settings area does; a published post of an `api` channel answers "
            "422 `invalid_status` (the unpublish endpoint first). `If-Match` and `If-Unmodified-Since` as on PATCH. "
            "Checked in this order: 401; 403; 404; 412; 422."
        ),
        request=None,
        parameters=WRITE_HEADERS,
        responses={
            204: None,
            **common_errors(not_found=True),
            403: PERMISSION_DENIED,
            412: PRECONDITION_FAILED,
            422: error("A published post of an `api` channel: unpublish it first.", "invalid_status"),
        },
        tags=["posts"],
    )
    @idempotent
    def delete(self, request, channel_id: int, id: int):
        require_permission(request.user, Permission.ARTICLES_DELETE)
        channel = channel_get(account_id=request.auth.account_id, channel_id=channel_id)
        post_write_delete(post_id=id, channel_id=channel.pk, check=self._precondition(request, channel.pk))
        return Response(status=status.HTTP_204_NO_CONTENT)
