import re

import pytest

from tests.factories import AccountFactory, ApiKeyFactory, UserFactory

pytestmark = pytest.mark.django_db

SHARED = {"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-API-Version"}


@pytest.fixture
def schema(client):
    return client.get("/v1/openapi.json").json()


def operations(schema):
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            yield f"{method.upper()} {path}", method, operation


def test_every_response_of_every_operation_declares_the_shared_headers(schema):
    for name, _, operation in operations(schema):
        for status, response in operation["responses"].items():
            assert set(response["headers"]) >= SHARED, (name, status)


def test_every_operation_declares_406_and_429_with_retry_after(schema):
    for name, _, operation in operations(schema):
        responses = operation["responses"]
        assert {"406", "429"} <= set(responses), name
        assert "Retry-After" in responses["429"]["headers"], name
        assert responses["429"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}


def test_operations_with_a_body_declare_the_body_errors(schema):
    with_body = [(name, op) for name, _, op in operations(schema) if "requestBody" in op]
    for name, operation in with_body:
        assert {"411", "413", "415"} <= set(operation["responses"]), name
    for name, _, operation in operations(schema):
        if "requestBody" not in operation:
            assert "415" not in operation["responses"], name


def test_every_get_declares_conditional_requests(schema):
    gets = [(name, op) for name, method, op in operations(schema) if method == "get"]
    assert gets
    for name, operation in gets:
        assert "If-None-Match" in {p["name"] for p in operation["parameters"] if p["in"] == "header"}, name
        assert "304" in operation["responses"], name
        assert "ETag" in operation["responses"]["200"]["headers"], name


def test_the_headers_the_schema_requires_are_sent_in_its_format(schema, client_for):
    declared = schema["components"]["headers"]
    required = {name for name, header in declared.items() if header.get("required")}
    assert required == {"X-RateLimit-Limit", "X-API-Version"}
    limit_format = re.compile(declared["X-RateLimit-Limit"]["schema"]["pattern"])
    for plan in ("free", "enterprise"):
        response = client_for(ApiKeyFactory(user=UserFactory(account=AccountFactory(plan=plan)))).get("/v1/me")
        assert required <= set(response.headers), plan
        assert limit_format.match(response["X-RateLimit-Limit"]), plan
        assert response["X-API-Version"] in declared["X-API-Version"]["schema"]["enum"]


# Every write under /v1 takes an Idempotency-Key (apps/api/idempotency.py); the lead's post endpoints add theirs.
IDEMPOTENT_WRITES = {
    "POST /v1/users",
    "PUT /v1/users/{user_id}",
    "DELETE /v1/users/{user_id}",
    "PUT /v1/users/profile",
    "POST /v1/sso_tokens",
    "POST /v1/channels/{channel_id}/subscribers",
    "DELETE /v1/channels/{channel_id}/subscribers/{subscriber_id}",
    "POST /v1/channels/{channel_id}/posts",
    "PATCH /v1/channels/{channel_id}/posts/{id}",
    "DELETE /v1/channels/{channel_id}/posts/{id}",
    "PATCH /v1/channels/{channel_id}/posts/{id}/publish",
    "PATCH /v1/channels/{channel_id}/posts/{id}/unpublish",
}


def idempotency_key(operation) -> dict | None:
    found = [p for p in operation.get("parameters", []) if p["in"] == "header" and p["name"] == "Idempotency-Key"]
    return found[0] if found else None


def test_every_write_declares_the_idempotency_key_and_only_writes_do(schema):
    writes = {name for name, method, _ in operations(schema) if method in {"post", "put", "patch", "delete"}}
    declaring = {name for name, _, operation in operations(schema) if idempotency_key(operation)}
    assert writes >= IDEMPOTENT_WRITES
    assert declaring == writes


def test_an_idempotent_write_declares_its_header_rule_replays_and_errors(schema):
    declared = schema["components"]["headers"]
    assert declared["Idempotent-Replayed"]["schema"] == {"type": "string", "enum": ["true"]}
    for name, _, operation in operations(schema):
        parameter = idempotency_key(operation)
        if parameter is None:
            continue
        assert parameter["required"] is False, name
        assert parameter["schema"] == {
            "type": "string",
            "minLength": 1,
            "maxLength": 255,
            "pattern": parameter["schema"]["pattern"],
        }
        responses = operation["responses"]
        examples = {
            status: set(responses[status]["content"]["application/json"]["examples"])
            for status in ("400", "409", "422")
        }
        assert "idempotency_request_in_progress" in examples["409"], name
        assert "idempotency_key_reused" in examples["422"], name
        assert "VALIDATION_ERROR" in examples["400"], name
        assert "Retry-After" in responses["409"]["headers"], name
        for status, response in responses.items():
            replayable = status.startswith(("2", "4")) and status not in {
                "401",
                "403",
                "406",
                "411",
                "413",
                "415",
                "429",
            }
            assert ("Idempotent-Replayed" in response["headers"]) == replayable, (name, status)


def test_the_key_pattern_the_schema_states_is_the_one_the_server_checks(schema, admin_key, client_for):
    pattern = re.compile(idempotency_key(schema["paths"]["/v1/users"]["post"])["schema"]["pattern"])
    client = client_for(admin_key)
    for key in ("a", "uuid-like 1234", "~!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}", " lead", "trail ", "caf\u00e9", "a\tb"):
        response = client.put("/v1/users/profile", {"name": "N"}, format="json", HTTP_IDEMPOTENCY_KEY=key)
        assert (response.status_code == 200) == bool(pattern.match(key)), key
