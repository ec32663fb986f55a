"""What the schema fuzzer found, pinned down: the OpenAPI schema states the input rules the server
really applies, so that a client validating against the schema is neither refused nor surprised."""

import re
from urllib.parse import unquote

import pytest

from apps.users.api import TIMEZONE_FORMAT
from apps.users.models import timezone_names
from tests.api.test_openapi_http_layer import operations
from tests.factories import AdminUserFactory, ApiKeyFactory, ChannelFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def openapi(client):
    return client.get("/v1/openapi.json").json()


def body_schema(schema, path: str, method: str) -> dict:
    operation = schema["paths"][path][method]
    content = operation["requestBody"]["content"]
    # The one body that is not JSON is an upload's multipart form, held to the same rule.
    ref = content.get("application/json", content.get("multipart/form-data"))["schema"]["$ref"]
    return schema["components"]["schemas"][ref.rsplit("/", 1)[1]]


@pytest.fixture
def admin_key():
    return ApiKeyFactory(user=AdminUserFactory())


@pytest.fixture
def admin(admin_key, client_for):
    return client_for(admin_key)


def test_request_bodies_declare_that_unknown_keys_are_refused(openapi, admin):
    bodies = [(name, method) for name, method, op in operations(openapi) if "requestBody" in op]
    assert bodies
    for name, method in bodies:
        path = name.split(" ", 1)[1]
        assert body_schema(openapi, path, method)["additionalProperties"] is False, name
    response = admin.put("/v1/users/profile", {"nickname": "x"}, format="json")
    assert (response.status_code, response.json()["error"]["details"]["rule"]) == (400, "unknown_field")


def test_an_empty_query_parameter_counts_as_left_out_and_the_schema_says_so(openapi, admin, admin_key):
    for name, _, operation in operations(openapi):
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "query":
                assert parameter.get("allowEmptyValue") is True, (name, parameter["name"])
    channel = ChannelFactory(account=admin_key.account)
    empty = "page=&per_page=&limit=&publication_status=&tag=&updated_since="
    assert admin.get(f"/v1/channels/{channel.id}/posts?{empty}").status_code == 200
    assert admin.get("/v1/users?page=&limit=&role=&status=&search=").status_code == 200


def test_the_publication_status_filter_is_a_comma_separated_array_of_statuses(openapi):
    parameters = openapi["paths"]["/v1/channels/{channel_id}/posts"]["get"]["parameters"]
    [status] = [p for p in parameters if p["name"] == "publication_status"]
    assert (status["style"], status["explode"], status["schema"]["type"]) == ("form", False, "array")
    assert set(status["schema"]["items"]["enum"]) == {"draft", "scheduled", "publishing_pending", "published"}


@pytest.mark.parametrize(
    "redirect_to",
    ["/account/", "/", "/été?x=1#y", "", "//evil.com", "/\\evil.com", "https://x.org", "/a b", "/\t/x", " /account/"],
)
def test_the_redirect_to_pattern_is_the_rule_the_server_applies(openapi, admin, admin_key, redirect_to):
    rule = body_schema(openapi, "/v1/sso_tokens", "post")["properties"]["redirect_to"]
    pattern = next(alternative["pattern"] for alternative in rule["oneOf"] if "pattern" in alternative)
    allowed_by_schema = redirect_to == "" or re.search(pattern, redirect_to) is not None
    response = admin.post(
        "/v1/sso_tokens", {"user_id": str(admin_key.user_id), "redirect_to": redirect_to}, format="json"
    )
    assert response.status_code == (201 if allowed_by_schema else 400), response.json()


def test_an_sso_token_request_names_exactly_one_user_and_the_schema_says_so(openapi, admin, admin_key):
    body = body_schema(openapi, "/v1/sso_tokens", "post")
    assert body["oneOf"] == [{"required": ["email"]}, {"required": ["user_id"]}]
    assert openapi["paths"]["/v1/sso_tokens"]["post"]["requestBody"]["required"] is True
    user = admin_key.user
    assert admin.post("/v1/sso_tokens", {}, format="json").status_code == 400
    both = {"email": user.email, "user_id": str(user.pk)}
    assert admin.post("/v1/sso_tokens", both, format="json").status_code == 400


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"timezone": " UTC"}, "timezone"),
        ({"language": "en\n"}, "language"),
        ({"name": "\r"}, "name"),
    ],
)
def test_profile_strings_are_taken_as_sent_not_trimmed(admin, body, field):
    response = admin.put("/v1/users/profile", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == field


def test_time_zones_and_language_tags_are_stated_in_the_schema(openapi, admin):
    body = body_schema(openapi, "/v1/users/profile", "put")["properties"]
    # A zone is a string of the tz database's names, said in words and a format, not an enum of them all.
    assert (body["timezone"]["type"], body["timezone"]["format"]) == ("string", TIMEZONE_FORMAT)
    assert "enum" not in body["timezone"]
    assert "IANA time zone" in body["timezone"]["description"]
    assert re.search(body["language"]["pattern"], "zh-Hant-TW")
    assert not re.search(body["language"]["pattern"], "english")
    for zone in (body["timezone"]["example"], timezone_names()[-1]):
        response = admin.put("/v1/users/profile", {"timezone": zone, "language": "es-419"}, format="json")
        assert response.status_code == 200, zone


@pytest.mark.parametrize("name", ["\u001d", "\x85", "\ufeff", " \u2028\xa0", "\u001c\u001f"])
def test_a_name_of_only_whitespace_is_blank_as_the_schemas_pattern_says(openapi, admin, name):
    pattern = body_schema(openapi, "/v1/users", "post")["properties"]["name"]["pattern"]
    assert re.search(pattern, name) is None
    response = admin.post("/v1/users", {"email": "blank@example.com", "name": name}, format="json")
    assert (response.status_code, response.json()["error"]["details"]["rule"]) == (400, "blank")
    assert re.search(pattern, "a\u001d")


@pytest.mark.parametrize("tag", ["%20", "%C2%85", "%1D", "%E2%80%A8"])
def test_a_tag_filter_of_only_whitespace_is_refused_as_the_schemas_pattern_says(openapi, admin, admin_key, tag):
    parameters = openapi["paths"]["/v1/channels/{channel_id}/posts"]["get"]["parameters"]
    [rule] = [p["schema"] for p in parameters if p["name"] == "tag"]
    assert re.search(rule["pattern"], unquote(tag)) is None
    channel = ChannelFactory(account=admin_key.account)
    response = admin.get(f"/v1/channels/{channel.id}/posts?tag={tag}")
    assert (response.status_code, response.json()["error"]["details"]["field"]) == (400, "tag")
