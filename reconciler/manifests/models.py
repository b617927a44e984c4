"""The manifest format (docs/manifests.md) as pydantic v2 models: one model per kind, chosen by
``kind``; an Integration further by ``type``, and an LLM integration's config by ``provider``
(discriminated unions, so an error names the chosen provider's own fields).

This is the one place a kind or a field is defined: the validator (``validate``), the spec the
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

import json
import re
import types
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union, get_args, get_origin
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
    TypeAdapter,
    ValidationInfo,
    WithJsonSchema,
    create_model,
    model_validator,
)
from pydantic_core import PydanticCustomError

from reconciler.manifests.input_schema import preset_mismatches, schema_error
from reconciler.model import KINDS, SPACED_KINDS, SecretRef
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

MESSAGE_ROLES = ("system", "user", "assistant", "tool")


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


class TagOf:
    """The discriminator of a tagged union: the value of ``key`` (a model's attribute once built)."""

    def __init__(self, key: str, tags: Iterable[str]) -> None:
        self.key = key
        self.tags = frozenset(tags)
        self.__name__ = key

    def __call__(self, value: Any) -> Any:
        tag = value.get(self.key) if type(value) is dict else getattr(value, self.key, None)
        # an unknown tag is "not found", so pydantic's own message (which repeats it) never holds it
        return tag if isinstance(tag, str) and tag in self.tags else None


def tagged(key: str, members: Mapping[str, Any]) -> Any:
    """``Annotated[Union[...], Discriminator]`` over ``{tag: model}``."""
    choices = tuple(Annotated[m, Tag(t)] for t, m in members.items())
    return Annotated[Union[choices], Discriminator(TagOf(key, members))]  # noqa: UP007 - a runtime union of members


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


class Resource(Document):
    """A document that declares one resource of the API."""

    protect: bool | MISSING = Doc("Never deleted or replaced by any plan (prune, --allow-replace, retention).")
    ignore_changes: FieldPaths | MISSING = Doc(_IGNORE_DOC, json_schema_extra={"uniqueItems": True})


_ALIASES_DOC = ("Former names: a live resource under one of them (and none under `name`) is renamed in place "
                "(PATCH of name, the id kept).")


class Renamable(Strict):
    """A kind the API can rename: former names are aliases."""

    aliases: Annotated[list[NonEmpty], AfterValidator(_unique)] | MISSING = Doc(
        _ALIASES_DOC, json_schema_extra={"uniqueItems": True})


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
    labels: Annotated[list[NonEmpty], AfterValidator(_unique)] | MISSING = Doc(
        "Labels the live version must carry.", json_schema_extra={"uniqueItems": True})


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


def _protect(globs: list[str]) -> list[str]:
    from reconciler.manifests.hints import suggest

    found: list[RuleProblem] = []
    for i, glob in enumerate(globs):
        kind, sep, rest = glob.partition("/")
        if not sep or not rest:
            found.append(((i,), "a protect glob is KIND/NAME (KIND/SPACE/NAME for "
                                + ", ".join(SPACED_KINDS) + "), e.g. Integration/*-prod", False))
        elif kind not in KINDS:
            hint = suggest(kind, KINDS)
            found.append(((i,), f"unknown kind '{kind}' in a protect glob"
                                + (f"; did you mean '{hint}'?" if hint else f" (one of {', '.join(KINDS)})"), False))
    if found:
        raise rule_error(found)
    return globs


Globs = Annotated[list[Annotated[str, StringConstraints(min_length=1),
                                 Field(description="A name glob (* ? [..]), case-sensitive.")]],
                  AfterValidator(_unique)]


def _addresses(globs: list[str]) -> list[str]:
    from reconciler.manifests.hints import suggest

    found: list[RuleProblem] = []
    for i, glob in enumerate(globs):
        kind, sep, rest = glob.partition("/")
        if not sep or not rest:
            found.append(((i,), "an address glob is KIND/NAME or KIND/SPACE/NAME, e.g. Evaluator/support/*", False))
        elif kind != "*" and kind not in KINDS:
            hint = suggest(kind, KINDS)
            found.append(((i,), f"unknown kind '{kind}' in an address glob"
                                + (f"; did you mean '{hint}'?" if hint else f" (one of {', '.join(KINDS)})"), False))
    if found:
        raise rule_error(found)
    return globs


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
    spaces: Annotated[list[NonEmpty], AfterValidator(_unique)] | MISSING = Doc(
        "Space names or ids: every Prompt, Dataset and Evaluator in them belongs to this tree.",
        json_schema_extra={"uniqueItems": True})
    integrations: Globs | MISSING = Doc("Name globs of the integrations (both types) this tree owns.",
                                        json_schema_extra={"uniqueItems": True})
    resource_restrictions: Globs | MISSING = Doc(
        "Globs of TYPE/resource_id (or resource_id) of the restrictions this tree owns.",
        json_schema_extra={"uniqueItems": True})
    protect: Annotated[Globs, AfterValidator(_protect)] | MISSING = Doc(
        "KIND/NAME globs (KIND/SPACE/NAME for spaced kinds) no plan may delete or replace.",
        json_schema_extra={"uniqueItems": True})
    ignore_changes: list[IgnoreRule] | MISSING = Doc(
        "Ignore rules for many resources: address globs (match) x field paths (fields).")


#: One entry per kind: adding a kind is a model above and a line here.
KIND_MODELS: Mapping[str, Any] = {
    "Integration": INTEGRATION,
    "Prompt": Prompt,
    "Dataset": Dataset,
    "Evaluator": Evaluator,
    "ResourceRestriction": ResourceRestriction,
    "Ownership": Ownership,
}
#: The kinds a document may have: the resource kinds, and the tree's Ownership.
DOCUMENT_KINDS = (*KINDS, "Ownership")
assert tuple(KIND_MODELS) == DOCUMENT_KINDS

ManifestDocument = tagged("kind", KIND_MODELS)
DOCUMENT: TypeAdapter[Any] = TypeAdapter(ManifestDocument, config=ConfigDict(hide_input_in_errors=True, strict=True))


# ------------------------------------------------------------------ walking the models by type


class TaggedUnion:
    """A tagged union of the models: its discriminator key and members by tag."""

    def __init__(self, key: str, members: dict[str, Any]) -> None:
        self.key = key
        self.members = members


def unwrap(tp: Any) -> Any:
    """Strip Annotated, MISSING and None from a declared type; a tagged union becomes a ``TaggedUnion``."""
    while True:
        if get_origin(tp) is Annotated:
            base, *meta = get_args(tp)
            disc = next((m for m in meta if isinstance(m, Discriminator)), None)
            if disc is not None and isinstance(disc.discriminator, TagOf):
                members: dict[str, Any] = {}
                for member in get_args(base):
                    inner, *marks = get_args(member)
                    tag = next(m.tag for m in marks if isinstance(m, Tag))
                    rest = [m for m in marks if not isinstance(m, Tag)]
                    members[tag] = Annotated[(inner, *rest)] if rest else inner
                return TaggedUnion(disc.discriminator.key, members)
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


def document_of(kind: str, name: str, space: str | None, spec: Mapping[str, Any], doc: Any = None) -> Any:
    """The typed document of a resource: the one loaded, or one built from its spec."""
    if doc is not None:
        return doc
    head = {"kind": kind, "name": name, **({"space": space} if space is not None else {})}
    return construct(ManifestDocument, {**head, **spec})
