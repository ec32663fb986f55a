"""How an API key's account and token, and a new SSO token, look from outside."""

from rest_framework import serializers

from apps.core.serializers import ResponseSerializer, UtcDateTimeField


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
