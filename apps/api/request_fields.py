"""Strict request fields: JSON bodies are typed, so a number where a string belongs (or a string
where a boolean belongs) is a validation error instead of being coerced, and an unknown key is
reported instead of being silently ignored."""

from collections.abc import Mapping

from django.core.validators import RegexValidator
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

from apps.core.serializers import fields_of


class _StringOnly:
    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


# A string with something in it besides whitespace; as a RegexValidator the schema states it as `pattern`.
# Whitespace as Python reads it (str.isspace: `\s`, which includes U+001C-U+001F and U+0085) and as
# JSON Schema's ECMA-262 regexes read it (`\s`, which includes U+FEFF): the class names both, so the
# pattern means the same to the server and to a client that checks it.
not_only_whitespace = RegexValidator(r"[^\s\x1c-\x1f\x85\ufeff]", message="This field may not be blank.", code="blank")


class StrictCharField(_StringOnly, serializers.CharField):
    """A string kept exactly as sent: not trimmed, so the schema's lengths and patterns hold for what the
    client sends. One made only of whitespace is blank, like the empty string."""

    default_error_messages = {"invalid": "Must be a string."}

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)
        if not self.allow_blank:
            self.validators.append(not_only_whitespace)


class StrictEmailField(_StringOnly, serializers.EmailField):
    pass


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid": "Must be true or false."}

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictSerializer(serializers.Serializer):
    """Rejects keys it does not declare (rule `unknown_field`), and the fields of the resource that a
    client reads but cannot write, named in `read_only_fields` (rule `read_only`)."""

    read_only_fields: tuple[str, ...] = ()

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            unknown = sorted(str(key) for key in set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {
                        key: [
                            ErrorDetail("Read-only: the service sets it.", code="read_only")
                            if key in self.read_only_fields
                            else ErrorDetail("Unknown field.", code="unknown_field")
                        ]
                        for key in unknown
                    }
                )
        return super().to_internal_value(data)


class QueryFilterSerializer(serializers.Serializer):
    """A list's filters, read from the query string: an empty value is no filter."""

    @classmethod
    def from_query(cls, query_params) -> dict:
        data = {name: query_params[name] for name in fields_of(cls) if query_params.get(name, "") != ""}
        if not data:
            return {}
        serializer = cls(data=data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data
