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
  ``pattern`` goes to python-jsonschema whole (ECMA and Python regexes differ), its patterns matched
  by RE2 in linear time: a pattern RE2 cannot run (a backreference, a lookaround) is refused, so no
  pattern makes ``validate`` backtrack for ever.
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


def _patterns(schema: Any) -> list[str]:
    """The regular expressions of a schema: every ``pattern`` string, every ``patternProperties`` key."""
    found: list[str] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                found.append(node["pattern"])
            if isinstance(node.get("patternProperties"), dict):
                found.extend(str(k) for k in node["patternProperties"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _linear_problem(schema: Any) -> str | None:
    """A ``pattern`` RE2 cannot run (a backreference, a lookaround): presets are matched in linear
    time, by RE2, so that no pattern can make ``validate`` backtrack for ever."""
    import re2  # type: ignore[import-untyped]  # google-re2 (cel-python's dependency too)

    for pattern in _patterns(schema):
        try:
            re2.compile(pattern)
        except re2.error:
            return (f"pattern {json.dumps(pattern)[:80]} uses what cannot be matched in linear time (a "
                    "backreference or a lookaround); reconciler matches patterns with RE2")
    return None


@lru_cache(maxsize=512)
def schema_error(schema_json: str) -> str | None:
    """Why the schema (compact JSON) is not a valid Draft-07 JSON Schema, or None."""
    schema = json.loads(schema_json)
    meta = _meta_validator()
    if meta is None or not meta.is_valid(schema):
        from jsonschema import Draft7Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft7Validator.check_schema(schema)
        except SchemaError as exc:
            where = "/".join(str(p) for p in exc.absolute_path)
            return f"is not a valid JSON Schema (Draft-07){' at ' + where if where else ''}: {exc.message}"
    if '"pattern' in schema_json and (linear := _linear_problem(schema)) is not None:
        return f"is refused: {linear}"
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


@lru_cache(maxsize=1)
def _linear_validator() -> Any:
    """python-jsonschema's Draft-07 with ``pattern``, ``patternProperties`` and
    ``additionalProperties`` matching by RE2 (linear time) rather than Python's backtracking ``re``;
    the messages are python-jsonschema's own."""
    import re2
    from jsonschema import Draft7Validator, ValidationError, validators

    def search(pattern: str, text: str) -> bool:
        return re2.search(pattern, text) is not None

    def pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Any:
        if validator.is_type(instance, "string") and not search(patrn, instance):
            yield ValidationError(f"{instance!r} does not match {patrn!r}")

    def pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Any:
        if not validator.is_type(instance, "object"):
            return
        for patrn, subschema in patterns.items():
            for k, v in instance.items():
                if search(patrn, k):
                    yield from validator.descend(v, subschema, path=k, schema_path=patrn)

    def additional_properties(validator: Any, ap: Any, instance: Any, schema: Any) -> Any:
        if not validator.is_type(instance, "object"):
            return
        properties, patterns = schema.get("properties", {}), list(schema.get("patternProperties", {}))
        extras = [k for k in instance if k not in properties and not any(search(p, k) for p in patterns)]
        if validator.is_type(ap, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], ap, path=extra)
        elif not ap and extras:
            if "patternProperties" in schema:
                joined = ", ".join(repr(each) for each in sorted(extras))
                yield ValidationError(f"{joined} {'does' if len(extras) == 1 else 'do'} not match any of the "
                                      f"regexes: {', '.join(repr(each) for each in sorted(patterns))}")
            else:
                names = ", ".join(repr(extra) for extra in sorted(extras, key=str))  # python-jsonschema's words
                verb = "was" if len(extras) == 1 else "were"
                yield ValidationError(f"Additional properties are not allowed ({names} {verb} unexpected)")

    keywords = {"pattern": pattern, "patternProperties": pattern_properties,
                "additionalProperties": additional_properties}
    return validators.extend(Draft7Validator, keywords)  # type: ignore[no-untyped-call]


@lru_cache(maxsize=512)
def _partial(schema_json: str) -> Any:
    return _linear_validator()(without_required(json.loads(schema_json)))


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
