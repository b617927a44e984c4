"""The values the layers hand each other: desired resources (from manifests), the read scope,
and live state (from the API). No behaviour beyond small accessors lives here.

Desired resources keep the manifest's own shape: ``spec`` holds exactly the keys the manifest
wrote (omitted means unmanaged), with API field names, secrets as ``SecretRef`` and dataset
examples already loaded from ``examples_file``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from typing import Any, Literal, Protocol, Self

from pydantic import BaseModel, ConfigDict, ValidationError

from reconciler.errors import ResponseError, SecretError
from reconciler.kinds import DATASET, EVALUATOR, INTEGRATION, KIND_SPECS, PROMPT, RESTRICTION
from reconciler.kinds import SPACED_KINDS as SPACED_KINDS  # the registry's, known here too


@dataclass(frozen=True)
class Source:
    """Where a manifest value was written (1-based line and column)."""

    file: str
    line: int
    column: int = 1
    via: str | None = None  # where the variable that gave the value was set ("vars/prod.yaml:3")

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" + (f" via {self.via}" if self.via else "")


#: The largest ``{file:}`` secret read (an API key, a token, a PEM key fit many times over).
MAX_SECRET_FILE_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True, repr=False)
class SecretRef:
    """A reference to a secret (``{env: NAME}`` or ``{file: PATH}``). The value is read only on
    ``resolve()`` and is never part of a repr, str, error or log line. The manifest models hold it
    as a value of its own: ``manifests.models.spec_of`` puts it in a resource's spec as it is."""

    source: Literal["env", "file"]
    ref: str  # the variable name, or the file path (absolute, resolved against the manifest)

    def __repr__(self) -> str:
        return f"SecretRef({self.source}={self.ref!r})"

    __str__ = __repr__

    def describe(self) -> str:
        return f"{{{self.source}: {self.ref}}}"

    def resolve(self) -> str:
        if self.source == "env":
            value = os.environ.get(self.ref)
            if value is None:
                raise SecretError(f"secret {self.describe()}: environment variable {self.ref} is not set")
            return value
        try:
            with open(self.ref, "rb") as fh:  # bounded: a secret is a key, not a file of any size
                data = fh.read(MAX_SECRET_FILE_BYTES + 1)
        except OSError as exc:
            raise SecretError(f"secret {self.describe()}: cannot read file {self.ref} ({exc.strerror})") from None
        if len(data) > MAX_SECRET_FILE_BYTES:
            raise SecretError(f"secret {self.describe()}: the file is over the {MAX_SECRET_FILE_BYTES:,}-byte limit "
                              "of a secret file")
        try:
            return data.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as exc:
            raise SecretError(f"secret {self.describe()}: the file is not UTF-8 text (a binary file? byte offset "
                              f"{exc.start})") from None


class _Sourced:
    """A document that recorded where its values were written (``sources``)."""

    sources: Mapping[str, Source]

    def source(self, path: str = "") -> Source | None:
        """The source recorded for a dotted path, else for its nearest parent, else the document's."""
        while True:
            if path in self.sources:
                return self.sources[path]
            if not path:
                return None
            path = path.rpartition(".")[0]


@dataclass(frozen=True)
class DesiredResource(_Sourced):
    """One manifest document.

    kind: one of ``kinds.KINDS``. name: the document's name. space: the space name or id (spaced kinds).
    spec: the document minus ``kind``, ``name``, ``space`` and the lifecycle fields, as plain values;
        only keys the user wrote (secrets as SecretRef, a dataset's examples loaded from its file).
    sources: dotted field path ("config.api_key", "version.messages") -> where it was written;
        "" -> the document itself.
    doc: the typed document (the kind's ``reconciler.manifests.models`` model; ``spec`` is its dump)
        when it was loaded from a manifest; None when a test builds the resource from a spec. The
        planner reads it as its kind's model (``plan.context.doc_of``: checked, never cast).
    """

    kind: str
    name: str
    spec: Mapping[str, Any]
    space: str | None = None
    sources: Mapping[str, Source] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()  # former names (Integration, Dataset, Evaluator): renamed in place
    protect: bool = False  # never deleted or replaced by a plan
    doc: BaseModel | None = field(default=None, compare=False, repr=False)
    ignore_changes: tuple[str, ...] = ()  # field globs the plan leaves as they are live (docs/manifests.md)

    @property
    def identity(self) -> tuple[str, ...]:
        """Unique across a manifest set: the kind and its registered identity fields
        (``KindSpec.identity``: Integration (type, name); spaced kinds (space, name);
        ResourceRestriction (resource_type, resource_id))."""
        head = {"name": self.name, "space": self.space}
        return (self.kind, *(str(head[f] if f in head else self.spec.get(f)) for f in KIND_SPECS[self.kind].identity))

    @property
    def address(self) -> str:
        """How plans and messages name it: ``Kind/name`` or ``Kind/space/name``."""
        return f"{self.kind}/{self.space}/{self.name}" if self.space else f"{self.kind}/{self.name}"

    @property
    def integration_ref(self) -> str | None:
        """The LLM integration the document names by name (at its kind's ``KindSpec.refers``), if any."""
        path = KIND_SPECS[self.kind].refers if self.kind in KIND_SPECS else None
        value: Any = self.spec if path else None
        for key in path.split(".") if path else ():
            value = value.get(key) if isinstance(value, Mapping) else None
        return value if isinstance(value, str) else None


def _matches(globs: Iterable[str], value: str) -> bool:
    return any(fnmatchcase(value, g) for g in globs)


@dataclass(frozen=True)
class Ownership(_Sourced):
    """What a tree owns (docs/manifests.md, "Ownership"): every Prompt, Dataset and Evaluator in ``spaces``
    (names or ids, as the manifests write them), the integrations whose name matches a glob of
    ``integrations``, and the restrictions whose ``TYPE/resource_id`` (or ``resource_id``) matches a
    glob of ``resource_restrictions``. A list left out owns nothing. ``protect``: ``KIND/NAME`` globs
    no plan may delete or replace. ``sources`` as ``DesiredResource.sources``."""

    name: str
    spaces: tuple[str, ...] = ()
    integrations: tuple[str, ...] = ()
    resource_restrictions: tuple[str, ...] = ()
    protect: tuple[str, ...] = ()
    sources: Mapping[str, Source] = field(default_factory=dict)
    #: ``ignore_changes`` rules: (address globs, field path globs), in the document's order
    ignore_changes: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()

    def owns_integration(self, name: str) -> bool:
        return _matches(self.integrations, name)

    def owns_restriction(self, resource_type: str, resource_id: str) -> bool:
        return (_matches(self.resource_restrictions, f"{resource_type}/{resource_id}")
                or _matches(self.resource_restrictions, resource_id))


@dataclass(frozen=True)
class ManifestSet:
    resources: tuple[DesiredResource, ...]
    paths: tuple[str, ...] = ()  # what was loaded (files, directories or "-")
    ownership: Ownership | None = None  # the tree's Ownership document, when it has one
    warnings: tuple[str, ...] = ()  # said on stderr, never an error (an unused --var)
    policies: tuple[Any, ...] = ()  # compiled Policy rules (``reconciler.manifests.policies.CompiledRule``)

    def __iter__(self) -> Iterator[DesiredResource]:
        return iter(self.resources)

    def of_kind(self, kind: str) -> list[DesiredResource]:
        return [r for r in self.resources if r.kind == kind]

    def read_scope(self) -> ReadScope:
        def keys(kind: str, pred: Any = None) -> frozenset[tuple[str, str]]:  # aliases too: a rename reads them
            return frozenset(
                (str(r.space), name) for r in self.of_kind(kind) if pred is None or pred(r)
                for name in (r.name, *r.aliases)
            )

        spaces = {str(r.space) for r in self.resources if r.space}
        kinds = {r.kind for r in self.resources}
        if self.ownership is not None:  # every kind of every owned space: what is unmanaged there is listed
            spaces |= set(self.ownership.spaces)
            kinds |= set(SPACED_KINDS) if self.ownership.spaces else set()
        return ReadScope(
            spaces=frozenset(spaces),
            **{k.table: keys(k.name) for k in KIND_SPECS.values() if k.spaced},
            retention=keys(DATASET.name, lambda r: r.spec.get("experiment_retention") is not None),
            kinds=frozenset(kinds),
        )


@dataclass(frozen=True)
class ReadScope:
    """What a live read must fetch. Spaces are named by name or id as in the manifests.

    Integrations (both types), spaces, organizations and resource restrictions are always read.
    In each space of ``spaces``: the prompt, dataset and evaluator lists. Per declared prompt: its
    versions (latest and where labels point). Per declared dataset: its examples (latest version).
    Per declared evaluator: its latest version. Per dataset in ``retention``: its experiments.
    """

    spaces: frozenset[str] = frozenset()
    prompts: frozenset[tuple[str, str]] = frozenset()
    datasets: frozenset[tuple[str, str]] = frozenset()
    evaluators: frozenset[tuple[str, str]] = frozenset()
    retention: frozenset[tuple[str, str]] = frozenset()
    kinds: frozenset[str] = frozenset()

    def to_json(self) -> dict[str, list[Any]]:
        return {"spaces": sorted(self.spaces), "kinds": sorted(self.kinds),
                **{name: sorted(list(pair) for pair in getattr(self, name)) for name in _PAIRS}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReadScope:
        pairs = {name: frozenset((str(a), str(b)) for a, b in data.get(name, [])) for name in _PAIRS}
        return cls(spaces=frozenset(data.get("spaces", [])), kinds=frozenset(data.get("kinds", [])), **pairs)


#: The read scope's (space, name) sets: one per spaced kind, and the datasets whose experiments are read.
_PAIRS = (*(k.table for k in KIND_SPECS.values() if k.spaced), "retention")


class ApiObject(BaseModel):
    """An object the API returns, parsed at the client: the fields the reconciler reads are typed
    attributes; fields it does not know are kept (docs/api.md, "Conventions": objects may gain fields). A field
    the API left out is not set (``model_fields_set``): ``raw()`` never invents it."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)

    @classmethod
    def read(cls, value: Any, where: str = "") -> Self:
        """``value`` (an object of an API answer) as this model; an object without a field the
        reconciler reads, or with one of another type, is a ``ResponseError`` naming the field
        (never its value)."""
        try:
            return cls.model_validate(value)
        except ValidationError as exc:
            first = exc.errors(include_input=False, include_url=False)[0]
            field_path = ".".join(str(part) for part in first["loc"]) or "(the object)"
            raise ResponseError(f"the API answered {_article(cls.__name__)} that the reconciler cannot read: "
                                f"{field_path}: {first['msg'].lower()}", method="GET" if where else "",
                                path=where) from None

    def raw(self) -> dict[str, Any]:
        """The object as the API returned it (no field invented, unknown ones kept)."""
        return self.model_dump(exclude_unset=True)


def _article(model_name: str) -> str:
    """``PromptVersionObject`` -> "a prompt version"."""
    words = re.sub(r"(?<!^)(?=[A-Z])", " ", model_name.removesuffix("Object").removeprefix("Live")).lower()
    return ("an " if words[0] in "aeiou" else "a ") + words


class LiveSpace(ApiObject):
    """A space (GET /v2/spaces)."""

    id: str
    name: str
    organization_id: str | None = None


class LiveOrganization(ApiObject):
    """An organization (GET /v2/organizations)."""

    id: str
    name: str | None = None


class LiveIntegration(ApiObject):
    """An integration (GET /v2/integrations). ``config`` stays a mapping in the API's read names:
    its fields depend on the provider, and the planner walks them through the provider table."""

    id: str
    type: str
    name: str
    description: str | None = None
    scopings: list[dict[str, Any]] | None = None
    config: dict[str, Any] | None = None


class SpacedObject(ApiObject):
    """What a prompt and an evaluator are as listed (in a space: ``space_id``)."""

    id: str
    name: str
    description: str | None = None
    space_id: str | None = None


class PromptObject(SpacedObject):
    """A prompt as listed (GET /v2/prompts: no version), or read with its ``version`` taken apart."""


class PromptVersionObject(ApiObject):
    """A prompt version (GET /v2/prompts/{id}/versions, newest first; or a read prompt's
    ``version``). ``labels``: the label names it holds (strings; an object with ``name`` is
    accepted too)."""

    id: str
    commit_message: str | None = None
    provider: str | None = None
    model: str | None = None
    messages: list[dict[str, Any]] | None = None
    input_variable_format: str | None = None
    invocation_params: dict[str, Any] | None = None
    provider_params: dict[str, Any] | None = None
    labels: list[str | dict[str, Any]] | None = None

    def label_names(self) -> list[str]:
        names = (label.get("name") if isinstance(label, dict) else label for label in self.labels or [])
        return [name for name in names if isinstance(name, str)]


class DatasetVersionObject(ApiObject):
    """One of a read dataset's ``versions`` (newest first)."""

    id: str
    name: str | None = None
    created_at: str | None = None


class DatasetObject(ApiObject):
    """A dataset as listed (GET /v2/datasets: no versions, no examples) or read (GET
    /v2/datasets/{id}: with its ``versions``). Its examples are the user's own JSON objects (plus
    ``id``, ``created_at``, ``updated_at``): they stay plain values."""

    id: str
    name: str
    space_id: str | None = None
    versions: list[DatasetVersionObject] | None = None


class ExperimentObject(ApiObject):
    """An experiment (GET /v2/experiments?dataset_id=)."""

    id: str
    name: str | None = None
    created_at: str | None = None


class LlmConfigObject(ApiObject):
    """An evaluator version's ``template_config.llm_config`` (docs/api.md, "Evaluators")."""

    ai_integration_id: str | None = None
    model_name: str | None = None
    invocation_parameters: dict[str, Any] | None = None
    provider_parameters: dict[str, Any] | None = None


class TemplateConfigObject(ApiObject):
    """An evaluator version's ``template_config`` (docs/api.md, "Evaluators"), its fields in the API's order.
    The planner compares what a manifest writes with ``raw()``: the fields the API sent."""

    name: str | None = None
    template: str | None = None
    include_explanations: bool | None = None
    use_function_calling_if_available: bool | None = None
    classification_choices: dict[str, Any] | None = None
    direction: str | None = None
    data_granularity: str | None = None
    llm_config: LlmConfigObject | None = None


class EvaluatorObject(SpacedObject):
    """An evaluator as listed (GET /v2/evaluators), or read with its ``version`` taken apart."""


class EvaluatorVersionObject(ApiObject):
    """An evaluator version (a read evaluator's ``version``: the latest)."""

    id: str | None = None
    commit_message: str | None = None
    template_config: TemplateConfigObject | None = None

    @property
    def integration_id(self) -> str | None:
        """The LLM integration its template names (``llm_config.ai_integration_id``)."""
        llm = self.template_config.llm_config if self.template_config is not None else None
        return llm.ai_integration_id if llm is not None else None


class RestrictionObject(ApiObject):
    """A resource restriction (GET /v2/resource-restrictions)."""

    resource_type: str
    resource_id: str


@dataclass
class LivePrompt:
    prompt: PromptObject  # the listed prompt (no version)
    latest: PromptVersionObject | None = None  # the newest version (with its labels)
    labels: dict[str, str] = field(default_factory=dict)  # label -> version id holding it
    version_count: int | None = None  # how many versions were read (None: versions not read)

    @property
    def id(self) -> str:
        return self.prompt.id

    @classmethod
    def read(cls, value: Any, where: str = "") -> LivePrompt:
        """A prompt as listed: its versions are read after, for a declared one."""
        return cls(prompt=PromptObject.read(value, where))


@dataclass
class LiveDataset:
    dataset: DatasetObject  # the listed dataset
    examples: list[dict[str, Any]] | None = None  # latest version, API shape (id, created_at, ... + user fields)
    # Read against the manifest (``client.live.read_examples``): the examples equal to their
    # declared one (same key, same user fields) are not in ``examples``; their keys are here.
    matched: set[Any] | None = None
    examples_digest: str | None = None  # of every example's id and updated_at, in order (plan pins)
    experiments: list[ExperimentObject] | None = None  # only when retention is declared

    @property
    def id(self) -> str:
        return self.dataset.id

    @classmethod
    def read(cls, value: Any, where: str = "") -> LiveDataset:
        """A dataset as listed: its examples and experiments are read after, for a declared one."""
        return cls(dataset=DatasetObject.read(value, where))


@dataclass
class LiveEvaluator:
    evaluator: EvaluatorObject  # the listed evaluator
    latest: EvaluatorVersionObject | None = None  # the latest version (with its template_config)

    @property
    def id(self) -> str:
        return self.evaluator.id

    @classmethod
    def read(cls, value: Any, where: str = "") -> LiveEvaluator:
        """An evaluator as listed: its latest version is read after, for a declared one."""
        return cls(evaluator=EvaluatorObject.read(value, where))


class LiveType(Protocol):
    """What a kind's live type offers: ``read``, its value of an object as the API answers it (an
    ``ApiObject``'s ``read``; a prompt, dataset or evaluator wrapped with what is read after)."""

    @classmethod
    def read(cls, value: Any, where: str = "") -> Any: ...


#: Each registered kind's live type, keyed by the kind's name: its ``LiveState`` table holds them.
#: ``client.live`` reads a spaced kind's lists with it, and ``apply.confirm`` a re-read object of a
#: kind without a re-read of its own.
LIVE_TYPES: Mapping[str, type[LiveType]] = {
    INTEGRATION.name: LiveIntegration, PROMPT.name: LivePrompt, DATASET.name: LiveDataset,
    EVALUATOR.name: LiveEvaluator, RESTRICTION.name: RestrictionObject,
}


@dataclass
class LiveState:
    """Everything a plan compares against, keyed by identity. Every API object is typed (an
    ``ApiObject``: unknown fields are kept, the planner reads the fields it manages as attributes);
    only dataset examples, the user's own JSON, stay plain values."""

    integrations: dict[tuple[str, str], LiveIntegration] = field(default_factory=dict)  # (type, name)
    spaces: list[LiveSpace] = field(default_factory=list)
    organizations: list[LiveOrganization] = field(default_factory=list)
    prompts: dict[tuple[str, str], LivePrompt] = field(default_factory=dict)  # (space_id, name)
    datasets: dict[tuple[str, str], LiveDataset] = field(default_factory=dict)  # (space_id, name)
    evaluators: dict[tuple[str, str], LiveEvaluator] = field(default_factory=dict)  # (space_id, name)
    restrictions: dict[tuple[str, str], RestrictionObject] = field(default_factory=dict)  # (type, resource_id)
    requests: int = 0  # HTTP requests the read made (one per call; retries not included)
    retries: int = 0  # extra attempts the read needed (429 waits, 5xx and connection retries)

    def tables(self) -> dict[str, dict[tuple[str, str], Any]]:
        """Each registered kind's table (``reconciler.kinds``), keyed by the kind's name: its live
        objects by identity, ``(space_id, name)`` for a spaced kind; the attribute its ``KindSpec.table``
        names."""
        return {spec.name: getattr(self, spec.table) for spec in KIND_SPECS.values()}

    def table(self, kind: str) -> dict[tuple[str, str], Any]:
        """One kind's table (``tables()``)."""
        table: dict[tuple[str, str], Any] = getattr(self, KIND_SPECS[kind].table)
        return table

    def copy(self) -> LiveState:
        """A copy whose tables are copies too, to change without changing this state (the view with
        renames applied, the state read again after apply)."""
        tables: dict[str, Any] = {spec.table: dict(getattr(self, spec.table)) for spec in KIND_SPECS.values()}
        return replace(self, **tables)

    def space_id(self, name_or_id: str) -> str | None:
        """Resolve a manifest's space (exact name first, then id)."""
        for s in self.spaces:
            if s.name == name_or_id:
                return s.id
        for s in self.spaces:
            if s.id == name_or_id:
                return s.id
        return None

    def space_name(self, space_id: str) -> str:
        return next((s.name for s in self.spaces if s.id == space_id), space_id)
