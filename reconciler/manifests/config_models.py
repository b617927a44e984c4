"""Integration configs as models, generated from the provider table (``reconciler.providers``): one
config model per LLM provider (chosen by ``provider``), the CLOUD_D auth modes (by ``auth_type``),
and the AGENT config (its input schema and request presets checked). A provider or a provider field
is added in the table, not here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import MISSING, AfterValidator, StringConstraints, create_model, model_validator

from reconciler.manifests.fields import (
    CREATE_REQUIRED,
    HTTPS_SCHEMA,
    Doc,
    Headers,
    JsonObject,
    NonEmpty,
    Required,
    RuleProblem,
    Secret,
    Strict,
    _https,
    _not_blank,
    problem,
    rule_error,
    tagged,
)
from reconciler.providers import (
    AGENT_ENDPOINT_MAX_CHARS,
    AGENT_FIELDS,
    AUTH_MODES,
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

# ------------------------------------------------------------------ Integration config (providers table)


_FIELD_DOCS = {
    FieldKind.BOOL: "A boolean.",
    FieldKind.STRING: "A string.",
    FieldKind.STRING_LIST: "A list of names; replaces the stored list.",
    FieldKind.SECRET: "A secret reference ({env: NAME} or {file: PATH}); write-only.",
    FieldKind.HEADERS: "Header name -> secret reference; write-only, replaces the stored headers.",
    FieldKind.AUTH: "CLOUD_D authentication (CreateAwsBedrockAuth); replaces the stored auth wholesale.",
    FieldKind.OBJECT: "A JSON object.",
    FieldKind.PRESETS: "Request presets; replace the stored presets, matched by name.",
}


def _field_doc(f: ConfigField) -> str:
    parts = [_FIELD_DOCS[f.kind]]
    if f.https:
        parts.append("Must be https://.")
    if f.required_on_create:
        parts.append("Required to create the integration.")
    if f.nullable:
        parts.append("null clears it.")
    if f.read_as:
        parts.append(f"Reads back as {f.read_as}.")
    if f.default not in (None, ()):
        parts.append(f"Created as {json.dumps(f.default)} when omitted.")
    return " ".join(parts)


def _field_type(f: ConfigField) -> Any:
    """The annotation of one provider-table field."""
    t: Any
    if f.kind is FieldKind.BOOL:
        t = bool
    elif f.kind is FieldKind.STRING:
        checks: list[Any] = [StringConstraints(min_length=1)]
        if f.https:
            checks += [AfterValidator(_https)]
        if f.required_on_create:
            checks.append(AfterValidator(_not_blank))
        t = Annotated[str, *checks]
    elif f.kind is FieldKind.STRING_LIST:
        t = list[NonEmpty]
    elif f.kind is FieldKind.SECRET:
        t = Secret
    elif f.kind is FieldKind.HEADERS:
        t = Headers
    elif f.kind is FieldKind.AUTH:
        t = AUTH
    elif f.kind is FieldKind.OBJECT:
        t = JsonObject
    elif f.kind is FieldKind.PRESETS:
        t = list[Preset]
    else:  # pragma: no cover
        raise AssertionError(f"no manifest type for {f.kind}")
    return t | None if f.nullable else t


def _config_fields(fields: Mapping[str, ConfigField]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, f in fields.items():
        extra = {"json_schema_extra": HTTPS_SCHEMA} if f.https else {}
        if f.required_on_create:
            out[name] = (_field_type(f), Required(_field_doc(f), **extra))
        else:
            out[name] = (_field_type(f) | MISSING, Doc(_field_doc(f), **extra))
    return out


def _read_side_hints(fields: Mapping[str, ConfigField]) -> dict[str, str]:
    """``has_api_key`` and friends are what a GET shows; say what to write instead."""
    return {f.read_name: f"'{f.read_name}' is read-only (the API reports it); write '{f.name}' instead"
            for f in fields.values() if f.read_as}


def _literal(*values: str) -> Any:
    return Literal[values]


class AuthBase(Strict):
    pass


def _auth_model(auth_type: str, fields: Mapping[str, ConfigField]) -> type[AuthBase]:
    model = create_model(f"Auth{auth_type.title().replace('_', '')}", __base__=AuthBase,
                         __doc__=f"CLOUD_D auth_type {auth_type}.",
                         auth_type=(_literal(auth_type), Required("How the service authenticates.")),
                         **_config_fields(fields))
    model.refused = {n: f"'{n}' does not apply to auth_type {auth_type}"
                     for other in AUTH_MODES.values() for n in other.fields if n not in fields}
    model.required_reasons = {n: CREATE_REQUIRED for n in fields}
    return model


AUTH = tagged("auth_type", {m.auth_type: _auth_model(m.auth_type, m.fields) for m in AUTH_MODES.values()})


class Preset(Strict):
    """An AGENT request preset."""

    name: str = Required("Unique within the integration (case-sensitive).", min_length=1,
                         max_length=PRESET_NAME_MAX)
    description: str | None | MISSING = Doc("What the preset is for.", max_length=PRESET_DESCRIPTION_MAX)
    config: JsonObject = Required("A partial request body, checked against input_schema without `required`.")


class LlmConfigBase(Strict):
    """An LLM integration's config; one subclass per provider, generated from the table."""

    provider_spec: ClassVar[Provider]
    provider: str = Required("The provider: chooses the config's fields.")

    @model_validator(mode="after")
    def _model_source(self) -> LlmConfigBase:
        spec = self.provider_spec
        if not spec.needs_model_source:
            return self
        effective = {n: spec.fields[n].default for n in ("is_default_models_enabled", "model_names")}
        effective |= {n: getattr(self, n) for n in effective if getattr(self, n) is not MISSING}
        if not has_model_source(effective):
            raise problem(f"{spec.name} needs a model source: set is_default_models_enabled: true or list "
                          "model_names (omitted fields count with their create defaults: false and [])", key=True)
        return self


def _providers_with(name: str) -> str:
    return ", ".join(p for p, spec in PROVIDERS.items() if name in spec.fields)


def _llm_config(provider: Provider) -> type[LlmConfigBase]:
    model = create_model(f"{provider.name.title().replace('_', '')}Config", __base__=LlmConfigBase,
                         __doc__=f"{provider.name} ({provider.kind}) configuration.",
                         provider=(_literal(provider.name), Required("The provider: chooses the config's fields.")),
                         **_config_fields(provider.fields))
    refused = {n: f"'{n}' does not apply to provider {provider.name} (the API answers 422); "
               f"it applies to {_providers_with(n)}"
               for n in LLM_CONFIG_FIELDS if n != "provider" and n not in provider.fields}
    model.refused = refused | _read_side_hints(provider.fields)
    model.required_reasons = {n: CREATE_REQUIRED for n in provider.fields}
    model.provider_spec = provider
    return model


LLM_CONFIGS: Mapping[str, type[LlmConfigBase]] = {p: _llm_config(spec) for p, spec in PROVIDERS.items()}
if TYPE_CHECKING:  # mypy sees the base class (the generated models add only table fields)
    LlmConfig = LlmConfigBase
else:
    LlmConfig = tagged("provider", LLM_CONFIGS)


# ------------------------------------------------------------------ AGENT config


def _public_endpoint(value: str) -> str:
    """https, and a host the service can call: what is not public without resolving
    (``providers.non_public_host``) cannot work. Other names are the service's to resolve."""
    found: list[RuleProblem] = []
    if not value.lower().startswith("https://"):
        found.append(((), "must be an https:// URL", False))
    try:
        host = urlsplit(value).hostname
    except ValueError:
        host = None
    if not host:
        found.append(((), "must be an absolute https:// URL with a host", False))
    elif (why := non_public_host(host)) is not None:
        found.append(((), f"host {host} is {why}; the service only calls public addresses", False))
    if found:
        raise rule_error(found)
    return value


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


_AGENT_ONLY: dict[str, Any] = {
    "endpoint": (Annotated[str, StringConstraints(min_length=1, max_length=AGENT_ENDPOINT_MAX_CHARS),
                           AfterValidator(_public_endpoint)],
                 Required("The HTTPS endpoint the service calls for replay (a public address).",
                          json_schema_extra=HTTPS_SCHEMA)),
    "input_schema": (JsonObject, Required("The JSON Schema (Draft-07) of a replay request body.")),
}


class AgentConfigBase(Strict):
    """AGENT configuration: the input schema must be a valid JSON Schema, preset names unique,
    and each preset's config a partial request body that the schema accepts."""

    @model_validator(mode="after")
    def _presets(self) -> AgentConfigBase:
        found: list[RuleProblem] = []
        schema: JsonObject = getattr(self, "input_schema")  # noqa: B009 - a generated field
        key = json.dumps(schema, sort_keys=True)
        error = _schema_error(key)
        if error:
            found.append((("input_schema",), error, False))
        presets: list[Preset] | Any = getattr(self, "request_presets")  # noqa: B009
        seen: dict[str, int] = {}
        for i, preset in enumerate(presets if isinstance(presets, list) else ()):
            if preset.name in seen:
                found.append((("request_presets", i, "name"),
                              f"preset name '{preset.name}' is already used by request_presets[{seen[preset.name]}] "
                              "(names are unique within the integration, case-sensitive)", False))
            else:
                seen[preset.name] = i
            if error:
                continue
            try:
                errors = sorted(_partial_validator(key).iter_errors(preset.config),
                                key=lambda e: list(e.absolute_path))
            except Exception as exc:  # an unresolvable $ref: jsonschema never fetches remote documents
                found.append((("input_schema",), f"cannot be used to check presets: {exc}", False))
                break
            found.extend((("request_presets", i, "config", *e.absolute_path),
                          f"does not match input_schema: {e.message}", False) for e in errors)
        if found:
            raise rule_error(found)
        return self


AgentConfig = create_model(
    "AgentConfig", __base__=AgentConfigBase, __doc__="AGENT configuration.",
    **{n: _AGENT_ONLY[n] if n in _AGENT_ONLY else _config_fields({n: f})[n] for n, f in AGENT_FIELDS.items()})
AgentConfig.refused = {n: f"'{n}' is an LLM config field; it does not apply to an AGENT integration"
                       for n in LLM_CONFIG_FIELDS if n not in AGENT_FIELDS} | _read_side_hints(AGENT_FIELDS)
AgentConfig.required_reasons = {n: CREATE_REQUIRED for n in AGENT_FIELDS}

