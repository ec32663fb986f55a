"""The endpoints of an API key itself: `/v1/me` (its account and token) and `/v1/sso_tokens` (the
one-time sign-in links it makes for the account's users). The Users endpoints are in api.py."""

from types import SimpleNamespace
from urllib.parse import urlencode

from django.conf import settings
from django.urls import reverse
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import ErrorDetail
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.models import Scope
from apps.api.idempotency import idempotent
from apps.api.permissions import require_account_admin
from apps.api.request_fields import StrictCharField, StrictEmailField, StrictSerializer
from apps.api.schema import common_errors, error, event_callbacks
from apps.core.errors import NotFound
from apps.core.local_paths import LOCAL_PATH_PATTERN, validate_local_path
from apps.users.credentials import sso_token_create
from apps.users.events import UserEvent
from apps.users.models import USER_ID_MAX_DIGITS, parse_user_id
from apps.users.selectors import user_of_account
from apps.users.serializers import MeSerializer, SsoTokenSerializer, UserEventSerializer


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "pattern": f"^[0-9]{{1,{USER_ID_MAX_DIGITS}}}$"},
            {"type": "integer", "minimum": 0, "maximum": 10**USER_ID_MAX_DIGITS - 1},
        ]
    }
)
class UserIdField(serializers.Field):
    """A user id: the string of digits the Users endpoints return (an integer is accepted too)."""

    default_error_messages = {"invalid": "Must be a user id (a string of digits)."}

    def to_internal_value(self, data) -> int:
        # In JSON Schema (OpenAPI 3.1) `5.0` is an integer, so the schema's integer takes it too.
        if isinstance(data, float) and data.is_integer():
            data = int(data)
        pk = parse_user_id(data)
        if pk is None:
            self.fail("invalid")
        return pk

    def to_representation(self, value) -> str:
        return str(value)


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
        return Response({"data": MeSerializer(SimpleNamespace(account=api_key.account, token=api_key)).data})


REDIRECT_TO_MAX_LENGTH = 2000


@extend_schema_field({"type": "string", "maxLength": REDIRECT_TO_MAX_LENGTH, "pattern": LOCAL_PATH_PATTERN})
class LocalPathField(StrictCharField):
    """`redirect_to`: empty, or a path on this service (the pattern is the one the server checks)."""


class SsoTokenCreateSerializer(StrictSerializer):
    """Exactly one of `email` and `user_id`; unknown keys are refused."""

    email = StrictEmailField(required=False, help_text="The user's e-mail (any case). Give this or `user_id`.")
    user_id = UserIdField(required=False, help_text="The user's id as returned by the Users endpoints.")
    redirect_to = LocalPathField(
        required=False,
        allow_blank=True,
        max_length=REDIRECT_TO_MAX_LENGTH,
        validators=[validate_local_path],
        help_text="Where to go after signing in: a path on this service such as `/account/` (default).",
    )

    exactly_one_of = ("email", "user_id")

    def validate(self, attrs):
        given = [name for name in self.exactly_one_of if name in attrs]
        if len(given) != 1:
            rule, message = ("exclusive", "Give only one of") if given else ("required", "Give one of")
            raise serializers.ValidationError(
                {"user_id" if given else "email": [ErrorDetail(f"{message} 'email' and 'user_id'.", code=rule)]}
            )
        return attrs


class SsoTokenResponseSerializer(serializers.Serializer):
    data = SsoTokenSerializer()


class SsoTokensView(APIView):
    required_scope = Scope.WRITE_SSO

    @extend_schema(
        operation_id="sso_tokens_create",
        summary="Create a one-time single sign-on link for an active user of the account.",
        description=(
            "Needs scope `write:sso`. The token is valid for `SSO_TOKEN_TTL` seconds (300 by default) and "
            "works once: opening `login_url` (`GET /sso/login?token=...`) signs the user into the web app and "
            "redirects to `redirect_to`. A key whose owner is not an admin may create tokens only for that "
            "owner (`admin_required` otherwise)."
        ),
        request=SsoTokenCreateSerializer,
        callbacks=event_callbacks(UserEventSerializer, UserEvent.LOGIN),
        responses={
            201: SsoTokenResponseSerializer,
            403: error(
                "The key lacks `write:sso`, or a non-admin key asks for another user.",
                "insufficient_scope",
                "admin_required",
            ),
            404: error("No such user in the key's account.", "not_found"),
            422: error("The user is not active (inactive, suspended or not yet accepted).", "user_not_active"),
            **common_errors(scope=False, bad_request=True),
        },
        tags=["sso"],
    )
    @idempotent
    def post(self, request):
        body = SsoTokenCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        account = request.auth.account
        user = user_of_account(
            account_id=account.pk, user_id=body.validated_data.get("user_id"), email=body.validated_data.get("email")
        )
        if user is None:
            raise NotFound("No such user in this account.")
        if user.pk != request.user.pk:
            require_account_admin(request.user)
        token, raw = sso_token_create(
            account=account, user=user, redirect_to=body.validated_data.get("redirect_to", ""), api_key=request.auth
        )
        login_url = f"{settings.SITE_URL}{reverse('sso-login')}?{urlencode({'token': raw})}"
        data = {"token": raw, "login_url": login_url, "expires_at": token.expires_at, "user": user}
        return Response({"data": SsoTokenSerializer(data).data}, status=status.HTTP_201_CREATED)
