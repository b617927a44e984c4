"""Prompts: create with its first version in one POST; a changed version body makes one new version;
labels move with PUT; ``description`` with PATCH; ``restricted`` with the restriction endpoints."""

from __future__ import annotations

from typing import Any

from pydantic import MISSING

from reconciler.fieldkinds import ABSENT
from reconciler.manifests.models import Message, PromptVersion
from reconciler.model import DesiredResource, LivePrompt, LiveState, PromptVersionObject
from reconciler.plan.changes import nested_changes, source_in
from reconciler.plan.context import KindPlan, PlanInput, Planning, change, creation_changes, plain, prompt_doc
from reconciler.plan.liveview import ResourceDiff, found_in_space
from reconciler.plan.model import ref
from reconciler.plan.steps import KindSteps

#: Fields of a version's body that define it; ``commit_message`` describes a change and is not compared.
VERSION_FIELDS = ("provider", "model", "input_variable_format", "messages", "invocation_params", "provider_params")


def version_body(want: dict[str, Any], latest: PromptVersionObject | None) -> dict[str, Any]:
    """The version to POST: the manifest's fields, and the live latest's for fields it leaves unmanaged."""
    body: dict[str, Any] = {"commit_message": want.get("commit_message") or "update"}
    for f in VERSION_FIELDS:
        if f in want:
            body[f] = want[f]
        elif latest is not None and getattr(latest, f) is not None:
            body[f] = getattr(latest, f)
    return body


def version_differs(want: PromptVersion, latest: PromptVersionObject) -> bool:
    """Whether a field the manifest writes differs from the live latest version's."""
    return any((value := getattr(want, f)) is not MISSING and _norm(f, value) != _norm(f, getattr(latest, f))
               for f in VERSION_FIELDS)


def _norm(field: str, value: Any) -> Any:
    if field in ("invocation_params", "provider_params") and value is None:
        return {}
    if field == "messages" and isinstance(value, list):  # the manifest's Message models, or live mappings
        return [{"role": m.role, "content": m.content} if isinstance(m, Message)
                else {"role": m.get("role"), "content": m.get("content")} for m in value]
    return value


def plan_prompts(desired: list[DesiredResource], inputs: PlanInput) -> KindPlan:
    ctx = Planning(inputs)
    for r in desired:
        space_id = ctx.space_id(r)
        if space_id is None:
            continue
        live = ctx.live.prompts.get((space_id, r.name))
        ctx.pin(r, ["Prompt", space_id, r.name])
        if live is None:
            _create(r, ctx, space_id)
        else:
            _update(r, ctx, live)
    return ctx



def _create(r: DesiredResource, ctx: Planning, space_id: str) -> None:
    doc = prompt_doc(r)
    want = plain(doc.version)
    body: dict[str, Any] = {"space_id": space_id, "name": r.name}
    if doc.description not in (None, MISSING):
        body["description"] = doc.description
    body["version"] = version_body(want, None)
    changes = creation_changes(r, {k: v for k, v in body.items() if k not in ("space_id", "name")})
    create = ctx.op(r, "create", "POST", "/v2/prompts", action="create", body=body, changes=changes)
    labels = [] if doc.version.labels is MISSING else list(doc.version.labels)
    if labels:
        ctx.op(r, "labels", "PUT", f"/v2/prompt-versions/{ref(create.id, 'version.id')}/labels",
               action="create", body={"labels": labels}, changes=[change(r, "version.labels", None, labels)],
               depends_on=[create.id])
    if doc.restricted is True:
        ctx.op(r, "restrict", "POST", "/v2/resource-restrictions", action="create",
               body={"resource_id": ref(create.id, "id")}, changes=[change(r, "restricted", None, True)],
               depends_on=[create.id])


def _update(r: DesiredResource, ctx: Planning, live: LivePrompt) -> None:
    doc = prompt_doc(r)
    prompt_id = live.id
    if doc.description is not MISSING and doc.description != live.prompt.description:
        ctx.op(r, "description", "PATCH", f"/v2/prompts/{prompt_id}", body={"description": doc.description},
               changes=[change(r, "description", live.prompt.description, doc.description)])
    latest = live.latest
    labels = [] if doc.version.labels is MISSING else list(doc.version.labels)
    if latest is None or version_differs(doc.version, latest):
        want = plain(doc.version)
        body = version_body(want, latest)
        changes = [c for f in VERSION_FIELDS if f in want
                   for c in nested_changes(getattr(latest, f, None), want[f], f"version.{f}", source_in(r))]
        changes.append(change(r, "version.commit_message", None, body["commit_message"]))
        reused = latest is not None and body["commit_message"] == latest.commit_message
        version = ctx.op(r, "version", "POST", f"/v2/prompts/{prompt_id}/versions", body=body, changes=changes,
                         note="new version" + ("; its commit_message is the live version's (reused): write a new "
                                               "one to tell the versions apart" if reused else ""))
        if labels:  # the new version carries none yet; PUT moves each label to it from where it is
            ctx.op(r, "labels", "PUT", f"/v2/prompt-versions/{ref(version.id, 'id')}/labels",
                   body={"labels": labels}, depends_on=[version.id],
                   changes=[change(r, "version.labels", [], labels)])
    elif labels and latest is not None:
        have = latest.label_names()
        missing = [lab for lab in labels if lab not in have]
        if missing:  # the manifest's labels must be there; others the version carries stay
            ctx.op(r, "labels", "PUT", f"/v2/prompt-versions/{latest.id}/labels", body={"labels": have + missing},
                   changes=[change(r, "version.labels", have, have + missing)])
    if doc.restricted is not MISSING and not ctx.inputs.restrictions_hidden:
        restricted = ("PROMPT", prompt_id) in ctx.live.restrictions
        if doc.restricted and not restricted:
            ctx.op(r, "restrict", "POST", "/v2/resource-restrictions", body={"resource_id": prompt_id},
                   changes=[change(r, "restricted", False, True)])
        elif not doc.restricted and restricted:
            ctx.op(r, "unrestrict", "DELETE", f"/v2/resource-restrictions/{prompt_id}",
                   changes=[change(r, "restricted", True, False)])


def _compare(r: DesiredResource, live: LiveState, out: ResourceDiff) -> None:
    """How live differs from a declared prompt (``KindSteps.compare``)."""
    obj: LivePrompt | None = found_in_space(r, live, out)
    if obj is None:
        return
    doc = prompt_doc(r)
    if doc.description is not MISSING and doc.description != obj.prompt.description:
        out.edit("description", doc.description, obj.prompt.description)
    if doc.restricted is not MISSING:
        restricted = ("PROMPT", obj.id) in live.restrictions
        if doc.restricted != restricted:
            out.edit("restricted", doc.restricted, restricted)
    want = plain(doc.version)
    latest = obj.latest
    if latest is None:
        return
    changed = False
    for f in VERSION_FIELDS:
        if f in want and _norm(f, want[f]) != _norm(f, getattr(latest, f)):
            new = getattr(latest, f)
            if f == "messages":
                new = _norm(f, new)
            elif new is None:
                new = {} if f in ("invocation_params", "provider_params") else ABSENT
            out.edit(f"version.{f}", want[f], new)
            changed = True
    if changed and "commit_message" in want and latest.commit_message and want["commit_message"] != latest.commit_message:
        out.edit("version.commit_message", want["commit_message"], latest.commit_message)
    if "labels" in want:
        have = latest.label_names()
        if any(label not in have for label in want["labels"]):
            out.edit("version.labels", want["labels"], have)


def _pin(p: LivePrompt, live: LiveState) -> list[Any]:
    restricted = ("PROMPT", p.id) in live.restrictions
    return [p.id, p.prompt.name, p.prompt.description, p.latest.id if p.latest else None,
            sorted(p.labels.items()), restricted]


STEPS = KindSteps(plan=plan_prompts, pin=_pin, compare=_compare)
