"""What the tree owns but does not declare (docs/manifests.md, "Ownership"): listed as *unmanaged* by every
plan, deleted by ``--prune``.

With an Ownership document the tree owns every Prompt, Dataset and Evaluator of its ``spaces``, the
integrations its ``integrations`` globs match and the PROJECT and DASHBOARD restrictions its
``resource_restrictions`` globs match (a PROMPT restriction belongs to its prompt). Without one it owns
the kinds its manifests use in the spaces they name, and nothing account-wide: ``--prune`` then says
how to declare ownership instead of deleting another team's integrations.

``--prune`` is refused when it would delete every live resource of a kind (in any one space, for
the spaced kinds), unless ``--allow-empty``; a protected resource, which prune keeps, counts as kept.
"""

from __future__ import annotations

from reconciler.kinds import ACCOUNT_WIDE, INTEGRATION, KIND_SPECS, PRUNE_ORDER, RESTRICTION, SPACED_KINDS
from reconciler.model import DesiredResource, LiveState, Ownership
from reconciler.plan.context import KindPlan, PlanInput, restriction_doc, space_hint
from reconciler.plan.lifecycle import protected_by
from reconciler.plan.model import Change, Operation, Unmanaged

PRUNABLE_RESTRICTIONS = ("PROJECT", "DASHBOARD")


def plan_unmanaged(desired: list[DesiredResource], inputs: PlanInput, ownership: Ownership | None
                   ) -> tuple[KindPlan, list[Unmanaged]]:
    """The unmanaged resources, or with ``--prune`` the plan of their deletion."""
    ctx = KindPlan()
    live, options = inputs.live, inputs.options
    space_ids = _owned_space_ids(desired, live, ownership, ctx.errors)
    found = unmanaged(desired, live, ownership, space_ids)
    if options.excludes:  # left out of the run: neither listed nor pruned
        from reconciler.plan.select import named_by

        found = [u for u in found if not named_by(options.excludes, u.address, f"{u.kind}/{u.name}")]
    if not options.prune:
        return ctx, found
    if ownership is None and any(r.kind in ACCOUNT_WIDE for r in desired):
        ctx.warnings.append("--prune leaves integrations and resource restrictions alone: they are account-wide "
                            "and this tree declares no ownership of them. Declare it in a `kind: Ownership` "
                            "document (integrations: [name globs], resource_restrictions: [TYPE/id globs])")
    for kind in PRUNE_ORDER:
        items = [u for u in found if u.kind == kind]
        if not items:
            continue
        # what prune keeps (protected: ``lifecycle.protect`` drops its delete) is not counted as deleted
        going = [u for u in items if protected_by(u.address, u.kind, u.name, None, ownership) is None]
        emptied = _emptied(live, kind, going, space_ids) if going else ""
        if not options.allow_empty and emptied:
            ctx.errors.append(f"--prune would delete every live {kind} {emptied}; pass --allow-empty if that is "
                              "intended")
            continue
        for u in items:
            ctx.ops.append(Operation(
                id=f"{u.address}#prune", action="delete", kind=kind, name=u.name, space=u.space, method="DELETE",
                path=u.path, changes=(Change("", u.name, None),), address=u.address,
                note=f"not declared, inside the ownership of {ownership.name}: --prune" if ownership is not None
                else "not declared (--prune)",
            ))
    return ctx, []


def _owned_space_ids(desired: list[DesiredResource], live: LiveState, ownership: Ownership | None,
                     errors: list[str]) -> set[str]:
    if ownership is None:
        return {sid for r in desired if r.space and (sid := live.space_id(r.space))}
    ids: set[str] = set()
    for i, space in enumerate(ownership.spaces):
        sid = live.space_id(space)
        if sid is None:
            where = ownership.source(f"spaces.{i}")
            errors.append((f"{where}: Ownership/{ownership.name}: spaces.{i}: no space named (or with the id) "
                           f"{space!r} exists" if where else f"Ownership {ownership.name}: no space {space!r}")
                          + f"; {space_hint(live)}")
        else:
            ids.add(sid)
    return ids


def unmanaged(desired: list[DesiredResource], live: LiveState, ownership: Ownership | None,
              space_ids: set[str]) -> list[Unmanaged]:
    """Live resources inside the ownership (``space_ids``: the owned spaces) that no manifest
    declares, in prune order."""
    declared = {r.identity for r in desired}
    kinds = set(SPACED_KINDS) | set(ACCOUNT_WIDE) if ownership is not None else {r.kind for r in desired}
    out: list[Unmanaged] = []

    if ownership is not None:
        declared_names = {r.name for r in INTEGRATION.among(desired)}
        for (itype, name), obj in sorted(live.integrations.items()):
            if (INTEGRATION.name, itype, name) not in declared and ownership.owns_integration(name):
                # a declared integration of the other type has this name: keep the two apart
                address = f"{INTEGRATION.name}/{itype}/{name}" if name in declared_names else f"{INTEGRATION.name}/{name}"
                out.append(Unmanaged(address, INTEGRATION.name, name, f"{INTEGRATION.collection}/{obj.id}"))
        declared_ids = {restriction_doc(r).resource_id for r in RESTRICTION.among(desired)}
        for (rtype, rid), _ in sorted(live.restrictions.items()):
            if rtype in PRUNABLE_RESTRICTIONS and rid not in declared_ids and ownership.owns_restriction(rtype, rid):
                out.append(Unmanaged(f"{RESTRICTION.name}/{rtype}/{rid}", RESTRICTION.name, f"{rtype} {rid}", f"{RESTRICTION.collection}/{rid}"))

    for kind in PRUNE_ORDER:
        spec = KIND_SPECS[kind]
        if not spec.spaced or kind not in kinds:
            continue
        for (space_id, name), obj in sorted(live.table(kind).items()):
            if space_id not in space_ids:
                continue
            space = live.space_name(space_id)
            if (kind, space, name) in declared or (kind, space_id, name) in declared:
                continue
            out.append(Unmanaged(f"{kind}/{space}/{name}", kind, name, f"{spec.collection}/{obj.id}", space))
    return sorted(out, key=lambda u: PRUNE_ORDER.index(u.kind))


def _emptied(live: LiveState, kind: str, items: list[Unmanaged], space_ids: set[str]) -> str:
    """Where pruning would leave none of a kind (``"in space research (3)"``), or "": counted per
    space for the kinds that live in spaces, so one space is never emptied under cover of another."""
    spec = KIND_SPECS[kind]
    table = live.table(kind)
    if not spec.spaced:  # restrictions: only those prune may delete count
        count = sum(1 for (t, _) in table if spec is not RESTRICTION or t in PRUNABLE_RESTRICTIONS)
        return f"in the account ({len(items)})" if len(items) >= count else ""
    pruned: dict[str | None, int] = {}
    for u in items:
        pruned[u.space] = pruned.get(u.space, 0) + 1
    emptied = []
    for sid in sorted(space_ids):
        space = live.space_name(sid)
        count = sum(1 for (s, _) in table if s == sid)
        if count and pruned.get(space, 0) >= count:
            emptied.append(f"in space {space} ({count})")
    return ", ".join(emptied)
