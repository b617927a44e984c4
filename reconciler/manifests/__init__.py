"""Manifests: the YAML format of docs/manifests.md, loaded and validated without network access.

Public surface:
- ``load_manifests(paths, *, stdin=None) -> ManifestSet`` (raises ``ManifestError`` with every problem)
- ``check_secrets(ms) -> list[str]`` (unresolvable secret references, oversized header maps)
- ``manifest_json_schema() -> dict`` (the JSON Schema of one document)
- ``live_lookups(ms)`` (evaluator integration names the manifests do not declare)

Modules: ``yamlload`` (YAML with positions and limits), ``models`` (the kinds as pydantic v2 models,
the provider configs generated from the provider table), ``messages`` (pydantic errors -> problem
lines in the product's words), ``schema`` (JSON Schema from the models), ``examples`` (dataset
examples), ``validate`` (document -> DesiredResource, cross-document checks), ``loader`` (files,
directories, stdin), ``secrets`` (secret checks). The ``validate`` and ``schema`` commands
are ``reconciler.cli.validate``.

The names below are imported on first use (PEP 562): ``reconciler.manifests.confine`` alone (the
CLI's ``--allow-outside-tree``) imports neither pydantic nor the models.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reconciler.manifests.loader import load_manifests
    from reconciler.manifests.schema import manifest_json_schema
    from reconciler.manifests.secrets import check_secrets
    from reconciler.manifests.validate import live_lookups

_HOME = {"load_manifests": "loader", "manifest_json_schema": "schema", "check_secrets": "secrets",
         "live_lookups": "validate"}

__all__ = ["check_secrets", "live_lookups", "load_manifests", "manifest_json_schema"]


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'reconciler.manifests' has no attribute {name!r}")
    return getattr(importlib.import_module(f"reconciler.manifests.{module}"), name)
