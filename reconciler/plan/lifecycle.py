"""Lifecycle rules over a plan (docs/manifests.md): renames by ``aliases`` and protection.

A rename happens before planning: a live resource found under one of a document's ``aliases`` (and
none under its name) is looked at under the new name, so every planner sees it as the declared
resource and sends ``name`` in its update (one PATCH: the id kept, so what refers to it keeps
working). Protection happens after: no operation deletes or replaces a protected resource.
"""

from __future__ import annotations

import copy
from fnmatch import fnmatchcase
from typing import Any

from reconciler.model import DesiredResource, Ownership
from reconciler.plan.context import Ctx, integration_doc
from reconciler.plan.model import Operation


def apply_renames(desired: list[DesiredResource], ctx: Ctx) -> None:
    """Re-key aliased live resources under their new names in ``ctx.live`` (a copy; the live state
    read stays in ``ctx.original``) and record each rename in ``ctx.renamed``."""
    if not any(r.aliases for r in desired):
        return
    view = copy.copy(ctx.live)
    view.integrations = dict(ctx.live.integrations)
    view.datasets = dict(ctx.live.datasets)
    view.evaluators = dict(ctx.live.evaluators)
    for r in desired:
        if not r.aliases:
            continue
        table: Any
        scope: str
        if r.kind == "Integration":
            table, scope = view.integrations, integration_doc(r).type
        else:
            space_id = ctx.live.space_id(str(r.space))
            if space_id is None:
                continue  # the planner reports the unknown space
            table, scope = (view.datasets if r.kind == "Dataset" else view.evaluators), space_id
        found = [a for a in r.aliases if (scope, a) in table]
        if (scope, r.name) in table and found:
            ctx.error(r, "aliases", f"both {r.name} ({table[(scope, r.name)].id}) and its alias {found[0]} "
                      f"({table[(scope, found[0])].id}) exist live: delete or rename one of them first")
        elif len(found) > 1:
            ctx.error(r, "aliases", "several aliases exist live: " + ", ".join(
                f"{a} ({table[(scope, a)].id})" for a in found) + "; only one can become " + r.name)
        elif found:
            table[(scope, r.name)] = table.pop((scope, found[0]))
            ctx.renamed[r.address] = found[0]
    ctx.live = view


def protect_glob_matches(glob: str, address: str, kind: str, name: str) -> bool:
    """A protect glob names a resource the way it is written: ``KIND/SPACE/NAME`` (two slashes) is
    matched against the address of a resource in a space, ``KIND/NAME`` against the kind and name
    (any space). Matched by form, because ``*`` crosses ``/``: ``Prompt/su*`` names prompts whose
    name starts with su, not every prompt of the space support."""
    if glob.count("/") >= 2:
        return address.count("/") >= 2 and fnmatchcase(address, glob)
    return fnmatchcase(f"{kind}/{name}", glob)


def protected_by(address: str, kind: str, name: str, resource: DesiredResource | None,
                 ownership: Ownership | None) -> str | None:
    """Where the protection of a resource is written (``file:line``), or None when it has none."""
    if resource is not None and resource.protect:
        return str(resource.source("protect") or resource.address)
    if ownership is not None:
        for i, glob in enumerate(ownership.protect):
            if protect_glob_matches(glob, address, kind, name):
                where = ownership.source(f"protect.{i}")
                return str(where) if where else f"Ownership {ownership.name}: protect {glob}"
    return None


def protect(ctx: Ctx, desired: list[DesiredResource], ownership: Ownership | None) -> None:
    """Drop every delete of a protected resource (said in a warning) and refuse every replacement
    of one (a plan error): prune, ``--allow-replace`` and retention never apply to it."""
    by_address = {r.address: r for r in desired}
    kept: list[Operation] = []
    for op in ctx.ops:
        owner_kind = op.address.partition("/")[0]
        resource = by_address.get(op.address)
        name = resource.name if resource is not None else op.name
        where = (protected_by(op.address, owner_kind, name, resource, ownership)
                 if op.action in ("delete", "replace") else None)
        if where is None:
            kept.append(op)
        elif op.action == "replace":
            if op.method == "DELETE":
                ctx.errors.append(f"{op.address} is protected ({where}): the plan would replace it ({op.note}); "
                                  "change it back, or remove the protection first")
            kept.append(op)
        elif op.kind == "Experiment":
            ctx.warnings.append(f"{op.subject}: kept, not deleted by retention: {op.address} is protected ({where})")
        else:
            ctx.warnings.append(f"{op.address}: kept, not deleted by --prune: protected ({where})")
    ctx.ops = kept
