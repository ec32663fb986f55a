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
