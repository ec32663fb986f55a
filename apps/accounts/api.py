from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.api.schema import common_errors


class AccountRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class TokenSerializer(serializers.Serializer):
    name = serializers.CharField()
    scopes = serializers.ListField(child=serializers.CharField())
    expires_at = serializers.DateTimeField()


class MeSerializer(serializers.Serializer):
    account = AccountRefSerializer()
    token = TokenSerializer()


class MeResponseSerializer(serializers.Serializer):
    data = MeSerializer()


class MeView(APIView):
    required_scope = None  # any valid key may check itself

    @extend_schema(
        operation_id="me",
        summary="Check the API key: its account and token. Any valid key, no scope needed.",
        responses={200: MeResponseSerializer, **common_errors(scope=False)},
        tags=["account"],
    )
    def get(self, request):
        api_key = request.auth
        return Response({"data": MeSerializer({"account": api_key.account, "token": api_key}).data})
