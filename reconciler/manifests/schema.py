"""``reconciler schema``: the JSON Schema (Draft-07) of one manifest document, generated from the
models (``reconciler.manifests.models``), so the validator and the schema cannot disagree."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from reconciler.manifests.models import DOCUMENT_KINDS, KIND_MODELS

SCHEMA_ID = "https://reconciler.dev/schemas/manifest.json"
_DEFS = "#/definitions/{model}"


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


def manifest_json_schema() -> dict[str, Any]:
    """The JSON Schema (Draft-07) of one manifest document: a oneOf over kinds."""
    definitions: dict[str, Any] = {}
    variants: list[dict[str, Any]] = []
    for kind, model in KIND_MODELS.items():
        schema = TypeAdapter(model).json_schema(ref_template=_DEFS)
        definitions.update(schema.pop("$defs", {}))
        variants.append({"title": kind, **schema})
    document: dict[str, Any] = _tidy({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": SCHEMA_ID,
        "title": "reconciler manifest document",
        "description": "One document of a reconciler manifest (see docs/manifests.md). "
                       "Secrets are {env: NAME} or {file: PATH} references only.",
        "type": "object",
        "required": ["kind", "name"],
        "properties": {"kind": {"enum": list(DOCUMENT_KINDS), "description": "The document's kind."}},
        "oneOf": variants,
        "$defs": dict(sorted(definitions.items())),
    })
    return document
