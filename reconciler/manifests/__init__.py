"""Manifests: the YAML format of product.md section 3, loaded and validated without network access.

Public surface:
- ``load_manifests(paths, *, stdin=None) -> ManifestSet`` (raises ``ManifestError`` with every problem)
- ``check_secrets(ms) -> list[str]`` (unresolvable secret references, oversized header maps)
- ``manifest_json_schema() -> dict`` (the JSON Schema of one document)
- ``live_lookups(ms)`` (evaluator integration names the manifests do not declare)
- ``commands.run_validate`` / ``commands.run_schema`` (the CLI commands)

Modules: ``yamlload`` (YAML with positions and limits), ``models`` (the kinds as pydantic v2 models,
the provider configs generated from the provider table), ``messages`` (pydantic errors -> problem
lines in the product's words), ``schema`` (JSON Schema from the models), ``examples`` (dataset
examples), ``validate`` (document -> DesiredResource, cross-document checks), ``loader`` (files,
directories, stdin), ``secrets`` (secret checks), ``commands``.
"""

from __future__ import annotations

from reconciler.manifests.loader import load_manifests
from reconciler.manifests.schema import manifest_json_schema
from reconciler.manifests.secrets import check_secrets
from reconciler.manifests.validate import live_lookups

__all__ = ["check_secrets", "live_lookups", "load_manifests", "manifest_json_schema"]
