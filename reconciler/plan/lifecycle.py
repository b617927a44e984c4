"""Lifecycle rules over a plan (docs/manifests.md): renames by ``aliases`` and protection.

A rename happens before planning: a live resource found under one of a document's ``aliases`` (and
none under its name) is looked at under the new name, so every planner sees it as the declared
resource and sends ``name`` in its update (one PATCH: the id kept, so what refers to it keeps
working). Protection happens after: no operation deletes or replaces a protected resource.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from reconciler.kinds import EXPERIMENT, KIND_SPECS
from reconciler.model import DesiredResource, LiveState, Ownership
from reconciler.plan.context import error_line, integration_doc
from reconciler.plan.model import Operation


def apply_renames(desired: list[DesiredResource], live: LiveState
                  ) -> tuple[LiveState, dict[str, str], list[str]]:
    """The live state with aliased resources re-keyed under their new names (a copy: the live state
    read is left as it is), each rename (address -> the alias it is renamed from), and the errors."""
    renamed: dict[str, str] = {}
    errors: list[str] = []
    if not any(r.aliases for r in desired):
        return live, renamed, errors
    view = live.copy()
    for r in desired:
        spec = KIND_SPECS[r.kind]
        if not r.aliases or not spec.renamable:
            continue
        table = view.table(r.kind)
        scope: str | None = live.space_id(str(r.space)) if spec.spaced else integration_doc(r).type
        if scope is None:
            continue  # the planner reports the unknown space
        found = [a for a in r.aliases if (scope, a) in table]
        if (scope, r.name) in table and found:
            errors.append(error_line(r, "aliases", f"both {r.name} ({table[(scope, r.name)].id}) and its alias "
                                     f"{found[0]} ({table[(scope, found[0])].id}) exist live: delete or rename one "
                                     "of them first"))
        elif len(found) > 1:
            errors.append(error_line(r, "aliases", "several aliases exist live: " + ", ".join(
                f"{a} ({table[(scope, a)].id})" for a in found) + "; only one can become " + r.name))
        elif found:
            table[(scope, r.name)] = table.pop((scope, found[0]))
            renamed[r.address] = found[0]
    return view, renamed, errors


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


def protect(ops: list[Operation], desired: list[DesiredResource], ownership: Ownership | None
            ) -> tuple[list[Operation], list[str], list[str]]:
    """The operations without a delete of a protected resource (said in a warning), the errors
    (every replacement of one is refused), the warnings: prune, ``--allow-replace`` and retention
    never apply to it."""
    by_address = {r.address: r for r in desired}
    kept: list[Operation] = []
    errors: list[str] = []
    warnings: list[str] = []
    for op in ops:
        owner_kind = op.address.partition("/")[0]
        resource = by_address.get(op.address)
        name = resource.name if resource is not None else op.name
        where = (protected_by(op.address, owner_kind, name, resource, ownership)
                 if op.action in ("delete", "replace") else None)
        if where is None:
            kept.append(op)
        elif op.action == "replace":
            if op.method == "DELETE":
                errors.append(f"{op.address} is protected ({where}): the plan would replace it ({op.note}); "
                                  "change it back, or remove the protection first")
            kept.append(op)
        elif op.kind == EXPERIMENT:
            warnings.append(f"{op.subject}: kept, not deleted by retention: {op.address} is protected ({where})")
        else:
            warnings.append(f"{op.address}: kept, not deleted by --prune: protected ({where})")
    return kept, errors, warnings
