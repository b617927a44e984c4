"""``reconciler schema``: the JSON Schema (Draft-07) of one manifest document, generated from the
models (``reconciler.manifests.models``), so the validator and the schema cannot disagree.

Shaped for editors (the YAML language server) as much as for validators:

- It switches on ``kind`` with ``if``/``then`` (and an Integration on ``type``, a config on
  ``provider``, an auth on its ``type``), so a document is checked against its own kind only and an
  error names that kind's fields, never every kind's.
- It accepts what the loader resolves before validation: a ``kind: Patch`` overlay, and a variable
  (``{var: NAME}`` as a whole value, ``${var.NAME}`` inside a string) wherever a value goes except a
  secret (a variable is never a secret) and ``kind``.
- ``$id`` is stable (it does not change with the version), so an editor setting can name it.
- ``kind: Policy`` (``reconciler.manifests.policies``) is a document of the tree too.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from reconciler.manifests.fields import SECRET_SCHEMA
from reconciler.manifests.models import DOCUMENT_KINDS, KIND_MODELS
from reconciler.manifests.policies import Policy
from reconciler.model import SPACED_KINDS

SCHEMA_ID = "https://reconciler.dev/schemas/manifest.json"
_DEFS = "#/definitions/{model}"
VARIABLE = "#/definitions/Variable"

VARIABLE_SCHEMA: dict[str, Any] = {
    "description": "A variable (docs/manifests.md), resolved before validation: {var: NAME} as the whole value "
                   "(it keeps the variable's YAML type), or a string with ${var.NAME} inside.",
    "anyOf": [
        {"type": "object", "properties": {"var": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
                                                  "description": "The variable's name."}},
         "required": ["var"], "additionalProperties": False},
        {"type": "string", "pattern": "\\$\\{var\\.[^}]*\\}"},
    ],
}

PATCH_SCHEMA: dict[str, Any] = {
    "title": "Patch",
    "description": "An overlay: a JSON Merge Patch (RFC 7396) on the document loaded before it that target "
                   "(and space) name; null in the patch removes the key (the field becomes unmanaged).",
    "type": "object",
    "additionalProperties": False,
    "required": ["kind", "target", "patch"],
    "properties": {
        "kind": {"const": "Patch", "description": "The document's kind."},
        "name": {"type": "string", "description": "A label for the patch (optional)."},
        "target": {"type": "string", "pattern": "^[A-Za-z]+/.+$",
                   "description": "KIND/NAME of the document it changes (loaded before it)."},
        "space": {"type": "string", "minLength": 1,
                  "description": "The target's space (a Prompt, Dataset or Evaluator is named by space and name)."},
        "patch": {"type": "object", "description": "The JSON Merge Patch: the fields to set; null removes one. "
                                                   "It cannot change kind or name."},
    },
    # a target given as a variable may name any kind: the loader checks the space once it is resolved
    "if": {"properties": {"target": {"type": "string", "pattern": f"^({'|'.join(SPACED_KINDS)})/"}},
           "required": ["target"]},
    "then": {"required": ["space"]},
}


def _tidy(node: Any) -> Any:
    """Draft-07 spelling, and no pydantic-only noise: ``$defs`` -> ``definitions``; no generated
    titles of properties or ``default`` (an omitted field is unmanaged, it has no default)."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "default" or (k == "title" and isinstance(v, str) and "properties" not in node
                                  and "$ref" not in node and "oneOf" not in node):
                continue
            if k == "properties":
                out[k] = {name: _tidy(p) for name, p in v.items()}
            else:
                out["definitions" if k == "$defs" else k] = _tidy(v)
        return out
    if isinstance(node, list):
        return [_tidy(v) for v in node]
    return node


def _switch(key: str, cases: dict[str, Any]) -> list[dict[str, Any]]:
    """``if key is TAG then SCHEMA`` for each case: a value is checked against its own case only."""
    return [{"if": {"properties": {key: {"const": tag}}, "required": [key]}, "then": then}
            for tag, then in cases.items()]


def _tag_of(definition: dict[str, Any]) -> tuple[str, str] | None:
    consts = [(k, p["const"]) for k, p in definition.get("properties", {}).items()
              if isinstance(p, dict) and isinstance(p.get("const"), str) and k != "kind"]
    return consts[0] if len(consts) == 1 else None


def _switches(node: Any, definitions: dict[str, Any]) -> Any:
    """Every tagged union (a ``oneOf`` of models each with one constant field) as ``if``/``then`` on
    that field, plus an ``enum`` of the tags, so an error is about the chosen member only."""
    if isinstance(node, list):
        return [_switches(v, definitions) for v in node]
    if not isinstance(node, dict):
        return node
    node = {k: _switches(v, definitions) for k, v in node.items()}
    members = node.get("oneOf")
    if isinstance(members, list) and members and all(set(m) == {"$ref"} for m in members):
        tags = [_tag_of(definitions.get(m["$ref"].rsplit("/", 1)[1], {})) for m in members]
        keys = {t[0] for t in tags if t is not None}
        if None not in tags and len(keys) == 1:
            (key,) = keys
            del node["oneOf"]
            node.update({"type": "object", "required": [key],
                         "properties": {key: {"enum": [t[1] for t in tags if t is not None],
                                              "description": f"Chooses the fields that apply (by {key})."}},
                         "allOf": _switch(key, {t[1]: m for t, m in zip(tags, members, strict=True) if t is not None})})
    return node


def _with_variables(node: Any) -> Any:
    """Every value position (a property, list items, a map's values) also takes a variable; a secret
    (never a variable) and ``kind`` keep their schema as is."""
    if isinstance(node, list):
        return [_with_variables(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k == "properties" and isinstance(v, dict):
            out[k] = {name: p if name == "kind" else _variable_or(p) for name, p in v.items()}
        elif k in ("items", "additionalProperties") and isinstance(v, dict) and v:
            out[k] = _variable_or(v)
        elif k in ("if", "definitions"):  # a switch's condition is on literal tags; definitions are reached by $ref
            out[k] = v if k == "if" else {name: _with_variables(d) for name, d in v.items()}
        else:
            out[k] = _with_variables(v)
    return out


def _variable_or(schema: dict[str, Any]) -> dict[str, Any]:
    """A value: a variable, else ``schema`` (``if``/``else``, so the errors are the schema's own)."""
    if _is_secret(schema) or not schema:
        return schema
    schema = _with_variables(schema)
    described = {"description": schema["description"]} if "description" in schema else {}
    return {**described, "if": {"$ref": VARIABLE}, "else": schema}


def _is_secret(schema: dict[str, Any]) -> bool:
    return schema.get("oneOf") == SECRET_SCHEMA["oneOf"] or (
        schema.get("anyOf") is not None and any(_is_secret(s) for s in schema["anyOf"] if isinstance(s, dict)))


def manifest_json_schema() -> dict[str, Any]:
    """The JSON Schema (Draft-07) of one manifest document: a switch on ``kind``."""
    definitions: dict[str, Any] = {}
    kinds: dict[str, Any] = {}
    for kind, model in {**KIND_MODELS, "Policy": Policy}.items():
        schema = TypeAdapter(model).json_schema(ref_template=_DEFS)
        definitions.update(schema.pop("$defs", {}))
        kinds[kind] = {"title": kind, **schema}
    definitions = _tidy(definitions)
    for kind, schema in kinds.items():
        definitions[kind] = _tidy(schema)
    definitions = {name: _switches(d, definitions) for name, d in definitions.items()}
    definitions = {name: _with_variables(d) for name, d in definitions.items()}
    definitions["Patch"] = _with_variables(PATCH_SCHEMA)  # variables are resolved in a Patch too
    definitions["Variable"] = VARIABLE_SCHEMA
    every_kind = [*DOCUMENT_KINDS, "Policy", "Patch"]
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": SCHEMA_ID,
        "title": "reconciler manifest document",
        "description": "One document of a reconciler manifest (see docs/manifests.md), chosen by kind. "
                       "Secrets are {env: NAME} or {file: PATH} references only.",
        "type": "object",
        "required": ["kind"],
        "properties": {"kind": {"enum": every_kind, "description": "The document's kind."}},
        "allOf": _switch("kind", {kind: {"$ref": f"#/definitions/{kind}"} for kind in every_kind}),
        "definitions": dict(sorted(definitions.items())),
    }
