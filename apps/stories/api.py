"""The stories' /v1 endpoints: a story written once and sent to channels, read with each post's
state on its destination, changed, retried where it failed, deleted. Thin: the services of
apps/stories/services.py do every change, the selectors every read."""

from django.db.models import prefetch_related_objects
from django.utils.cache import set_response_etag
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.models import Scope
from apps.api.idempotency import idempotent
from apps.api.pagination import PagePagination
from apps.api.permissions import require_permission
from apps.api.preconditions import answer_headers, etag_of, precondition, write_headers
from apps.api.schema import common_errors, error
from apps.core.keep import KEEP
from apps.posts.write_api import PERMISSION_DENIED, PRECONDITION_FAILED, enveloped_fields, request_writer
from apps.stories.api_fields import StoryBodySerializer, StoryChangesBodySerializer
from apps.stories.selectors import stories_of_account, story_get, with_destinations
from apps.stories.serializers import StorySerializer
from apps.stories.services import ChannelChoice, story_create, story_delete, story_retry_failed, story_update
from apps.users.models import Permission


class StoryResponseSerializer(serializers.Serializer):
    data = StorySerializer()


# The validated fields the services take under the same name.
SAME_NAMES = (
    "title",
    "body",
    "teaser",
    "meta_title",
    "meta_description",
    "publication_status",
    "scheduled_at",
    "planned_for",
)


def _arguments(fields: dict) -> dict:
    """The service's arguments from the validated fields: only what was sent."""
    arguments = {name: fields[name] for name in SAME_NAMES if name in fields}
    if "tags" in fields:
        arguments["tag_names"] = fields["tags"]
    if "media" in fields:
        arguments["media"] = [dict(entry) for entry in fields["media"]]
    if "channels" in fields:
        arguments["channels"] = [
            ChannelChoice(entry["id"], dict(entry["overrides"]) if "overrides" in entry else KEEP)
            for entry in fields["channels"]
        ]
    return arguments


class _StoryAnswers:
    """The story as GET sends it, with its ETag: what the writes answer and what If-Match compares."""

    def detail(self, request, story_id: int) -> dict:
        story = story_get(account_id=request.auth.account_id, story_id=story_id)
        return {"data": StorySerializer(story).data}

    def _precondition(self, request):
        return precondition(
            request,
            etag=lambda story: etag_of(request, self, self.detail(request, story.pk)),
            updated_at=lambda story: story.updated_at,
        )

    def _answer(self, request, story_id: int, **options) -> Response:
        response = Response(self.detail(request, story_id), **options)
        # The tag of the bytes sent, as GET's: set once they are rendered.
        response.add_post_render_callback(set_response_etag)
        return response


STORY_RULE_BROKEN = error(
    "A rule of a post of the story forbids the change: a channel whose destination is not set up cannot publish "
    "(`not_set_up`); a published post of an `api` channel cannot be taken back or deleted here (`invalid_status`: "
    "the unpublish endpoint first).",
    "invalid_status",
    "not_set_up",
)
WRITE_HEADERS = write_headers("story", covers=" (its posts' states included)")
# The headers of a write's answer, for the schema.
ETAG, LOCATION = answer_headers("story")
CHECKS = (
    "401; 403 (scope, then `articles.write`); 400 `VALIDATION_ERROR` (the body's shape: each field's type and "
    "length, unknown fields `unknown_field`, read-only fields such as `id`, `state` or `posts` `read_only`)"
)
SCHEDULED_EXAMPLE = {
    "story": {
        "title": "Launch",
        "body": "# We launched\n\nEverything about it.",
        "teaser": "The launch",
        "tags": ["news"],
        "publication_status": "scheduled",
        "scheduled_at": "2030-01-31T09:00:00Z",
        "planned_for": "2030-01-31T09:00:00Z",
        "channels": [
            {"id": 1},
            {"id": 2, "overrides": {"title": "We launched today: here is what it changes for you"}},
            {"id": 3, "overrides": {"title": "This week: the launch", "teaser": "Five minutes to read"}},
        ],
    }
}


class StoryListView(_StoryAnswers, APIView):
    required_scopes = {"GET": Scope.READ_POSTS, "POST": Scope.WRITE_POSTS}
    pagination_class = PagePagination

    @extend_schema(
        operation_id="stories_list",
        summary="List the account's stories",
        description="Scope `read:posts`. Newest first, each with its `state` and its posts' states. Paginated with "
        "`page` and `per_page` (or its shorthand `limit`); a page costs the same at any depth.",
        responses={200: StorySerializer(many=True), **common_errors(bad_request=True)},
        tags=["stories"],
    )
    def get(self, request):
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(stories_of_account(request.auth.account_id), request, view=self)
        prefetch_related_objects(page, "tags")
        return paginator.get_paginated_response(StorySerializer(with_destinations(page), many=True).data)

    @extend_schema(
        operation_id="stories_create",
        summary="Write a story and send it to channels",
        description=(
            "Scope `write:posts`; the key's owner needs `articles.write`, and `articles.publish` for a story created "
            "`scheduled` or `published`. The body wraps the story's fields in `story`; `title` is required. Each "
            "channel of `channels` gets its post of the story, with the channel's `overrides` where it has them and "
            "the story's text elsewhere, in the story's status. Answers 201 with the story, its `Location` and its "
            "`ETag`.\n\n"
            f"Checked in this order: {CHECKS}; 400 for the story's rules (`scheduled_at` `required`, `future` or "
            "`only_when_scheduled`; `channels[i].id` `not_found` for a channel not of the key's account, "
            "`duplicate`; `media[i].medium` `not_found`); 403 without `articles.publish` for a status other than "
            "`draft`; 422 for a rule of a post. Nothing is created when any check fails."
        ),
        request=StoryBodySerializer,
        parameters=[LOCATION, ETAG],
        responses={
            201: StoryResponseSerializer,
            **common_errors(bad_request=True),
            403: PERMISSION_DENIED,
            422: STORY_RULE_BROKEN,
        },
        examples=[
            OpenApiExample(
                "A draft for two channels",
                value={"story": {"title": "Hello", "body": "First words.", "channels": [{"id": 1}, {"id": 2}]}},
                request_only=True,
            ),
            OpenApiExample("Scheduled, with overrides", value=SCHEDULED_EXAMPLE, request_only=True),
        ],
        tags=["stories"],
    )
    @idempotent
    def post(self, request):
        require_permission(request.user, Permission.ARTICLES_WRITE)
        fields = enveloped_fields(request, StoryBodySerializer, "story")
        story = story_create(
            account_id=request.auth.account_id,
            writer=request_writer(request),
            created_by=request.user,
            **_arguments(fields),
        )
        response = self._answer(request, story.pk, status=status.HTTP_201_CREATED)
        response["Location"] = request.build_absolute_uri(f"/v1/stories/{story.pk}")
        return response


class StoryDetailView(_StoryAnswers, APIView):
    required_scopes = {"GET": Scope.READ_POSTS, "PATCH": Scope.WRITE_POSTS, "DELETE": Scope.WRITE_POSTS}

    @extend_schema(
        operation_id="stories_retrieve",
        summary="Get a story, with each destination's state",
        description="Scope `read:posts`. `posts` has one entry per channel, in the order they were added: the post's "
        "`id`, its channel, its status, its `state` on its destination, its latest publication job, its `url` once "
        "published and the channel's `overrides`. A story of another account answers 404, like an unknown id.",
        responses={200: StoryResponseSerializer, **common_errors(not_found=True)},
        tags=["stories"],
    )
    def get(self, request, id: int):
        return Response(self.detail(request, id))

    @extend_schema(
        operation_id="stories_update",
        summary="Change a story: its text, channels, overrides, status or schedule",
        description=(
            "Scope `write:posts`; the key's owner needs `articles.write`, `articles.publish` to change the status "
            "or the scheduled time, and `articles.delete` to take a channel off the story. The body wraps the fields "
            "to change in `story`; those not sent stay as they are. A change of the story's text reaches every post "
            "that does not override it (a published post is updated where it is published, as a post's edit is); a "
            "new status is asked of every post; `channels` replaces the story's channels (a channel entry without "
            "`overrides` keeps its overrides).\n\n"
            "**No lost update:** send the `ETag` you read as `If-Match` (or the story's `updated_at` as "
            "`If-Unmodified-Since`); if the story changed meanwhile the answer is 412 `precondition_failed` with "
            "`details.current_etag` and `details.updated_at`, and nothing changes. The tag covers all the "
            "representation shows, the posts' states too.\n\n"
            f"Checked in this order: {CHECKS}; 404 `not_found` (another account's story too); 412; 400 for the "
            "story's rules; 403 without `articles.publish` or `articles.delete`; 422. All or nothing."
        ),
        request=StoryChangesBodySerializer,
        parameters=[*WRITE_HEADERS, ETAG],
        responses={
            200: StoryResponseSerializer,
            **common_errors(not_found=True, bad_request=True),
            403: PERMISSION_DENIED,
            412: PRECONDITION_FAILED,
            422: STORY_RULE_BROKEN,
        },
        examples=[
            OpenApiExample("Fix a typo", value={"story": {"title": "Hello, world"}}, request_only=True),
            OpenApiExample(
                "Publish now",
                value={"story": {"publication_status": "published"}},
                request_only=True,
            ),
        ],
        tags=["stories"],
    )
    @idempotent
    def patch(self, request, id: int):
        require_permission(request.user, Permission.ARTICLES_WRITE)
        fields = enveloped_fields(request, StoryChangesBodySerializer, "story")
        story_update(
            story_id=id,
            account_id=request.auth.account_id,
            writer=request_writer(request),
            may_delete=Permission.ARTICLES_DELETE in request.user.permissions,
            check=self._precondition(request),
            **_arguments(fields),
        )
        return self._answer(request, id)

    @extend_schema(
        operation_id="stories_destroy",
        summary="Delete a story and its posts",
        description=(
            "Scope `write:posts`; the key's owner needs `articles.delete`. Each post of the story is deleted as a "
            "post's delete does (a published one is taken down from its destination first); a published post of "
            "an `api` channel answers 422 `invalid_status` (its unpublish endpoint first), and nothing is deleted. "
            "`If-Match` and `If-Unmodified-Since` as on PATCH. Checked in this order: 401; 403; 404; 412; 422."
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
        tags=["stories"],
    )
    @idempotent
    def delete(self, request, id: int):
        require_permission(request.user, Permission.ARTICLES_DELETE)
        story_delete(story_id=id, account_id=request.auth.account_id, check=self._precondition(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class StoryRetryView(_StoryAnswers, APIView):
    required_scope = Scope.WRITE_POSTS

    @extend_schema(
        operation_id="stories_retry",
        summary="Retry the destinations that failed",
        description=(
            "Scope `write:posts`; the key's owner needs `articles.publish`. Runs again, now, the publication of each "
            "post of the story whose `state` is `failed`, and only those: a destination that has its post is not "
            "sent it again (no second commit, no second e-mail). Takes no body. Answers the story, the retried "
            "posts `publishing`.\n\n"
            "Checked in this order: 401; 403 (scope, then `articles.publish`); 404 `not_found`; 422 "
            "`nothing_to_retry` when no destination failed, `invalid_status` when a failed job cannot run again."
        ),
        request=None,
        parameters=[ETAG],
        responses={
            200: StoryResponseSerializer,
            **common_errors(not_found=True),
            403: PERMISSION_DENIED,
            422: error(
                "No destination of the story failed, or a failed publication cannot run again.",
                "nothing_to_retry",
                "invalid_status",
            ),
        },
        tags=["stories"],
    )
    @idempotent
    def post(self, request, id: int):
        require_permission(request.user, Permission.ARTICLES_PUBLISH)
        story_retry_failed(story_id=id, account_id=request.auth.account_id)
        return self._answer(request, id)
