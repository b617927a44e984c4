"""Checking that every secret reference of a manifest set resolves (``apply`` time, and
``validate --check-secrets``), and that header maps fit the API's size limit once their values
are known. Values are read into memory only for the check and never appear in a problem."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from reconciler.errors import SecretError
from reconciler.kinds import SECRET_KINDS
from reconciler.manifests.fields import HEADER_SIZE_MEASURE
from reconciler.manifests.yamlload import Problem, display_path
from reconciler.model import DesiredResource, ManifestSet, SecretRef, Source
from reconciler.providers import HEADER_MAP_MAX_BYTES, serialized_header_bytes


def walk(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Every value below ``value`` (itself first) with its dotted path."""
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from walk(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from walk(v, f"{path}.{i}" if path else str(i))


def check_secrets(ms: ManifestSet, only: Callable[[str, str], bool] | None = None) -> list[str]:
    """Problems (``FILE:LINE:COL: PATH: message``) for secret references that do not resolve: an
    unset or empty environment variable, a missing, unreadable or empty file; and for header maps
    whose serialized size is over the limit. Each reference is read once per call, and every use
    of one that does not resolve is a problem of its own. ``only(address, path)`` limits the check
    to what a plan sends."""
    return [str(p) for _, p in secret_problems(ms, only)]


def secret_problems(ms: ManifestSet, only: Callable[[str, str], bool] | None = None
                    ) -> list[tuple[SecretRef | None, Problem]]:
    """``check_secrets`` with the reference each problem is about (None for an oversized header map)."""
    problems: list[tuple[SecretRef | None, Problem]] = []
    resolved: dict[SecretRef, str | None] = {}
    failed: dict[SecretRef, str] = {}

    def report(ref: SecretRef | None, r: DesiredResource, path: str, message: str) -> None:
        where = r.source(path) or Source("?", 1, 1)  # looked up only for a problem: most paths have none
        problems.append((ref, Problem(where.file, where.line, where.column, display_path(path), message)))

    def value_of(ref: SecretRef, r: DesiredResource, path: str) -> str | None:
        if ref not in resolved:
            try:
                value: str | None = ref.resolve()
            except SecretError as exc:
                value, failed[ref] = None, exc.message
            if value == "":
                what = "environment variable" if ref.source == "env" else "file"
                value, failed[ref] = None, f"secret {ref.describe()}: {what} {ref.ref} is empty"
            resolved[ref] = value
        if ref in failed:
            report(ref, r, path, failed[ref])
        return resolved[ref]

    for r in ms.resources:
        if r.kind not in SECRET_KINDS:  # only the subtrees that can hold secrets: examples can be large
            continue
        seen: set[str] = set()  # the values of a header map are checked with the map
        for path, value in walk(r.spec.get("config"), "config"):
            if path in seen or (only is not None and not only(r.address, path)):
                continue
            if isinstance(value, SecretRef):
                value_of(value, r, path)
            elif path.endswith("headers") and isinstance(value, dict) and value and all(
                    isinstance(v, SecretRef) for v in value.values()):
                seen.update(f"{path}.{name}" for name in value)
                values = {name: value_of(ref, r, f"{path}.{name}") for name, ref in value.items()}
                if all(v is not None for v in values.values()):
                    size = serialized_header_bytes({k: str(v) for k, v in values.items()})
                    if size > HEADER_MAP_MAX_BYTES:
                        report(None, r, path, f"the header map serializes to {size:,} bytes, over the "
                                              f"{HEADER_MAP_MAX_BYTES:,}-byte limit ({HEADER_SIZE_MEASURE})")
    resolved.clear()
    return problems


def unresolved_secrets_message(problems: Sequence[tuple[SecretRef | None, Problem]]) -> str:
    """What ``apply`` says when a secret it would send does not resolve: one line a reference,
    naming the variable (or file) and every ``file:line`` that uses it; an oversized header map on
    a line of its own."""
    by_ref: dict[SecretRef, list[Problem]] = {}
    lines: list[str] = []
    for ref, problem in problems:
        if ref is None:
            lines.append(f"  {problem}")
        else:
            by_ref.setdefault(ref, []).append(problem)
    for uses in by_ref.values():
        where = ", ".join(f"{p.file}:{p.line}:{p.column} ({p.path})" for p in uses)
        lines.append(f"  {uses[0].message}; used at {where}")
    n = len(by_ref) + sum(1 for ref, _ in problems if ref is None)
    return (f"cannot apply: {n} secret{'s' if n != 1 else ''} the plan sends "
            f"{'do' if n != 1 else 'does'} not resolve (nothing was sent):\n" + "\n".join(lines))
