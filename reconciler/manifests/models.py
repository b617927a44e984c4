"""The manifest format (docs/manifests.md) as pydantic v2 models: one model per kind, chosen by
``kind``; an Integration further by ``type``, and an LLM integration's config by ``provider``
(discriminated unions, so an error names the chosen provider's own fields).

This is the one place a kind or a field is defined (its building blocks, and the integration
configs generated from the provider table, are in ``fields``): the validator (``validate``), the spec the
planner reads (``model_dump``), and the JSON Schema (``schema``) all come from these classes.
Integration config models are generated from ``reconciler.providers`` (the table the emulator
enforces): a provider or a provider field is added there, not here.

Omitted is not null: a field the manifest does not write holds ``MISSING`` (and is absent from
``model_dump()``), so the planner leaves it unmanaged; an explicit ``null`` or ``[]`` is kept.

Every model is ``extra="forbid"``, frozen and strict (YAML gives real types: ``"5"`` is not an
integer). Product rules that pydantic does not express are validators that raise ``rule_error``:
one error carrying every problem (each with its own sub-path), which ``messages`` turns into
``FILE:LINE:COL: PATH: message`` lines. No message repeats a value that may be a secret.
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (
    MISSING,
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    TypeAdapter,
    model_validator,
)

from reconciler.kinds import DOCUMENT_KINDS as DOCUMENT_KINDS  # the kinds a document may have
from reconciler.kinds import KINDS, SPACED_KINDS
from reconciler.manifests.fields import (
    EVALUATOR_REQUIRED,
    AgentConfig,
    Doc,
    JsonObject,
    LlmConfig,
    NonEmpty,
    Number,
    Required,
    RuleProblem,
    Strict,
    TaggedUnion,
    _unique,
    problem,
    rule_error,
    tagged,
)
from reconciler.manifests.fields import LLM_CONFIGS as LLM_CONFIGS  # the configs by provider, known here
from reconciler.providers import PROVIDERS

# ------------------------------------------------------------------ documents


class Document(Strict):
    """What every document has: its kind and name."""

    kind: str = Required("The document's kind.")
    name: str = Required("The resource's name.", min_length=1)


#: Fields that name a resource: never ignored (docs/manifests.md, "Two writers").
IDENTITY_FIELDS = ("kind", "name", "space", "type")
_FIELD_PATH = re.compile(r"[^.\s]+(\.[^.\s]+)*\Z")


def _field_paths(paths: list[str]) -> list[str]:
    found: list[RuleProblem] = []
    for i, path in enumerate(paths):
        if not _FIELD_PATH.match(path):
            found.append(((i,), "a field path is the manifest's field names, dotted (version.labels); "
                                "* matches one segment", False))
        elif path.split(".")[0] in IDENTITY_FIELDS:
            found.append(((i,), f"'{path.split('.')[0]}' names the resource and cannot be ignored "
                                f"(identity fields: {', '.join(IDENTITY_FIELDS)})", False))
    if found:
        raise rule_error(found)
    return paths


FieldPaths = Annotated[list[Annotated[str, StringConstraints(min_length=1), Field(
    description="A field path: the manifest's field names, dotted; * matches one segment.")]],
    AfterValidator(_unique), AfterValidator(_field_paths)]
_IGNORE_DOC = ("Field paths (dotted manifest field names, * one segment; a list is compared whole) this tree never "
               "updates nor reports as drift; still sent when the resource is created.")


#: A list whose items are unique: checked (``_unique``), and said in the schema.
UNIQUE_ITEMS = Field(json_schema_extra={"uniqueItems": True})
UniqueNames = Annotated[list[NonEmpty], AfterValidator(_unique), UNIQUE_ITEMS]


class Resource(Document):
    """A document that declares one resource of the API."""

    protect: bool | MISSING = Doc("Never deleted or replaced by any plan (prune, --allow-replace, retention).")
    ignore_changes: FieldPaths | MISSING = Doc(_IGNORE_DOC, json_schema_extra={"uniqueItems": True})


_ALIASES_DOC = ("Former names: a live resource under one of them (and none under `name`) is renamed in place "
                "(PATCH of name, the id kept).")


class Renamable(Strict):
    """A kind the API can rename: former names are aliases."""

    aliases: UniqueNames | MISSING = Doc(_ALIASES_DOC)


class Spaced(Resource):
    """A resource that lives in a space."""

    space: str = Required("A space name or id.", min_length=1)


class Scoping(Strict):
    """Where an integration is usable: null organization_id and space_id: account-wide; space_id
    null: organization-wide; or {space: NAME}."""

    organization_id: NonEmpty | None | MISSING = Doc("An organization id (null: every organization).")
    space_id: NonEmpty | None | MISSING = Doc("A space id (null: every space of the organization).")
    space: NonEmpty | MISSING = Doc("A space by name: resolved to its space_id and organization_id.")

    @model_validator(mode="after")
    def _space_or_ids(self) -> Scoping:
        if self.space is not MISSING and (self.space_id is not MISSING or self.organization_id is not MISSING):
            raise problem("give 'space' (a space name, resolved to its space_id and organization_id) "
                          "or space_id/organization_id, not both", "space", key=True)
        return self


_SCOPINGS_DOC = "[] = account-wide. Replaces the stored scopings."
_TYPE_DOC = "LLM or AGENT. Immutable: a change is a replacement."


class Integration(Renamable, Resource):
    """An integration; identity (type, name)."""

    refused = {"space": "'space' does not apply to Integration (integrations are placed with scopings)"}
    kind: Literal["Integration"] = Required("The document's kind.")


class LlmIntegration(Integration):
    """An LLM integration."""

    refused = {**Integration.refused,
               "description": "'description' is not valid for an LLM integration (the API rejects it); "
                              "only AGENT integrations have one"}
    type: Literal["LLM"] = Required(_TYPE_DOC)
    scopings: list[Scoping] | MISSING = Doc(_SCOPINGS_DOC)
    config: LlmConfig = Required("The provider's configuration, chosen by provider.")


class AgentIntegration(Integration):
    """An AGENT integration (the service replays requests at its endpoint)."""

    type: Literal["AGENT"] = Required(_TYPE_DOC)
    description: str | None | MISSING = Doc("What the agent does.")
    scopings: list[Scoping] | MISSING = Doc(_SCOPINGS_DOC)
    config: AgentConfig = Required("The AGENT configuration.")

    @model_validator(mode="after")
    def _scopings(self) -> AgentIntegration:
        if self.scopings is MISSING:
            return self
        found = [(("scopings", i), "an AGENT scoping with space_id must also carry organization_id", False)
                 for i, s in enumerate(self.scopings)
                 if s.space_id not in (None, MISSING) and s.organization_id in (None, MISSING)]
        if found:
            raise rule_error(found)
        return self


INTEGRATION = tagged("type", {"LLM": LlmIntegration, "AGENT": AgentIntegration})


class Message(Strict):
    """One chat message of a prompt version."""

    role: Literal["system", "user", "assistant", "tool"] = Required("Who speaks.")
    content: str = Required("The message text (may hold template variables).")


class PromptVersion(Strict):
    """The version a prompt must have live; a difference creates a new version."""

    commit_message: str = Required("The new version's commit message.", min_length=1)
    provider: Literal[tuple(PROVIDERS)] = Required("The provider the prompt is written for.")  # type: ignore[valid-type]
    model: NonEmpty | MISSING = Doc("The model name.")
    messages: list[Message] = Required("The chat messages.", min_length=1)
    input_variable_format: Literal["f_string", "mustache", "none"] | MISSING = Doc(
        "How template variables are written.")
    invocation_params: JsonObject | MISSING = Doc("Model invocation parameters (temperature, ...).")
    provider_params: JsonObject | MISSING = Doc("Provider-specific parameters.")
    labels: UniqueNames | MISSING = Doc("Labels the live version must carry.")


class Prompt(Spaced):
    """A prompt in a space; identity (space, name)."""

    refused = {"aliases": "'aliases' does not apply to Prompt: the API cannot rename a prompt, so a rename there "
                          "is a replacement (a new prompt; --prune deletes the old one)"}
    kind: Literal["Prompt"] = Required("The document's kind.")
    description: str | None | MISSING = Doc("The prompt's description.")
    restricted: bool | MISSING = Doc("Manages the PROMPT resource restriction.")
    version: PromptVersion = Required("The version the prompt must have live.")


class Retention(Strict):
    """Delete experiments older than older_than_days and not among the keep_last newest."""

    keep_last: int | MISSING = Doc("Keep at least this many newest experiments.", ge=0)
    older_than_days: int | MISSING = Doc("Delete only experiments older than this many days.", ge=0)

    @model_validator(mode="after")
    def _one(self) -> Retention:
        if self.keep_last is MISSING and self.older_than_days is MISSING:
            raise problem("needs keep_last, older_than_days or both")
        return self


class Dataset(Renamable, Spaced):
    """A dataset in a space; its examples are inline or in examples_file (read by ``examples``)."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [{"required": ["examples"]},
                                                           {"required": ["examples_file"]}]})
    kind: Literal["Dataset"] = Required("The document's kind.")
    key: NonEmpty | MISSING = Doc("The example field that identifies an example.")
    examples: list[JsonObject] | MISSING = Doc("Inline examples (objects).", min_length=1)
    examples_file: NonEmpty | MISSING = Doc(
        "A .jsonl (one object a line) or .json (an array) file, relative to the manifest.")
    experiment_retention: Retention | None | MISSING = Doc("Which experiments to delete; null: none.")


class LlmConfigRef(Strict):
    """The model an evaluator calls: an LLM integration (by name or id) and a model name."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [{"required": ["integration"]},
                                                           {"required": ["ai_integration_id"]}]})
    required_reasons = {"model_name": EVALUATOR_REQUIRED}
    integration: NonEmpty | MISSING = Doc("The name of an LLM Integration (resolved to ai_integration_id).")
    ai_integration_id: NonEmpty | MISSING = Doc("An LLM integration's id.")
    model_name: NonEmpty = Required("The model to call.")
    invocation_parameters: JsonObject | MISSING = Doc("Model invocation parameters.")
    provider_parameters: JsonObject | MISSING = Doc("Provider-specific parameters.")

    @model_validator(mode="after")
    def _integration(self) -> LlmConfigRef:
        if self.integration is MISSING and self.ai_integration_id is MISSING:
            raise problem("needs 'integration' (an LLM Integration name) or 'ai_integration_id'", key=True)
        if self.integration is not MISSING and self.ai_integration_id is not MISSING:
            raise problem("give 'integration' or 'ai_integration_id', not both", "ai_integration_id", key=True)
        return self


class TemplateConfig(Strict):
    """An evaluator's template configuration."""

    required_reasons = {"name": EVALUATOR_REQUIRED, "classification_choices": EVALUATOR_REQUIRED}
    name: NonEmpty = Required("The evaluator's template name.")
    template: NonEmpty = Required("The evaluation template.")
    include_explanations: bool | MISSING = Doc("Ask the model to explain its label.")
    use_function_calling_if_available: bool | MISSING = Doc("Use function calling when the model has it.")
    classification_choices: dict[str, Number] = Required("Label -> score.", min_length=1)
    direction: Literal["maximize", "minimize", "none"] | MISSING = Doc("Which way scores are better.")
    data_granularity: Literal["span", "trace", "session"] | MISSING = Doc("What one evaluation covers.")
    llm_config: LlmConfigRef = Required("The model the evaluator calls.")


class Evaluator(Renamable, Spaced):
    """An LLM evaluator in a space; identity (space, name)."""

    kind: Literal["Evaluator"] = Required("The document's kind.")
    description: str | None | MISSING = Doc("The evaluator's description.")
    commit_message: NonEmpty = Required("The commit message of a new version.")
    template_config: TemplateConfig = Required("The template configuration.")


class ResourceRestriction(Resource):
    """A resource restriction; identity (resource_type, resource_id)."""

    refused = {"space": "'space' does not apply to ResourceRestriction "
                        "(a restriction is identified by resource_type and resource_id)",
               "aliases": "'aliases' does not apply to ResourceRestriction"}
    kind: Literal["ResourceRestriction"] = Required("The document's kind.")
    resource_type: Literal["PROJECT", "DASHBOARD", "PROMPT"] = Required("The restricted resource's type.")
    resource_id: NonEmpty = Required("The restricted resource's id.")


def _kind_globs(what: str, shape: str, *, any_kind: bool) -> Any:
    """A check of globs that start with a kind (``what`` names them, ``shape`` says how one is
    written): each has a ``/`` and a known kind before it (``*`` too with ``any_kind``)."""
    def check(globs: list[str]) -> list[str]:
        from reconciler.manifests.hints import suggest

        found: list[RuleProblem] = []
        for i, glob in enumerate(globs):
            kind, sep, rest = glob.partition("/")
            if not sep or not rest:
                found.append(((i,), f"{what} is {shape}", False))
            elif not (any_kind and kind == "*") and kind not in KINDS:
                hint = suggest(kind, KINDS)
                found.append(((i,), f"unknown kind '{kind}' in {what}"
                                    + (f"; did you mean '{hint}'?" if hint else f" (one of {', '.join(KINDS)})"), False))
        if found:
            raise rule_error(found)
        return globs

    return check


_protect = _kind_globs("a protect glob", "KIND/NAME (KIND/SPACE/NAME for " + ", ".join(SPACED_KINDS)
                       + "), e.g. Integration/*-prod", any_kind=False)
_addresses = _kind_globs("an address glob", "KIND/NAME or KIND/SPACE/NAME, e.g. Evaluator/support/*", any_kind=True)


Globs = Annotated[list[Annotated[str, StringConstraints(min_length=1),
                                 Field(description="A name glob (* ? [..]), case-sensitive.")]],
                  AfterValidator(_unique), UNIQUE_ITEMS]


class IgnoreRule(Strict):
    """Fields this tree never updates nor reports, on every resource an address glob matches."""

    match: Annotated[list[Annotated[str, StringConstraints(min_length=1), Field(
        description="An address glob: KIND/NAME or KIND/SPACE/NAME (* ? [..]).")]],
        AfterValidator(_addresses)] = Required("Address globs of the resources the rule covers.", min_length=1)
    fields: FieldPaths = Required("Field paths to ignore (dotted manifest field names, * one segment).",
                                  min_length=1)


class Ownership(Document):
    """What this tree owns: --prune deletes only undeclared resources inside
    it, and plan and drift list them as unmanaged. At most one per tree."""

    refused = {"space": "'space' does not apply to Ownership (list the owned spaces under 'spaces')"}
    kind: Literal["Ownership"] = Required("The document's kind.")
    name: str = Required("The owner (a team or an environment); shown in plans.", min_length=1)
    spaces: UniqueNames | MISSING = Doc(
        "Space names or ids: every Prompt, Dataset and Evaluator in them belongs to this tree.")
    integrations: Globs | MISSING = Doc("Name globs of the integrations (both types) this tree owns.")
    resource_restrictions: Globs | MISSING = Doc(
        "Globs of TYPE/resource_id (or resource_id) of the restrictions this tree owns.")
    protect: Annotated[Globs, AfterValidator(_protect)] | MISSING = Doc(
        "KIND/NAME globs (KIND/SPACE/NAME for spaced kinds) no plan may delete or replace.")
    ignore_changes: list[IgnoreRule] | MISSING = Doc(
        "Ignore rules for many resources: address globs (match) x field paths (fields).")


#: The model of each document kind (``kinds.DOCUMENT_KINDS``): a kind registered in ``reconciler.kinds``
#: has its model above and a line here, in the registry's order (``tests/test_kinds.py`` checks both).
KIND_MODELS: Mapping[str, Any] = {
    "Integration": INTEGRATION,
    "Prompt": Prompt,
    "Dataset": Dataset,
    "Evaluator": Evaluator,
    "ResourceRestriction": ResourceRestriction,
    "Ownership": Ownership,
}

ManifestDocument = tagged("kind", KIND_MODELS)
DOCUMENT: TypeAdapter[Any] = TypeAdapter(ManifestDocument, config=ConfigDict(hide_input_in_errors=True, strict=True))


# ------------------------------------------------------------------ walking the models by type


def unwrap(tp: Any) -> Any:
    """Strip Annotated, MISSING and None from a declared type; a tagged union becomes its ``TaggedUnion``."""
    while True:
        if get_origin(tp) is Annotated:
            base, *meta = get_args(tp)
            disc = next((m for m in meta if isinstance(m, Discriminator)), None)
            if disc is not None and isinstance(disc.discriminator, TaggedUnion):
                return disc.discriminator
            tp = base
            continue
        if get_origin(tp) in (Union, types.UnionType):
            rest = [a for a in get_args(tp) if a is not type(None) and a is not MISSING]
            if len(rest) == 1:
                tp = rest[0]
                continue
        return tp


def field_type(model: type[BaseModel], name: str) -> Any:
    info = model.model_fields.get(name)
    return info.rebuild_annotation() if info is not None else None


def construct(tp: Any, value: Any) -> Any:
    """``value`` (a spec that is already valid: a dump, or one a test writes) as the models,
    without validating it again."""
    tp = unwrap(tp)
    if isinstance(tp, TaggedUnion):
        member = tp.members.get(str(value.get(tp.key))) if isinstance(value, dict) else None
        return construct(member, value) if member is not None else value
    if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(value, dict):
        return tp.model_construct(**{k: construct(field_type(tp, k), v) for k, v in value.items()})
    if get_origin(tp) is list and isinstance(value, list):
        item = unwrap(get_args(tp)[0])
        if isinstance(item, TaggedUnion) or (isinstance(item, type) and issubclass(item, BaseModel)):
            return [construct(item, v) for v in value]
    return value


def spec_of(model: BaseModel) -> dict[str, Any]:
    """What the planner reads as ``DesiredResource.spec``: the fields written (MISSING ones left
    out), nested models as dicts, every other value as validated (a SecretRef stays one). The
    same as ``model_dump()``, at a fraction of its cost on small documents."""
    out: dict[str, Any] = {}
    for k, v in model.__dict__.items():
        if v is MISSING:
            continue
        if isinstance(v, BaseModel):
            v = spec_of(v)
        elif type(v) is list and v and isinstance(v[0], BaseModel):
            v = [spec_of(x) for x in v]
        out[k] = v
    return out


def document_of(kind: str, name: str, space: str | None, spec: Mapping[str, Any]) -> Any:
    """The typed document of a resource built from its spec (not validated again: see ``construct``)."""
    head = {"kind": kind, "name": name, **({"space": space} if space is not None else {})}
    return construct(ManifestDocument, {**head, **spec})

