"""The /v1 endpoints of a newsletter channel's subscribers. A subscriber's address is personal data:
reading needs `read:subscribers`, adding and erasing `write:subscribers` (`read:posts` reaches
none of it). Only newsletter channels have subscribers; any other channel, and another
account's, is 404 like an unknown id."""

from operator import itemgetter

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.models import Scope
from apps.api.idempotency import idempotent
from apps.api.pagination import CursorPagePagination
from apps.api.permissions import require_account_admin
from apps.api.request_fields import (
    QueryFilterSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictEmailField,
    StrictSerializer,
)
from apps.api.schema import common_errors, error, error_with_details
from apps.core.serializers import fields_of
from apps.publishing.newsletter.models import Subscriber, SubscriberStatus, SuppressionReason, normalize_email
from apps.publishing.newsletter.selectors import filter_subscribers, newsletter_get, subscriber_get
from apps.publishing.newsletter.serializers import SubscriberSerializer
from apps.publishing.newsletter.services import subscriber_create, subscriber_delete

# HEAD is answered by GET: it needs GET's scope.
READ = {"GET": Scope.READ_SUBSCRIBERS, "HEAD": Scope.READ_SUBSCRIBERS}
WRITE = {method: Scope.WRITE_SUBSCRIBERS for method in ("POST", "DELETE")}
NOT_A_NEWSLETTER = (
    "404 `not_found` for an unknown channel, another account's, or a channel that is not a `newsletter` (only "
    "newsletters have subscribers)"
)


class SubscriberConflictDetailSerializer(serializers.Serializer):
    reason = serializers.ChoiceField(
        choices=["exists", *SuppressionReason.values],
        help_text="`exists`: on the list already; otherwise the suppression's reason.",
    )


REFUSED = error(
    "The address is on the channel's list already (`details.reason` `exists`), or it unsubscribed, bounced or "
    "reported a newsletter as spam (`unsubscribed`, `bounce`, `complaint`): neither the API nor an import ever "
    "turns such an address back on. The message says who can.",
    "conflict",
    envelope=error_with_details("SubscriberConflict", SubscriberConflictDetailSerializer()),
    example_details={"reason": "exists"},
)

FORBIDDEN_TO_ADD = error(
    "The key lacks `write:subscribers` (`insufficient_scope`, the message names it), or the body says `confirmed: "
    "true` and the key's owner is not an admin of the account (`admin_required`): only an admin may record a "
    "person as opted in elsewhere, with no confirmation e-mail. Nobody is added.",
    "insufficient_scope",
    "admin_required",
)


class SubscriberResponseSerializer(serializers.Serializer):
    data = SubscriberSerializer()


class SubscriberFilterSerializer(QueryFilterSerializer):
    """Filters of the subscribers list. An empty value is no filter."""

    status = serializers.ChoiceField(
        choices=SubscriberStatus.choices, required=False, help_text="Only subscribers in this status."
    )
    email = StrictCharField(
        required=False,
        max_length=254,
        help_text="Only the subscriber with this exact address (compared in any case, spaces around ignored).",
    )

    def validate_email(self, value: str) -> str:
        # As stored, so that one address written two ways is one list (one cursor).
        return normalize_email(value)


def subscribers_list_key(channel_id: int, filters: dict) -> str:
    """Names the list a cursor belongs to: the channel and its filters."""
    return f"channel-subscribers:{channel_id}:{sorted(filters.items())!r}"


class SubscriberCreateSerializer(StrictSerializer):
    email = StrictEmailField(max_length=254, help_text="Stored in lower case, without surrounding spaces.")
    name = StrictCharField(required=False, allow_blank=True, max_length=200, help_text="Default: empty.")
    confirmed = StrictBooleanField(
        default=False,
        help_text="false (the default): the person is `unconfirmed` and is sent the confirmation e-mail; only "
        "pressing its button makes them `confirmed`. true: they opted in elsewhere and are `confirmed` at once "
        "(`subscriber.confirmed` is sent), with no e-mail; only a key whose owner is an admin may say so (403 "
        "`admin_required` otherwise).",
    )


class SubscriberListView(APIView):
    required_scopes = READ | WRITE
    pagination_class = CursorPagePagination

    @extend_schema(
        operation_id="channel_subscribers_list",
        summary="List the subscribers of a newsletter channel",
        description=(
            "Scope `read:subscribers`. Ordered by `id`, ascending (oldest first), paginated as a channel's posts "
            "are: `page`, `per_page` or its shorthand `limit`, and `cursor` (each page's `meta.next_cursor`) "
            "for a full sync at the same cost at any depth. `meta.count` counts the subscribers that match the "
            "filters.\n\n**Filters:** `status`, `email` (one exact address, in any case). A bad filter value "
            f"answers 400 `VALIDATION_ERROR`, checked before the channel is looked up; {NOT_A_NEWSLETTER}."
        ),
        parameters=[SubscriberFilterSerializer],
        responses={200: SubscriberSerializer(many=True), **common_errors(not_found=True, bad_request=True)},
        tags=["subscribers"],
    )
    def get(self, request, channel_id: int):
        filters = SubscriberFilterSerializer.from_query(request.query_params)
        channel = newsletter_get(account_id=request.auth.account_id, channel_id=channel_id)
        subscribers = filter_subscribers(Subscriber.objects.filter(channel=channel), **filters).order_by("id")
        columns = tuple(fields_of(SubscriberSerializer))
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(
            subscribers.values_list(*columns, named=True),
            request,
            view=self,
            list_key=subscribers_list_key(channel.pk, filters),
            id_of=itemgetter(columns.index("id")),
        )
        return paginator.get_paginated_response(SubscriberSerializer(page, many=True).data)

    @extend_schema(
        operation_id="channel_subscribers_create",
        summary="Add a person to a newsletter channel's list",
        description=(
            "Scope `write:subscribers`. `email` is required; `name` and `confirmed` are optional. Answers 201 with "
            "the subscriber.\n\nChecked in this order: 401; 403 `insufficient_scope` without `write:subscribers`; "
            "400 `VALIDATION_ERROR` for a body that is not JSON, a field of the wrong type, an invalid address, a "
            "value too long or an unknown field; 403 `admin_required` for `confirmed: true` from a key whose owner "
            f"is not an admin; {NOT_A_NEWSLETTER}; 409 `conflict` for an address on the list already or one that "
            "unsubscribed, bounced or complained (`details.reason` says which)."
        ),
        request=SubscriberCreateSerializer,
        responses={
            201: SubscriberResponseSerializer,
            409: REFUSED,
            **common_errors(not_found=True, bad_request=True),
            403: FORBIDDEN_TO_ADD,
        },
        examples=[
            OpenApiExample(
                "Opted in on another site", value={"email": "ada@example.com", "name": "Ada", "confirmed": True}
            ),
            OpenApiExample("To confirm by e-mail", value={"email": "grace@example.com"}),
        ],
        tags=["subscribers"],
    )
    @idempotent
    def post(self, request, channel_id: int):
        body = SubscriberCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        if body.validated_data["confirmed"]:
            # No opt-in e-mail: a key given `write:subscribers` by a viewer or an editor must not fill the list
            # with people who never asked; the users endpoints' "admin only" rule.
            require_account_admin(request.user)
        channel = newsletter_get(account_id=request.auth.account_id, channel_id=channel_id)
        subscriber = subscriber_create(channel=channel, **body.validated_data)
        return Response({"data": SubscriberSerializer(subscriber).data}, status=status.HTTP_201_CREATED)


class SubscriberDetailView(APIView):
    required_scopes = READ | WRITE

    @extend_schema(
        operation_id="channel_subscribers_retrieve",
        summary="Get a subscriber of a newsletter channel",
        description=(
            f"Scope `read:subscribers`. {NOT_A_NEWSLETTER}; message `Subscriber not found.` for an unknown "
            "subscriber or one of another channel."
        ),
        responses={200: SubscriberResponseSerializer, **common_errors(not_found=True)},
        tags=["subscribers"],
    )
    def get(self, request, channel_id: int, subscriber_id: int):
        channel = newsletter_get(account_id=request.auth.account_id, channel_id=channel_id)
        subscriber = subscriber_get(channel=channel, subscriber_id=subscriber_id)
        return Response({"data": SubscriberSerializer(subscriber).data})

    @extend_schema(
        operation_id="channel_subscribers_delete",
        summary="Erase a subscriber",
        description=(
            "Scope `write:subscribers`. Erases the person: their row, and their address from every edition's "
            "delivery records (the counts stay). An address that unsubscribed, bounced or complained stays on the "
            "account's suppression list, which keeps only a hash of it, so adding it again is still refused. The "
            f"unsubscribe links already mailed to them keep answering, and change nothing. {NOT_A_NEWSLETTER}; "
            "`Subscriber not found.` for an unknown subscriber."
        ),
        responses={204: OpenApiResponse(description="Erased."), **common_errors(not_found=True)},
        tags=["subscribers"],
    )
    @idempotent
    def delete(self, request, channel_id: int, subscriber_id: int):
        channel = newsletter_get(account_id=request.auth.account_id, channel_id=channel_id)
        subscriber_delete(subscriber=subscriber_get(channel=channel, subscriber_id=subscriber_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
