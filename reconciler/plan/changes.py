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
            old, new = _present(level.t1), _present(level.t2)
            if old is None and _nested(new):  # an object added (a message, a preset): one change a field
                out.extend(Change(p, None, v, where(p)) for p, v in _leaves(new, path))
            elif new is None and _nested(old):  # an object removed: one change ("preset cold removed")
                out.append(Change(path, old, None, where(path)))
            else:
                out.append(Change(path, old, new, where(path)))
    out.sort(key=lambda c: c.path)
    return out


def _nested(value: Any) -> bool:
    return isinstance(value, dict) and bool(value)


def _leaves(value: Any, path: str) -> list[tuple[str, Any]]:
    """``(dotted path, value)`` of each leaf of nested mappings (and lists of mappings)."""
    if _nested(value):
        return [leaf for k, v in value.items() for leaf in _leaves(v, f"{path}.{k}")]
    if isinstance(value, list) and value and all(_nested(v) for v in value):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, f"{path}.{i}")]
    return [(path, value)]


def source_in(r: DesiredResource, rename: Callable[[str], str] = lambda path: path) -> Callable[[str], str | None]:
    """The ``file:line`` of a change's path in ``r``'s manifest (``rename`` maps a plan path to the
    manifest's, e.g. a preset named in the plan to its index); the nearest written parent when the
    path itself is not in the manifest (a field only live has)."""
    def where(path: str) -> str | None:
        found = r.source(rename(path))
        return str(found) if found else None
    return where
