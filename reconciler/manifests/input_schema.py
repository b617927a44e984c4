r"""The checks of an AGENT integration's ``input_schema`` (a JSON Schema, Draft-07) and of its
presets' configs, decided as the service's stand-in decides them (python-jsonschema, as in
``reconciler.emulator.integrations``).

python-jsonschema takes about 70 ms to import (attrs, referencing and every specification): more
than ``validate`` of the quickstart tree spends on anything but pydantic, on every run of a
pre-commit hook. jsonschema-rs imports in a few milliseconds. So each check runs on jsonschema-rs
first, and only its "valid" is final, where the two agree by construction; anything else is decided
and worded by python-jsonschema, so the verdicts and the messages stay the emulator's:

- the schema is validated as an instance of the Draft-07 meta-schema (the file python-jsonschema
  reads, from ``jsonschema_specifications``), with the ``regex`` format checked by Python's ``re``
  as python-jsonschema does (jsonschema-rs's own would accept ``\p{L}``, which Python refuses).
  jsonschema-rs also checks the URI formats, which python-jsonschema skips without rfc3987:
  stricter, so such a schema falls back and is accepted there.
- a preset config is validated against the schema without ``required`` (a partial body), formats
  not asserted (python-jsonschema's default), references never fetched. A schema that mentions
  ``pattern`` goes to python-jsonschema whole: ECMA and Python regexes differ.
"""

from __future__ import annotations

import importlib.util
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reconciler.providers import without_required

if TYPE_CHECKING:
    import jsonschema_rs

#: (path inside the config, message) of one preset config's mismatch
Mismatch = tuple[tuple[str | int, ...], str]


def _python_regex(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def _refuse(uri: str) -> Any:
    raise ValueError(f"{uri} is not fetched")


@lru_cache(maxsize=1)
def _meta_validator() -> jsonschema_rs.Validator | None:
    """jsonschema-rs over the Draft-07 meta-schema; None when its file cannot be found."""
    import jsonschema_rs  # imported by the first AGENT integration: a tree without one does not pay for it

    spec = importlib.util.find_spec("jsonschema_specifications")  # the package's path, not its import
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = Path(location, "schemas", "draft7", "metaschema.json")
        if path.is_file():
            meta = json.loads(path.read_text(encoding="utf-8"))
            return jsonschema_rs.Draft7Validator(meta, formats={"regex": _python_regex}, retriever=_refuse)
    return None


@lru_cache(maxsize=512)
def schema_error(schema_json: str) -> str | None:
    """Why the schema (compact JSON) is not a valid Draft-07 JSON Schema, or None."""
    schema = json.loads(schema_json)
    meta = _meta_validator()
    if meta is not None and meta.is_valid(schema):
        return None
    from jsonschema import Draft7Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft7Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        return f"is not a valid JSON Schema (Draft-07){' at ' + where if where else ''}: {exc.message}"
    return None


@lru_cache(maxsize=512)
def _fast_partial(schema_json: str) -> jsonschema_rs.Validator | None:
    if '"pattern' in schema_json:  # pattern or patternProperties: Python's regexes decide
        return None
    import jsonschema_rs

    try:
        return jsonschema_rs.Draft7Validator(without_required(json.loads(schema_json)), validate_formats=False,
                                             retriever=_refuse)
    except (jsonschema_rs.ValidationError, ValueError):  # e.g. an unresolvable $ref: worded below
        return None


@lru_cache(maxsize=512)
def _partial(schema_json: str) -> Any:
    from jsonschema import Draft7Validator

    return Draft7Validator(without_required(json.loads(schema_json)))


def preset_mismatches(schema_json: str, config: Any) -> list[Mismatch]:
    """Where a preset's config (a partial request body) does not match the schema, sorted by
    path. Raises when the schema cannot be used (an unresolvable ``$ref``: nothing is fetched)."""
    fast = _fast_partial(schema_json)
    try:
        if fast is not None and fast.is_valid(config):
            return []
    except ValueError:  # a value jsonschema-rs cannot read: python-jsonschema decides
        pass
    errors = sorted(_partial(schema_json).iter_errors(config), key=lambda e: list(e.absolute_path))
    return [(tuple(e.absolute_path), e.message) for e in errors]
