"""``--prune``: delete live resources that no manifest declares, only of the kinds the manifests name
and only in the spaces they name; refused when it would delete every live resource of a kind, unless
``--allow-empty``."""

from __future__ import annotations

from typing import Any

from reconciler.model import DesiredResource
from reconciler.plan.context import Ctx, restriction_doc
from reconciler.plan.model import Change, Operation

PRUNABLE_RESTRICTIONS = ("PROJECT", "DASHBOARD")


def plan_prune(desired: list[DesiredResource], ctx: Ctx) -> None:
    kinds = {r.kind for r in desired}
    declared = {r.identity for r in desired}
    space_ids = {sid for r in desired if r.space and (sid := ctx.live.space_id(r.space))}
    candidates: dict[str, list[tuple[str, str, str | None, str]]] = {}  # kind -> (name, path, space, address)

    if "Integration" in kinds:
        declared_names = {r.name for r in desired if r.kind == "Integration"}
        for (itype, name), obj in sorted(ctx.live.integrations.items()):
            if ("Integration", itype, name) not in declared:
                # a declared integration of the other type has this name: keep the two apart
                address = f"Integration/{itype}/{name}" if name in declared_names else f"Integration/{name}"
                candidates.setdefault("Integration", []).append(
                    (name, f"/v2/integrations/{obj['id']}", None, address))
    spaced: list[tuple[str, dict[tuple[str, str], Any], str, str]] = [
        ("Evaluator", ctx.live.evaluators, "evaluator", "/v2/evaluators"),
        ("Prompt", ctx.live.prompts, "prompt", "/v2/prompts"),
        ("Dataset", ctx.live.datasets, "dataset", "/v2/datasets"),
    ]
    for kind, table, attr, collection in spaced:
        if kind not in kinds:
            continue
        for (space_id, name), live in sorted(table.items()):
            if space_id not in space_ids:
                continue
            space = ctx.live.space_name(space_id)
            if (kind, space, name) in declared or (kind, space_id, name) in declared:
                continue
            obj = getattr(live, attr)
            candidates.setdefault(kind, []).append(
                (name, f"{collection}/{obj['id']}", space, f"{kind}/{space}/{name}"))
    if "ResourceRestriction" in kinds:
        declared_ids = {restriction_doc(r).resource_id for r in desired if r.kind == "ResourceRestriction"}
        for (rtype, rid), _ in sorted(ctx.live.restrictions.items()):
            if rtype in PRUNABLE_RESTRICTIONS and rid not in declared_ids:  # an id names one resource
                candidates.setdefault("ResourceRestriction", []).append(
                    (f"{rtype} {rid}", f"/v2/resource-restrictions/{rid}", None, f"ResourceRestriction/{rtype}/{rid}"))

    for kind in ("ResourceRestriction", "Evaluator", "Prompt", "Dataset", "Integration"):
        items = candidates.get(kind, [])
        if not items:
            continue
        emptied = _emptied(ctx, kind, items, space_ids)
        if not ctx.options.allow_empty and emptied:
            ctx.errors.append(f"--prune would delete every live {kind} {emptied}; pass --allow-empty if that is "
                              "intended")
            continue
        for item_name, path, item_space, address in items:
            ctx.add(Operation(
                id=f"{address}#prune", action="delete", kind=kind, name=item_name, space=item_space, method="DELETE",
                path=path, changes=(Change("", item_name, None),), address=address, note="not declared (--prune)",
            ))


def _emptied(ctx: Ctx, kind: str, items: list[tuple[str, str, str | None, str]], space_ids: set[str]) -> str:
    """Where pruning would leave none of a kind (``"in space research (3)"``), or "": counted per
    space for the kinds that live in spaces, so one space is never emptied under cover of another."""
    if kind == "Integration":
        live = len(ctx.live.integrations)
        return f"in the account ({len(items)})" if len(items) >= live else ""
    if kind == "ResourceRestriction":
        live = sum(1 for (t, _) in ctx.live.restrictions if t in PRUNABLE_RESTRICTIONS)
        return f"in the account ({len(items)})" if len(items) >= live else ""
    tables: dict[str, dict[tuple[str, str], Any]] = {
        "Evaluator": ctx.live.evaluators, "Prompt": ctx.live.prompts, "Dataset": ctx.live.datasets}
    pruned: dict[str | None, int] = {}
    for _, _, space, _ in items:
        pruned[space] = pruned.get(space, 0) + 1
    emptied = []
    for sid in sorted(space_ids):
        space = ctx.live.space_name(sid)
        live = sum(1 for (s, _) in tables[kind] if s == sid)
        if live and pruned.get(space, 0) >= live:
            emptied.append(f"in space {space} ({live})")
    return ", ".join(emptied)
