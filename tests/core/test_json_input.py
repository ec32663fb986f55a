"""The one input policy for outside JSON (apps/core/json_input.py): each rule refused with the path of
the value that breaks it, any depth judged without exhausting the stack, and what jsonb and every client
can take let through unchanged."""

import json

import pytest

from apps.core import json_input


def breaches(text: str) -> list[tuple[str | None, str]]:
    with pytest.raises(json_input.JsonInputError) as refused:
        json_input.loads(text)
    return [(problem["field"], problem["rule"]) for problem in refused.value.problems]


def nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"metadata": {"a": "x\\u0000y"}}', [("metadata.a", "null_character")]),
        ('{"metadata": {"k\\u0000": 1}}', [("metadata", "null_character")]),
        ('{"metadata": ["ok", "\\udad8"]}', [("metadata[1]", "lone_surrogate")]),
        ('{"metadata": {"b": "\\udc00 after"}}', [("metadata.b", "lone_surrogate")]),
        ('{"n": 1e999}', [("n", "number_out_of_range")]),
        ('{"n": -1e999}', [("n", "number_out_of_range")]),
        ('{"n": NaN}', [("n", "number_out_of_range")]),
        ('{"n": [Infinity, -Infinity]}', [("n[0]", "number_out_of_range"), ("n[1]", "number_out_of_range")]),
        ('{"n": ' + "9" * 400 + "}", [("n", "number_out_of_range")]),
        ('{"n": -' + "9" * 5000 + "}", [("n", "number_out_of_range")]),
        ("NaN", [(None, "number_out_of_range")]),
        ('"\\u0000"', [(None, "null_character")]),
    ],
)
def test_each_rule_is_refused_naming_the_value_and_the_rule(text, expected):
    assert breaches(text) == expected


def test_nesting_counts_the_body_as_the_first_level_and_allows_thirty_two():
    assert json_input.loads(nested(32)) == json.loads(nested(32))
    assert breaches(nested(33)) == [("[0]" * 32, "too_deep")]
    assert breaches('{"metadata": {"a": ' + nested(31) + "}}") == [("metadata.a" + "[0]" * 30, "too_deep")]


@pytest.mark.parametrize("depth", [1_000, 2_000, 100_000])
def test_any_depth_is_refused_without_exhausting_the_stack(depth):
    assert breaches('{"metadata": ' + nested(depth) + "}") == [("metadata" + "[0]" * 31, "too_deep")]


def test_the_path_follows_keys_and_indexes_to_the_first_too_deep_container():
    deep = '{"x": ' + nested(40) + "}"
    text = '{"a": [1, "]", {"b,c": 2, "d": [' + deep + "]}]}"
    assert breaches(text) == [("a[2].d[0].x" + "[0]" * 27, "too_deep")]


def test_brackets_inside_strings_do_not_count_as_nesting():
    text = json.dumps({"a": "[" * 100, "b": "{" * 100 + "]" * 50})
    assert json_input.loads(text) == json.loads(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"emoji": "\\ud83d\\ude00", "escaped": "\\\\u0000 is text"}',
        '{"big": 123456789012345678901234567890, "max": 1.7976931348623157e308, "tiny": 5e-324}',
        '{"n": -0.0, "t": true, "f": false, "z": null, "s": ""}',
        "[]",
        '"plain"',
    ],
)
def test_what_every_client_and_jsonb_can_take_is_parsed_as_json_parses_it(text):
    assert json_input.loads(text) == json.loads(text)


def test_integers_beyond_64_bits_stay_exact():
    assert json_input.loads('{"n": 123456789012345678901234567890}')["n"] == 123456789012345678901234567890


@pytest.mark.parametrize("text", ["", "{", '{"a": }', "[1,]", nested(40)[:-1] + "}", '{"a": "unterminated', "[}"])
def test_text_that_is_not_json_is_a_plain_value_error(text):
    with pytest.raises(ValueError) as refused:
        json_input.loads(text)
    assert not isinstance(refused.value, json_input.JsonInputError) or refused.value.problems[0]["rule"] == "too_deep"


def test_parsed_values_are_judged_by_the_same_rules():
    value = {"ok": [1, 2.5, "x"], "bad": {"n": float("inf"), "s": "a\x00", "big": 10**400}}
    assert [(p["field"], p["rule"]) for p in json_input.problems(value)] == [
        ("bad.n", "number_out_of_range"),
        ("bad.s", "null_character"),
        ("bad.big", "number_out_of_range"),
    ]
    deep: list = []
    for _ in range(5_000):
        deep = [deep]
    assert [(p["field"], p["rule"]) for p in json_input.problems({"m": deep})] == [("m" + "[0]" * 31, "too_deep")]


def test_stored_text_that_breaks_the_rules_is_repaired_without_losing_anything():
    text = '{"metadata": ' + nested(900, '"leaf"') + ', "n": 1e400, "ok": [1, 2]}'
    repaired = json.loads(json_input.repaired(text))
    assert json_input.problems(repaired) == []
    assert repaired["n"] == "1e400"
    assert repaired["ok"] == [1, 2]
    kept = repaired["metadata"]
    for _ in range(31):
        [kept] = kept
    assert kept == nested(869, '"leaf"')  # the part too deep to keep as JSON, kept as its text
