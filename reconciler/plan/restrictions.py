"""Resource restrictions declared by id (projects and dashboards; prompts use ``restricted``)."""

from __future__ import annotations

from reconciler.model import DesiredResource
from reconciler.plan.context import Ctx


def plan_restrictions(desired: list[DesiredResource], ctx: Ctx) -> None:
    for r in desired:
        key = (str(r.spec.get("resource_type")), str(r.spec.get("resource_id")))
        live = ctx.live.restrictions.get(key)
        ctx.pin(r, ["ResourceRestriction", *key])
        if live is None:
            op = ctx.op(r, "create", "POST", "/v2/resource-restrictions", action="create",
                        body={"resource_id": key[1]}, changes=[ctx.change(r, "resource_id", None, f"{key[0]} {key[1]}")])
            ctx.creates[r.identity] = op.id
