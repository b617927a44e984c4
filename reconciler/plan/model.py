"""The plan as a value: frozen, serialisable, deterministic.

An ``Operation`` is one API call. Its ``body`` is JSON with two kinds of placeholders, both plain
strings so that a plan file is plain JSON:

- ``SENSITIVE`` ("(sensitive)") where a secret goes; ``secrets`` maps the body's JSON pointer to the
  secret reference (``env:NAME`` / ``file:PATH``), never the value. Apply resolves them again.
- ``${<op-id>:<dotted.path>}`` for a value known only after an earlier call (the id of a created
  integration, the version a label moves to); ``${apply_time}`` for the apply's UTC timestamp.
  Renderers show both as "(known after apply)". They may appear in ``path`` too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from reconciler.model import ReadScope

#: Semantic versioning (docs/plan-format.md): MAJOR when a field is removed or changes meaning, MINOR when one
#: is added (1.1.0: `policy`, `options.excludes`, `options.policies`; 1.2.0: `ignored`, `summary.ignored`),
#: PATCH for fixes of the writer.
FORMAT_VERSION = "1.2.0"
SENSITIVE = "(sensitive)"
KNOWN_AFTER_APPLY = "(known after apply)"
REF_RE = re.compile(r"\$\{([^}:]+)(?::([^}]*))?\}")
ACTIONS = ("create", "update", "delete", "replace")


def ref(op_id: str, path: str) -> str:
    return "${" + op_id + ":" + path + "}"


APPLY_TIME = "${apply_time}"


def has_ref(value: Any) -> bool:
    if isinstance(value, str):
        return bool(REF_RE.search(value))
    if isinstance(value, Mapping):
        return any(has_ref(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(has_ref(v) for v in value)
    return False


@dataclass(frozen=True)
class Change:
    """One field that differs: its dotted path, before and after (secrets as SENSITIVE), and the
    ``file:line`` of the manifest value asking for it."""

    path: str
    before: Any
    after: Any
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "before": self.before, "after": self.after, "source": self.source}


@dataclass(frozen=True)
class Operation:
    id: str  # stable, readable: "Integration/vendor-a-prod#update"
    action: str  # create | update | delete | replace
    kind: str
    name: str
    method: str
    path: str
    body: Any = None
    changes: tuple[Change, ...] = ()
    depends_on: tuple[str, ...] = ()
    space: str | None = None
    secrets: Mapping[str, str] = field(default_factory=dict)  # JSON pointer in body -> "env:NAME"/"file:PATH"
    address: str = ""  # the manifest resource it belongs to ("Integration/vendor-a-prod")
    note: str | None = None  # why, for humans ("new version", "experiment retention")

    @property
    def subject(self) -> str:
        """The object it creates, changes or deletes, as plans count and show them: the manifest
        resource's address, but an object of another kind (an Experiment its dataset's retention
        deletes) is its own (``Experiment/research/golden-tickets/exp-3 (id)``)."""
        owner_kind, _, rest = self.address.partition("/")
        if self.kind == owner_kind or not rest:
            return self.address
        return f"{self.kind}/{rest}/{self.name} ({self.path.rsplit('/', 1)[-1]})"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "address": self.address,
            "action": self.action,
            "kind": self.kind,
            "name": self.name,
        }
        if self.space is not None:
            out["space"] = self.space
        out.update({
            "method": self.method,
            "path": self.path,
            "body": self.body,
            "changes": [c.to_json() for c in self.changes],
            "depends_on": list(self.depends_on),
        })
        if self.secrets:
            out["secrets"] = dict(sorted(self.secrets.items()))
        if self.note:
            out["note"] = self.note
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Operation:
        return cls(
            id=data["id"], action=data["action"], kind=data["kind"], name=data["name"],
            method=data["method"], path=data["path"], body=data.get("body"),
            changes=tuple(Change(c["path"], c.get("before"), c.get("after"), c.get("source"))
                          for c in data.get("changes", [])),
            depends_on=tuple(data.get("depends_on", [])), space=data.get("space"),
            secrets=dict(data.get("secrets", {})), address=data.get("address", ""), note=data.get("note"),
        )


@dataclass(frozen=True)
class Unmanaged:
    """A live resource inside the tree's ownership that no manifest declares: what ``--prune``
    would delete. ``path`` is the API path of the object."""

    address: str
    kind: str
    name: str
    path: str
    space: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"address": self.address, "kind": self.kind, "name": self.name, "path": self.path}
        return out | ({"space": self.space} if self.space is not None else {})

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Unmanaged:
        return cls(address=data["address"], kind=data["kind"], name=data["name"], path=data["path"],
                   space=data.get("space"))


@dataclass(frozen=True)
class Ignored:
    """A difference an ``ignore_changes`` rule leaves alone: never updated, never drift. ``before``
    is live, ``after`` what the manifest declares; ``source`` the rule's ``file:line``."""

    address: str
    path: str
    before: Any
    after: Any
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Ignored:
        return cls(address=data["address"], path=data["path"], before=data.get("before"), after=data.get("after"),
                   source=data.get("source"))


@dataclass(frozen=True)
class Verdict:
    """A policy rule that fired (README.md, "Guardrails"): on a resource (``address``), or on the
    whole plan (``address`` None). ``source`` is the rule's ``file:line``."""

    rule: str
    effect: str  # deny | require_approval | warn
    address: str | None
    message: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Verdict:
        return cls(rule=str(data["rule"]), effect=str(data["effect"]), address=data.get("address"),
                   message=str(data.get("message", "")), source=str(data.get("source", "")))


@dataclass(frozen=True)
class PlanOptions:
    allow_replace: bool = False
    rotate_secrets: bool = False
    prune: bool = False
    allow_empty: bool = False
    version_name: str | None = None  # dataset version name; None: the apply's UTC timestamp
    targets: tuple[str, ...] = ()  # KIND/NAME addresses
    rotate: tuple[str, ...] = ()  # --rotate KIND/NAME: send these resources' secrets
    since: str | None = None  # --since REF, as given
    #: write-only fields whose declaration changed since ``since``: "ADDRESS PATH" ("Integration/x config.headers")
    resend: tuple[str, ...] = ()
    variables: tuple[str, ...] = ()  # --var NAME=VALUE, as given (a variable is never a secret)
    var_files: tuple[str, ...] = ()  # --var-file paths, as given
    excludes: tuple[str, ...] = ()  # --exclude address globs: neither planned nor pruned
    policies: tuple[str, ...] = ()  # --policy paths, as given (apply PLANFILE loads them again)
    #: "auto": compare restrictions unless the key evidently cannot see them (plan, drift; see
    #: ``plan.restrictions.unseen_restrictions``); "compare": always (apply: it needs a key that may
    #: manage them); "skip": never (what a plan that left them out records, so apply and its
    #: convergence check leave them out too)
    restrictions: str = "auto"

    def rotates(self, address: str) -> bool:
        return self.rotate_secrets or address in self.rotate

    def resends(self, address: str, path: str) -> bool:
        return f"{address} {path}" in self.resend

    def to_json(self) -> dict[str, Any]:
        return {"allow_replace": self.allow_replace, "rotate_secrets": self.rotate_secrets, "prune": self.prune,
                "allow_empty": self.allow_empty, "version_name": self.version_name, "targets": list(self.targets),
                "rotate": list(self.rotate), "since": self.since, "resend": list(self.resend),
                "variables": list(self.variables), "var_files": list(self.var_files)} \
            | ({"excludes": list(self.excludes)} if self.excludes else {}) \
            | ({"policies": list(self.policies)} if self.policies else {}) \
            | ({"restrictions": self.restrictions} if self.restrictions != "auto" else {})

    @classmethod
    def from_json(cls, opts: Mapping[str, Any]) -> PlanOptions:
        return cls(
            allow_replace=bool(opts.get("allow_replace", False)),
            rotate_secrets=bool(opts.get("rotate_secrets", False)),
            prune=bool(opts.get("prune", False)),
            allow_empty=bool(opts.get("allow_empty", False)),
            version_name=opts.get("version_name"),
            targets=tuple(opts.get("targets", [])),
            rotate=tuple(opts.get("rotate", [])),
            since=opts.get("since"),
            resend=tuple(opts.get("resend", [])),
            variables=tuple(opts.get("variables", [])),
            var_files=tuple(opts.get("var_files", [])),
            excludes=tuple(opts.get("excludes", [])),
            policies=tuple(opts.get("policies", [])),
            restrictions=str(opts.get("restrictions", "auto")),
        )


@dataclass(frozen=True)
class Plan:
    operations: tuple[Operation, ...]
    unverified_secrets: tuple[str, ...] = ()  # "Integration/x: config.api_key" that exist but cannot be compared
    warnings: tuple[str, ...] = ()
    fingerprints: Mapping[str, str] = field(default_factory=dict)  # address -> hash of the live object
    pins: Mapping[str, list[str]] = field(default_factory=dict)  # address -> key of that object in LiveState
    scope: ReadScope = ReadScope()  # what a live read for this plan fetches
    manifests: tuple[str, ...] = ()  # the paths the plan was made from (to confirm convergence after apply)
    options: PlanOptions = PlanOptions()
    unmanaged: tuple[Unmanaged, ...] = ()  # undeclared, inside the ownership (not pruned by this plan)
    owner: str | None = None  # the Ownership document's name
    workdir: str = ""  # where a saved plan was made: relative ``manifests`` are found from there too
    ignored: tuple[Ignored, ...] = ()  # differences ignore_changes leaves alone (counted, never planned)
    policy: tuple[Verdict, ...] = ()  # the policy rules that fired (``reconciler.policy``)

    def __iter__(self) -> Iterator[Operation]:
        return iter(self.operations)

    def __len__(self) -> int:
        return len(self.operations)

    @property
    def empty(self) -> bool:
        return not self.operations

    def summary(self) -> dict[str, int]:
        """Counts by object, not by call: a resource with several update calls counts once; each
        experiment a retention rule deletes counts as one delete. ``ignored`` (differences left alone by
        ignore_changes) is there when there are some."""
        seen: dict[str, set[str]] = {a: set() for a in ACTIONS}
        for op in self.operations:
            seen[op.action].add(op.subject)
        return ({a: len(seen[a]) for a in ACTIONS} | {"unmanaged": len(self.unmanaged)}
                | ({"ignored": len(self.ignored)} if self.ignored else {}))

    def to_json(self) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION,
            "operations": [op.to_json() for op in self.operations],
            "summary": self.summary(),
            "unverified_secrets": list(self.unverified_secrets),
            "warnings": list(self.warnings),
            "fingerprints": dict(sorted(self.fingerprints.items())),
            "pins": dict(sorted(self.pins.items())),
            "scope": self.scope.to_json(),
            "manifests": list(self.manifests),
            "options": self.options.to_json(),
            "unmanaged": [u.to_json() for u in self.unmanaged],
        } | ({"ignored": [i.to_json() for i in self.ignored]} if self.ignored else {}) \
            | ({"owner": self.owner} if self.owner else {}) | ({"workdir": self.workdir} if self.workdir else {}) \
            | ({"policy": [v.to_json() for v in self.policy]} if self.policy else {})

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, sort_keys=False, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        return cls(
            operations=tuple(Operation.from_json(o) for o in data.get("operations", [])),
            unverified_secrets=tuple(data.get("unverified_secrets", [])),
            warnings=tuple(data.get("warnings", [])),
            fingerprints=dict(data.get("fingerprints", {})),
            pins={k: list(v) for k, v in data.get("pins", {}).items()},
            scope=ReadScope.from_json(data.get("scope", {})),
            manifests=tuple(data.get("manifests", [])),
            workdir=str(data.get("workdir", "")),
            options=PlanOptions.from_json(data.get("options", {})),
            unmanaged=tuple(Unmanaged.from_json(u) for u in data.get("unmanaged", [])),
            owner=data.get("owner"),
            ignored=tuple(Ignored.from_json(i) for i in data.get("ignored", [])),
            policy=tuple(Verdict.from_json(v) for v in data.get("policy", [])),
        )
