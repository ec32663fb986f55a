"""Request bodies: JSON read under the one input policy (apps/core/json_input.py), for every endpoint."""

from rest_framework import parsers
from rest_framework.exceptions import ParseError

from apps.core import json_input
from apps.core.validation import invalid


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser with the policy's rules: a body that is JSON but breaks one (U+0000, a lone
    surrogate, a number out of a double's range, nesting deeper than json_input.MAX_DEPTH) is a
    400 VALIDATION_ERROR naming the value's path and the rule; one that is not JSON stays a 400
    with the rule `json`. No body can exhaust the stack, whatever its depth."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = parsers.get_encoding(parser_context or {})
        try:
            text = stream.read().decode(encoding)
            return json_input.loads(text)
        except json_input.JsonInputError as exc:
            raise invalid(exc.problems) from exc
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
