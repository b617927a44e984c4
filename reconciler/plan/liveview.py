"""What live state says about each field a manifest declares, in the manifest's own shape.

A ``ResourceDiff`` lists the declared fields whose live value differs *as the planner compares
them* (scopings and model names as sets, presets by name, a prompt's version fields against the
latest version, labels that must be on it, examples by key or content), each with the value to
write so that the planner would see no difference. Each kind's comparison (``KindSteps.compare``)
fills it in: the integration's is here, the others beside their planner;
``plan.registry.resource_diff`` asks the resource's kind. ``ignore_changes`` (``plan.ignore``)
uses it to leave a field as it is live; ``reconciler pull`` to write live edits back into the
manifests. Write-only values (secrets, header values) cannot be read: they are ``notes``, never
edits. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import MISSING

from reconciler.manifests.models import AgentIntegration, LlmIntegration
from reconciler.model import DesiredResource, LiveState
from reconciler.plan.context import integration_doc, plain
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

    def edit(self, path: str, old: Any, new: Any) -> None:
        """Record that the declared ``path`` (``old``) is ``new`` live."""
        self.edits.append(FieldEdit(path, old, new))


def found_in_space(r: DesiredResource, live: LiveState, out: ResourceDiff) -> Any:
    """The live object a declared resource of a spaced kind compares with: in its space's table by
    name, else by an alias (the plan renames it: ``out.renamed``). None (``out.missing``, or a note
    when the space does not exist live): nothing to compare."""
    space_id = live.space_id(str(r.space))
    if space_id is None:
        out.notes.append(f"{r.address}: space {r.space!r} does not exist live")
        return None
    table: Mapping[tuple[str, str], Any] = live.table(r.kind)
    found = table.get((space_id, r.name))
    if found is None:
        found = next((table[(space_id, a)] for a in r.aliases if (space_id, a) in table), None)
        out.renamed = found is not None
        out.missing = not out.renamed
    return found


def _set(out: ResourceDiff, path: str, old: Any, new: Any) -> None:
    out.edit(path, old, new)


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


