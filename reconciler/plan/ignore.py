"""``ignore_changes`` (docs/manifests.md, "Two writers"): field paths a tree never updates nor reports.

Rules come from a resource's own ``ignore_changes`` (field path globs) and from the Ownership
document's (``match`` address globs x ``fields`` field path globs). A field path is the manifest's
field names, dotted; ``*`` matches one segment; a rule naming a field also covers what is inside it,
and a list is compared whole. For a resource that exists live, every ignored field that differs is
set to its live value (``plan.liveview``) before planning, so the planner sees no difference: nothing
is sent and nothing is drift; each such field is counted (``Plan.ignored``) with its rule's
``file:line``. A resource that does not exist yet is created as declared, ignored fields included.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Any

from reconciler.fieldkinds import ABSENT
from reconciler.manifests.ignores import address_matches, path_matches
from reconciler.manifests.models import IDENTITY_FIELDS, document_of
from reconciler.model import DesiredResource, LiveState, Ownership
from reconciler.plan.liveview import FieldEdit
from reconciler.plan.model import Ignored
from reconciler.plan.registry import resource_diff


@dataclass(frozen=True)
class Rule:
    field: str  # a field path glob
    source: str | None  # where the rule is written


def rules_for(r: DesiredResource, ownership: Ownership | None) -> list[Rule]:
    rules = [Rule(f, _where(r.source(f"ignore_changes.{i}"))) for i, f in enumerate(r.ignore_changes)]
    if ownership is not None:
        for n, (globs, fields) in enumerate(ownership.ignore_changes):
            if any(address_matches(g, r) for g in globs):
                rules.extend(Rule(f, _where(ownership.source(f"ignore_changes.{n}.fields.{i}")))
                             for i, f in enumerate(fields))
    return [rule for rule in rules if rule.field.split(".")[0] not in IDENTITY_FIELDS]


def _where(source: Any) -> str | None:
    return str(source) if source is not None else None


def apply_ignores(desired: list[DesiredResource], live: LiveState,
                  ownership: Ownership | None) -> tuple[list[DesiredResource], list[Ignored]]:
    """The resources with every ignored difference set to its live value, and those differences."""
    out: list[DesiredResource] = []
    ignored: list[Ignored] = []
    for r in desired:
        rules = rules_for(r, ownership) if (r.ignore_changes or ownership is not None
                                            and ownership.ignore_changes) else []
        if not rules:
            out.append(r)
            continue
        diff = resource_diff(r, live)
        if diff.missing or diff.renamed or not (diff.edits or diff.examples):
            out.append(r)
            continue
        spec = copy.deepcopy(dict(r.spec))
        touched = False
        for edit in diff.edits:
            found, modified = _ignored_edit(edit, rules, spec)
            touched = touched or modified
            if found is not None:
                path, live_value, declared = _ignored_part(edit, found)
                ignored.append(Ignored(r.address, path, _shown(live_value), _shown(declared), found.source))
        if diff.examples:
            rule = next((x for x in rules if path_matches(x.field, "examples")), None)
            if rule is not None:
                spec.pop("examples", None)
                ignored.append(Ignored(r.address, "examples", f"{diff.examples.count()} examples differ", None,
                                       rule.source))
                touched = True
        out.append(replace(r, spec=spec, doc=document_of(r.kind, r.name, r.space, spec)) if touched else r)
    return out, ignored


def _ignored_part(edit: FieldEdit, rule: Rule) -> tuple[str, Any, Any]:
    """What a rule left as live, as shown (path, live, declared): down to the key a rule inside a
    free-form object names, as deep as both sides are objects that hold it; else the whole difference."""
    parts = rule.field.split(".")
    path, new, old = edit.path, edit.new, edit.old
    for key in parts[len(edit.path.split(".")):]:
        if "*" in key or "?" in key or "[" in key or not (isinstance(new, dict) and isinstance(old, dict)) \
                or (key not in new and key not in old):
            break
        path, new, old = f"{path}.{key}", new.get(key, ABSENT), old.get(key, ABSENT)
    return path, new, old


def _ignored_edit(edit: FieldEdit, rules: list[Rule], spec: dict[str, Any]) -> tuple[Rule | None, bool]:
    """Apply an ignored edit to ``spec`` (the live value, or a deeper part of it): the rule when the
    whole difference is ignored, and whether ``spec`` changed."""
    for rule in rules:
        if path_matches(rule.field, edit.path):
            set_path(spec, edit.path, edit.new)
            return rule, True
    for rule in rules:  # a rule inside a free-form object the planner compares whole
        if not path_matches(edit.path, rule.field) or not isinstance(edit.old, dict) or not isinstance(edit.new, dict):
            continue
        merged = _take_live(copy.deepcopy(edit.old), edit.new, rule.field.split(".")[len(edit.path.split(".")):])
        if merged is not None:
            set_path(spec, edit.path, merged)
            return (rule if merged != edit.old else None), True  # counted when it left something as live
    return None, False


def _take_live(want: dict[str, Any], have: dict[str, Any], glob: list[str]) -> dict[str, Any] | None:
    """``want`` with the keys ``glob`` covers taken from ``have``; None when it covers none."""
    head, rest = glob[0], glob[1:]
    hit = False
    for k in set(want) | set(have):
        if not fnmatchcase(k, head):
            continue
        if rest and isinstance(want.get(k), dict) and isinstance(have.get(k), dict):
            sub = _take_live(want[k], have[k], rest)
            if sub is not None:
                want[k] = sub
                hit = True
            continue
        hit = True
        if k in have:
            want[k] = copy.deepcopy(have[k])
        else:
            want.pop(k, None)
    return want if hit else None


def set_path(spec: dict[str, Any], path: str, value: Any) -> None:
    """Set a dotted path of nested mappings (``ABSENT`` removes the key)."""
    parts = path.split(".")
    node = spec
    for part in parts[:-1]:
        nxt = node.get(part)
        if not isinstance(nxt, dict):
            if value is ABSENT:
                return
            nxt = node[part] = {}
        node = nxt
    if value is ABSENT:
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = copy.deepcopy(value)


def _shown(value: Any) -> Any:
    return None if value is ABSENT else value


#: ``pull`` keeps what a rule inside a free-form object names as declared (the same walk, the sides swapped).
take_live = _take_live
