"""The project's one wrapper around deepdiff: nested differences become ``Change`` values with
dotted paths (list indices as numbers), sorted for determinism."""

from __future__ import annotations

from typing import Any

from deepdiff import DeepDiff

from reconciler.plan.model import Change


def _dotted(base: str, parts: list[Any]) -> str:
    tail = ".".join(str(p) for p in parts)
    if not base:
        return tail
    return f"{base}.{tail}" if tail else base


def _present(value: Any) -> Any:
    return None if type(value).__name__ == "NotPresent" else value


def nested_changes(before: Any, after: Any, base: str, source: str | None = None) -> list[Change]:
    """Leaf-level changes from ``before`` to ``after`` under the dotted path ``base``.

    Lists are compared by position (order matters for messages and examples); a type change
    of a node is one change of the whole node.
    """
    if before == after:
        return []
    if not isinstance(before, dict | list) or not isinstance(after, dict | list) or type(before) is not type(after):
        return [Change(base, before, after, source)]
    diff = DeepDiff(before, after, verbose_level=2, view="tree", threshold_to_diff_deeper=0)
    out: list[Change] = []
    for levels in diff.values():
        for level in levels:
            out.append(Change(_dotted(base, level.path(output_format="list")), _present(level.t1),
                              _present(level.t2), source))
    out.sort(key=lambda c: c.path)
    return out
