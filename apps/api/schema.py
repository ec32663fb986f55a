"""OpenAPI pieces shared by every endpoint: the Bearer scheme, the error envelope, what the HTTP layer
adds to every operation, and what `@idempotent` adds to the writes it decorates."""

from drf_spectacular import openapi
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import (
    OpenApiCallback,
    OpenApiExample,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers

from apps.api import idempotency
from apps.core import json_input


class StrictSerializerScheme(OpenApiSerializerExtension):
    """Request bodies of StrictSerializers refuse undeclared keys (rule `unknown_field`): the schema says
    so with `additionalProperties: false`, and states an "exactly one of" rule as `oneOf`."""

    target_class = "apps.api.request_fields.StrictSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_basic_serializer(self.target, direction)
        schema["additionalProperties"] = False
        exactly_one_of = getattr(self.target, "exactly_one_of", ())
        if exactly_one_of:
            schema["oneOf"] = [{"required": [name]} for name in exactly_one_of]
        return schema


# The error envelope. The serializers' docstrings are the schema's descriptions, read by the API's users.


class ErrorDetailSerializer(serializers.Serializer):
    """`details` of a `VALIDATION_ERROR`."""

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


class ConflictDetailSerializer(serializers.Serializer):
    """`details` of a 409 `conflict` that says why; the operation's 409 lists its reasons."""

    reason = serializers.CharField(help_text="Why the request conflicts; each operation's 409 says its values.")


class PreconditionDetailSerializer(serializers.Serializer):
    """`details` of a 412 `precondition_failed`: the resource as it is now."""

    current_etag = serializers.CharField(help_text="The resource's current `ETag` (what GET sends now).")
    updated_at = serializers.DateTimeField(help_text="The resource's own last change.")


# Every shape `details` takes on the wire: one of these, or no `details` at all.
ERROR_DETAILS = PolymorphicProxySerializer(
    component_name="ErrorDetails",
    serializers=[ErrorDetailSerializer, ConflictDetailSerializer, PreconditionDetailSerializer],
    resource_type_field_name=None,
    required=False,
    help_text="Present on `VALIDATION_ERROR` (`field`, `rule`, `errors`), on a 409 `conflict` that says why "
    "(`reason`) and on a 412 `precondition_failed` (`current_etag`, `updated_at`); absent on every other error.",
)


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    details = ERROR_DETAILS


class ErrorSerializer(serializers.Serializer):
    error = ErrorBodySerializer()


def error_with_details(name: str, details: serializers.Serializer) -> type[serializers.Serializer]:
    """An error envelope whose `details` always has this shape: the component `{name}` (a response of
    one operation whose errors all carry it, such as a 409 with its reasons)."""
    body = type(f"{name}BodySerializer", (ErrorBodySerializer,), {"details": details})
    return type(f"{name}Serializer", (serializers.Serializer,), {"error": body()})


def error(description: str, *codes: str, envelope=ErrorSerializer, example_details: dict | None = None):
    """An error response of these codes; `envelope` (from error_with_details) when its `details` is
    always there, with `example_details` for its examples."""
    detail = {} if example_details is None else {"details": example_details}
    return OpenApiResponse(
        envelope,
        description=f"{description} Codes: {', '.join(f'`{c}`' for c in codes)}." if codes else description,
        examples=[
            OpenApiExample(code, value={"error": {"code": code, "message": "...", **detail}}, response_only=True)
            for code in codes
        ],
    )


UNAUTHORIZED = error("Missing, malformed, unknown, expired or revoked API key.", "authentication_failed")
FORBIDDEN_SCOPE = error("The key lacks the endpoint's scope; the message names it.", "insufficient_scope")
NOT_FOUND = error("No such resource in the key's account.", "not_found")
BAD_REQUEST = error("Invalid query or body; `details` names the field and rule.", "VALIDATION_ERROR")
RATE_LIMITED_DESCRIPTION = (
    "Rate limit exceeded: the account's hourly budget, or, for a request that fails authentication, its "
    "address's hourly budget of failed authentications (a request with a valid key is never refused for "
    "that one). `Retry-After` says when to try again."
)
RATE_LIMITED = error(RATE_LIMITED_DESCRIPTION, "rate_limit_exceeded")


def common_errors(*, scope: bool = True, not_found: bool = False, bad_request: bool = False) -> dict:
    responses = {401: UNAUTHORIZED, 429: RATE_LIMITED}
    if scope:
        responses[403] = FORBIDDEN_SCOPE
    if not_found:
        responses[404] = NOT_FOUND
    if bad_request:
        responses[400] = BAD_REQUEST
    return responses


# Webhook receivers are configured per account (Settings / Webhooks), not per request.
WEBHOOK_URL = "{$your_webhook_url}"


def event_callbacks(body: type[serializers.Serializer], *kinds: str) -> list[OpenApiCallback]:
    """The webhooks an operation sends (each of `kinds`, with the delivery body `body`), so the
    schema documents their bodies."""
    return [
        OpenApiCallback(
            str(kind),
            WEBHOOK_URL,
            extend_schema(
                summary=f"`{kind}`, sent to the account's webhook endpoints that subscribe to it",
                request=body,
                responses={200: OpenApiResponse(description="Any 2xx status acknowledges the delivery.")},
            ),
        )
        for kind in kinds
    ]


# --- The HTTP layer every operation shares (apps/api/middleware.py, apps/api/ratelimit.py) ---

RATE_LIMIT_HEADERS = {
    "X-RateLimit-Limit": {
        "description": (
            "Requests allowed in the current clock hour: the account's plan limit when a valid key was "
            "sent, otherwise the client address's limit of failed authentications. `unlimited` for plans "
            "without a limit, which then get neither `X-RateLimit-Remaining` nor `X-RateLimit-Reset`."
        ),
        "required": True,
        "schema": {"type": "string", "pattern": "^([0-9]+|unlimited)$", "example": "1000"},
    },
    "X-RateLimit-Remaining": {
        "description": (
            "Requests left in the current hour. Absent when the limit is `unlimited`, and while the "
            "rate-limit store is unreachable (the API then serves without limits)."
        ),
        "schema": {"type": "integer", "minimum": 0, "example": 999},
    },
    "X-RateLimit-Reset": {
        "description": "Unix time at which the current hour's window ends and the budget is full again.",
        "schema": {"type": "integer", "example": 1767229200},
    },
}
SHARED_HEADERS = {
    **RATE_LIMIT_HEADERS,
    "X-API-Version": {
        "description": "The API version that answered.",
        "required": True,
        "schema": {"type": "string", "enum": ["1"]},
    },
}
EXTRA_HEADERS = {
    "Retry-After": {"description": "Seconds until the budget is full again.", "schema": {"type": "integer"}},
    "ETag": {
        "description": "Strong validator of the representation; send it back in `If-None-Match`.",
        "schema": {"type": "string", "example": '"5d41402abc4b2a76b9719d911017c592"'},
    },
}
IF_NONE_MATCH = {
    "name": "If-None-Match",
    "in": "header",
    "required": False,
    "description": "An `ETag` from an earlier response: 304 without a body while the representation is unchanged.",
    "schema": {"type": "string"},
}
HTTP_ERRORS = {
    "406": ("The Accept header allows no JSON (`application/json`, `application/*` and `*/*` do).", "not_acceptable"),
    "429": (RATE_LIMITED_DESCRIPTION, "rate_limit_exceeded"),
}
JSON_INPUT_RULES = (
    "Every JSON body, at any depth: strings and object keys hold no U+0000 (`null_character`) and no lone "
    "UTF-16 surrogate (`lone_surrogate`); numbers are finite and within "
    f"±{json_input.NUMBER_LIMIT:.16e} (`number_out_of_range`: no NaN, Infinity, 1e999); arrays and objects "
    f"nest at most {json_input.MAX_DEPTH} levels, the body itself counting as 1 (`too_deep`). A body that breaks "
    "one is refused with 400 `VALIDATION_ERROR`, `details.field` the value's path (`metadata.a[0]`) and "
    "`details.rule` the rule."
)
BODY_ERRORS = {
    "400": ("Invalid body; `details` names the field and rule.", "VALIDATION_ERROR"),
    "411": ("A body sent without Content-Length (chunked).", "length_required"),
    "413": ("The body is larger than the limit (MAX_REQUEST_BODY_BYTES, 1 MiB by default).", "payload_too_large"),
    "415": ("The body is not JSON (`Content-Type: application/json`).", "unsupported_media_type"),
}


def _error_response(description: str, code: str) -> dict:
    return {
        "description": f"{description} Codes: `{code}`.",
        "content": {
            "application/json": {
                "schema": {"$ref": "#/components/schemas/Error"},
                "examples": {code: {"value": {"error": {"code": code, "message": "..."}}}},
            }
        },
    }


def _header_refs(*names: str) -> dict:
    return {name: {"$ref": f"#/components/headers/{name}"} for name in names}


def _names_one_of(body: dict, schemas: dict) -> bool:
    for media in body.get("content", {}).values():
        schema = media.get("schema", {})
        if "$ref" in schema:
            schema = schemas.get(schema["$ref"].rsplit("/", 1)[1], {})
        alternatives = schema.get("oneOf", [])
        if alternatives and all(alternative.get("required") for alternative in alternatives):
            return True
    return False


def add_http_layer(result, generator, request, public):
    """drf-spectacular postprocessing hook: the rate-limit and version headers on every response,
    the 406/429 (and, with a body, 400/411/413/415 and the JSON input rules) errors, conditional GET,
    and empty query values, on every operation."""
    components = result.setdefault("components", {})
    components.setdefault("headers", {}).update({**SHARED_HEADERS, **EXTRA_HEADERS, **IDEMPOTENCY_HEADERS})
    for methods in result.get("paths", {}).values():
        for method, operation in methods.items():
            responses = operation.setdefault("responses", {})
            errors = {**HTTP_ERRORS, **(BODY_ERRORS if "requestBody" in operation else {})}
            for status, (description, code) in errors.items():
                responses.setdefault(status, _error_response(description, code))
            body = operation.get("requestBody")
            if body:
                _describe_body(body, responses, components.get("schemas", {}))
            for parameter in operation.get("parameters", []):
                # Every endpoint reads an empty query value (`?page=`, `?status=`) as the parameter left out.
                if parameter["in"] == "query" and not parameter.get("required"):
                    parameter["allowEmptyValue"] = True
            if method == "get":
                _add_conditional_get(operation, responses)
            _add_response_headers(method, responses)
    return result


def _describe_body(body: dict, responses: dict, schemas: dict) -> None:
    for described in (body, responses["400"]):
        described["description"] = " ".join(filter(None, [described.get("description"), JSON_INPUT_RULES]))
    body["x-json-input-rules"] = {"max_depth": json_input.MAX_DEPTH, "max_number": json_input.NUMBER_LIMIT}
    if not body.get("required") and _names_one_of(body, schemas):
        # A body that must name one of several fields (`oneOf` of `required`) cannot be left out.
        body["required"] = True


def _add_conditional_get(operation: dict, responses: dict) -> None:
    parameters = operation.setdefault("parameters", [])
    if not any(p.get("name") == IF_NONE_MATCH["name"] for p in parameters):
        parameters.append(dict(IF_NONE_MATCH))
    responses.setdefault("304", {"description": "Not modified: the `ETag` still matches `If-None-Match`. No body."})


def _add_response_headers(method: str, responses: dict) -> None:
    for status, response in responses.items():
        headers = response.setdefault("headers", {})
        headers.update(_header_refs(*SHARED_HEADERS))
        if status == "429":
            headers.update(_header_refs("Retry-After"))
        if method == "get" and (status.startswith("2") or status == "304"):
            headers.update(_header_refs("ETag"))


# --- Idempotency-Key on the writes `@idempotent` decorates (apps/api/idempotency.py) ---

ERROR_REF = {"$ref": "#/components/schemas/Error"}
IDEMPOTENCY_KEY = {
    "name": idempotency.HEADER,
    "in": "header",
    "required": False,
    "description": (
        "Makes a retry safe: the answer to the first request with this key (2xx, or a 4xx of the request's own "
        "checks, other than 401, 403 and 429) is kept for the API key, method and path for `IDEMPOTENCY_KEY_TTL` "
        "(24 hours by default), and the same request again gets it, with `Idempotent-Replayed: true`, instead of "
        f"running again. {idempotency.KEY_RULE[0].upper()}{idempotency.KEY_RULE[1:]} The body is compared as parsed "
        "JSON."
    ),
    "schema": {
        "type": "string",
        "minLength": 1,
        "maxLength": idempotency.KEY_MAX_LENGTH,
        "pattern": idempotency.KEY_PATTERN,
    },
}
IDEMPOTENCY_HEADERS = {
    idempotency.REPLAYED_HEADER: {
        "description": "`true` on an answer given again to a request with the `Idempotency-Key` of an earlier one.",
        "schema": {"type": "string", "enum": ["true"]},
    },
}
IN_PROGRESS_RETRY_AFTER = {
    "description": "Seconds to wait before sending the request again.",
    "schema": {"type": "integer", "minimum": 1},
}
IDEMPOTENCY_ERRORS = {
    "400": (f"The `{idempotency.HEADER}` header is not {idempotency.KEY_RULE}", "VALIDATION_ERROR"),
    "409": (
        f"A request with this `{idempotency.HEADER}` is still running: send it again after `Retry-After` seconds.",
        "idempotency_request_in_progress",
    ),
    "422": (
        f"This `{idempotency.HEADER}` was sent before with a different body: a key names one request.",
        "idempotency_key_reused",
    ),
}


class AutoSchema(openapi.AutoSchema):
    """drf-spectacular's, plus the `Idempotency-Key` of every operation whose handler is `@idempotent`."""

    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        handler = getattr(self.view, method.lower(), None)
        if operation is not None and idempotency.is_idempotent(handler):
            add_idempotency(operation)
        return operation


# Answered by the HTTP layer before any handler runs, even where an operation describes its own (an
# upload's larger 413): never a replay.
HTTP_LAYER = frozenset({"406", "411", "413", "415"})


def add_idempotency(operation: dict) -> None:
    operation.setdefault("parameters", []).append(dict(IDEMPOTENCY_KEY))
    responses = operation.setdefault("responses", {})
    for status, (description, code) in IDEMPOTENCY_ERRORS.items():
        _add_error(responses, status, description, code)
    responses["409"].setdefault("headers", {})["Retry-After"] = IN_PROGRESS_RETRY_AFTER
    for status, response in responses.items():
        # What a replay can answer: the operation's own answers (the HTTP layer's 406, 411, 413 and 415,
        # added later, come before the handler, and 401, 403 and 429 are never kept).
        if status.startswith(("2", "4")) and int(status) not in idempotency.NOT_KEPT and status not in HTTP_LAYER:
            response.setdefault("headers", {}).update(_header_refs(idempotency.REPLAYED_HEADER))


def _add_error(responses: dict, status: str, description: str, code: str) -> None:
    example = {"value": {"error": {"code": code, "message": "..."}}}
    response = responses.get(status)
    if response is None:
        responses[status] = {
            "description": f"{description} Codes: `{code}`.",
            "content": {"application/json": {"schema": dict(ERROR_REF), "examples": {code: example}}},
        }
        return
    also = f"Also `{code}`: {description[0].lower()}{description[1:]}"
    response["description"] = f"{response.get('description', '')} {also}".strip()
    media = response.setdefault("content", {}).setdefault("application/json", {})
    schema = media.get("schema")
    if schema != ERROR_REF:
        # An envelope whose `details` the operation's own errors always carry: the idempotency error has none.
        media["schema"] = {"anyOf": [schema, dict(ERROR_REF)]} if schema else dict(ERROR_REF)
    media.setdefault("examples", {})[code] = example
