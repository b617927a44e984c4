r"""An AGENT integration's input schema and preset configs are checked by jsonschema-rs first (a fast
import), but the verdict and the words are python-jsonschema's, the emulator's validator: on every
schema and config below, ``validate`` says exactly what python-jsonschema says."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from reconciler.manifests.input_schema import preset_mismatches, schema_error
from reconciler.providers import without_required

SCHEMAS: list[Any] = [
    {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    {"type": "objekt"},
    {"properties": {"a": {"type": "string", "pattern": r"\p{L}"}}},  # ECMA accepts it, Python's re refuses
    {"patternProperties": {"([": {}}},
    {"$ref": "#/definitions/a b", "definitions": {"a b": {"type": "string"}}},  # no rfc3987: accepted
    {"$id": "not a uri %%", "type": "object"},
    {"minLength": -1},
    {"required": "q"},
    {"items": [{"type": "string"}], "additionalItems": False},
    True,
    {"enum": []},
]


def python_schema_error(schema: Any) -> str | None:
    try:
        jsonschema.Draft7Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        return f"is not a valid JSON Schema (Draft-07){' at ' + where if where else ''}: {exc.message}"
    return None


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: json.dumps(s)[:40])
def test_the_schema_verdict_and_message_are_python_jsonschemas(schema: Any) -> None:
    assert schema_error(json.dumps(schema, sort_keys=True)) == python_schema_error(schema)


def test_a_regex_python_refuses_is_refused() -> None:
    message = schema_error(json.dumps({"properties": {"a": {"pattern": r"\p{L}"}}}))
    assert message is not None and "regex" in message


BODY = {"type": "object", "properties": {"question": {"type": "string", "maxLength": 5},
                                         "temperature": {"type": "number", "minimum": 0},
                                         "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
                                         "when": {"type": "string", "format": "date"}},
        "required": ["question"], "additionalProperties": False}
CONFIGS: list[tuple[Any, Any]] = [
    (BODY, {"temperature": 0}),
    (BODY, {"temperature": "hot"}),
    (BODY, {"question": "too long", "extra": 1}),
    (BODY, {"tags": ["a", "c"], "temperature": -1}),
    (BODY, {"when": "not a date"}),  # formats are not asserted
    (BODY, {"temperature": 1.0, "tags": []}),
    ({"properties": {"id": {"type": "string", "pattern": "^[a-z]+$"}}}, {"id": "ABC"}),
    ({"properties": {"id": {"type": "string", "pattern": "^[a-z]+$"}}}, {"id": "abc"}),
    ({"properties": {"n": {"type": "integer"}}}, {"n": 1.0}),
    ({"properties": {"n": {"type": "integer"}}}, {"n": True}),
    ({"properties": {"u": {"uniqueItems": True}}}, {"u": [1, True]}),
]


@pytest.mark.parametrize(("schema", "config"), CONFIGS, ids=lambda v: json.dumps(v)[:40])
def test_preset_mismatches_are_python_jsonschemas(schema: Any, config: Any) -> None:
    errors = sorted(jsonschema.Draft7Validator(without_required(schema)).iter_errors(config),
                    key=lambda e: list(e.absolute_path))
    expected = [(tuple(e.absolute_path), e.message) for e in errors]
    assert preset_mismatches(json.dumps(schema, sort_keys=True), config) == expected


def test_a_reference_that_cannot_be_resolved_is_never_fetched_and_says_so() -> None:
    schema = json.dumps({"properties": {"a": {"$ref": "https://127.0.0.1:9/nowhere.json"}}})
    with pytest.raises(Exception, match="nowhere"):
        preset_mismatches(schema, {"a": 1})
