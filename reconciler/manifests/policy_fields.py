"""The field names a policy may name, taken from the manifest models (``reconciler.manifests.models``):
``fields`` globs of a rule's ``match`` and the member selections of its CEL ``condition`` are checked
against them when the policy loads, since CEL itself is dynamic and would only fail at evaluation.

A ``FieldTree`` is a mapping of field name to the tree below it; ``ANY`` stands for a free-form value
(an object the user writes: ``invocation_params``, ``input_schema``, examples), below which every
name is valid; ``LEAF`` for a scalar. A list of models takes any one segment (an index, or a named
item's name, as change paths write them) before its items' fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from functools import cache
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from reconciler.kinds import EXPERIMENT, KINDS
from reconciler.manifests.fields import TaggedUnion
from reconciler.manifests.models import KIND_MODELS, field_type, unwrap

ANY = "*any*"
LEAF = "*leaf*"
LIST = "*list*"  # key of a list node: {LIST: item tree}
FieldTree = Mapping[str, Any] | str
#: What a rule may match: the resource kinds, and a dataset's experiments (deleted by retention).
ALL_KINDS = (*KINDS, EXPERIMENT)


def _merge(a: FieldTree, b: FieldTree) -> FieldTree:
    if a == ANY or b == ANY:
        return ANY
    if isinstance(a, str):
        return b
    if isinstance(b, str):
        return a
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if k in out else v
    return out


def _tree(tp: Any, depth: int = 0) -> FieldTree:
    tp = unwrap(tp)
    if depth > 12:
        return ANY
    if isinstance(tp, TaggedUnion):
        merged: FieldTree = {}
        for member in tp.members.values():
            merged = _merge(merged, _tree(member, depth + 1))
        return merged
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return {name: _tree(field_type(tp, name), depth + 1) for name in tp.model_fields}
    origin = get_origin(tp)
    if origin is list:
        item = _tree(get_args(tp)[0], depth + 1)
        return {LIST: item} if isinstance(item, Mapping) else ANY
    if origin is dict or tp is Any or tp is dict or tp is object:
        return ANY
    return LEAF


@cache
def kind_tree(kind: str) -> FieldTree:
    """The manifest fields of a kind (every Integration type and provider merged)."""
    if kind not in KIND_MODELS:  # Experiment (deleted by retention): its head, and why the plan deletes it
        return {"kind": LEAF, "name": LEAF, "space": LEAF, "experiment_retention": LEAF}
    tree = _tree(KIND_MODELS[kind])
    assert isinstance(tree, Mapping)
    return tree


def _children(tree: FieldTree, segment_glob: str) -> list[FieldTree]:
    """The trees below the names ``segment_glob`` matches."""
    if tree == ANY:
        return [ANY]
    if not isinstance(tree, Mapping):
        return []
    if LIST in tree:  # an index or a named item, then the item's fields
        return [tree[LIST]]
    return [sub for name, sub in tree.items() if fnmatchcase(name, segment_glob)]


def glob_can_match(glob: str, kinds: Iterable[str]) -> bool:
    """Whether a dotted field-path glob (``*`` one segment) names a field of one of ``kinds``."""
    level: list[FieldTree] = [kind_tree(k) for k in kinds]
    for segment in glob.split("."):
        level = [c for t in level for c in _children(t, segment)]
        if not level:
            return False
    return True


def path_exists(path: Iterable[str], trees: Iterable[FieldTree]) -> bool:
    """Whether a member-selection chain (``experiment_retention.keep_last``) exists in one of the
    trees (a kind's manifest fields: ``kind_tree``; a selection into a list or a free-form value is
    not checked further)."""
    level: list[FieldTree] = list(trees)
    for name in path:
        nxt: list[FieldTree] = []
        for t in level:
            if t == ANY or (isinstance(t, Mapping) and LIST in t):
                return True
            if isinstance(t, Mapping) and name in t:
                nxt.append(t[name])
        if not nxt:
            return False
        level = nxt
    return True


def path_segments(path: str) -> list[str]:
    """A change path as the segments a ``fields`` glob names: dotted names, and each list item the
    plan writes in brackets as a segment of its own, its selector without the brackets
    (``examples[ticket_id=T-1.2].expected`` -> ``examples``, ``ticket_id=T-1.2``, ``expected``;
    ``examples[+]`` -> ``examples``, ``+``). A bracket closes at the first ``]`` that ends the path or
    comes before a dot, so a key's value may hold dots and brackets. ``''`` (the resource itself) has
    no segment."""
    segments: list[str] = []
    i, n = 0, len(path)
    while i < n:
        if path[i] == "[":
            end = i + 1
            while end < n and not (path[end] == "]" and (end + 1 == n or path[end + 1] in ".[")):
                end += 1
            segments.append(path[i + 1:end])
            i = end + 1
        else:
            end = i
            while end < n and path[end] not in ".[":
                end += 1
            if end > i:
                segments.append(path[i:end])
            i = end
        if i < n and path[i] == ".":
            i += 1
    return segments


def touches(glob: str, path: str) -> bool:
    """Whether a change at ``path`` touches the fields ``glob`` names: one is the other or lies
    below it, whatever form the plan writes it in (a change of ``version`` touches ``version.labels``,
    and so do ``version.labels.0``; ``examples`` is touched by ``examples[+]``, ``examples[key=k]`` and
    ``examples[key=k].answer``). A sibling (``version.messages`` for ``version.labels``) does not."""
    p = path_segments(path)
    return bool(p) and all(fnmatchcase(ps, gs) for ps, gs in zip(p, glob.split("."), strict=False))
