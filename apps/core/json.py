"""JSON encoding shared by the API's renderer and the webhook bodies."""

import orjson

# Dates and times go to the caller's `default` (DRF and Django each write them their own way),
# as do dataclasses; dictionary keys that are not strings are written as json.dumps writes them.
_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_NON_STR_KEYS


def compact_json(data, *, default) -> bytes | None:
    """`data` as json.dumps(data, default=default, ensure_ascii=False, separators=(",", ":"))
    writes it, UTF-8 encoded, by orjson; None when orjson cannot (integers beyond 64 bits, deep
    nesting, a type `default` refuses), for the caller to fall back to json.dumps. Floats are
    the one difference: exponents are written shorter (1e-05 as 1e-5), NaN and infinity as null."""
    try:
        return orjson.dumps(data, default=default, option=_ORJSON_OPTIONS)
    except (orjson.JSONEncodeError, TypeError, ValueError):
        return None
