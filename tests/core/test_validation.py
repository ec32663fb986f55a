import pytest
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from apps.core.errors import InvalidInput
from apps.core.validation import field_error, invalid_from_django, validation_envelope


def test_the_first_error_leads_the_message_and_details():
    errors = [
        {"field": "title", "rule": "required", "message": "This field is required."},
        {"field": "slug", "rule": "unique", "message": "Taken."},
    ]
    message, details = validation_envelope(errors)
    assert message == "title: This field is required."
    assert details == {"field": "title", "rule": "required", "errors": errors}


def test_an_error_of_no_field_is_its_message_alone():
    message, details = validation_envelope([{"field": None, "rule": "json", "message": "Bad JSON."}])
    assert message == "Bad JSON."
    assert (details["field"], details["rule"]) == (None, "json")


def test_no_errors_still_give_a_well_formed_envelope():
    message, details = validation_envelope([])
    assert message == "Invalid input."
    assert details == {"field": None, "rule": "invalid", "errors": []}


def test_a_field_error_is_invalid_input_in_the_envelope():
    error = field_error("scheduled_at", "past", "Pick a future time.")
    assert isinstance(error, InvalidInput)
    assert error.code == "VALIDATION_ERROR"
    assert error.message == "scheduled_at: Pick a future time."
    assert error.details["errors"] == [{"field": "scheduled_at", "rule": "past", "message": "Pick a future time."}]


def test_a_django_validation_error_keeps_every_message_with_its_code_and_the_prefix():
    exc = ValidationError(
        {
            "url": [ValidationError("Enter a valid URL.", code="invalid")],
            NON_FIELD_ERRORS: [ValidationError("Something across fields.")],
        }
    )
    error = invalid_from_django(exc, prefix="media[0].")
    assert error.details["errors"] == [
        {"field": "media[0].url", "rule": "invalid", "message": "Enter a valid URL."},
        {"field": None, "rule": "invalid", "message": "Something across fields."},
    ]
    assert error.message == "media[0].url: Enter a valid URL."


@pytest.mark.parametrize("kind", ["NotFound", "Conflict", "InvalidInput", "Forbidden", "Gone", "Unavailable"])
def test_domain_errors_know_nothing_of_http(kind):
    import apps.core.errors as errors

    assert not hasattr(getattr(errors, kind)("x"), "status_code")
