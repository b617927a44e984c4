"""The building blocks of the manifest models (``models``): the strict base model, field
declarations (``Doc``: omitted is ``MISSING``; ``Required``), the value types (secret references,
header maps, numbers), tagged unions, the product-rule errors (``rule_error``) that ``messages``
turns into ``FILE:LINE:COL: PATH: message`` lines (no message repeats a value that may be a secret),
and the integration configs generated from the provider table (``reconciler.providers``): one model
per LLM provider (chosen by ``provider``), the CLOUD_D auth modes, the AGENT config. A provider or a
provider field is added in the table, not here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union
from urllib.parse import urlsplit

from pydantic import (
    MISSING,
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PlainValidator,
    StringConstraints,
    Tag,
    ValidationInfo,
    WithJsonSchema,
    create_model,
    model_validator,
)
from pydantic_core import PydanticCustomError

from reconciler.manifests.input_schema import preset_mismatches, schema_error
from reconciler.model import SecretRef
from reconciler.providers import (
    AGENT_ENDPOINT_MAX_CHARS,
    AGENT_FIELDS,
    AUTH_MODES,
    HEADER_MAP_MAX_BYTES,
    LLM_CONFIG_FIELDS,
    PRESET_DESCRIPTION_MAX,
    PRESET_NAME_MAX,
    PROVIDERS,
    ConfigField,
    FieldKind,
    Provider,
    has_model_source,
    non_public_host,
    serialized_header_bytes,
)

SubPath = tuple[str | int, ...]
#: One problem a rule found: (sub-path below the validated value, message, at the key's position?)
RuleProblem = tuple[SubPath, str, bool]

RULE = "reconciler"
SECRET_LITERAL = ("a secret must be a reference: {env: NAME} or {file: PATH}; "
                  "literal values would end up in git")
#: ``${NAME}`` or ``$NAME`` written where a secret goes: shell-style interpolation that reconciler does
#: not do (``${var.NAME}`` is a manifest variable, not this).
SHELL_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?\Z")


def secret_literal(value: Any) -> str:
    """The message for a literal where a secret reference goes; ``${VAR}`` gets the reference to write."""
    if isinstance(value, str) and not value.startswith("${var.") and (m := SHELL_VARIABLE.fullmatch(value.strip())):
        return (f"'{value.strip()}' is not expanded: reconciler reads no shell variables in values; "
                f"write {{env: {m.group(1)}}} to read the secret from the environment variable {m.group(1)}")
    return SECRET_LITERAL


HEADER_SIZE_MEASURE = ("measured as the UTF-8 length of the compact JSON object "
                       '{"name":"value",...}')
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
CREATE_REQUIRED = " (needed to create the integration when it does not exist yet)"
EVALUATOR_REQUIRED = " (needed to create the evaluator when it does not exist yet)"


def rule_error(problems: Iterable[RuleProblem]) -> PydanticCustomError:
    """The error a product rule raises: every problem it found, each at its own sub-path."""
    return PydanticCustomError(RULE, "the manifest breaks a product rule", {"problems": list(problems)})


def problem(message: str, *sub: str | int, key: bool = False) -> PydanticCustomError:
    return rule_error([(sub, message, key)])


def a_kind_of(value: Any) -> str:
    """How a message names what was written, never the value itself."""
    if value is None:
        return "null"
    for t, name in ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"),
                    (list, "a list"), (dict, "a mapping")):
        if isinstance(value, t):
            return name
    return type(value).__name__


# ------------------------------------------------------------------ base


class Strict(BaseModel):
    """Every manifest mapping: unknown keys refused, immutable, no coercion, inputs never in errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, hide_input_in_errors=True,
                              protected_namespaces=(), arbitrary_types_allowed=True, defer_build=True)

    #: keys refused here that mean something elsewhere: why, in the product's words
    refused: ClassVar[Mapping[str, str]] = {}
    #: what to add to "missing required field 'X'"
    required_reasons: ClassVar[Mapping[str, str]] = {}


def Doc(text: str, **kw: Any) -> Any:  # noqa: N802 - reads as a field declaration
    """A field that may be omitted (then it is MISSING: unmanaged), with its description."""
    return Field(MISSING, description=text, **kw)


def Required(text: str, **kw: Any) -> Any:  # noqa: N802
    return Field(description=text, **kw)


# ------------------------------------------------------------------ value types

NonEmpty = Annotated[str, StringConstraints(min_length=1)]
JsonObject = dict[str, Any]


def _not_blank(value: str) -> str:
    if value and not value.strip():
        raise problem("must not be blank")
    return value


def _https(value: str) -> str:
    if not value.lower().startswith("https://"):
        raise problem("must be an https:// URL")
    return value


HTTPS_SCHEMA = {"pattern": "^[Hh][Tt][Tt][Pp][Ss]://", "format": "uri"}


def _number(value: Any) -> int | float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise problem(f"expected a number, got {a_kind_of(value)}")


Number = Annotated[int | float, PlainValidator(_number), WithJsonSchema({"type": "number"})]


def _unique(items: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    found: list[RuleProblem] = []
    for i, x in enumerate(items):
        if x in seen:
            found.append(((i,), f"repeats item {seen[x]}; items must be unique", False))
        else:
            seen[x] = i
    if found:
        raise rule_error(found)
    return items


def _secret(value: Any, info: ValidationInfo) -> SecretRef:
    """``{env: NAME}`` or ``{file: PATH}`` (relative to the manifest's directory) -> ``SecretRef``.
    A literal is refused, and its value is never repeated."""
    if value is None:
        raise problem("must be a secret reference {env: NAME} or {file: PATH}, not null")
    if not isinstance(value, dict):
        raise problem(secret_literal(value))
    keys = list(value)
    if len(keys) != 1 or keys[0] not in ("env", "file"):
        odd = [k for k in keys if k not in ("env", "file")]
        if odd:
            from reconciler.manifests.hints import suggest

            hint = suggest(odd[0], ("env", "file"))
            raise problem(f"unknown field '{odd[0]}' in a secret reference"
                          + (f"; did you mean '{hint}'?" if hint else "; use {env: NAME} or {file: PATH}"),
                          odd[0], key=True)
        raise problem("a secret reference has exactly one of env or file")
    source = keys[0]
    ref = value[source]
    if not isinstance(ref, str) or not ref:
        raise problem(f"expected a non-empty string, got {a_kind_of(ref)}", source)
    if source == "env":
        if not ENV_NAME.match(ref):
            raise problem("is not an environment variable name (letters, digits and _, not starting with a "
                          "digit); write the variable's name, never the secret (the value is not repeated here "
                          "in case it is one)", source)
        return SecretRef("env", ref)
    resolve: Callable[[str], str] = (info.context or {}).get("resolve_path", lambda p: p)
    outside: Callable[[str], str | None] = (info.context or {}).get("outside_tree", lambda p: None)
    if (why := outside(resolve(ref))) is not None:
        raise problem(f"the secret file {why}", source)
    return SecretRef("file", resolve(ref))


SECRET_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {"type": "object", "properties": {"env": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
                                                   "description": "An environment variable's name."}},
         "required": ["env"], "additionalProperties": False},
        {"type": "object", "properties": {"file": {"type": "string", "minLength": 1,
                                                    "description": "A file path, relative to the manifest."}},
         "required": ["file"], "additionalProperties": False},
    ],
    "description": "A secret reference: {env: NAME} or {file: PATH} (relative to the manifest).",
}

#: A secret reference: a type of its own, never a literal.
Secret = Annotated[SecretRef, PlainValidator(_secret), WithJsonSchema(SECRET_SCHEMA)]


def _headers(value: Any, info: ValidationInfo) -> dict[str, SecretRef]:
    """A header map ``{name: secret reference}``; header values are write-only secrets. The size
    limit is measured on the resolved values (``check_secrets``); here only the names count."""
    if not isinstance(value, dict):
        raise problem(f"expected a mapping of header name to secret reference, got {a_kind_of(value)}")
    found: list[RuleProblem] = []
    out: dict[str, SecretRef] = {}
    lowered: dict[str, str] = {}
    for name, v in value.items():
        if not HEADER_NAME.match(name):
            found.append(((name,), f"'{name}' is not a valid HTTP header name", True))
        elif name.lower() in lowered:
            found.append(((name,), f"header '{name}' repeats '{lowered[name.lower()]}' "
                                   "(header names are case-insensitive)", True))
        lowered.setdefault(name.lower(), name)
        if v is None:
            found.append(((name,), "a header value must be a secret reference {env: NAME} or {file: PATH}, "
                                   "not null (to clear every header, write headers: null)", False))
        elif not isinstance(v, dict):
            message = secret_literal(v)
            found.append(((name,), message + (" (header values are write-only secrets)"
                                              if message == SECRET_LITERAL else ""), False))
        else:
            try:
                out[name] = _secret(v, info)
            except PydanticCustomError as exc:
                found.extend(((name, *sub), m, k) for sub, m, k in (exc.context or {})["problems"])
    size = serialized_header_bytes({k: "" for k in value})
    if size > HEADER_MAP_MAX_BYTES:
        found.append(((), f"the header names alone serialize to {size:,} bytes, over the "
                          f"{HEADER_MAP_MAX_BYTES:,}-byte limit ({HEADER_SIZE_MEASURE})", False))
    if found:
        raise rule_error(found)
    return out


Headers = Annotated[dict[str, SecretRef], PlainValidator(_headers), WithJsonSchema({
    "type": "object", "propertyNames": {"pattern": "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$"},
    "additionalProperties": SECRET_SCHEMA,
    "description": "Header name -> secret reference (values are write-only); replaces the stored headers.",
})]


class TaggedUnion:
    """A tagged union of the models: its discriminator key and members by tag. Called, it is the
    union's discriminator: the value of ``key`` (a model's attribute once built)."""

    def __init__(self, key: str, members: Mapping[str, Any]) -> None:
        self.key = key
        self.members = dict(members)
        self.__name__ = key

    def __call__(self, value: Any) -> Any:
        tag = value.get(self.key) if type(value) is dict else getattr(value, self.key, None)
        # an unknown tag is "not found", so pydantic's own message (which repeats it) never holds it
        return tag if isinstance(tag, str) and tag in self.members else None


def tagged(key: str, members: Mapping[str, Any]) -> Any:
    """``Annotated[Union[...], Discriminator]`` over ``{tag: model}``."""
    choices = tuple(Annotated[m, Tag(t)] for t, m in members.items())
    return Annotated[Union[choices], Discriminator(TaggedUnion(key, members))]  # noqa: UP007 - a runtime union of members


# ------------------------------------------------------------------ Integration config (providers table)


def _field_doc(f: ConfigField) -> str:
    parts = [f.behaviour.docs]
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


class Preset(Strict):
    """An AGENT request preset."""

    name: str = Required("Unique within the integration (case-sensitive).", min_length=1,
                         max_length=PRESET_NAME_MAX)
    description: str | None | MISSING = Doc("What the preset is for.", max_length=PRESET_DESCRIPTION_MAX)
    config: JsonObject = Required("A partial request body, checked against input_schema without `required`.")


#: The annotation of each kind of provider-table field (a string gets its checks in ``_field_type``;
#: the CLOUD_D auth, generated from the table below, is looked up there). Keyed by kind here, not in
#: the kinds' behaviours (``reconciler.fieldkinds``): these are manifest models, above that layer.
_FIELD_TYPES: Mapping[FieldKind, Any] = {
    FieldKind.BOOL: bool, FieldKind.STRING: str, FieldKind.STRING_LIST: list[NonEmpty], FieldKind.SECRET: Secret,
    FieldKind.HEADERS: Headers, FieldKind.OBJECT: JsonObject, FieldKind.PRESETS: list[Preset],
}


def _field_type(f: ConfigField) -> Any:
    """The annotation of one provider-table field."""
    t: Any = AUTH if f.behaviour.modes is not None else _FIELD_TYPES[f.kind]
    if t is str:
        checks: list[Any] = [StringConstraints(min_length=1)]
        if f.https:
            checks += [AfterValidator(_https)]
        if f.required_on_create:
            checks.append(AfterValidator(_not_blank))
        t = Annotated[str, *checks]
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


def _auth_model(auth_type: str, fields: Mapping[str, ConfigField]) -> type[Strict]:
    model = create_model(f"Auth{auth_type.title().replace('_', '')}", __base__=Strict,
                         __doc__=f"CLOUD_D auth_type {auth_type}.",
                         auth_type=(_literal(auth_type), Required("How the service authenticates.")),
                         **_config_fields(fields))
    model.refused = {n: f"'{n}' does not apply to auth_type {auth_type}"
                     for other in AUTH_MODES.values() for n in other.fields if n not in fields}
    model.required_reasons = {n: CREATE_REQUIRED for n in fields}
    return model


AUTH = tagged("auth_type", {m.auth_type: _auth_model(m.auth_type, m.fields) for m in AUTH_MODES.values()})


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
        error = schema_error(key)
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
                mismatches = preset_mismatches(key, preset.config)
            except Exception as exc:  # an unresolvable $ref: jsonschema never fetches remote documents
                found.append((("input_schema",), f"cannot be used to check presets: {exc}", False))
                break
            found.extend((("request_presets", i, "config", *path), f"does not match input_schema: {message}", False)
                         for path, message in mismatches)
        if found:
            raise rule_error(found)
        return self


AgentConfig = create_model(
    "AgentConfig", __base__=AgentConfigBase, __doc__="AGENT configuration.",
    **{n: _AGENT_ONLY[n] if n in _AGENT_ONLY else _config_fields({n: f})[n] for n, f in AGENT_FIELDS.items()})
AgentConfig.refused = {n: f"'{n}' is an LLM config field; it does not apply to an AGENT integration"
                       for n in LLM_CONFIG_FIELDS if n not in AGENT_FIELDS} | _read_side_hints(AGENT_FIELDS)
AgentConfig.required_reasons = {n: CREATE_REQUIRED for n in AGENT_FIELDS}

