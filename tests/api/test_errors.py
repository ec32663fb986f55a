import logging

import pytest

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.api.urls")]


def error_of(response, status: int) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert {"code", "message"} <= set(body["error"]) <= {"code", "message", "details"}
    return body["error"]


def test_validation_error_names_field_and_rule(authed):
    error = error_of(authed.post("/v1/_test/echo", {}, format="json"), 400)
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"]["field"] == "title"
    assert error["details"]["rule"] == "required"
    assert error["message"].startswith("title:")


def test_validation_error_lists_every_failed_rule(authed):
    error = error_of(authed.post("/v1/_test/echo", {"title": "x" * 11}, format="json"), 400)
    assert error["details"]["errors"] == [
        {"field": "title", "rule": "max_length", "message": "Ensure this field has no more than 10 characters."}
    ]


def test_malformed_json_is_a_validation_error(authed):
    error = error_of(authed.post("/v1/_test/echo", "{not json", content_type="application/json"), 400)
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"]["rule"] == "json"


def test_unsupported_media_type_has_the_envelope(authed):
    error = error_of(authed.post("/v1/_test/echo", "title=x", content_type="text/plain"), 415)
    assert error["code"] == "unsupported_media_type"


@pytest.mark.parametrize("path", ["/v1/nothing-here", "/v1/me/", "/v1/channels/abc/zzz", "/v2/me", "/v1/"])
def test_unknown_path_is_a_json_404(authed, path):
    assert error_of(authed.get(path), 404)["code"] == "not_found"


def test_unknown_path_is_404_for_any_method(authed):
    assert error_of(authed.delete("/v1/nothing-here"), 404)["code"] == "not_found"


def test_wrong_method_is_a_json_405(authed):
    error = error_of(authed.post("/v1/me", {}, format="json"), 405)
    assert error["code"] == "method_not_allowed"


def test_unhandled_error_is_a_json_500_without_internals(authed, caplog):
    with caplog.at_level(logging.ERROR):
        response = authed.get("/v1/_test/boom")
    error = error_of(response, 500)
    assert error == {"code": "internal_error", "message": "Internal server error."}
    assert "hunter2" not in response.content.decode()
    assert "Traceback" not in response.content.decode()
    assert any("BoomView" in record.getMessage() for record in caplog.records)


def test_django_level_500_under_v1_is_json(client):
    from django.test import RequestFactory

    from apps.api.errors import server_error

    response = server_error(RequestFactory().get("/v1/me"))
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"


def test_unauthenticated_unknown_path_is_still_404(api_client):
    assert error_of(api_client.get("/v1/nothing"), 404)["code"] == "not_found"
