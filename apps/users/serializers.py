"""How a user looks from outside: the Users endpoints show subsets of `UserSerializer`, and the
webhook payload `data.user` is all of it (`user_payload`). Nothing secret is ever in it. Below them,
how an API key's account and token (`/v1/me`) and a new SSO token look."""

from rest_framework import serializers

from apps.core.serializers import ResponseSerializer, UtcDateTimeField
from apps.users.events import UserEvent
from apps.users.models import LoginMethod, Permission, User
from apps.webhooks.serializers import EventAccountSerializer


class OrganizationSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="The organization (account) id, as a string.")
    name = serializers.CharField()


class NotificationPreferencesSerializer(serializers.Serializer):
    email = serializers.BooleanField()
    push = serializers.BooleanField()


class UserSerializer(serializers.ModelSerializer):
    id = serializers.CharField(read_only=True, help_text="The user id: a string of digits.")
    permissions = serializers.ListField(child=serializers.ChoiceField(choices=Permission.choices), read_only=True)
    metadata = serializers.DictField(read_only=True, help_text="Free key/value data.")
    notification_preferences = NotificationPreferencesSerializer(read_only=True)
    organization = OrganizationSerializer(source="account", read_only=True)

    class Meta:
        model = User
        fields = (
            "id",
            "email",
            "name",
            "role",
            "status",
            "permissions",
            "metadata",
            "timezone",
            "language",
            "notification_preferences",
            "organization",
            "created_at",
            "updated_at",
            "last_login",
            "invitation_sent_at",
        )
        read_only_fields = fields


class UserListItemSerializer(UserSerializer):
    class Meta(UserSerializer.Meta):
        fields = ("id", "email", "name", "role", "status", "last_login")
        read_only_fields = fields


class UserDetailSerializer(UserSerializer):
    class Meta(UserSerializer.Meta):
        fields = ("id", "email", "name", "role", "status", "permissions", "metadata", "created_at", "updated_at")
        read_only_fields = fields


class UserCreatedSerializer(UserSerializer):
    class Meta(UserSerializer.Meta):
        fields = ("id", "email", "name", "role", "status", "invitation_sent_at")
        read_only_fields = fields


class ProfileSerializer(UserSerializer):
    class Meta(UserSerializer.Meta):
        fields = (
            "id",
            "email",
            "name",
            "role",
            "organization",
            "created_at",
            "last_login",
            "timezone",
            "language",
            "notification_preferences",
        )
        read_only_fields = fields


def user_payload(user: User) -> dict:
    """`data.user` of the user.* webhook events."""
    return dict(UserSerializer(user).data)


# --- The user.* webhook bodies, for the OpenAPI schema (the outbox writes them in apps/webhooks) ---


class UserEventDataSerializer(serializers.Serializer):
    user = UserSerializer(help_text="The user after the change (before it, for user.deleted).")
    changed = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="user.updated: the fields that changed."
    )
    old_role = serializers.CharField(required=False, help_text="user.role_changed: the role before.")
    new_role = serializers.CharField(required=False, help_text="user.role_changed: the role now.")
    via = serializers.ChoiceField(
        choices=LoginMethod.choices, required=False, help_text="user.login: how the user signed in."
    )


USER_EVENT_KINDS = UserEvent.values


class UserEventSerializer(serializers.Serializer):
    event = serializers.ChoiceField(choices=USER_EVENT_KINDS)
    timestamp = serializers.DateTimeField()
    account = EventAccountSerializer()
    data = UserEventDataSerializer()


# --- an API key and the SSO tokens it makes -----------------------------------------------------


class AccountRefSerializer(ResponseSerializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class TokenSerializer(ResponseSerializer):
    name = serializers.CharField()
    scopes = serializers.ListField(child=serializers.CharField())
    expires_at = UtcDateTimeField()


class MeSerializer(ResponseSerializer):
    """Renders an object with the attributes `account` and `token` (the API key)."""

    account = AccountRefSerializer()
    token = TokenSerializer()


class SsoUserSerializer(serializers.Serializer):
    id = serializers.CharField()
    email = serializers.EmailField()


class SsoTokenSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="The one-time token; shown only in this response.")
    login_url = serializers.URLField(help_text="Open this in the user's browser to sign them in.")
    expires_at = serializers.DateTimeField()
    user = SsoUserSerializer()
