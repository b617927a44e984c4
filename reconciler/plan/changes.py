"""The project's one wrapper around deepdiff: nested differences become ``Change`` values with
dotted paths (list indices as numbers), sorted for determinism."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deepdiff import DeepDiff

from reconciler.model import DesiredResource
from reconciler.plan.model import Change


def _dotted(base: str, parts: list[Any]) -> str:
    tail = ".".join(str(p) for p in parts)
    if not base:
        return tail
    return f"{base}.{tail}" if tail else base


def _present(value: Any) -> Any:
    return None if type(value).__name__ == "NotPresent" else value


def nested_changes(before: Any, after: Any, base: str,
                   source: Callable[[str], str | None] | str | None = None) -> list[Change]:
    """Leaf-level changes from ``before`` to ``after`` under the dotted path ``base``; ``source``
    gives each change's ``file:line`` from its path (or is one for all).

    Lists are compared by position (order matters for messages and examples); a type change
    of a node is one change of the whole node.
    """
    where: Callable[[str], str | None] = source if callable(source) else (lambda _path: source)
    if before == after:
        return []
    if not isinstance(before, dict | list) or not isinstance(after, dict | list) or type(before) is not type(after):
        return [Change(base, before, after, where(base))]
    diff = DeepDiff(before, after, verbose_level=2, view="tree", threshold_to_diff_deeper=0)
    out: list[Change] = []
    for levels in diff.values():
        for level in levels:
            path = _dotted(base, level.path(output_format="list"))
            out.append(Change(path, _present(level.t1), _present(level.t2), where(path)))
    out.sort(key=lambda c: c.path)
    return out


def source_in(r: DesiredResource, rename: Callable[[str], str] = lambda path: path) -> Callable[[str], str | None]:
    """The ``file:line`` of a change's path in ``r``'s manifest (``rename`` maps a plan path to the
    manifest's, e.g. a preset named in the plan to its index); the nearest written parent when the
    path itself is not in the manifest (a field only live has)."""
    def where(path: str) -> str | None:
        found = r.source(rename(path))
        return str(found) if found else None
    return where
