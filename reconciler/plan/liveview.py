"""What live state says about each field a manifest declares, in the manifest's own shape.

``resource_diff(r, live)`` lists the declared fields whose live value differs *as the planner
compares them* (scopings and model names as sets, presets by name, a prompt's version fields
against the latest version, labels that must be on it, examples by key or content), each with the
value to write so that the planner would see no difference. ``ignore_changes`` (``plan.ignore``)
uses it to leave a field as it is live; ``reconciler pull`` to write live edits back into the
manifests. Write-only values (secrets, header values) cannot be read: they are ``notes``, never
edits. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import MISSING

from reconciler.essence import same_example, user_fields
from reconciler.fieldkinds import ABSENT
from reconciler.kinds import KIND_SPECS
from reconciler.manifests.models import AgentIntegration, LlmIntegration
from reconciler.model import DesiredResource, LiveState
from reconciler.plan.context import (
    canonical,
    dataset_doc,
    evaluator_doc,
    integration_doc,
    plain,
    prompt_doc,
    restriction_doc,
)
from reconciler.plan.datasets import match_by_content
from reconciler.plan.prompts import VERSION_FIELDS, _norm
from reconciler.providers import AGENT_FIELDS, PROVIDERS, ConfigField


@dataclass(frozen=True)
class FieldEdit:
    """A declared field whose live value differs: ``old`` as declared, ``new`` as live (``ABSENT``:
    live has no such field)."""

    path: str
    old: Any
    new: Any


@dataclass
class ExamplesEdit:
    """A dataset's examples as live has them, relative to the declared list: by index."""

    replace: dict[int, dict[str, Any]] = field(default_factory=dict)
    delete: list[int] = field(default_factory=list)
    append: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.replace or self.delete or self.append)

    def count(self) -> int:
        return len(self.replace) + len(self.delete) + len(self.append)

    def applied(self, examples: list[Any]) -> list[Any]:
        gone = set(self.delete)
        out = [self.replace.get(i, e) for i, e in enumerate(examples) if i not in gone]
        return out + list(self.append)


@dataclass
class ResourceDiff:
    """How live differs from one declared resource. ``missing``: it does not exist live at all."""

    resource: DesiredResource
    missing: bool = False
    renamed: bool = False  # live has it under an alias: the plan renames it (the edits compare with that object)
    edits: list[FieldEdit] = field(default_factory=list)
    examples: ExamplesEdit | None = None
    notes: list[str] = field(default_factory=list)  # write-only differences (never written)

    def __bool__(self) -> bool:
        return self.missing or bool(self.edits) or bool(self.examples) or bool(self.notes)


def resource_diff(r: DesiredResource, live: LiveState) -> ResourceDiff:
    out = ResourceDiff(r)
    spec = KIND_SPECS[r.kind]
    if not spec.spaced:
        ACCOUNT_WIDE_DIFFS[r.kind](r, live, out)
        return out
    space_id = live.space_id(str(r.space))
    if space_id is None:
        out.missing = False
        out.notes.append(f"{r.address}: space {r.space!r} does not exist live")
        return out
    table: Mapping[tuple[str, str], Any] = getattr(live, spec.table)
    found = table.get((space_id, r.name))
    if found is None:  # live under an alias: the plan renames it, and compares the rest with it
        found = next((table[(space_id, a)] for a in r.aliases if (space_id, a) in table), None)
        out.renamed = found is not None
        out.missing = not out.renamed
        if found is None:
            return out
    SPACED_DIFFS[r.kind](r, found, live, out)
    return out


def _restriction(r: DesiredResource, live: LiveState, out: ResourceDiff) -> None:
    rid = restriction_doc(r).resource_id
    out.missing = not any(k[1] == rid for k in live.restrictions)


def _set(out: ResourceDiff, path: str, old: Any, new: Any) -> None:
    out.edits.append(FieldEdit(path, old, new))


# ------------------------------------------------------------------ integrations


def _integration(r: DesiredResource, live: LiveState, out: ResourceDiff) -> None:
    doc = integration_doc(r)
    obj = live.integrations.get((doc.type, r.name))
    if obj is None:  # live under an alias: renamed by the plan, the rest compared with it
        obj = next((live.integrations[(doc.type, a)] for a in r.aliases if (doc.type, a) in live.integrations), None)
        out.renamed = obj is not None
        out.missing = not out.renamed
        if obj is None:
            return
    if isinstance(doc, AgentIntegration) and doc.description is not MISSING and doc.description != obj.description:
        _set(out, "description", doc.description, obj.description)
    if doc.scopings is not MISSING:
        _scopings([plain(s) for s in doc.scopings], live, obj.scopings or [], out)
    lcfg = obj.config or {}
    if isinstance(doc, LlmIntegration) and lcfg.get("provider") != doc.config.provider:
        out.notes.append(f"{r.address}: config.provider is {lcfg.get('provider')} live (a replacement; not pulled)")
        return
    fields: Mapping[str, ConfigField] = AGENT_FIELDS if isinstance(doc, AgentIntegration) \
        else PROVIDERS[doc.config.provider].fields
    for name, want in plain(doc.config).items():
        f = fields.get(name)
        if f is None:
            continue
        path = f"config.{name}"
        pulled = f.behaviour.pulled(f, want, lcfg)  # what makes the planner's compare of it the same
        for below, old, new in pulled.edits:
            _set(out, path + below, old, new)
        out.notes.extend(f"{r.address}: {path}{note}" for note in pulled.notes)


def _scopings(want: list[dict[str, Any]], live: LiveState, have: list[dict[str, Any]], out: ResourceDiff) -> None:
    resolved: set[tuple[Any, Any]] = set()
    for s in want:
        if "space" in s:
            space = next((x for x in live.spaces if x.name == s["space"]), None)
            if space is None:
                return  # the planner reports it
            resolved.add((space.organization_id, space.id))
        else:
            resolved.add((s.get("organization_id"), s.get("space_id")))
    have_set = {(s.get("organization_id"), s.get("space_id")) for s in have}
    if resolved == have_set:
        return
    by_space = {x.id: x for x in live.spaces}
    by_name = bool(want) and all("space" in s for s in want)
    new: list[dict[str, Any]] = []
    for s in have:
        space = by_space.get(str(s.get("space_id")))
        if (by_name or not want) and space is not None and space.organization_id == s.get("organization_id"):
            new.append({"space": space.name})
        else:
            new.append({"organization_id": s.get("organization_id"), "space_id": s.get("space_id")})
    _set(out, "scopings", want, new)


# ------------------------------------------------------------------ prompts


def _prompt(r: DesiredResource, obj: Any, live: LiveState, out: ResourceDiff) -> None:
    doc = prompt_doc(r)
    if doc.description is not MISSING and doc.description != obj.prompt.description:
        _set(out, "description", doc.description, obj.prompt.description)
    if doc.restricted is not MISSING:
        restricted = ("PROMPT", obj.id) in live.restrictions
        if doc.restricted != restricted:
            _set(out, "restricted", doc.restricted, restricted)
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
            _set(out, f"version.{f}", want[f], new)
            changed = True
    if changed and "commit_message" in want and latest.commit_message and want["commit_message"] != latest.commit_message:
        _set(out, "version.commit_message", want["commit_message"], latest.commit_message)
    if "labels" in want:
        have = latest.label_names()
        if any(label not in have for label in want["labels"]):
            _set(out, "version.labels", want["labels"], have)


# ------------------------------------------------------------------ datasets


def _dataset(r: DesiredResource, obj: Any, live: LiveState, out: ResourceDiff) -> None:
    doc = dataset_doc(r)
    want = doc.examples
    if want is MISSING or obj.examples is None:
        return
    key = None if doc.key is MISSING else doc.key
    edit = ExamplesEdit()
    if key:
        matched = obj.matched or set()
        by_key = {e.get(key): e for e in obj.examples if key in e}
        declared: set[Any] = set()
        for i, e in enumerate(want):
            declared.add(canonical(e.get(key)))
            m = by_key.get(e.get(key))
            if m is None:
                if e.get(key) not in matched:
                    edit.delete.append(i)
            elif not same_example(m, e):
                edit.replace[i] = user_fields(m)
        edit.append = [user_fields(e) for e in obj.examples if canonical(e.get(key)) not in declared]
    else:
        missing, pool = match_by_content(obj.examples, want)
        edit.delete.extend(missing)
        left = {id(e) for bucket in pool.values() for e in bucket}
        edit.append = [user_fields(e) for e in obj.examples if id(e) in left]
    if edit:
        out.examples = edit


# ------------------------------------------------------------------ evaluators


def _evaluator(r: DesiredResource, obj: Any, live: LiveState, out: ResourceDiff) -> None:
    doc = evaluator_doc(r)
    if doc.description is not MISSING and doc.description != obj.evaluator.description:
        _set(out, "description", doc.description, obj.evaluator.description)
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
                            _set(out, path, vv, name)
                        else:
                            out.notes.append(f"{r.address}: {path}: live names integration id {hid}, which no "
                                             "LLM integration has (not written)")
                        changed = True
                elif hl.get(kk, ABSENT) != vv:
                    _set(out, path, vv, hl.get(kk, ABSENT))
                    changed = True
        elif have.get(k, ABSENT) != v:
            _set(out, f"template_config.{k}", v, have.get(k, ABSENT))
            changed = True
    message = obj.latest.commit_message if obj.latest is not None else None
    if changed and message and doc.commit_message != message:
        _set(out, "commit_message", doc.commit_message, message)


#: Each registered kind's comparison (``reconciler.kinds``): account-wide ones look live up themselves.
ACCOUNT_WIDE_DIFFS: Mapping[str, Callable[[DesiredResource, LiveState, ResourceDiff], None]] = {
    "Integration": _integration, "ResourceRestriction": _restriction}
SPACED_DIFFS: Mapping[str, Callable[[DesiredResource, Any, LiveState, ResourceDiff], None]] = {
    "Prompt": _prompt, "Dataset": _dataset, "Evaluator": _evaluator}
