"""OpenAPI pieces shared by every endpoint: the Bearer scheme and the error envelope."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, inline_serializer
from rest_framework import serializers


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "apps.api.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key: `Authorization: Bearer cps_xxxxxxxx_...`.",
        }


class ErrorDetailSerializer(serializers.Serializer):
    field = serializers.CharField(allow_null=True, help_text="The offending field, when there is one.")
    rule = serializers.CharField(help_text="The rule that failed, e.g. `required`, `invalid`, `max_value`.")
    errors = serializers.ListField(
        child=inline_serializer(
            "FieldError",
            fields={
                "field": serializers.CharField(allow_null=True),
                "rule": serializers.CharField(),
                "message": serializers.CharField(),
            },
        ),
        help_text="Every failed rule, the first of which is repeated in `field` and `rule`.",
    )


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    details = ErrorDetailSerializer(required=False, help_text="Present on `VALIDATION_ERROR`.")


class ErrorSerializer(serializers.Serializer):
    error = ErrorBodySerializer()


def error(description: str, *codes: str) -> OpenApiResponse:
    return OpenApiResponse(
        ErrorSerializer,
        description=f"{description} Codes: {', '.join(f'`{c}`' for c in codes)}." if codes else description,
        examples=[
            OpenApiExample(code, value={"error": {"code": code, "message": "..."}}, response_only=True)
            for code in codes
        ],
    )


UNAUTHORIZED = error("Missing, malformed, unknown, expired or revoked API key.", "authentication_failed")
FORBIDDEN_SCOPE = error("The key lacks the endpoint's scope; the message names it.", "insufficient_scope")
NOT_FOUND = error("No such resource in the key's account.", "not_found")
BAD_REQUEST = error("Invalid query or body; `details` names the field and rule.", "VALIDATION_ERROR")
RATE_LIMITED = error("Too many requests.", "rate_limit_exceeded")


def common_errors(*, scope: bool = True, not_found: bool = False, bad_request: bool = False) -> dict:
    responses = {401: UNAUTHORIZED, 429: RATE_LIMITED}
    if scope:
        responses[403] = FORBIDDEN_SCOPE
    if not_found:
        responses[404] = NOT_FOUND
    if bad_request:
        responses[400] = BAD_REQUEST
    return responses
