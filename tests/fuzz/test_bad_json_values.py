"""JSON that the parser reads but nothing after it can take: U+0000 (PostgreSQL's jsonb refuses it), lone
surrogates (not UTF-8), numbers no double holds (NaN, Infinity, 1e999, 400 digits) and nesting deep enough to
overflow the stack. Every operation that takes a JSON body refuses each of them, wherever it sits, with a 400
VALIDATION_ERROR naming the rule and the value's path, never a 5xx.

The bodies are raw text: Python's json module would not write most of them.
"""

import pytest
from rest_framework.test import APIClient

from tests.api.test_openapi_http_layer import operations
from tests.factories import AccountFactory, AdminUserFactory, ApiKeyFactory, ChannelFactory, PostFactory, UserFactory

pytestmark = pytest.mark.django_db

MAX_DEPTH = 32  # arrays and objects nested deeper are refused, the body itself counting as 1

# Every operation whose request has a JSON body (test_every_operation_with_a_json_body_is_here checks the list
# against the live schema).
BODY_OPERATIONS = [
    "POST /v1/channels/{channel_id}/posts",
    "PATCH /v1/channels/{channel_id}/posts/{id}",
    "PATCH /v1/channels/{channel_id}/posts/{id}/publish",
    "POST /v1/channels/{channel_id}/subscribers",
    "POST /v1/sso_tokens",
    "POST /v1/users",
    "PUT /v1/users/profile",
    "PUT /v1/users/{user_id}",
    "PATCH /v1/media/{id}",
    "POST /v1/stories",
    "PATCH /v1/stories/{id}",
]
# The one operation whose body is not JSON: an upload.
MULTIPART_OPERATIONS = ["POST /v1/media"]


def nested_arrays(depth: int) -> str:
    return "[" * depth + "]" * depth


def nested_objects(depth: int) -> str:
    return '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)


# name: (JSON text, rule, how the text nests: None, "[0]" for arrays in arrays, "a" for objects under "a")
BAD_VALUES = {
    "string with U+0000": (r'"a\u0000b"', "null_character", None),
    "key with U+0000": (r'{"a\u0000b": 1}', "null_character", None),  # reported at the object holding the key
    "lone surrogate": (r'"\udad8"', "lone_surrogate", None),
    "1e999": ("1e999", "number_out_of_range", None),
    "-1e999": ("-1e999", "number_out_of_range", None),
    "400-digit integer": ("9" * 400, "number_out_of_range", None),
    "NaN": ("NaN", "number_out_of_range", None),
    "Infinity": ("Infinity", "number_out_of_range", None),
    "2,000 nested arrays": (nested_arrays(2000), "too_deep", "[0]"),
    "33 nested objects": (nested_objects(MAX_DEPTH + 1), "too_deep", "a"),
}

# Where the value goes: a body made from it, the value's path and its depth (the body being depth 1).
PLACEMENTS = {
    "top level": (lambda value: value, None, 1),
    "nested": (lambda value: '{"metadata": {"a": [{"b": ' + value + "}]}}", "metadata.a[0].b", 5),
}


def first_too_deep(path: str | None, depth: int, step: str) -> str | None:
    """The path of the first container one level too deep in a value at `path` and `depth` that nests by
    `step` (`[0]`: an array in an array; a key: an object under that key). Paths append array indexes and join
    keys with a dot: `metadata.a[0].b`."""
    for _ in range(MAX_DEPTH + 1 - depth):
        path = f"{path or ''}{step}" if step.startswith("[") else f"{path}.{step}" if path else step
    return path


def expected_field(value_name: str, placement: str) -> str | None:
    """The value's path; for nesting too deep, the path of the first container one level too deep."""
    _, _, step = BAD_VALUES[value_name]
    _, path, depth = PLACEMENTS[placement]
    return path if step is None else first_too_deep(path, depth, step)


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """One account for the whole module: an admin's key with every scope, and an object of the account for
    every path parameter, so that each request gets as far as its body. Each test's changes roll back."""
    with django_db_blocker.unblock():
        account = AccountFactory(plan="enterprise")
        key = ApiKeyFactory(user=AdminUserFactory(account=account))
        channel = ChannelFactory(account=account, platform="api")
        post = PostFactory(channel=channel)
        user = UserFactory(account=account)
        yield {"key": key, "path": {"channel_id": channel.pk, "id": post.pk, "user_id": user.pk}}
        account.delete()


@pytest.fixture
def admin(world):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {world['key'].raw}")
    return client


def send(client: APIClient, world, operation: str, body: str):
    method, path = operation.split(" ", 1)
    return client.generic(method, path.format(**world["path"]), data=body.encode(), content_type="application/json")


def test_every_operation_with_a_json_body_is_here(client):
    schema = client.get("/v1/openapi.json").json()
    with_body = [name for name, _, operation in operations(schema) if "requestBody" in operation]
    assert sorted(with_body) == sorted(BODY_OPERATIONS + MULTIPART_OPERATIONS)
    for name, _, operation in operations(schema):
        if name in BODY_OPERATIONS:
            assert "application/json" in operation["requestBody"]["content"], name
        if name in MULTIPART_OPERATIONS:
            assert list(operation["requestBody"]["content"]) == ["multipart/form-data"], name


@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize("value", BAD_VALUES)
@pytest.mark.parametrize("operation", BODY_OPERATIONS)
def test_a_bad_json_value_is_refused_with_its_rule_and_path(admin, world, operation, value, placement):
    text, rule, _ = BAD_VALUES[value]
    make_body, _, _ = PLACEMENTS[placement]
    response = send(admin, world, operation, make_body(text))
    assert response.status_code == 400, response.content[:500]
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR", error
    assert (error["details"]["rule"], error["details"]["field"]) == (rule, expected_field(value, placement)), error


def test_metadata_900_levels_deep_is_refused_and_the_user_stays_readable(admin, world):
    user_path = "/v1/users/{user_id}"
    before = admin.get(user_path.format(**world["path"])).json()["metadata"]
    response = send(admin, world, f"PUT {user_path}", '{"metadata": ' + nested_objects(900) + "}")
    assert response.status_code == 400, response.content[:500]
    details = response.json()["error"]["details"]
    assert (details["rule"], details["field"]) == ("too_deep", first_too_deep("metadata", 2, "a"))
    after = admin.get(user_path.format(**world["path"]))
    assert after.status_code == 200
    assert after.json()["metadata"] == before
