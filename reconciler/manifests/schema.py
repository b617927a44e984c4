"""The manifest format (product.md section 3): one definition per kind, built on ``fieldtypes``.

Integration config fields come from ``reconciler.providers`` (the table the emulator enforces), so
which field applies to which provider, what is nullable, what is a secret and what a create needs
are written down once. The same definitions give ``manifest_json_schema()``.

Rules that go beyond the API's own 422s because a manifest may have to *create* its resource:
- an LLM integration must carry every field its provider requires on create (``api_key`` for the
  hosted vendors, ``auth`` for CLOUD_D, ...), and providers with a model-source rule must keep one
  with the create defaults (``is_default_models_enabled: false``, ``model_names: []``) in mind;
- a Dataset needs at least one example (the API refuses to create an empty dataset).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from reconciler.manifests.fieldtypes import (
    Bool,
    Ctx,
    Headers,
    Int,
    JsonObject,
    JsonSchema,
    ListOf,
    MapOf,
    Num,
    Path,
    Secret,
    Str,
    Struct,
    Tagged,
    Type,
    suggest,
)
from reconciler.model import KINDS, SPACED_KINDS
from reconciler.providers import (
    AGENT_ENDPOINT_MAX_CHARS,
    AGENT_FIELDS,
    AUTH_MODES,
    INTEGRATION_TYPES,
    LLM_CONFIG_FIELDS,
    PRESET_DESCRIPTION_MAX,
    PRESET_NAME_MAX,
    PROVIDERS,
    ConfigField,
    FieldKind,
    Provider,
    has_model_source,
    non_public_host,
    without_required,
)

SCHEMA_ID = "https://reconciler.dev/schemas/manifest.json"
MESSAGE_ROLES = ("system", "user", "assistant", "tool")
INPUT_VARIABLE_FORMATS = ("f_string", "mustache", "none")
RESTRICTION_TYPES = ("PROJECT", "DASHBOARD", "PROMPT")
DIRECTIONS = ("maximize", "minimize", "none")
GRANULARITIES = ("span", "trace", "session")
EXAMPLE_READ_ONLY = ("id", "created_at", "updated_at")
CREATE_REQUIRED = " (needed to create the integration when it does not exist yet)"


# ------------------------------------------------------------------ Integration config (providers table)


def _not_blank(value: str, path: Path, ctx: Ctx) -> None:
    if value and not value.strip():
        ctx.problem(path, "must not be blank")


def _field_type(f: ConfigField) -> Type:
    """The manifest type of one provider-table field."""
    if f.kind is FieldKind.BOOL:
        return Bool(nullable=f.nullable)
    if f.kind is FieldKind.STRING:
        refused_null = (f"cannot be null: {f.name} is required on the resource (the API answers 422)"
                        if f.required_on_create and not f.nullable else None)
        return Str(min_len=1, nullable=f.nullable, https=f.https, null_message=refused_null,
                   extra=_not_blank if f.required_on_create else None)
    if f.kind is FieldKind.STRING_LIST:
        return ListOf(Str(min_len=1), nullable=f.nullable)
    if f.kind is FieldKind.SECRET:
        return Secret(nullable=f.nullable)
    if f.kind is FieldKind.HEADERS:
        return Headers(nullable=f.nullable)
    if f.kind is FieldKind.AUTH:
        return _AUTH
    if f.kind is FieldKind.OBJECT:
        return JsonObject(nullable=f.nullable)
    if f.kind is FieldKind.PRESETS:
        return _PRESETS
    raise AssertionError(f"no manifest type for {f.kind}")  # pragma: no cover


def _create_required(fields: Mapping[str, ConfigField]) -> tuple[str, ...]:
    return tuple(name for name, f in fields.items() if f.required_on_create)


_AUTH = Tagged("auth_type", {
    mode.auth_type: Struct(
        {"auth_type": Str(enum=(mode.auth_type,)), **{n: _field_type(f) for n, f in mode.fields.items()}},
        required=("auth_type", *_create_required(mode.fields)),
        required_reason={n: CREATE_REQUIRED for n in mode.fields},
        forbidden={n: f"'{n}' does not apply to auth_type {mode.auth_type}"
                   for other in AUTH_MODES.values() for n in other.fields if n not in mode.fields},
    )
    for mode in AUTH_MODES.values()
}, doc="CLOUD_D authentication (CreateAwsBedrockAuth); replaces the stored auth wholesale.")


def _providers_with(name: str) -> str:
    return ", ".join(p for p, spec in PROVIDERS.items() if name in spec.fields)


def _model_source_rule(provider: Provider) -> Any:
    defaults = {n: provider.fields[n].default for n in ("is_default_models_enabled", "model_names")}

    def rule(out: dict[str, Any], path: Path, ctx: Ctx) -> None:
        effective = {**defaults, **{k: out[k] for k in defaults if k in out}}
        if not isinstance(effective["model_names"], (list, tuple)) or not isinstance(
                effective["is_default_models_enabled"], bool):
            return  # a type error was reported already
        if not has_model_source(effective):
            ctx.problem(path, f"{provider.name} needs a model source: set is_default_models_enabled: true "
                        "or list model_names (omitted fields count with their create defaults: false and [])",
                        key=True)

    return rule


def _llm_config(provider: Provider) -> Struct:
    forbidden = {n: f"'{n}' does not apply to provider {provider.name} (the API answers 422); "
                 f"it applies to {_providers_with(n)}"
                 for n in LLM_CONFIG_FIELDS if n != "provider" and n not in provider.fields}
    forbidden |= _read_side_hints(provider.fields)
    return Struct(
        {"provider": Str(enum=(provider.name,)), **{n: _field_type(f) for n, f in provider.fields.items()}},
        required=("provider", *_create_required(provider.fields)),
        required_reason={n: CREATE_REQUIRED for n in provider.fields},
        forbidden=forbidden,
        rules=(_model_source_rule(provider),) if provider.needs_model_source else (),
        doc=f"{provider.name} ({provider.kind}) configuration.",
    )


def _read_side_hints(fields: Mapping[str, ConfigField]) -> dict[str, str]:
    """``has_api_key`` and friends are what a GET shows; say what to write instead."""
    return {f.read_name: f"'{f.read_name}' is read-only (the API reports it); write '{f.name}' instead"
            for f in fields.values() if f.read_as}


# ------------------------------------------------------------------ AGENT config


def _public_endpoint(value: str, path: Path, ctx: Ctx) -> None:
    """The service calls the endpoint only at a public address: what is not public without
    resolving (``providers.non_public_host``) cannot work. Other names are the service's to resolve."""
    try:
        host = urlsplit(value).hostname
    except ValueError:
        host = None
    if not host:
        ctx.problem(path, "must be an absolute https:// URL with a host")
        return
    why = non_public_host(host)
    if why is not None:
        ctx.problem(path, f"host {host} is {why}; the service only calls public addresses")


@lru_cache(maxsize=512)
def _schema_error(schema_json: str) -> str | None:
    from jsonschema import Draft7Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft7Validator.check_schema(json.loads(schema_json))
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        return f"is not a valid JSON Schema (Draft-07){' at ' + where if where else ''}: {exc.message}"
    return None


@lru_cache(maxsize=512)
def _partial_validator(schema_json: str) -> Any:
    from jsonschema import Draft7Validator

    return Draft7Validator(without_required(json.loads(schema_json)))



def _agent_config_rule(out: dict[str, Any], path: Path, ctx: Ctx) -> None:
    schema = out.get("input_schema")
    valid_schema = False
    if isinstance(schema, dict):
        key = json.dumps(schema, sort_keys=True)
        error = _schema_error(key)
        if error:
            ctx.problem((*path, "input_schema"), error)
        else:
            valid_schema = True
    presets = out.get("request_presets")
    if not isinstance(presets, list):
        return
    seen: dict[str, int] = {}
    for i, preset in enumerate(presets):
        if not isinstance(preset, dict):
            continue
        name = preset.get("name")
        if isinstance(name, str):
            if name in seen:
                ctx.problem((*path, "request_presets", i, "name"),
                            f"preset name '{name}' is already used by request_presets[{seen[name]}] "
                            "(names are unique within the integration, case-sensitive)")
            else:
                seen[name] = i
        config = preset.get("config")
        if valid_schema and isinstance(config, dict):
            try:
                errors = sorted(_partial_validator(key).iter_errors(config), key=lambda e: list(e.absolute_path))
            except Exception as exc:  # an unresolvable $ref: jsonschema never fetches remote documents
                ctx.problem((*path, "input_schema"), f"cannot be used to check presets: {exc}")
                return
            for err in errors:
                sub = tuple(err.absolute_path)
                ctx.problem((*path, "request_presets", i, "config", *sub),
                            f"does not match input_schema: {err.message}")


_PRESET = Struct(
    {
        "name": Str(min_len=1, max_len=PRESET_NAME_MAX, doc="Unique within the integration (case-sensitive)."),
        "description": Str(max_len=PRESET_DESCRIPTION_MAX, nullable=True),
        "config": JsonObject(doc="A partial request body, checked against input_schema without `required`."),
    },
    required=("name", "config"),
)
_PRESETS = ListOf(_PRESET, doc="Replaces the stored presets; matched by name.")

_AGENT_TYPES: dict[str, Type] = {
    "endpoint": Str(min_len=1, max_len=AGENT_ENDPOINT_MAX_CHARS, https=True, extra=_public_endpoint,
                    doc="The HTTPS endpoint the service calls for replay (a public address)."),
}


def _agent_config() -> Struct:
    types = {n: _AGENT_TYPES.get(n) or _field_type(f) for n, f in AGENT_FIELDS.items()}
    forbidden = {n: f"'{n}' is an LLM config field; it does not apply to an AGENT integration"
                 for n in LLM_CONFIG_FIELDS if n not in AGENT_FIELDS}
    forbidden |= _read_side_hints(AGENT_FIELDS)
    return Struct(types, required=_create_required(AGENT_FIELDS),
                  required_reason={n: CREATE_REQUIRED for n in AGENT_FIELDS},
                  forbidden=forbidden, rules=(_agent_config_rule,), doc="AGENT configuration.")


# ------------------------------------------------------------------ documents


RENAMABLE_KINDS = ("Integration", "Dataset", "Evaluator")


def _doc(kind: str, fields: dict[str, Type], *, required: tuple[str, ...] = (), spaced: bool = False,
         forbidden: Mapping[str, str] | None = None, **kw: Any) -> Struct:
    head: dict[str, Type] = {"kind": Str(enum=(kind,)), "name": Str(min_len=1),
                             "protect": Bool(doc="Never deleted or replaced by any plan (prune, --allow-replace, "
                                                 "retention).")}
    refused = dict(forbidden or {})
    if kind in RENAMABLE_KINDS:
        head["aliases"] = ListOf(Str(min_len=1), unique=True,
                                 doc="Former names: a live resource under one of them (and none under `name`) is "
                                     "renamed in place (PATCH of name, the id kept).")
    else:
        refused["aliases"] = (f"'aliases' does not apply to {kind}: the API cannot rename a prompt, so a rename "
                              "there is a replacement (a new prompt; --prune deletes the old one)"
                              if kind == "Prompt" else f"'aliases' does not apply to {kind}")
    if spaced:
        head["space"] = Str(min_len=1, doc="A space name or id.")
    else:
        refused["space"] = f"'space' does not apply to {kind}" + (
            " (integrations are placed with scopings)" if kind == "Integration" else
            " (a restriction is identified by resource_type and resource_id)")
    return Struct({**head, **fields}, required=("kind", "name", *(("space",) if spaced else ()), *required),
                  forbidden=refused, **kw)


def _agent_scopings_rule(out: dict[str, Any], path: Path, ctx: Ctx) -> None:
    scopings = out.get("scopings")
    if not isinstance(scopings, list):
        return
    for i, s in enumerate(scopings):
        if isinstance(s, dict) and s.get("space_id") is not None and s.get("organization_id") is None:
            ctx.problem((*path, "scopings", i),
                        "an AGENT scoping with space_id must also carry organization_id")


def _scoping_rule(out: dict[str, Any], path: Path, ctx: Ctx) -> None:
    if "space" in out and ("space_id" in out or "organization_id" in out):
        ctx.problem((*path, "space"), "give 'space' (a space name, resolved to its space_id and organization_id) "
                    "or space_id/organization_id, not both", key=True)


_SCOPING = Struct({"organization_id": Str(min_len=1, nullable=True), "space_id": Str(min_len=1, nullable=True),
                   "space": Str(min_len=1, doc="A space by name: resolved to its space_id and organization_id.")},
                  rules=(_scoping_rule,),
                  doc="null organization_id and space_id: account-wide; space_id null: organization-wide; "
                      "or {space: NAME}.")
_SCOPINGS = ListOf(_SCOPING, doc="[] = account-wide. Replaces the stored scopings.")
_INTEGRATION_TYPE = Str(enum=INTEGRATION_TYPES, doc="Immutable: a change is a replacement.")

INTEGRATION = Tagged("type", {
    "LLM": _doc("Integration", {
        "type": Str(enum=("LLM",)),
        "scopings": _SCOPINGS,
        "config": Tagged("provider", {p: _llm_config(spec) for p, spec in PROVIDERS.items()}),
    }, required=("type", "config"),
        forbidden={"description": "'description' is not valid for an LLM integration (the API rejects it); "
                                  "only AGENT integrations have one"}),
    "AGENT": _doc("Integration", {
        "type": Str(enum=("AGENT",)),
        "description": Str(nullable=True),
        "scopings": _SCOPINGS,
        "config": _agent_config(),
    }, required=("type", "config"), rules=(_agent_scopings_rule,)),
}, doc="An LLM or AGENT integration; identity (type, name).")

_MESSAGE = Struct({"role": Str(enum=MESSAGE_ROLES), "content": Str()}, required=("role", "content"))

PROMPT = _doc("Prompt", {
    "description": Str(nullable=True),
    "restricted": Bool(doc="Manages the PROMPT resource restriction."),
    "version": Struct({
        "commit_message": Str(min_len=1),
        "provider": Str(enum=tuple(PROVIDERS)),
        "model": Str(min_len=1),
        "messages": ListOf(_MESSAGE, min_items=1),
        "input_variable_format": Str(enum=INPUT_VARIABLE_FORMATS),
        "invocation_params": JsonObject(),
        "provider_params": JsonObject(),
        "labels": ListOf(Str(min_len=1), unique=True, doc="Labels the live version must carry."),
    }, required=("commit_message", "provider", "messages")),
}, required=("version",), spaced=True)


def _retention_rule(out: dict[str, Any], path: Path, ctx: Ctx) -> None:
    if "keep_last" not in out and "older_than_days" not in out:
        ctx.problem(path, "needs keep_last, older_than_days or both")


_RETENTION = Struct({"keep_last": Int(minimum=0), "older_than_days": Int(minimum=0)},
                    rules=(_retention_rule,), nullable=True,
                    doc="Delete experiments older than older_than_days and not among the keep_last newest.")


def _dataset_rule(out: dict[str, Any], path: Path, ctx: Ctx) -> None:
    from reconciler.manifests.examples import dataset_examples

    dataset_examples(out, path, ctx)


DATASET = _doc("Dataset", {
    "key": Str(min_len=1, doc="The example field that identifies an example."),
    "examples": ListOf(JsonObject(), min_items=1, doc="Inline examples (objects)."),
    "examples_file": Str(min_len=1, doc="A .jsonl (one object a line) or .json (an array) file, "
                                        "relative to the manifest."),
    "experiment_retention": _RETENTION,
}, spaced=True, rules=(_dataset_rule,), one_of_required=(("examples", "examples_file"),))


def _llm_config_rule(out: dict[str, Any], path: Path, ctx: Ctx) -> None:
    given = [k for k in ("integration", "ai_integration_id") if k in out]
    if not given:
        ctx.problem(path, "needs 'integration' (an LLM Integration name) or 'ai_integration_id'", key=True)
    elif len(given) == 2:
        ctx.problem((*path, "ai_integration_id"), "give 'integration' or 'ai_integration_id', not both", key=True)


_EVALUATOR_REQUIRED = " (needed to create the evaluator when it does not exist yet)"

EVALUATOR = _doc("Evaluator", {
    "description": Str(nullable=True),
    "commit_message": Str(min_len=1),
    "template_config": Struct({
        "name": Str(min_len=1),
        "template": Str(min_len=1),
        "include_explanations": Bool(),
        "use_function_calling_if_available": Bool(),
        "classification_choices": MapOf(Num(), min_items=1),
        "direction": Str(enum=DIRECTIONS),
        "data_granularity": Str(enum=GRANULARITIES),
        "llm_config": Struct({
            "integration": Str(min_len=1, doc="The name of an LLM Integration (resolved to ai_integration_id)."),
            "ai_integration_id": Str(min_len=1),
            "model_name": Str(min_len=1),
            "invocation_parameters": JsonObject(),
            "provider_parameters": JsonObject(),
        }, rules=(_llm_config_rule,), one_of_required=(("integration", "ai_integration_id"),),
            required=("model_name",), required_reason={"model_name": _EVALUATOR_REQUIRED}),
    }, required=("name", "template", "classification_choices", "llm_config"),
        required_reason={k: _EVALUATOR_REQUIRED for k in ("name", "classification_choices")}),
}, required=("commit_message", "template_config"), spaced=True)

RESOURCE_RESTRICTION = _doc("ResourceRestriction", {
    "resource_type": Str(enum=RESTRICTION_TYPES),
    "resource_id": Str(min_len=1),
}, required=("resource_type", "resource_id"))


PROTECTABLE_KINDS = (*KINDS, "Experiment")


def _protect_rule(out: dict[str, Any], path: Path, ctx: Ctx) -> None:
    for i, glob in enumerate(out.get("protect") or []):
        if not isinstance(glob, str) or not glob:
            continue
        kind, sep, rest = glob.partition("/")
        if not sep or not rest:
            ctx.problem((*path, "protect", i), "a protect glob is KIND/NAME (KIND/SPACE/NAME for "
                        + ", ".join(SPACED_KINDS) + "), e.g. Integration/*-prod")
        elif kind not in KINDS:
            hint = suggest(kind, KINDS)
            ctx.problem((*path, "protect", i), f"unknown kind '{kind}' in a protect glob"
                        + (f"; did you mean '{hint}'?" if hint else f" (one of {', '.join(KINDS)})"))


def _globs(what: str) -> ListOf:
    return ListOf(Str(min_len=1, doc="A name glob (* ? [..]), case-sensitive."), unique=True, doc=what)


OWNERSHIP = Struct({
    "kind": Str(enum=("Ownership",)),
    "name": Str(min_len=1, doc="The owner (a team or an environment); shown in plans."),
    "spaces": ListOf(Str(min_len=1), unique=True,
                     doc="Space names or ids: every Prompt, Dataset and Evaluator in them belongs to this tree."),
    "integrations": _globs("Name globs of the integrations (both types) this tree owns."),
    "resource_restrictions": _globs("Globs of TYPE/resource_id (or resource_id) of the restrictions this tree "
                                    "owns."),
    "protect": _globs("KIND/NAME globs (KIND/SPACE/NAME for spaced kinds) no plan may delete or replace."),
}, required=("kind", "name"), rules=(_protect_rule,),
    forbidden={"space": "'space' does not apply to Ownership (list the owned spaces under 'spaces')"},
    doc="What this tree owns (product.md section 5): --prune deletes only undeclared resources inside it, "
        "and plan and drift list them as unmanaged. At most one per tree.")

DOCUMENT_KINDS = (*KINDS, "Ownership")
DOCUMENT = Tagged("kind", {
    "Integration": INTEGRATION,
    "Prompt": PROMPT,
    "Dataset": DATASET,
    "Evaluator": EVALUATOR,
    "ResourceRestriction": RESOURCE_RESTRICTION,
    "Ownership": OWNERSHIP,
})
assert tuple(DOCUMENT.variants) == DOCUMENT_KINDS


def manifest_json_schema() -> dict[str, Any]:
    """The JSON Schema (Draft-07) of one manifest document: a oneOf over kinds."""
    variants: list[JsonSchema] = []
    for kind, t in DOCUMENT.variants.items():
        s = t.schema()
        s.setdefault("title", kind)
        variants.append(s)
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": SCHEMA_ID,
        "title": "reconciler manifest document",
        "description": "One document of a reconciler manifest (see docs/manifests.md). "
                       "Secrets are {env: NAME} or {file: PATH} references only.",
        "type": "object",
        "required": ["kind", "name"],
        "properties": {"kind": {"enum": list(DOCUMENT_KINDS)}},
        "oneOf": variants,
    }
