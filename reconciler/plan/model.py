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
from dataclasses import dataclass, field
from functools import cache
from operator import not_
from typing import Annotated, Any, TypeVar

from pydantic import (
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    TypeAdapter,
    WrapSerializer,
    with_config,
)

from reconciler.model import ReadScope

#: Semantic versioning (README.md, "Guardrails: policies and review"): MAJOR when a field is removed or changes meaning, MINOR when one
#: is added (1.1.0: `policy`, `options.excludes`, `options.policies`; 1.2.0: `ignored`, `summary.ignored`;
#: 1.3.0: `sources`), PATCH for fixes of the writer.
FORMAT_VERSION = "1.3.0"
SENSITIVE = "(sensitive)"
KNOWN_AFTER_APPLY = "(known after apply)"
#: A value apply fills in: ``${OP_ID:PATH}`` (a field of the answer of one of the operation's
#: prerequisites, ``depends_on``; an operation id is an address, ``#`` and a step) or a value that is
#: ``${apply_time}`` whole (``apply.resolve``). Nothing else of that shape is a reference: a manifest's
#: text holding ``${name}`` (a template's placeholder, ``$${var.x}``'s literal) or a live value naming an
#: operation is sent as it is.
REF_RE = re.compile(r"\$\{([^{}:#]+#[^{}:]+|apply_time)(?::([^}]*))?\}")
ACTIONS = ("create", "update", "delete", "replace")
WRITE_METHODS = ("POST", "PATCH", "PUT", "DELETE")  # the methods apply sends


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


#: The JSON form (``Plan.to_json``, the PLANFILE format, read back by ``Plan.from_json``) and its
#: schema (``plan.schema``) are derived from the classes below by pydantic. They stay plain frozen
#: dataclasses: a plan of thousands of operations is built without validation. A field with a
#: default is written all the same (so the schema requires it) unless its ``exclude_if`` leaves it
#: out. A number read where text is expected is text.
JSON = ConfigDict(json_schema_serialization_defaults_required=True, coerce_numbers_to_str=True)
CLOSED = JSON | ConfigDict(json_schema_extra={"additionalProperties": False})


def _is_none(value: Any) -> bool:
    return value is None


Sorted = PlainSerializer(lambda mapping: dict(sorted(mapping.items())))  # a mapping written with its keys sorted
T = TypeVar("T")
#: A tuple field: its items written each by its own class even when a caller built it from a list
Items = Annotated[tuple[T, ...], WrapSerializer(lambda items, handler: handler(tuple(items)))]


@with_config(CLOSED)
@dataclass(frozen=True)
class Change:
    """One field that differs: its dotted path, before and after (secrets as ``(sensitive)``), and
    the ``file:line`` of the manifest value asking for it."""

    path: Annotated[str, Field(description="Dotted manifest field path ('' for the resource itself).")]
    before: Annotated[Any, Field(description="The live value (null: absent).")] = None
    after: Annotated[Any, Field(description="The desired value (null: absent or removed).")] = None
    source: Annotated[str | None, Field(
        description="FILE:LINE of the manifest value asking for the change.")] = None


@with_config(CLOSED)
@dataclass(frozen=True, kw_only=True)
class Operation:
    """One API call, in execution order."""

    #: stable, readable: "Integration/vendor-a-prod#update"
    id: Annotated[str, Field(description="Stable id: ADDRESS#step.")]
    address: Annotated[str, Field(description="The manifest resource: KIND/NAME or KIND/SPACE/NAME.")] = ""
    action: Annotated[str, Field(json_schema_extra={"enum": list(ACTIONS)})]
    kind: str
    name: str
    space: Annotated[str | None, Field(exclude_if=_is_none, description="The space, for Prompt, Dataset, "
                                       "Evaluator (and experiments).")] = None
    method: Annotated[str, Field(json_schema_extra={"enum": list(WRITE_METHODS)})]
    path: Annotated[str, Field(description="The request path; ${OP:path} stands for a value known after an "
                                           "earlier call.")]
    body: Annotated[Any, Field(description="The request body; secrets as (sensitive).")] = None
    changes: Items[Change] = ()
    depends_on: Annotated[Items[str], Field(description="Ids of the operations that run first.")] = ()
    secrets: Annotated[Mapping[str, str], Sorted, Field(
        exclude_if=not_, description="JSON pointer in body -> env:NAME or file:PATH.")
    ] = field(default_factory=dict)
    #: "new version", "experiment retention"
    note: Annotated[str | None, Field(description="Why, for humans.", exclude_if=not_)] = None

    @property
    def subject(self) -> str:
        """The object it creates, changes or deletes, as plans count and show them: the manifest
        resource's address, but an object of another kind (an Experiment its dataset's retention
        deletes) is its own (``Experiment/research/golden-tickets/exp-3 (id)``)."""
        owner_kind, _, rest = self.address.partition("/")
        if self.kind == owner_kind or not rest:
            return self.address
        return f"{self.kind}/{rest}/{self.name} ({self.path.rsplit('/', 1)[-1]})"


@with_config(CLOSED)
@dataclass(frozen=True)
class Unmanaged:
    """A live resource inside the tree's ownership that no manifest declares: what ``--prune``
    would delete. ``path`` is the API path of the object."""

    address: str
    kind: str
    name: str
    path: str
    space: Annotated[str | None, Field(exclude_if=_is_none)] = None


@with_config(CLOSED)
@dataclass(frozen=True)
class Ignored:
    """A difference an ``ignore_changes`` rule leaves alone: never updated, never drift. ``before``
    is live, ``after`` what the manifest declares; ``source`` the rule's ``file:line``."""

    address: str
    path: Annotated[str, Field(description="Dotted manifest field path.")]
    before: Annotated[Any, Field(description="The live value.")] = None
    after: Annotated[Any, Field(description="The declared value.")] = None
    source: Annotated[str | None, Field(description="FILE:LINE of the rule.")] = None


@with_config(CLOSED)
@dataclass(frozen=True)
class Verdict:
    """A policy rule that fired (README.md, "Guardrails"): on a resource (``address``), or on the
    whole plan (``address`` None). ``source`` is the rule's ``file:line``."""

    rule: str
    effect: Annotated[str, Field(json_schema_extra={"enum": ["deny", "require_approval", "warn"]})]
    address: Annotated[str | None, Field(
        description="The resource; null when the rule judged the whole plan.")] = None
    message: str = ""
    source: Annotated[str, Field(description="FILE:LINE of the rule.")] = ""


@with_config(JSON)
@dataclass(frozen=True)
class PlanOptions:
    allow_replace: bool = False
    rotate_secrets: bool = False
    prune: bool = False
    allow_empty: bool = False
    version_name: str | None = None  # dataset version name; None: the apply's UTC timestamp
    targets: Items[str] = ()  # KIND/NAME addresses
    rotate: Items[str] = ()  # --rotate KIND/NAME: send these resources' secrets
    since: str | None = None  # --since REF, as given
    #: write-only fields whose declaration changed since ``since``: "ADDRESS PATH" ("Integration/x config.headers")
    resend: Items[str] = ()
    variables: Items[str] = ()  # --var NAME=VALUE, as given (a variable is never a secret)
    var_files: Items[str] = ()  # --var-file paths, as given
    #: --exclude address globs: neither planned nor pruned
    excludes: Annotated[Items[str], Field(exclude_if=not_)] = ()
    #: --policy paths, as given (apply PLANFILE loads them again)
    policies: Annotated[Items[str], Field(exclude_if=not_)] = ()
    #: "auto": compare restrictions unless the key evidently cannot see them (plan, drift; see
    #: ``plan.restrictions.unseen_restrictions``); "compare": always (apply: it needs a key that may
    #: manage them); "skip": never (what a plan that left them out records, so apply and its
    #: convergence check leave them out too)
    restrictions: Annotated[str, Field(exclude_if=lambda value: value == "auto")] = "auto"

    def rotates(self, address: str) -> bool:
        return self.rotate_secrets or address in self.rotate

    def resends(self, address: str, path: str) -> bool:
        return f"{address} {path}" in self.resend


@with_config(JSON)
@dataclass(frozen=True)
class Plan:
    operations: Annotated[Items[Operation], Field(description="API calls in execution order.")] = ()
    unverified_secrets: Items[str] = ()  # "Integration/x: config.api_key" that exist but cannot be compared
    warnings: Items[str] = ()
    fingerprints: Annotated[Mapping[str, str], Sorted, Field(
        description="Address -> hash of the live object the plan was made from.")
    ] = field(default_factory=dict)
    #: address -> key of that object in LiveState
    pins: Annotated[Mapping[str, list[str]], Sorted] = field(default_factory=dict)
    scope: Annotated[ReadScope, PlainSerializer(ReadScope.to_json), PlainValidator(ReadScope.from_json),
                     Field(description="What a live read for this plan fetches.")] = ReadScope()
    manifests: Items[str] = ()  # the paths the plan was made from (to confirm convergence after apply)
    options: PlanOptions = PlanOptions()
    unmanaged: Items[Unmanaged] = ()  # undeclared, inside the ownership (not pruned by this plan)
    #: differences ignore_changes leaves alone (counted, never planned)
    ignored: Annotated[Items[Ignored], Field(
        description="Differences ignore_changes left alone (absent when none).", exclude_if=not_)] = ()
    owner: Annotated[str | None, Field(exclude_if=not_)] = None  # the Ownership document's name
    #: where a saved plan was made: relative ``manifests`` are found from there too
    workdir: Annotated[str, Field(exclude_if=not_)] = ""
    #: a saved plan's manifests, var files and policy files -> "sha256:HEX" (``reconciler.saved``)
    sources: Annotated[Mapping[str, str], Sorted, Field(
        exclude_if=not_, description="A saved plan's files (manifests, var files, policies) -> sha256:HEX.")
    ] = field(default_factory=dict)
    #: the policy rules that fired (``reconciler.policy``)
    policy: Annotated[Items[Verdict], Field(
        description="Policy verdicts (absent when none fired).", exclude_if=not_)] = ()

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
        """The fields in declared order, after the format version, the operations and their summary
        (members that are no fields). Values are kept as they are: ``json.dumps`` writes them."""
        out: dict[str, Any] = adapter().dump_python(self)
        head = {"format_version": FORMAT_VERSION, "operations": out["operations"], "summary": self.summary()}
        return head | out  # a key of both keeps its place in head

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, sort_keys=False, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        """The plan a JSON plan holds (what it leaves out reads as the default); a pydantic
        ``ValidationError`` when a part is not of its type."""
        return adapter().validate_python(data)


@cache
def adapter() -> TypeAdapter[Plan]:
    """Built on first use: the CLI's commands that never write or read a plan do not pay for it."""
    return TypeAdapter(Plan)
