"""Evaluators: create with their first version in one POST; a changed ``template_config`` makes one
new version; ``description`` with PATCH. ``llm_config.integration`` names an LLM integration and is
resolved to ``ai_integration_id``: from live state, or from the create of that integration in the
same plan (a reference known after apply)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic import MISSING

from reconciler.fieldkinds import ABSENT
from reconciler.kinds import INTEGRATION
from reconciler.model import DesiredResource, LiveEvaluator, LiveState
from reconciler.plan.changes import nested_changes, source_in
from reconciler.plan.context import (
    KindPlan,
    PlanInput,
    Planning,
    change,
    creation_changes,
    evaluator_doc,
    plain,
)
from reconciler.plan.liveview import ResourceDiff, found_in_space
from reconciler.plan.model import REF_RE, Change, has_ref, ref
from reconciler.plan.steps import KindSteps
from reconciler.providers import visible_from

INTEGRATION_ID = "llm_config.ai_integration_id"


def resolve_template(r: DesiredResource, ctx: Planning) -> tuple[dict[str, Any], tuple[str, ...]] | None:
    """The template_config as the API takes it, and the ops it depends on; None when a reference
    cannot be resolved (an error is recorded)."""
    tc = plain(evaluator_doc(r).template_config)
    llm = dict(tc.get("llm_config") or {})
    depends: tuple[str, ...] = ()
    if "integration" in llm:
        name = str(llm.pop("integration"))
        created = ctx.inputs.earlier.creates.get((INTEGRATION.name, "LLM", name))
        live = ctx.live.integrations.get(("LLM", name))
        if created is not None:
            llm["ai_integration_id"] = ref(created, "id")
            depends = (created,)
        elif live is not None:
            llm["ai_integration_id"] = live.id
        else:
            ctx.error(r, "template_config.llm_config.integration",
                      f"no LLM integration named {name!r} in the manifests or live" + _renamed_hint(r, ctx))
            return None
    if "llm_config" in tc:
        tc["llm_config"] = {"ai_integration_id": llm.pop("ai_integration_id", None), **llm}
    return tc, depends


def _renamed_hint(r: DesiredResource, ctx: Planning) -> str:
    """When the evaluator exists live and uses another integration (renamed by someone else): which,
    and that ``pull`` writes it into the manifests."""
    space_id = ctx.live.space_id(str(r.space))
    live = ctx.live.evaluators.get((space_id, r.name)) if space_id is not None else None
    used = live.latest.integration_id if live is not None and live.latest is not None else None
    now = next((i.name for i in ctx.live.integrations.values() if used is not None and i.id == used), None)
    if now is None:
        return ""
    return (f"; live, {r.address} uses {now!r} (renamed?): write that name, or run `reconciler pull` to write "
            "live's edits into the manifests")


def plan_evaluators(desired: list[DesiredResource], inputs: PlanInput) -> KindPlan:
    ctx = Planning(inputs)
    for r in desired:
        space_id = ctx.space_id(r)
        if space_id is None:
            continue
        resolved = resolve_template(r, ctx)
        if resolved is None:
            continue
        tc, depends = resolved
        _warn_invisible(r, ctx, space_id)
        live = ctx.live.evaluators.get((space_id, r.name))
        ctx.pin(r, ["Evaluator", space_id, r.name])
        if live is None:
            doc = evaluator_doc(r)
            body: dict[str, Any] = {"space_id": space_id, "name": r.name, "type": "template"}
            if doc.description not in (None, MISSING):
                body["description"] = doc.description
            body["version"] = {"commit_message": _commit_message(r, "create"), "template_config": tc}
            ctx.op(r, "create", "POST", "/v2/evaluators", action="create", body=body, depends_on=depends,
                   changes=by_name(ctx, creation_changes(r, {k: v for k, v in {"description": body.get("description"),
                                                                           **body["version"]}.items()
                                                        if v is not None}), r))
            continue
        _update(r, ctx, live, tc, depends)
    return ctx



def _update(r: DesiredResource, ctx: Planning, live: LiveEvaluator, tc: dict[str, Any], depends: tuple[str, ...]) -> None:
    doc = evaluator_doc(r)
    evaluator_id = live.id
    patch: dict[str, Any] = {}
    changes = []
    if live.evaluator.name != r.name:  # renamed from an alias: the id (and every version) kept
        patch["name"] = r.name
        changes.append(change(r, "name", live.evaluator.name, r.name))
    if doc.description is not MISSING and doc.description != live.evaluator.description:
        patch["description"] = doc.description
        changes.append(change(r, "description", live.evaluator.description, doc.description))
    if patch:
        ctx.op(r, "description", "PATCH", f"/v2/evaluators/{evaluator_id}", body=patch, changes=changes)
    template = live.latest.template_config if live.latest is not None else None
    have = template.raw() if template is not None else {}
    merged = _merge(have, tc)
    if merged != have or has_ref(tc):
        message = _commit_message(r, "update")
        reused = live.latest is not None and message == live.latest.commit_message
        changes = by_name(ctx, nested_changes(have, merged, "template_config", source_in(r, _manifest_path)), r)
        ctx.op(r, "version", "POST", f"/v2/evaluators/{evaluator_id}/versions",
               body={"commit_message": message, "template_config": merged},
               changes=[*changes, change(r, "commit_message", None, message)], depends_on=depends,
               note="new version" + ("; its commit_message is the live version's (reused): write a new one to "
                                     "tell the versions apart" if reused else ""))


def _warn_invisible(r: DesiredResource, ctx: Planning, space_id: str) -> None:
    """A warning when the integration an evaluator names will not be visible from its space (the
    API refuses the evaluator with 404): its scopings as this plan leaves them (a create's or
    update's ``scopings``, else live) against the space."""
    name = evaluator_doc(r).template_config.llm_config.integration
    if name is MISSING:
        return
    scopings: Any = None
    for op in INTEGRATION.among(ctx.inputs.earlier.ops):
        if op.name == name and isinstance(op.body, dict) and "scopings" in op.body \
                and op.body.get("type", "LLM") == "LLM" and op.method in ("POST", "PATCH"):
            scopings = op.body["scopings"]
    live = ctx.live.integrations.get(("LLM", name))
    if scopings is None:
        if live is None:
            return
        scopings = live.scopings
    space = next((s for s in ctx.live.spaces if s.id == space_id), None)
    if space is None or visible_from(scopings, space_id, space.organization_id):
        return
    where = r.source("template_config.llm_config.integration")
    shown = ", ".join(f"space {ctx.live.space_name(s['space_id'])!r}" if s.get("space_id")
                      else f"organization {s.get('organization_id')!r}" for s in scopings)
    ctx.warnings.append(f"{r.address}: template_config.llm_config.integration: the LLM integration {name!r} is "
                        f"scoped to {shown}, so it is not visible from space {ctx.live.space_name(space_id)!r}: "
                        f"the API will refuse the evaluator (404)" + (f" ({where})" if where else ""))


def by_name(ctx: Planning, changes: list[Change], r: DesiredResource) -> list[Change]:
    """A change of ``llm_config.ai_integration_id`` as the manifest says it: the integration by name,
    at the line of ``llm_config.integration`` in ``r``'s manifest (not its parent's)."""
    names = {str(o.id): name for (t, name), o in ctx.live.integrations.items() if t == "LLM"}
    created = {op_id: name for (kind, t, name), op_id in ctx.inputs.earlier.creates.items() if kind == INTEGRATION.name and t == "LLM"}

    def name_of(value: object) -> object:
        if isinstance(value, str):
            m = REF_RE.fullmatch(value)
            if m is not None:
                return created.get(m.group(1), value)
            return names.get(value, value)
        return value

    def source_of(c: Change, path: str) -> str | None:
        found = r.sources.get(path) or r.sources.get(c.path)  # the manifest may name the id itself
        return str(found) if found is not None else c.source

    return [replace(c, path=(path := c.path.replace(INTEGRATION_ID, "llm_config.integration")),
                    before=name_of(c.before), after=name_of(c.after), source=source_of(c, path))
            if c.path.endswith(INTEGRATION_ID) else c for c in changes]


def _commit_message(r: DesiredResource, default: str) -> str:
    message = evaluator_doc(r).commit_message
    return message if isinstance(message, str) and message else default


def _manifest_path(path: str) -> str:
    """The manifest names the integration where the API has its id."""
    return path.replace("llm_config.ai_integration_id", "llm_config.integration")


def _merge(have: dict[str, Any], want: dict[str, Any]) -> dict[str, Any]:
    """The manifest's template_config over the live one: fields the manifest omits stay as they are
    (one level into llm_config too)."""
    out = dict(have)
    for k, v in want.items():
        if k == "llm_config" and isinstance(v, dict) and isinstance(have.get(k), dict):
            out[k] = {**have[k], **v}
        else:
            out[k] = v
    return out


def _compare(r: DesiredResource, live: LiveState, out: ResourceDiff) -> None:
    """How live differs from a declared evaluator (``KindSteps.compare``)."""
    obj: LiveEvaluator | None = found_in_space(r, live, out)
    if obj is None:
        return
    doc = evaluator_doc(r)
    if doc.description is not MISSING and doc.description != obj.evaluator.description:
        out.edit("description", doc.description, obj.evaluator.description)
    tc = plain(doc.template_config)
    template = obj.latest.template_config if obj.latest is not None else None
    have = template.raw() if template is not None else {}
    names = {str(o.id): name for (t, name), o in live.integrations.items() if t == "LLM"}
    changed = False
    for k, v in tc.items():
        if k == "llm_config" and isinstance(v, dict):
            hl: dict[str, Any] = have["llm_config"] if isinstance(have.get("llm_config"), dict) else {}
            for kk, vv in v.items():
                path = f"template_config.llm_config.{kk}"
                if kk == "integration":
                    hid = hl.get("ai_integration_id")
                    name = names.get(str(hid))
                    if hid is not None and name != vv:
                        if name is not None:
                            out.edit(path, vv, name)
                        else:
                            out.notes.append(f"{r.address}: {path}: live names integration id {hid}, which no "
                                             "LLM integration has (not written)")
                        changed = True
                elif hl.get(kk, ABSENT) != vv:
                    out.edit(path, vv, hl.get(kk, ABSENT))
                    changed = True
        elif have.get(k, ABSENT) != v:
            out.edit(f"template_config.{k}", v, have.get(k, ABSENT))
            changed = True
    message = obj.latest.commit_message if obj.latest is not None else None
    if changed and message and doc.commit_message != message:
        out.edit("commit_message", doc.commit_message, message)


def _pin(e: LiveEvaluator, live: LiveState) -> list[Any]:
    return [e.id, e.evaluator.name, e.evaluator.description, e.latest.id if e.latest else None]


STEPS = KindSteps(plan=plan_evaluators, pin=_pin, compare=_compare)
