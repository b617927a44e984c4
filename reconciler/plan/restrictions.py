"""Resource restrictions declared by id (projects and dashboards; prompts use ``restricted``).

An id names one resource, so a restriction is matched by ``resource_id`` alone: the service derives
the type from the resource (the create body is ``{resource_id}``), and a live restriction of that
id whose type differs from the manifest's satisfies it, with a warning, rather than being created
again on every run.

The list of restrictions holds only those the key may manage (docs/api.md), and a read-only key
manages none: an absent restriction looks the same whether it is not there or hidden. So when the
list the plan read is empty while the manifests declare a restriction (a ResourceRestriction, a
Prompt's ``restricted: true``) and the tree was applied before (one of its declared resources exists
live; in a fresh account every key sees none), ``plan``, ``drift`` and ``pull`` leave every
restriction and live Prompt's ``restricted`` out
of the comparison, with one warning naming them (``PlanOptions.restrictions`` "auto"); ``apply``
compares them whatever the list shows ("compare"): it writes, so its key must manage them, and
restricting is idempotent."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import MISSING

from reconciler.kinds import INTEGRATION, KIND_SPECS, PROMPT, RESTRICTION
from reconciler.model import DesiredResource, LiveState, RestrictionObject
from reconciler.plan.context import KindPlan, PlanInput, Planning, change, prompt_doc, restriction_doc
from reconciler.plan.liveview import ResourceDiff
from reconciler.plan.model import PlanOptions
from reconciler.plan.steps import KindSteps


def unseen_restrictions(desired: list[DesiredResource], live: LiveState, options: PlanOptions) -> list[str]:
    """What a plan leaves out of the comparison because the key cannot see restrictions (see the
    module's docstring), as ``ADDRESS (field)``; [] when restrictions are compared."""
    mode = options.restrictions
    if mode == "compare" or (mode == "auto" and not restrictions_unseen(desired, live)):
        return []
    out: list[str] = []
    for r in desired:
        if r.kind == RESTRICTION.name:
            out.append(r.address)
        elif r.kind == PROMPT.name and prompt_doc(r).restricted is not MISSING and r.space:
            space_id = live.space_id(str(r.space))
            if space_id is not None and (space_id, r.name) in live.prompts:
                out.append(f"{r.address} (restricted)")
    return out


def restrictions_unseen(desired: Sequence[DesiredResource], live: LiveState) -> bool:
    """Whether the key evidently cannot see restrictions: it lists none, yet the tree declares one
    (a ResourceRestriction, a Prompt's ``restricted: true``) and was applied before (one of its
    declared resources exists live). In an account where none exists, an empty restriction list is
    what any key sees, and creates are planned; a tree that declares only ``restricted: false``
    agrees with an empty list whatever the key, so nothing is left out. ``pull`` uses the same rule."""
    return not live.restrictions and any(_restricts(r) for r in desired) and _applied(desired, live)


def _restricts(r: DesiredResource) -> bool:
    return r.kind == RESTRICTION.name or (r.kind == PROMPT.name and prompt_doc(r).restricted is True)


def _applied(desired: Sequence[DesiredResource], live: LiveState) -> bool:
    for r in desired:
        spec = KIND_SPECS[r.kind]
        if spec is INTEGRATION and any((t, r.name) in live.integrations for t in ("LLM", "AGENT")):
            return True
        if spec.spaced and r.space:
            space_id = live.space_id(str(r.space))
            if space_id is not None and (space_id, r.name) in live.table(r.kind):
                return True
    return False


def restrictions_warning(unseen: list[str]) -> str:
    return ("restrictions were not compared: the API key sees no resource restriction (the list holds only "
            "those a key may manage, and a read-only key manages none), so these are left out: "
            + ", ".join(unseen) + ". apply compares them; it needs a key that may manage restrictions")


def plan_restrictions(desired: list[DesiredResource], inputs: PlanInput) -> KindPlan:
    ctx = Planning(inputs)
    if ctx.inputs.restrictions_hidden:
        return ctx
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
            ctx.op(r, "create", "POST", "/v2/resource-restrictions", action="create",
                   body={"resource_id": rid}, changes=[change(r, "resource_type", None, rtype),
                                                      change(r, "resource_id", None, rid)])
        elif live_type != rtype:
            src = r.source("resource_type")
            ctx.warnings.append(f"{r.address}: resource_type is {rtype}, but the service reports {rid} as a "
                                f"{live_type}, and it is restricted" + (f" ({src})" if src else ""))
    return ctx


def _unrestricted_prompts(ctx: Planning) -> dict[str, DesiredResource]:
    """Live prompt id -> the Prompt manifest that says ``restricted: false`` for it."""
    out: dict[str, DesiredResource] = {}
    for p in PROMPT.among(ctx.inputs.desired):
        if prompt_doc(p).restricted is not False or not p.space:
            continue
        space_id = ctx.live.space_id(str(p.space))
        live = ctx.live.prompts.get((space_id, p.name)) if space_id else None
        if live is not None:
            out[live.id] = p
    return out


def _compare(r: DesiredResource, live: LiveState, out: ResourceDiff) -> None:
    """A restriction is there or not (matched by id, as the planner matches it): nothing else to pull."""
    rid = restriction_doc(r).resource_id
    out.missing = not any(k[1] == rid for k in live.restrictions)


def _pin(obj: RestrictionObject, live: LiveState) -> list[Any]:
    return [obj.resource_type, obj.resource_id]


STEPS = KindSteps(plan=plan_restrictions, pin=_pin, compare=_compare)
