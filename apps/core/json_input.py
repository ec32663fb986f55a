"""The one input policy for JSON that comes from outside (API bodies, the admin's JSON fields, values
stored in the database): what PostgreSQL's jsonb, Python's json module and every client can take.

- Strings and object keys hold no U+0000 and no lone surrogate (jsonb refuses both, and a lone
  surrogate cannot be written as UTF-8).
- Numbers are finite and within a double's range (no NaN, Infinity, 1e999, 400-digit integers):
  what a client's JSON parser can read back.
- Nesting is at most MAX_DEPTH arrays or objects deep, the outermost counting as 1: deeper
  values overflow Python's recursion limit while being parsed, stored, rendered or shown.

A breach is reported as {field, rule, message}: `field` is the path of the value (`metadata.a[0]`,
None for the whole document), `rule` one of the RULES below. Nothing here recurses, so a value of
any depth is judged without overflowing the stack.
"""

import json
import re
import sys

import orjson

MAX_DEPTH = 32
NUMBER_LIMIT = sys.float_info.max
# Decimal digits of the largest double: an integer with more is out of range without parsing it.
_NUMBER_DIGITS = len(str(int(NUMBER_LIMIT)))

RULES = {
    "null_character": "must not contain the character U+0000",
    "lone_surrogate": "must not contain a lone UTF-16 surrogate (\\ud800-\\udfff)",
    "number_out_of_range": f"must be a finite number between -{NUMBER_LIMIT:.16e} and {NUMBER_LIMIT:.16e}",
    "too_deep": f"must not nest arrays and objects more than {MAX_DEPTH} levels deep",
}

_BAD_CHARACTER = re.compile("[\x00\ud800-\udfff]")
# A JSON string literal (unrolled, so long strings cost no backtracking), and the structural tokens.
_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_STRINGS = re.compile(_STRING, re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_TOKENS = re.compile(rf"{_STRING}|[\[\]{{}},]", re.DOTALL)
_INNERMOST = re.compile(r"\[\]|\{\}")
# orjson parses most documents ten times faster than json, and itself refuses NaN, Infinity,
# out-of-range floats and lone surrogates; it reads integers beyond 64 bits as floats, so text
# with such long digit runs goes to json, which keeps them exact. U+0000 it accepts.
_LONG_DIGITS = re.compile(r"\d{19}")
_NUL_ESCAPE = re.compile(r"\\u0000")


class OutOfRange(str):
    """A number parsed from the text that breaks the number rule, kept as its text to be reported."""


def problem(field: str | None, rule: str) -> dict:
    return {"field": field, "rule": rule, "message": RULES[rule]}


def child_path(parent: str | None, key: str | int) -> str:
    if isinstance(key, int):
        return f"{parent or ''}[{key}]"
    return f"{parent}.{key}" if parent else key


def _parse_int(text: str):
    if len(text.lstrip("-")) > _NUMBER_DIGITS:
        return OutOfRange(text)
    value = int(text)
    return value if abs(value) <= NUMBER_LIMIT else OutOfRange(text)


def _parse_float(text: str):
    value = float(text)
    return value if abs(value) <= NUMBER_LIMIT else OutOfRange(text)  # False for inf and NaN too


def _parse_constant(text: str):
    return OutOfRange(text)  # NaN, Infinity, -Infinity: not JSON, though Python's json reads them


def _without_strings(text: str) -> str:
    return _STRINGS.sub("", text)


def _too_deep(skeleton: str) -> bool:
    """Whether the arrays and objects of a text without its strings (`_without_strings`) nest deeper
    than MAX_DEPTH (or its brackets do not pair up), without parsing it: innermost pairs are removed
    MAX_DEPTH times, each pass a C-speed scan; most documents are gone after two or three."""
    brackets = _NOT_BRACKETS.sub("", skeleton)
    for _ in range(MAX_DEPTH):
        if not brackets:
            return False
        brackets = _INNERMOST.sub("", brackets)
    return bool(brackets)


def _too_deep_container(text: str) -> tuple[str | None, int, int]:
    """(path, start, end) of the first container nested deeper than MAX_DEPTH, by one pass over the
    strings and structural tokens: end is where that container closes (len(text) if it never does)."""
    stack: list[list] = []  # per open container: [kind, key or index of the current child, key expected]
    path, start, depth_at_start = None, None, None
    for token in _TOKENS.finditer(text):
        char = token.group()[0]
        if char in "[{":
            if len(stack) == MAX_DEPTH and start is None:
                path, start, depth_at_start = _path_of(stack), token.start(), len(stack)
            stack.append(["[", 0, False] if char == "[" else ["{", "", True])
        elif char in "]}":
            if stack:
                stack.pop()
            if start is not None and len(stack) == depth_at_start:
                return path, start, token.end()
        elif stack:
            _advance(stack[-1], token.group())
    if start is not None:
        return path, start, len(text)
    return None, 0, 0


def _path_of(stack: list[list]) -> str | None:
    path = None
    for _, key, _ in stack:
        path = child_path(path, key)
    return path


def _advance(container: list, token: str) -> None:
    """A comma or a string in the innermost open container: after a comma an array is at its next
    index and an object expects a key; a string where a key is expected is the current key."""
    if token[0] == ",":
        if container[0] == "[":
            container[1] += 1
        else:
            container[2] = True
    elif container[0] == "{" and container[2]:
        try:
            container[1] = json.loads(token)
        except ValueError:
            container[1] = token[1:-1]
        container[2] = False


def problems(value, field: str | None = None, *, limit: int = 20) -> list[dict]:
    """The breaches of the policy in an already parsed value (a form's, a model's), in document
    order, the first `limit` of them; walked without recursion, and not into a too-deep container."""
    found: list[dict] = []
    pending = [(field, value, 1)]
    while pending and len(found) < limit:
        path, current, depth = pending.pop()
        rule = _rule_broken_by(current)
        if rule is None and isinstance(current, dict | list | tuple) and depth > MAX_DEPTH:
            rule = "too_deep"
        if rule:
            found.append(problem(path, rule))
            continue
        if isinstance(current, dict):
            children = []
            for key, item in current.items():
                if key_rule := _rule_broken_by(key):
                    found.append(problem(path, key_rule))  # reported at the object holding the key
                children.append((child_path(path, str(key)), item, depth + 1))
            pending.extend(reversed(children))
        elif isinstance(current, list | tuple):
            pending.extend(reversed([(child_path(path, i), item, depth + 1) for i, item in enumerate(current)]))
    return found[:limit]


def storable_text(text: str) -> bool:
    """Whether `text` holds neither U+0000 nor a lone surrogate: what PostgreSQL's text and jsonb
    take (as a value or a query's parameter) and UTF-8 can encode. Also the admin lists' rule."""
    return _BAD_CHARACTER.search(text) is None


def _rule_broken_by(value) -> str | None:
    if isinstance(value, OutOfRange):
        return "number_out_of_range"
    if isinstance(value, str):
        bad = _BAD_CHARACTER.search(value)
        return None if bad is None else "null_character" if bad.group() == "\x00" else "lone_surrogate"
    if isinstance(value, float | int) and not isinstance(value, bool) and not abs(value) <= NUMBER_LIMIT:
        return "number_out_of_range"
    return None


class JsonInputError(ValueError):
    """The text is JSON but breaks the policy: `problems` says where and how."""

    def __init__(self, found: list[dict]):
        super().__init__(f"{found[0]['field'] or 'the document'}: {found[0]['message']}")
        self.problems = found


def loads(text: str) -> object:
    """Parse JSON text under the policy: ValueError (json.JSONDecodeError) when it is not JSON,
    JsonInputError when it is but breaks a rule. Deep text is judged before parsing, so no input
    can exhaust the stack."""
    skeleton = _without_strings(text)
    if _too_deep(skeleton):
        path, start, end = _too_deep_container(text)
        # Malformed text can look deep to the bracket count alone: then json reports it as not JSON.
        if end > start:
            raise JsonInputError([problem(path, "too_deep")])
    if not _LONG_DIGITS.search(skeleton):
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            pass  # not JSON, or a breach: json below tells which, and where
        else:
            return _checked(value) if _NUL_ESCAPE.search(text) else value
    try:
        value = _exact_loads(text)
    except RecursionError as exc:  # a bracket count fooled by malformed strings; never valid JSON
        raise json.JSONDecodeError("nesting too deep", text, 0) from exc
    return _checked(value)


def _exact_loads(text: str):
    """json.loads keeping integers exact and each out-of-range number as an OutOfRange of its text."""
    return json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)


def _checked(value):
    found = problems(value)
    if found:
        raise JsonInputError(found)
    return value


def repaired(text: str) -> str:
    """Stored JSON text made to follow the policy, losing nothing: each container nested deeper
    than MAX_DEPTH becomes a string holding its JSON text, each out-of-range number a string of
    its digits. (Strings cannot hold U+0000 or lone surrogates in jsonb; elsewhere they are dropped.)"""
    while _too_deep(_without_strings(text)):
        _, start, end = _too_deep_container(text)
        if end == start:
            break
        text = text[:start] + json.dumps(text[start:end], ensure_ascii=False) + text[end:]
    return json.dumps(_without_breaches(_exact_loads(text)), ensure_ascii=False)


def _without_breaches(value):
    if isinstance(value, OutOfRange):
        return str(value)
    if isinstance(value, str):
        return _BAD_CHARACTER.sub("", value)
    if isinstance(value, dict):
        return {_BAD_CHARACTER.sub("", key): _without_breaches(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_breaches(item) for item in value]
    return value
