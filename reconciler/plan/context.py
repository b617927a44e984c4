"""What the per-kind planners read (``PlanInput``, frozen) and return (``KindPlan``), the typed
document of a resource, and the helpers every planner uses (bodies, changes, secrets)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel

from reconciler.manifests.models import (
    AgentIntegration,
    Dataset,
    Evaluator,
    Integration,
    LlmIntegration,
    Prompt,
    ResourceRestriction,
    document_of,
    spec_of,
)
from reconciler.model import DesiredResource, LiveState, SecretRef
from reconciler.plan.model import SENSITIVE, Change, Operation, PlanOptions

# ------------------------------------------------------------------ the typed document of a resource
# The planner decides on attributes of the manifest models (a misspelled field is a mypy error, and
# an omitted one is MISSING, never a silent None); ``plain(part)``, the same part as plain values,
# is what request bodies and change lists are built from.


_D = TypeVar("_D")


def doc_of(r: DesiredResource, model: type[_D]) -> _D:
    """The typed document of ``r`` as ``model`` (the one loaded, or one built from its spec)."""
    doc = r.doc if r.doc is not None else document_of(r.kind, r.name, r.space, r.spec)
    if not isinstance(doc, model):
        raise TypeError(f"{r.address}: the spec is not a valid {r.kind} document")
    return doc


def plain(model: Any) -> dict[str, Any]:
    """A part of a typed document as plain JSON values (what request bodies are built from): the
    fields written, nested models as mappings, secrets still ``SecretRef``; {} for an omitted part."""
    return spec_of(model) if isinstance(model, BaseModel) else {}


def integration_doc(r: DesiredResource) -> LlmIntegration | AgentIntegration:
    doc = doc_of(r, Integration)
    if not isinstance(doc, LlmIntegration | AgentIntegration):
        raise TypeError(f"{r.address}: the spec is not a valid {r.kind} document")
    return doc


def prompt_doc(r: DesiredResource) -> Prompt:
    return doc_of(r, Prompt)


def dataset_doc(r: DesiredResource) -> Dataset:
    return doc_of(r, Dataset)


def evaluator_doc(r: DesiredResource) -> Evaluator:
    return doc_of(r, Evaluator)


def restriction_doc(r: DesiredResource) -> ResourceRestriction:
    return doc_of(r, ResourceRestriction)


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def fingerprint(value: Any) -> str:
    """A short stable hash of a live object (or of its absence: ``None``)."""
    return hashlib.sha256(canonical(value).encode()).hexdigest()[:16]


def pointer_escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def secret_spec(ref: SecretRef) -> str:
    """How a plan names a secret: ``env:NAME`` or ``file:PATH``. Never the value."""
    return f"{ref.source}:{ref.ref}"


def parse_secret_spec(spec: str) -> SecretRef:
    source, _, name = spec.partition(":")
    if source not in ("env", "file"):
        raise ValueError(f"not a secret reference: {spec!r}")
    return SecretRef(source, name)  # type: ignore[arg-type]


def to_body(value: Any, pointer: str, secrets: dict[str, str]) -> Any:
    """A manifest value as it goes into a request body: every SecretRef becomes SENSITIVE and is
    recorded in ``secrets`` under its JSON pointer."""
    if isinstance(value, SecretRef):
        secrets[pointer] = secret_spec(value)
        return SENSITIVE
    if isinstance(value, dict):
        return {k: to_body(v, f"{pointer}/{pointer_escape(str(k))}", secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_body(v, f"{pointer}/{i}", secrets) for i, v in enumerate(value)]
    return value


def sensitive_ref(ref: SecretRef) -> str:
    """How a plan's changes show a secret it sends: ``(sensitive, env:NAME)``, the reference and
    never the value (a plan resolves none)."""
    return f"(sensitive, {secret_spec(ref)})"


def is_sensitive(value: Any) -> bool:
    return isinstance(value, str) and (value == SENSITIVE or value.startswith("(sensitive, "))


def shown(value: Any) -> Any:
    """A manifest value as a plan shows it (secrets as their reference, never a value)."""
    if isinstance(value, SecretRef):
        return sensitive_ref(value)
    if isinstance(value, dict):
        return {k: shown(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [shown(v) for v in value]
    return value


def op_id(r: DesiredResource, suffix: str) -> str:
    return "/".join(r.identity) + "#" + suffix


@dataclass(frozen=True)
class PlanInput:
    """What every kind planner reads, and none changes: the live state (a renamed view of the one
    read), the options, the clock, the resources to plan, and what the kinds planned before it
    (``earlier``: an evaluator names the integration a plan creates)."""

    live: LiveState
    options: PlanOptions
    now: datetime
    desired: tuple[DesiredResource, ...]
    renamed: Mapping[str, str] = field(default_factory=dict)  # address -> the alias it is renamed from
    restrictions_hidden: bool = False  # the key cannot see restrictions: they are not compared
    earlier: KindPlan = field(default_factory=lambda: KindPlan())


@dataclass
class KindPlan:
    """What a planner returns: its operations, pins, errors, warnings, the secrets it could not
    verify, and the integrations it creates (an evaluator may name one). ``make_plan`` merges them in one place."""

    ops: list[Operation] = field(default_factory=list)
    pins: dict[str, list[str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)
    creates: dict[tuple[str, ...], str] = field(default_factory=dict)  # an integration's identity -> its create op

    def merge(self, other: KindPlan) -> KindPlan:
        """Both, in order: this one's first."""
        return KindPlan([*self.ops, *other.ops], {**self.pins, **other.pins}, [*self.errors, *other.errors],
                        [*self.warnings, *other.warnings], [*self.unverified, *other.unverified],
                        {**self.creates, **other.creates})


class Planning(KindPlan):
    """One planner's result as it is built: reads its ``PlanInput``, writes only into itself."""

    def __init__(self, inputs: PlanInput) -> None:
        super().__init__()
        self.inputs = inputs
        self.live = inputs.live
        self.options = inputs.options

    def add(self, op: Operation) -> Operation:
        self.ops.append(op)
        return op

    def op(self, r: DesiredResource, suffix: str, method: str, path: str, *, action: str = "update",
           body: Any = None, changes: Any = (), depends_on: Any = (), note: str | None = None,
           secrets: dict[str, str] | None = None, kind: str | None = None, name: str | None = None) -> Operation:
        """Add one operation of resource ``r`` (its id is the resource identity plus ``suffix``)."""
        return self.add(Operation(
            id=op_id(r, suffix), action=action, kind=kind or r.kind, name=name or r.name, space=r.space,
            method=method, path=path, body=body, changes=tuple(changes), depends_on=tuple(depends_on),
            secrets=secrets or {}, address=r.address, note=note,
        ))

    def error(self, r: DesiredResource, path: str, message: str) -> None:
        self.errors.append(error_line(r, path, message))

    def space_id(self, r: DesiredResource) -> str | None:
        sid = self.live.space_id(str(r.space))
        if sid is None:
            self.error(r, "space", f"no space named (or with the id) {r.space!r} exists; "
                       + space_hint(self.live))
        return sid

    def pin(self, r: DesiredResource, key: list[str]) -> None:
        """Record what the plan saw of this resource, so a saved plan can detect that live moved."""
        if r.address in self.inputs.renamed:  # what live holds is the resource under its old name
            key = [*key[:-1], self.inputs.renamed[r.address]]
        self.pins[r.address] = key


def error_line(r: DesiredResource, path: str, message: str) -> str:
    """A problem only live state reveals, said like a validation problem: ``FILE:LINE:COL:
    ADDRESS: PATH: message``."""
    src = r.source(path)
    return f"{src}: {r.address}: {path}: {message}" if src else f"{r.address}: {path}: {message}"


def change(r: DesiredResource, path: str, before: Any, after: Any) -> Change:
    src = r.source(path)
    return Change(path, before, after, str(src) if src else None)


def creation_changes(r: DesiredResource, fields: dict[str, Any]) -> list[Change]:
    """Changes of a create: one per leaf of the new object (nested mappings flattened, so a plan
    shows ``config.endpoint`` rather than one long JSON blob), secrets masked."""
    out: list[Change] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict) and value and not isinstance(value, SecretRef):
            for k, v in value.items():
                walk(v, f"{path}.{k}" if path else str(k))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, v in enumerate(value):  # messages, presets: each field on its own line
                walk(v, f"{path}.{i}")
        else:
            out.append(change(r, path, None, shown(value)))

    walk(fields, "")
    return out


def space_hint(live: LiveState) -> str:
    """The spaces that exist, and how to make one (an unknown space is most often one not created yet)."""
    names = ", ".join(sorted(s.name for s in live.spaces)) or "none"
    return (f"the spaces are: {names} (create it in the platform first; the emulator: "
            "`reconciler emulator --space NAME`)")
