"""Resource restrictions declared by id (projects and dashboards; prompts use ``restricted``).

An id names one resource, so a restriction is matched by ``resource_id`` alone: the service derives
the type from the resource (the create body is ``{resource_id}``), and a live restriction of that
id whose type differs from the manifest's satisfies it, with a warning, rather than being created
again on every run."""

from __future__ import annotations

from reconciler.model import DesiredResource
from reconciler.plan.context import Ctx


def plan_restrictions(desired: list[DesiredResource], ctx: Ctx) -> None:
    by_id = {rid: rtype for rtype, rid in ctx.live.restrictions}
    for r in desired:
        rtype, rid = str(r.spec.get("resource_type")), str(r.spec.get("resource_id"))
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
