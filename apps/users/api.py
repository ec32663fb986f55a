"""The Users endpoints. A request acts as the user who owns the API key; every lookup is limited
to the key's account. Reading users needs the scope `read:users`, changing them `write:users`
(beyond the spec's list of scopes); "admin only" means, on top of that, that the key's owner has
role admin. The key owner's own profile needs no scope."""

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import generics, serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.models import Scope
from apps.api.idempotency import idempotent
from apps.api.pagination import PagePagination
from apps.api.permissions import HasRequiredScope, IsAccountAdmin, require_account_admin
from apps.api.request_fields import StrictBooleanField, StrictCharField, StrictEmailField, StrictSerializer
from apps.api.schema import common_errors, error, event_callbacks
from apps.users.events import UserEvent
from apps.users.models import (
    LANGUAGE_TAG,
    LANGUAGE_TAG_MAX_LENGTH,
    METADATA_MAX_BYTES,
    Permission,
    Role,
    Status,
    User,
    validate_language,
    validate_metadata,
    validate_timezone,
)
from apps.users.selectors import user_of_account, users_of_account
from apps.users.serializers import (
    ProfileSerializer,
    UserCreatedSerializer,
    UserDetailSerializer,
    UserEventSerializer,
    UserListItemSerializer,
)
from apps.users.services import profile_update, user_create, user_delete, user_update

FORBIDDEN = error(
    "The key lacks the operation's scope (the message names it), or the key's owner is not an admin of the account.",
    "insufficient_scope",
    "admin_required",
)
READ_USERS = {"GET": Scope.READ_USERS}
WRITE_USERS = {method: Scope.WRITE_USERS for method in ("POST", "PUT", "DELETE")}
LAST_ADMIN = error(
    "The change would leave the account without an active admin, or sets a user back to `invited`.",
    "last_admin",
    "invalid_status",
)
EMAIL_TAKEN = error("A user with this e-mail already exists.", "email_taken")
INVITATION_NOT_SENT = error("The invitation e-mail could not be sent; nothing was created.", "invitation_not_sent")


class UsersPagination(PagePagination):
    """The one pagination, answered in the users list's form (the spec's): key `pagination` with
    `page`, `limit`, `total` and `pages`."""

    meta_key = "pagination"
    schema_meta_keys = ("page", "limit", "total", "pages")

    def get_meta(self) -> dict:
        return {"page": self.page, "limit": self.per_page, "total": self.count, "pages": self.pages}


def account_user(request, user_id: str) -> User:
    """The user with this id in the key's account; another account's user is not found."""
    user = user_of_account(account_id=request.auth.account_id, user_id=user_id)
    if user is None:
        raise NotFound()
    return user


# --- request bodies ----------------------------------------------------------------------------


class NotificationPreferencesInputSerializer(StrictSerializer):
    email = StrictBooleanField(required=False)
    push = StrictBooleanField(required=False)


# The zone names are not an `enum` in the schema: client generators make an enum class of it, whose
# member names collide once mangled ("GMT0", "GMT+0" and "GMT-0" are all GMT0), so with their defaults
# they stop; and the list changes with each tz database release, which no client should be rebuilt for.
# The format names the rule for tools that know it (the fuzz tests draw zones for it); others ignore it.
TIMEZONE_FORMAT = "iana-time-zone"


@extend_schema_field(
    {
        "type": "string",
        "format": TIMEZONE_FORMAT,
        "description": "An IANA time zone name of the tz database, as `Europe/Berlin`, `America/Argentina/"
        "Buenos_Aires` or `UTC`; any other name is refused (400, rule `timezone`).",
        "example": "Europe/Berlin",
    }
)
class TimezoneField(serializers.Field):
    """An IANA zone name, checked against the server's tz database (`validate_timezone`, which refuses
    blank names too). Not a StrictCharField, whose blank rule the schema would state as `minLength` and
    a `pattern`: rules a non-zone meets, so a tool that knows the format would no longer hold to it."""

    default_error_messages = {"invalid": "Must be a string."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return data

    def to_representation(self, value):
        return value


@extend_schema_field({"type": "string", "maxLength": LANGUAGE_TAG_MAX_LENGTH, "pattern": LANGUAGE_TAG.pattern})
class LanguageTagField(StrictCharField):
    """A BCP 47 language tag; the schema's pattern is the one the server checks."""


class ProfileUpdateSerializer(StrictSerializer):
    name = StrictCharField(required=False, max_length=200)
    timezone = TimezoneField(required=False, validators=[validate_timezone])
    language = LanguageTagField(required=False, max_length=LANGUAGE_TAG_MAX_LENGTH, validators=[validate_language])
    notification_preferences = NotificationPreferencesInputSerializer(
        required=False, help_text="Only the channels given change; the others keep their setting."
    )


class PermissionsField(serializers.ListField):
    child = serializers.ChoiceField(choices=Permission.choices)

    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", "Permission names; repeats are dropped. Default: the role's permissions.")
        super().__init__(**kwargs)


class MetadataField(serializers.DictField):
    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", f"Free key/value data, at most {METADATA_MAX_BYTES} bytes as JSON.")
        kwargs.setdefault("validators", [validate_metadata])
        super().__init__(**kwargs)


class UserCreateSerializer(StrictSerializer):
    email = StrictEmailField(max_length=254)
    name = StrictCharField(max_length=200)
    role = serializers.ChoiceField(choices=Role.choices, default=Role.VIEWER)
    send_invitation = StrictBooleanField(
        default=True, help_text="Send an invitation e-mail (status `invited`); false: the user is `active` at once."
    )
    permissions = PermissionsField(required=False)
    metadata = MetadataField(required=False)


class UserUpdateSerializer(StrictSerializer):
    name = StrictCharField(required=False, max_length=200)
    role = serializers.ChoiceField(
        choices=Role.choices, required=False, help_text="A new role resets permissions unless they are given too."
    )
    status = serializers.ChoiceField(
        choices=Status.choices, required=False, help_text="`invited` is accepted only for a user who is invited."
    )
    permissions = PermissionsField(required=False)
    metadata = MetadataField(required=False, help_text="Replaces the metadata as a whole.")


class UserFilterSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices, required=False, help_text="Only users with this role.")
    status = serializers.ChoiceField(choices=Status.choices, required=False, help_text="Only users in this status.")
    search = serializers.CharField(
        required=False, allow_blank=True, max_length=200, help_text="Part of the name or e-mail, any case."
    )


# --- views -------------------------------------------------------------------------------------


class ProfileView(APIView):
    required_scope = None

    @extend_schema(
        operation_id="users_profile_get",
        summary="The profile of the user who owns the API key. Any valid key, no scope needed.",
        description="Besides the spec's fields, the settings that `PUT` changes: `timezone`, `language`, "
        "`notification_preferences`.",
        responses={200: ProfileSerializer, **common_errors(scope=False)},
        tags=["users"],
    )
    def get(self, request):
        return Response(ProfileSerializer(request.user).data)

    @extend_schema(
        operation_id="users_profile_update",
        summary="Update the key owner's own name, time zone, language and notification preferences.",
        description="Every field is optional: only the fields given change (an empty object changes nothing). "
        "`timezone` is an IANA zone name, `language` a BCP 47 language tag. Unknown fields are rejected.",
        request=ProfileUpdateSerializer,
        callbacks=event_callbacks(UserEventSerializer, UserEvent.UPDATED),
        responses={200: ProfileSerializer, **common_errors(scope=False, bad_request=True)},
        tags=["users"],
    )
    @idempotent
    def put(self, request):
        body = ProfileUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        user = profile_update(user=request.user, **body.validated_data)
        return Response(ProfileSerializer(user).data)


class UsersView(generics.ListAPIView):
    required_scopes = READ_USERS | WRITE_USERS
    permission_classes = [HasRequiredScope, IsAccountAdmin]
    pagination_class = UsersPagination
    serializer_class = UserListItemSerializer

    def get_queryset(self):
        filters = UserFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        return users_of_account(account_id=self.request.auth.account_id, **filters.validated_data)

    @extend_schema(
        operation_id="users_list",
        summary="List the account's users (admin only), in creation order.",
        description="Scope `read:users`. Paginated with `page` and `per_page` or its shorthand `limit` (the "
        "spec's name here), answered as `pagination` with `page`, `limit`, `total` and `pages`.",
        parameters=[UserFilterSerializer],
        responses={
            200: UserListItemSerializer(many=True),
            403: FORBIDDEN,
            **common_errors(scope=False, bad_request=True),
        },
        tags=["users"],
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        operation_id="users_create",
        summary="Create a user in the account (admin only), by default with an invitation e-mail.",
        description="Scope `write:users`. `email` and `name` are required. The e-mail is unique across the "
        "service (any case). "
        "With `send_invitation` (default true) the user is `invited` and gets an e-mail with a one-time link "
        "to set a password; otherwise the user is `active` at once and `invitation_sent_at` is null.",
        request=UserCreateSerializer,
        callbacks=event_callbacks(UserEventSerializer, UserEvent.CREATED),
        responses={
            201: UserCreatedSerializer,
            403: FORBIDDEN,
            409: EMAIL_TAKEN,
            503: INVITATION_NOT_SENT,
            **common_errors(scope=False, bad_request=True),
        },
        tags=["users"],
    )
    @idempotent
    def post(self, request):
        body = UserCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        user = user_create(account=request.auth.account, **body.validated_data)
        return Response(UserCreatedSerializer(user).data, status=status.HTTP_201_CREATED)


class UserDetailView(APIView):
    required_scopes = READ_USERS | WRITE_USERS
    permission_classes = [HasRequiredScope, IsAccountAdmin]
    admin_methods = {"PUT", "DELETE"}

    @extend_schema(
        operation_id="users_get",
        summary="Get a user of the account. Admins may read anyone; other users only themselves.",
        description="Scope `read:users`.",
        responses={
            200: UserDetailSerializer,
            403: FORBIDDEN,
            **common_errors(scope=False, not_found=True),
        },
        tags=["users"],
    )
    def get(self, request, user_id):
        user = account_user(request, user_id)
        if user.pk != request.user.pk:
            require_account_admin(request.user)
        return Response(UserDetailSerializer(user).data)

    @extend_schema(
        operation_id="users_update",
        summary="Update a user's name, role, status, permissions or metadata (admin only).",
        description="Scope `write:users`. Every field is optional: only the fields given change. A new `role` "
        "resets `permissions` "
        "to the role's defaults unless `permissions` are given too. The account's last active admin "
        "cannot be demoted, made inactive or suspended (`last_admin`). Returns the updated user.",
        request=UserUpdateSerializer,
        callbacks=event_callbacks(UserEventSerializer, UserEvent.UPDATED, UserEvent.ROLE_CHANGED),
        responses={
            200: UserDetailSerializer,
            403: FORBIDDEN,
            422: LAST_ADMIN,
            **common_errors(scope=False, not_found=True, bad_request=True),
        },
        tags=["users"],
    )
    @idempotent
    def put(self, request, user_id):
        user = account_user(request, user_id)
        body = UserUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        user = user_update(user=user, **body.validated_data)
        return Response(UserDetailSerializer(user).data)

    @extend_schema(
        operation_id="users_delete",
        summary="Delete a user (admin only); the user's API keys stop working at once.",
        description="Scope `write:users`.",
        callbacks=event_callbacks(UserEventSerializer, UserEvent.DELETED),
        responses={
            204: OpenApiResponse(description="Deleted."),
            403: FORBIDDEN,
            422: error("The user is the account's last active admin.", "last_admin"),
            **common_errors(scope=False, not_found=True),
        },
        tags=["users"],
    )
    @idempotent
    def delete(self, request, user_id):
        user_delete(user=account_user(request, user_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
