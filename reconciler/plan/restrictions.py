"""Resource restrictions declared by id (projects and dashboards; prompts use ``restricted``).

An id names one resource, so a restriction is matched by ``resource_id`` alone: the service derives
the type from the resource (the create body is ``{resource_id}``), and a live restriction of that
id whose type differs from the manifest's satisfies it, with a warning, rather than being created
again on every run."""

from __future__ import annotations

from reconciler.model import DesiredResource
from reconciler.plan.context import Ctx, prompt_doc, restriction_doc


def plan_restrictions(desired: list[DesiredResource], ctx: Ctx) -> None:
    by_id = {rid: rtype for rtype, rid in ctx.live.restrictions}
    unrestricted_prompts = _unrestricted_prompts(ctx)
    for r in desired:
        doc = restriction_doc(r)
        rtype, rid = doc.resource_type, doc.resource_id
        prompt = unrestricted_prompts.get(rid)
        if prompt is not None:  # two manifests that disagree: each apply would undo the other
            where = prompt.source("restricted")
            ctx.error(r, "resource_id", f"{rid} is the id of {prompt.address}, whose manifest says restricted: "
                      "false" + (f" ({where})" if where else "") + "; declare the restriction in one place")
            continue
        live_type = by_id.get(rid)
        ctx.pin(r, ["ResourceRestriction", live_type or rtype, rid])
        if live_type is None:
            op = ctx.op(r, "create", "POST", "/v2/resource-restrictions", action="create",
                        body={"resource_id": rid}, changes=[ctx.change(r, "resource_type", None, rtype),
                                                           ctx.change(r, "resource_id", None, rid)])
            ctx.creates[r.identity] = op.id
        elif live_type != rtype:
            src = r.source("resource_type")
            ctx.warnings.append(f"{r.address}: resource_type is {rtype}, but the service reports {rid} as a "
                                f"{live_type}, and it is restricted" + (f" ({src})" if src else ""))


def _unrestricted_prompts(ctx: Ctx) -> dict[str, DesiredResource]:
    """Live prompt id -> the Prompt manifest that says ``restricted: false`` for it."""
    out: dict[str, DesiredResource] = {}
    for p in ctx.desired:
        if p.kind != "Prompt" or prompt_doc(p).restricted is not False or not p.space:
            continue
        space_id = ctx.live.space_id(str(p.space))
        live = ctx.live.prompts.get((space_id, p.name)) if space_id else None
        if live is not None:
            out[live.id] = p
    return out
