import pytest
from drf_spectacular.validation import validate_schema

pytestmark = pytest.mark.django_db


def test_openapi_json_is_valid_openapi_3(client):
    response = client.get("/v1/openapi.json")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.oai.openapi+json") or response[
        "Content-Type"
    ].startswith("application/json")
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    validate_schema(schema)


def test_schema_declares_the_bearer_scheme_and_me(client):
    schema = client.get("/v1/openapi.json").json()
    assert schema["components"]["securitySchemes"]["ApiKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schema["components"]["securitySchemes"]["ApiKey"]["description"],
    }
    me = schema["paths"]["/v1/me"]["get"]
    assert {"200", "401", "429"} <= set(me["responses"])
    assert me["security"] == [{"ApiKey": []}]


def test_docs_page_is_served_without_external_assets(client):
    response = client.get("/v1/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger" in html.lower()
    assert "cdn.jsdelivr" not in html


def test_the_schema_types_newsletter_channels_and_their_subscribers_each_operation_with_its_scope(client):
    schema = client.get("/v1/openapi.json").json()
    assert "newsletter" in schema["components"]["schemas"]["PlatformEnum"]["enum"]
    operations = {
        ("get", "/v1/channels/{channel_id}/subscribers"): "read:subscribers",
        ("post", "/v1/channels/{channel_id}/subscribers"): "write:subscribers",
        ("get", "/v1/channels/{channel_id}/subscribers/{subscriber_id}"): "read:subscribers",
        ("delete", "/v1/channels/{channel_id}/subscribers/{subscriber_id}"): "write:subscribers",
    }
    for (method, path), scope in operations.items():
        operation = schema["paths"][path][method]
        assert f"Scope `{scope}`" in operation["description"]
        assert {"401", "403", "404"} <= set(operation["responses"])
    assert "409" in schema["paths"]["/v1/channels/{channel_id}/subscribers"]["post"]["responses"]
    assert set(schema["components"]["schemas"]["Subscriber"]["properties"]) == {
        "id",
        "email",
        "name",
        "status",
        "created_at",
        "confirmed_at",
        "unsubscribed_at",
    }
