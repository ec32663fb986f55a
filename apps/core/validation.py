"""The one builder of the validation envelope: `details = {field, rule, errors: [{field, rule, message}]}`,
with the first error repeated in `field`, `rule` and the message. Services raise it as InvalidInput;
the API's exception handler renders DRF's validation errors through it too."""

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from apps.core.errors import InvalidInput

NO_ERRORS = {"field": None, "rule": "invalid", "message": "Invalid input."}


def validation_envelope(errors: list[dict]) -> tuple[str, dict]:
    """(message, details) for a list of {field, rule, message}; the first error leads."""
    first = errors[0] if errors else NO_ERRORS
    message = f"{first['field']}: {first['message']}" if first["field"] else first["message"]
    return message, {"field": first["field"], "rule": first["rule"], "errors": errors}


def invalid(errors: list[dict]) -> InvalidInput:
    message, details = validation_envelope(errors)
    return InvalidInput(message, details=details)


def field_error(field: str, rule: str, message: str) -> InvalidInput:
    return invalid([{"field": field, "rule": rule, "message": message}])


def invalid_from_django(exc: ValidationError, prefix: str = "") -> InvalidInput:
    """A Django ValidationError (a model's validators and constraints) as InvalidInput; `prefix`
    names where the validated object sits in the input (`media[0].`)."""
    return invalid(
        [
            {
                "field": None if field == NON_FIELD_ERRORS else f"{prefix}{field}",
                "rule": error.code or "invalid",
                "message": message,
            }
            for field, field_errors in exc.error_dict.items()
            for error in field_errors
            for message in error.messages
        ]
    )
