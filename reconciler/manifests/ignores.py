"""``ignore_changes`` rules as the manifests write them (docs/manifests.md, "Two writers"): how a field
path glob and an address glob match, and which rules match nothing the tree declares (``plan`` warns,
``validate`` refuses: a typo would otherwise hide a difference silently). ``plan.ignore`` applies them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from fnmatch import fnmatchcase
from typing import Any

from reconciler.model import DesiredResource, Ownership

#: Free-form objects the planner compares whole: a rule may name a key inside them.
FREE_FORM = ("invocation_params", "provider_params", "input_schema", "invocation_parameters", "provider_parameters",
             "classification_choices")


def path_matches(glob: str, path: str) -> bool:
    """Whether the field path glob covers ``path`` (the field itself or something inside it)."""
    g, p = glob.split("."), path.split(".")
    return len(g) <= len(p) and all(fnmatchcase(a, b) for a, b in zip(p, g, strict=False))


def address_matches(glob: str, r: DesiredResource) -> bool:
    return fnmatchcase(r.address, glob) or (r.space is not None and fnmatchcase(f"{r.kind}/{r.name}", glob))


def _where(source: Any) -> str | None:
    return str(source) if source is not None else None


def declared_paths(value: Any, base: str = "") -> Iterator[str]:
    """Every dotted path of mappings a spec writes (lists are leaves: compared whole)."""
    if isinstance(value, dict):
        for k, v in value.items():
            path = f"{base}.{k}" if base else str(k)
            yield path
            yield from declared_paths(v, path)


def unmatched_warnings(resources: Iterable[DesiredResource], ownership: Ownership | None) -> list[str]:
    """A rule that matches nothing declared: a warning (a typo would otherwise hide silently)."""
    resources = list(resources)
    out: list[str] = []

    def covers(glob: str, r: DesiredResource) -> bool:
        return any(path_matches(glob, p) or (p.rpartition(".")[2] in FREE_FORM and path_matches(p, glob))
                   for p in declared_paths(dict(r.spec)))

    for r in resources:
        for i, f in enumerate(r.ignore_changes):
            if not covers(f, r):
                out.append(f"{_where(r.source(f'ignore_changes.{i}')) or r.address}: ignore_changes {f!r} matches "
                           f"no field {r.address} declares")
    if ownership is not None:
        for n, (globs, fields) in enumerate(ownership.ignore_changes):
            where = _where(ownership.source(f"ignore_changes.{n}")) or f"Ownership/{ownership.name}"
            matched = [r for r in resources if any(address_matches(g, r) for g in globs)]
            if not matched:
                out.append(f"{where}: ignore_changes match {list(globs)} matches no declared resource")
                continue
            out.extend(f"{where}: ignore_changes field {f!r} matches no field the matched resources declare"
                       for f in fields if not any(covers(f, r) for r in matched))
    return out

