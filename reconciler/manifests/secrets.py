"""Checking that every secret reference of a manifest set resolves (``plan`` time, and
``validate --check-secrets``), and that header maps fit the API's size limit once their values
are known. Values are read into memory only for the check and never appear in a problem."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from reconciler.errors import SecretError
from reconciler.manifests.models import HEADER_SIZE_MEASURE
from reconciler.manifests.yamlload import Problem, display_path
from reconciler.model import DesiredResource, ManifestSet, SecretRef, Source
from reconciler.providers import HEADER_MAP_MAX_BYTES, serialized_header_bytes


def _walk(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, f"{path}.{i}" if path else str(i))


def _secret_values(r: DesiredResource) -> Iterator[tuple[str, Any]]:
    """Only the subtrees that can hold secrets (integration configs): examples can be large."""
    if r.kind == "Integration":
        yield from _walk(r.spec.get("config"), "config")


def check_secrets(ms: ManifestSet, only: Callable[[str, str], bool] | None = None) -> list[str]:
    """Problems (``FILE:LINE:COL: PATH: message``) for secret references that do not resolve: an
    unset or empty environment variable, a missing, unreadable or empty file; and for header maps
    whose serialized size is over the limit. Each reference is read once per call. ``only(address,
    path)`` limits the check to what a plan sends."""
    problems: list[Problem] = []
    resolved: dict[SecretRef, str | None] = {}

    def report(r: DesiredResource, path: str, message: str) -> None:
        where = r.source(path) or Source("?", 1, 1)  # looked up only for a problem: most paths have none
        problems.append(Problem(where.file, where.line, where.column, display_path(path), message))

    def value_of(ref: SecretRef, r: DesiredResource, path: str) -> str | None:
        if ref not in resolved:
            try:
                resolved[ref] = ref.resolve()
            except SecretError as exc:
                resolved[ref] = None
                report(r, path, exc.message)
                return None
            if not resolved[ref]:
                what = "environment variable" if ref.source == "env" else "file"
                report(r, path, f"secret {ref.describe()}: {what} {ref.ref} is empty")
        return resolved[ref]

    for r in ms.resources:
        for path, value in _secret_values(r):
            if only is not None and not only(r.address, path):
                continue
            if isinstance(value, SecretRef):
                value_of(value, r, path)
            elif path.endswith("headers") and isinstance(value, dict) and value and all(
                    isinstance(v, SecretRef) for v in value.values()):
                values = {name: value_of(ref, r, f"{path}.{name}") for name, ref in value.items()}
                if all(v is not None for v in values.values()):
                    size = serialized_header_bytes({k: str(v) for k, v in values.items()})
                    if size > HEADER_MAP_MAX_BYTES:
                        report(r, path, f"the header map serializes to {size:,} bytes, over the "
                                        f"{HEADER_MAP_MAX_BYTES:,}-byte limit ({HEADER_SIZE_MEASURE})")
    resolved.clear()
    return [str(p) for p in problems]
