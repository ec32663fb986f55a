"""The JSON field every model uses: the input policy of apps/core/json_input.py on the way in (model
validation, so services and the admin alike) and on the way out (a stored value that breaks it, written
before the policy or past validation, is read repaired instead of breaking the page that shows it)."""

import json

from django import forms
from django.core.exceptions import ValidationError
from django.db import models
from django.forms.fields import InvalidJSONInput, JSONString

from apps.core import json_input


def validate_json_input(value) -> None:
    found = json_input.problems(value)
    if found:
        raise _invalid(found)


def _invalid(found: list[dict]) -> ValidationError:
    return ValidationError([ValidationError(_message(problem), code=problem["rule"]) for problem in found])


def _message(problem: dict) -> str:
    return f"{problem['field']}: {problem['message']}" if problem["field"] else f"The value {problem['message']}."


class JSONFormField(forms.JSONField):
    """The admin's JSON text box, parsed under the policy: any text, of any depth, is either taken or
    refused with the rule it breaks, never a server error."""

    def to_python(self, value):
        if self.disabled or value in self.empty_values or isinstance(value, list | dict | int | float | JSONString):
            return super().to_python(value)
        try:
            converted = json_input.loads(value)
        except json_input.JsonInputError as exc:
            raise _invalid(exc.problems) from exc
        except ValueError as exc:
            raise ValidationError(self.error_messages["invalid"], code="invalid", params={"value": value}) from exc
        return JSONString(converted) if isinstance(converted, str) else converted

    def bound_data(self, data, initial):
        if self.disabled or data is None:
            return super().bound_data(data, initial)
        try:
            return json_input.loads(data)
        except ValueError:
            return InvalidJSONInput(data)


class JSONField(models.JSONField):
    default_validators = [validate_json_input]

    def from_db_value(self, value, expression, connection):
        if isinstance(value, str):
            try:
                return json_input.loads(value)
            except json_input.JsonInputError:
                return json.loads(json_input.repaired(value))
            except ValueError:
                pass  # not JSON text (a key's scalar on some backends): Django's own reading below
        return super().from_db_value(value, expression, connection)

    def formfield(self, **kwargs):
        return super().formfield(**{"form_class": JSONFormField, **kwargs})
