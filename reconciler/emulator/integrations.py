"""Emulator routes for integrations (docs/api.md, "Integrations").

Everything provider-specific comes from ``reconciler.providers``: which config fields apply, which
are nullable, required on create, write-only, https-only, how they read back, and the model-source
rule. This module only applies that table.

The store keeps the write-side config, secrets included, because the emulator plays the service;
``render`` is the only way out and turns secrets into ``has_*`` flags and header names.

How errors are classified (the spec leaves some of it open; these are the choices):

- 400 invalid-request: a schema violation. Malformed JSON, a wrong JSON type, an unknown property
  in any object (envelope, scopings items, config, ``auth``, presets), a missing required property
  (``type`` on PATCH; ``type``/``name``/``config``/``config.provider`` and each provider's required
  fields on create; ``auth_type``; a preset's ``name``/``config``), an unknown ``provider`` or
  ``auth_type`` value, and a PATCH with nothing besides ``type`` (``{}`` and ``{"type": ...}`` alone:
  "an empty body is invalid" is a schema rule, ``minProperties``).
- 422 unprocessable-entity: the body is well-formed but breaks a rule: ``type`` differs from the
  stored one, ``description`` on an LLM, ``provider`` differs from the stored one, a known config
  field sent for a provider it does not apply to, ``null`` for a field that cannot be cleared
  (CUSTOM ``base_url``, CLOUD_E fields, booleans, ...), no model source left, a non-https URL where
  https is required, a header map over 8,175 serialized bytes, an agent endpoint that is too long
  or not public, preset name/description limits or duplicates, a preset config that does not
  validate against ``input_schema`` (with ``required`` dropped), an ``input_schema`` that is not a
  Draft-07 schema, an empty name, and scoping ids that name no organization/space (or a space of
  another organization, or an AGENT space scoping without its ``organization_id``).
- 404 for an unknown integration id (and for an unknown ``space_id`` list filter); 409 for a name
  already used by another integration of the same type.

On PATCH, ``type`` is compared with the stored integration before the rest of the body is
validated, so a type mismatch is always 422 whatever else the body holds.
A preset given on PATCH is the preset's whole desired state: an omitted ``description`` is null.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from jsonschema import Draft7Validator
from jsonschema.exceptions import SchemaError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from reconciler.emulator.core import (
    Emulator,
    Problem,
    Store,
    check_keys,
    check_type,
    json_response,
    name_matches,
    no_content,
    now,
    page,
    read_json_object,
)
from reconciler.emulator.openapi import (
    json_body,
    list_envelope,
    list_parameters,
    ok,
    path_param,
    problems,
    query_param,
    ref,
)
from reconciler.fieldkinds import nullable
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
    Provider,
    has_model_source,
    literal_address,
    non_public_host,
    visible_from,
    without_required,
)

KIND = "integration"
ENVELOPE_KEYS = frozenset({"type", "name", "description", "scopings", "config"})
SCOPING_KEYS = frozenset({"organization_id", "space_id"})
PRESET_KEYS = frozenset({"name", "description", "config"})

#: Each UpdateLlmConfig field's shape, whichever provider it belongs to (for the 400 type checks,
#: which come before the 422 "does not apply to this provider").
_LLM_FIELD_SHAPES: Mapping[str, ConfigField] = {
    name: f for p in reversed(list(PROVIDERS.values())) for name, f in p.fields.items()
}


# ---------------------------------------------------------------- reading


def _render_config(doc: Mapping[str, Any]) -> dict[str, Any]:
    """How a stored config reads back (each field as its kind reads: secrets as presence, headers as
    names, presets with their ids and timestamps)."""
    config = doc["config"]
    if doc["type"] == "AGENT":
        fields: Mapping[str, ConfigField] = AGENT_FIELDS
        out: dict[str, Any] = {}
    else:
        fields = PROVIDERS[config["provider"]].fields
        out = {"provider": config["provider"]}
    for f in fields.values():
        out[f.read_name] = f.behaviour.read(f, config.get(f.name))
    return out


def render(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The response shape of a stored integration; never carries a secret."""
    out: dict[str, Any] = {"id": doc["id"], "type": doc["type"], "name": doc["name"]}
    if doc["type"] == "AGENT":
        out["description"] = doc.get("description")
    out["scopings"] = [dict(s) for s in doc["scopings"]]
    out["config"] = _render_config(doc)
    for key in ("created_at", "updated_at", "created_by_user_id"):
        out[key] = doc.get(key)
    return out


def visible_in_space(doc: Mapping[str, Any], space: Mapping[str, Any]) -> bool:
    """Whether an integration may be used from a space: account-wide (no scopings, or a scoping
    with neither id), scoped to the space's organization, or scoped to the space itself."""
    return visible_from(doc["scopings"], space["id"], space["organization_id"])


# ---------------------------------------------------------------- validating: shapes (400)


def _check_shape(f: ConfigField, value: Any, where: str) -> None:
    """The JSON type of one config field (null passes here; whether it may be null is a 422),
    as its kind's write schema, the one the OpenAPI document publishes, gives it."""
    if value is not None:
        _check_schema(f.behaviour.write_schema(f, ref), value, where)


def _check_schema(schema: Mapping[str, Any], value: Any, where: str) -> None:
    """``value`` against a config field's write schema: its type, then each item's or value's."""
    if "$ref" in schema:  # a preset: its keys; an auth: an object (its members are checked as it is parsed)
        if schema == ref("AgentRequestPresetInput"):
            _check_preset_shape(value, where)
        else:
            check_type(value, "object", where)
        return
    check_type(value, schema["type"], where)
    if "items" in schema:
        for i, item in enumerate(value):
            _check_schema(schema["items"], item, f"{where}[{i}]")
    if "additionalProperties" in schema:
        for name, item in value.items():
            _check_schema(schema["additionalProperties"], item, f"{where}[{name!r}]")


def _check_preset_shape(preset: Any, where: str) -> None:
    check_type(preset, "object", where)
    check_keys(preset, PRESET_KEYS, where)
    for key in ("name", "config"):
        if key not in preset:
            raise Problem(400, f"{where}.{key} is required")
    check_type(preset["name"], "string", f"{where}.name")
    check_type(preset.get("description"), "string", f"{where}.description", nullable=True)
    check_type(preset["config"], "object", f"{where}.config")


def _check_fields_shape(given: Mapping[str, Any], fields: Mapping[str, ConfigField], where: str,
                        *, creating: bool) -> None:
    for name, value in given.items():
        if name in fields:
            _check_shape(fields[name], value, f"{where}.{name}")
    if creating:
        missing = [f.name for f in fields.values() if f.required_on_create and given.get(f.name) is None]
        if missing:
            raise Problem(400, f"{where} is missing required field(s): {', '.join(missing)}")


def _parse_name(value: Any) -> str:
    check_type(value, "string", "name")
    if not value.strip():
        raise Problem(422, "name must not be empty")
    return str(value)


# ---------------------------------------------------------------- validating: rules (422)


def _check_nulls(given: Mapping[str, Any], fields: Mapping[str, ConfigField], where: str, owner: str) -> None:
    for name, value in given.items():
        if value is None and name in fields and not fields[name].nullable:
            raise Problem(422, f"{where}.{name} may not be null for {owner}: it can be changed but never cleared")


def _check_https(url: str, where: str) -> None:
    parts = urlsplit(url)
    if parts.scheme.lower() != "https" or not parts.hostname:
        raise Problem(422, f"{where} must be an https:// URL with a host")


def _check_field_values(given: Mapping[str, Any], fields: Mapping[str, ConfigField], where: str) -> None:
    """The 422 rules that concern a single given value: https, header size, empty required strings."""
    for name, value in given.items():
        f = fields.get(name)
        if f is None or value is None:
            continue
        problem = f.behaviour.problem(f, value)
        if problem is not None:
            raise Problem(422, f"{where}.{name} {problem}")
        if f.https:
            _check_https(value, f"{where}.{name}")


def _parse_auth(value: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A CreateAwsBedrockAuth; it replaces the stored auth wholesale (omitted fields are unset)."""
    if "auth_type" not in value:
        raise Problem(400, f"{where}.auth_type is required")
    auth_type = value["auth_type"]
    check_type(auth_type, "string", f"{where}.auth_type")
    mode = AUTH_MODES.get(auth_type)
    if mode is None:
        raise Problem(400, f"{where}.auth_type must be one of {', '.join(AUTH_MODES)}")
    check_keys(value, {"auth_type", *mode.fields}, f"{where} ({auth_type})")
    given = {k: v for k, v in value.items() if k != "auth_type"}
    _check_fields_shape(given, mode.fields, where, creating=True)
    _check_field_values(given, mode.fields, where)
    return {"auth_type": auth_type, **{k: v for k, v in given.items() if v is not None}}


def _endpoint_problem(url: str) -> str | None:
    """Why an agent endpoint is refused, or None. The service resolves the host and requires a
    public address; the emulator does no DNS, so it refuses what is non-public without resolving
    (``providers.non_public_host``) and takes any other name as public."""
    if len(url) > AGENT_ENDPOINT_MAX_CHARS:
        return f"is {len(url)} characters long; at most {AGENT_ENDPOINT_MAX_CHARS} are allowed"
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".")
        _ = parts.port
    except ValueError as exc:
        return f"is not a valid URL ({exc})"
    if parts.scheme.lower() != "https":
        return "must use https"
    if not host:
        return "has no host"
    if literal_address(host) is None and not _is_dns_name(host):
        return f"has no valid host ({host!r})"
    why = non_public_host(host)
    return None if why is None else f"must resolve to a public address: {host} is {why}"


_DNS_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


def _is_dns_name(host: str) -> bool:
    try:
        ascii_host = host.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return False
    return len(ascii_host) <= 253 and all(_DNS_LABEL.match(label) for label in ascii_host.split("."))


def _check_input_schema(schema: Mapping[str, Any], where: str) -> None:
    try:
        Draft7Validator.check_schema(schema)
    except SchemaError as exc:
        raise Problem(422, f"{where} is not a valid JSON Schema (Draft-07): {exc.message}") from None


def _check_presets_against(presets: list[dict[str, Any]], schema: Mapping[str, Any], where: str) -> None:
    validator = Draft7Validator(without_required(schema))
    for i, preset in enumerate(presets):
        error = next(iter(sorted(validator.iter_errors(preset["config"]), key=lambda e: list(e.path))), None)
        if error is not None:
            at = "".join(f"[{p!r}]" for p in error.path)
            raise Problem(422, f"{where}[{i}] ({preset['name']!r}).config{at} does not match"
                               f" config.input_schema: {error.message}")


def _check_preset_limits(presets: list[dict[str, Any]], where: str) -> None:
    seen: set[str] = set()
    for i, preset in enumerate(presets):
        name, description = preset["name"], preset.get("description")
        if not 1 <= len(name) <= PRESET_NAME_MAX:
            raise Problem(422, f"{where}[{i}].name must be 1-{PRESET_NAME_MAX} characters")
        if name in seen:
            raise Problem(422, f"{where}[{i}].name {name!r} is used by another preset of this integration")
        seen.add(name)
        if description is not None and len(description) > PRESET_DESCRIPTION_MAX:
            raise Problem(422, f"{where}[{i}].description is longer than {PRESET_DESCRIPTION_MAX} characters")


# ---------------------------------------------------------------- merging configs


def _defaults(fields: Mapping[str, ConfigField]) -> dict[str, Any]:
    return {f.name: list(f.default) if isinstance(f.default, tuple) else f.default for f in fields.values()}


def _merge_llm_config(given: Mapping[str, Any], stored: Mapping[str, Any] | None) -> dict[str, Any]:
    """The effective write-side config of an LLM after applying ``given`` (a create body when
    ``stored`` is None, else an UpdateLlmConfig)."""
    where = "config"
    check_keys(given, LLM_CONFIG_FIELDS, where)
    provider_name = given.get("provider")
    if provider_name is None and stored is None:
        raise Problem(400, "config.provider is required")
    if stored is not None and "provider" in given and provider_name is None:  # present: must match
        raise Problem(422, f"config.provider is immutable: the integration's provider is {stored['provider']},"
                           " not null")
    if provider_name is not None:
        check_type(provider_name, "string", "config.provider")
        if provider_name not in PROVIDERS:
            raise Problem(400, f"config.provider must be one of {', '.join(PROVIDERS)}")
    fields_given = {k: v for k, v in given.items() if k != "provider"}
    for name, value in fields_given.items():
        _check_shape(_LLM_FIELD_SHAPES[name], value, f"{where}.{name}")
    if stored is not None and provider_name is not None and provider_name != stored["provider"]:
        raise Problem(422, f"config.provider is immutable: the integration's provider is {stored['provider']},"
                           f" not {provider_name}")
    provider: Provider = PROVIDERS[str(provider_name) if stored is None else stored["provider"]]
    if stored is None:
        _check_fields_shape(fields_given, provider.fields, where, creating=True)
    misplaced = sorted(k for k in fields_given if not provider.applies(k))
    if misplaced:
        raise Problem(422, f"{', '.join('config.' + k for k in misplaced)} do(es) not apply to provider"
                           f" {provider.name}")
    _check_nulls(fields_given, provider.fields, where, provider.name)
    _check_field_values(fields_given, provider.fields, where)
    merged = copy.deepcopy(dict(stored)) if stored else {"provider": provider.name, **_defaults(provider.fields)}
    for name, value in fields_given.items():
        f = provider.fields[name]
        if f.behaviour.modes is not None:  # an auth: parsed by its mode
            merged[name] = _parse_auth(value, f"{where}.{name}")
        elif value is None and isinstance(f.default, tuple):
            merged[name] = list(f.default)
        elif value is None and stored is None:
            merged[name] = _defaults({name: f})[name]
        else:
            merged[name] = value
    if provider.needs_model_source and not has_model_source(merged):
        raise Problem(422, f"provider {provider.name} needs a model source: set config.is_default_models_enabled"
                           " to true or give config.model_names")
    return merged


def _merge_presets(given: list[dict[str, Any]], stored: list[dict[str, Any]], store: Store,
                   stamp: str) -> list[dict[str, Any]]:
    """Replace-on-provide, matched by name: a kept name updates in place, its id and timestamps
    preserved (spec 4.1) and an omitted ``description`` kept (omitted means unchanged); a new name
    is inserted; a missing name is deleted."""
    by_name = {p["name"]: p for p in stored}
    out: list[dict[str, Any]] = []
    for item in given:
        old = by_name.get(item["name"])
        if old is None:
            out.append({"id": store.new_id("AgentRequestPreset"), "name": item["name"],
                        "description": item.get("description"), "config": item["config"],
                        "created_at": stamp, "updated_at": stamp})
        else:
            out.append({**old, **{k: item[k] for k in ("description", "config") if k in item}})
    return out


def _merge_agent_config(given: Mapping[str, Any], stored: Mapping[str, Any] | None, store: Store,
                        stamp: str) -> dict[str, Any]:
    where = "config"
    check_keys(given, frozenset(AGENT_FIELDS), where)
    _check_fields_shape(given, AGENT_FIELDS, where, creating=stored is None)
    _check_nulls(given, AGENT_FIELDS, where, "an AGENT integration")
    _check_field_values({k: v for k, v in given.items() if k != "endpoint"}, AGENT_FIELDS, where)
    if "endpoint" in given:
        why = _endpoint_problem(given["endpoint"])
        if why is not None:
            raise Problem(422, f"config.endpoint {why}")
    if "input_schema" in given:
        _check_input_schema(given["input_schema"], "config.input_schema")
    if "request_presets" in given:
        _check_preset_limits(given["request_presets"], "config.request_presets")
    merged = copy.deepcopy(dict(stored)) if stored else _defaults(AGENT_FIELDS)
    for name, value in given.items():
        if name == "request_presets":
            merged[name] = _merge_presets(value, merged.get(name) or [], store, stamp)
        else:
            merged[name] = value
    _check_presets_against(merged["request_presets"], merged["input_schema"],
                           "config.request_presets")
    return merged


# ---------------------------------------------------------------- envelope


def _parse_scopings(emu: Emulator, value: Any, integration_type: str) -> list[dict[str, Any]]:
    check_type(value, "array", "scopings")
    out: list[dict[str, Any]] = []
    for i, item in enumerate(value):
        where = f"scopings[{i}]"
        check_type(item, "object", where)
        check_keys(item, SCOPING_KEYS, where)
        for key in SCOPING_KEYS:
            check_type(item.get(key), "string", f"{where}.{key}", nullable=True)
        out.append({"organization_id": item.get("organization_id"), "space_id": item.get("space_id")})
    for i, scoping in enumerate(out):
        where = f"scopings[{i}]"
        org_id, space_id = scoping["organization_id"], scoping["space_id"]
        if org_id is not None and emu.store.get("organization", org_id) is None:
            raise Problem(422, f"{where}.organization_id {org_id!r} names no organization")
        if space_id is None:
            continue
        space = emu.space_by_id(space_id)
        if space is None:
            raise Problem(422, f"{where}.space_id {space_id!r} names no space")
        if org_id is None and integration_type == "AGENT":
            raise Problem(422, f"{where}: a space scoping of an AGENT integration must also carry organization_id")
        if org_id is not None and org_id != space["organization_id"]:
            raise Problem(422, f"{where}.space_id belongs to another organization than {org_id!r}")
    return out


def _check_type_value(body: Mapping[str, Any]) -> str:
    if "type" not in body:
        raise Problem(400, "type is required")
    value = body["type"]
    check_type(value, "string", "type")
    if value not in INTEGRATION_TYPES:
        raise Problem(400, f"type must be one of {', '.join(INTEGRATION_TYPES)}")
    return str(value)


def _check_description(body: Mapping[str, Any], integration_type: str) -> None:
    if "description" not in body:
        return
    check_type(body["description"], "string", "description", nullable=True)
    if integration_type != "AGENT":
        raise Problem(422, "description is only valid for AGENT integrations")


def _check_unique_name(store: Store, doc: Mapping[str, Any]) -> None:
    clash = store.scan(KIND, name=doc["name"], limit=1,
                       where=lambda d: d["type"] == doc["type"] and d["id"] != doc["id"])
    if clash:
        raise Problem(409, f"an {doc['type']} integration named {doc['name']!r} already exists")


def _merge_config(emu: Emulator, integration_type: str, given: Any, stored: Mapping[str, Any] | None,
                  stamp: str) -> dict[str, Any]:
    check_type(given, "object", "config")
    if integration_type == "LLM":
        return _merge_llm_config(given, stored)
    return _merge_agent_config(given, stored, emu.store, stamp)


# ---------------------------------------------------------------- a replica's integrations (seeding)

#: The value every write-only secret of a replica holds: a replica never sees a real one.
PLACEHOLDER = "(placeholder: a replica holds no secret)"
#: The header a replica stores for an AGENT whose headers read back only as ``has_headers: true``.
PLACEHOLDER_HEADER = "x-replica-placeholder"


def seed(store: Store, items: Sequence[Mapping[str, Any]], stamp: str) -> None:
    """A replica's integrations, as their lists answer them (newest first), stored (``core.Seed``):
    a write-only secret read as present as ``PLACEHOLDER``, header names as headers whose values
    are ``PLACEHOLDER`` (``has_headers: true`` as the one header ``PLACEHOLDER_HEADER``)."""
    for item in reversed(items):
        doc = integration_doc(item, stamp)
        store.insert(KIND, doc, parent=doc["type"])


def integration_doc(item: Mapping[str, Any], stamp: str) -> dict[str, Any]:
    """The stored document of an integration given in its read shape."""
    read_config = item.get("config") or {}
    if item["type"] == "AGENT":
        fields: Mapping[str, ConfigField] = AGENT_FIELDS
        config: dict[str, Any] = {}
    else:
        provider = PROVIDERS.get(str(read_config.get("provider")))
        fields = provider.fields if provider is not None else {}
        config = {"provider": read_config.get("provider")}
    for f in fields.values():
        config[f.name] = f.behaviour.stored(f, read_config, PLACEHOLDER, PLACEHOLDER_HEADER)
    doc: dict[str, Any] = {
        "id": item["id"], "type": item["type"], "name": item["name"],
        "scopings": [{"organization_id": s.get("organization_id"), "space_id": s.get("space_id")}
                     for s in item.get("scopings") or []],
        "config": config,
        "created_at": item.get("created_at") or stamp, "updated_at": item.get("updated_at") or stamp,
        "created_by_user_id": item.get("created_by_user_id"),
    }
    if item["type"] == "AGENT":
        doc["description"] = item.get("description")
    return doc


# ---------------------------------------------------------------- routes


def routes(emu: Emulator) -> list[BaseRoute]:
    store = emu.store

    def load(request: Request) -> dict[str, Any]:
        doc = store.get(KIND, request.path_params["integration_id"])
        if doc is None:
            raise Problem(404, "no integration has this id")
        return doc

    async def list_integrations(request: Request) -> JSONResponse:
        params = request.query_params
        wanted_type = params.get("type")
        if wanted_type is not None and wanted_type not in INTEGRATION_TYPES:
            raise Problem(400, f"type must be one of {', '.join(INTEGRATION_TYPES)}")
        space = None
        if params.get("space_id") is not None:
            space = emu.space_by_id(params["space_id"])
            if space is None:
                raise Problem(404, "space_id names no space")
        needle = params.get("name")

        def where(doc: dict[str, Any]) -> bool:
            return ((wanted_type is None or doc["type"] == wanted_type) and name_matches(doc, needle)
                    and (space is None or visible_in_space(doc, space)))

        return json_response(page(store, KIND, params, plural="integrations", where=where, newest_first=True,
                                  parent=wanted_type, render=render))

    async def get_integration(request: Request) -> JSONResponse:
        return json_response(render(load(request)))

    async def create_integration(request: Request) -> JSONResponse:
        body = await read_json_object(request)
        check_keys(body, ENVELOPE_KEYS, "the integration")
        integration_type = _check_type_value(body)
        for key in ("name", "config"):
            if key not in body:
                raise Problem(400, f"{key} is required")
        name = _parse_name(body["name"])
        _check_description(body, integration_type)
        stamp = now()
        with store.transaction():
            config = _merge_config(emu, integration_type, body["config"], None, stamp)
            doc: dict[str, Any] = {
                "id": "", "type": integration_type, "name": name,
                "scopings": _parse_scopings(emu, body.get("scopings", []), integration_type),
                "config": config, "created_at": stamp, "updated_at": stamp,
                "created_by_user_id": emu.user_id(emu.principal(request)),
            }
            if integration_type == "AGENT":
                doc["description"] = body.get("description")
            _check_unique_name(store, doc)
            doc["id"] = store.new_id("Integration")
            store.insert(KIND, doc, parent=integration_type)  # the type is the parent: lists by type use the index
        return json_response(render(doc), 201)

    async def update_integration(request: Request) -> JSONResponse:
        body = await read_json_object(request)
        integration_type = _check_type_value(body)
        with store.transaction():
            old = load(request)
            if integration_type != old["type"]:
                raise Problem(422, f"type is immutable: this integration is {old['type']}, not {integration_type}")
            check_keys(body, ENVELOPE_KEYS, f"the {integration_type} integration update")
            if len(body) < 2:
                raise Problem(400, "give at least one of name, scopings, config"
                                   + (", description" if integration_type == "AGENT" else "") + " besides type")
            new = copy.deepcopy(old)
            if "name" in body:
                new["name"] = _parse_name(body["name"])
            _check_description(body, integration_type)
            stamp = now()
            if "config" in body:
                new["config"] = _merge_config(emu, integration_type, body["config"], old["config"], stamp)
            if "scopings" in body:
                new["scopings"] = _parse_scopings(emu, body["scopings"], integration_type)
            if "description" in body:
                new["description"] = body["description"]
            if new != old:
                _check_unique_name(store, new)
                new["updated_at"] = stamp
                store.put(KIND, new)
        return json_response(render(new))

    async def delete_integration(request: Request) -> Response:
        if not store.delete(KIND, request.path_params["integration_id"]):
            raise Problem(404, "no integration has this id")
        return no_content()

    return [
        Route("/v2/integrations", list_integrations, methods=["GET"]),
        Route("/v2/integrations", create_integration, methods=["POST"]),
        Route("/v2/integrations/{integration_id}", get_integration, methods=["GET"]),
        Route("/v2/integrations/{integration_id}", update_integration, methods=["PATCH"]),
        Route("/v2/integrations/{integration_id}", delete_integration, methods=["DELETE"]),
    ]


# ---------------------------------------------------------------- OpenAPI, generated from the provider table

_STRING = {"type": "string"}
_TIMESTAMP = {"type": "string", "format": "date-time"}


def _write_schema(f: ConfigField) -> dict[str, Any]:
    return f.behaviour.write_schema(f, ref)


def _read_schema(f: ConfigField) -> dict[str, Any]:
    return f.behaviour.read_schema(f, ref)


def _object(properties: Mapping[str, Any], required: list[str], *, closed: bool) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "required": required, "properties": dict(properties)}
    if closed:
        schema["additionalProperties"] = False
    return schema


def _provider_schemas() -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    for p in PROVIDERS.values():
        const = {"provider": {"const": p.name}}
        schemas[f"LlmConfig{p.name}"] = _object(
            {**const, **{f.read_name: _read_schema(f) for f in p.fields.values()}},
            ["provider", *[f.read_name for f in p.fields.values()]], closed=False)
        schemas[f"CreateLlmConfig{p.name}"] = _object(
            {**const, **{f.name: nullable(_write_schema(f)) if f.nullable else _write_schema(f)
                         for f in p.fields.values()}},
            ["provider", *[f.name for f in p.fields.values() if f.required_on_create]], closed=True)
    for mode in AUTH_MODES.values():
        const = {"auth_type": {"const": mode.auth_type}}
        schemas[f"AwsBedrockAuth{mode.auth_type}"] = _object(
            {**const, **{f.read_name: _read_schema(f) for f in mode.fields.values()}},
            ["auth_type", *[f.read_name for f in mode.fields.values()]], closed=True)
        schemas[f"CreateAwsBedrockAuth{mode.auth_type}"] = _object(
            {**const, **{f.name: _write_schema(f) for f in mode.fields.values()}},
            ["auth_type", *[f.name for f in mode.fields.values() if f.required_on_create]], closed=True)
    for name, family in (("AwsBedrockAuth", "AwsBedrockAuth"), ("CreateAwsBedrockAuth", "CreateAwsBedrockAuth")):
        schemas[name] = {"oneOf": [ref(f"{family}{m}") for m in AUTH_MODES]}
    schemas["LlmConfig"] = {"oneOf": [ref(f"LlmConfig{p}") for p in PROVIDERS]}
    schemas["CreateLlmConfig"] = {"oneOf": [ref(f"CreateLlmConfig{p}") for p in PROVIDERS]}
    schemas["UpdateLlmConfig"] = {
        "type": "object", "additionalProperties": False,
        "description": "A field sent for a provider it does not apply to is 422; null clears nullable"
                       " fields and is 422 for the others.",
        "properties": {"provider": {"enum": list(PROVIDERS)},
                       **{n: nullable(_write_schema(f)) for n, f in _LLM_FIELD_SHAPES.items()}},
    }
    return schemas


_SCOPINGS = {"type": "array", "items": ref("IntegrationScoping")}
_ENVELOPE_READ = {"id": _STRING, "name": _STRING, "scopings": _SCOPINGS, "created_at": _TIMESTAMP,
                  "updated_at": _TIMESTAMP}
_ENVELOPE_REQUIRED = ["id", "type", "name", "scopings", "config", "created_at", "updated_at",
                      "created_by_user_id"]

OPENAPI_SCHEMAS: dict[str, Any] = {
    **_provider_schemas(),
    "IntegrationScoping": _object({"organization_id": nullable(_STRING), "space_id": nullable(_STRING)},
                                  [], closed=True),
    "AgentRequestPreset": _object(
        {"id": _STRING, "name": {"type": "string", "minLength": 1, "maxLength": PRESET_NAME_MAX},
         "description": nullable({"type": "string", "maxLength": PRESET_DESCRIPTION_MAX}),
         "config": {"type": "object"}, "created_at": _TIMESTAMP, "updated_at": _TIMESTAMP},
        ["id", "name", "description", "config", "created_at", "updated_at"], closed=False),
    "AgentRequestPresetInput": _object(
        {"name": {"type": "string", "minLength": 1, "maxLength": PRESET_NAME_MAX},
         "description": nullable({"type": "string", "maxLength": PRESET_DESCRIPTION_MAX}),
         "config": {"type": "object"}},
        ["name", "config"], closed=True),
    "AgentConfig": _object({f.read_name: _read_schema(f) for f in AGENT_FIELDS.values()},
                           [f.read_name for f in AGENT_FIELDS.values()], closed=False),
    "CreateAgentConfig": _object(
        {f.name: nullable(_write_schema(f)) if f.nullable else _write_schema(f) for f in AGENT_FIELDS.values()},
        [f.name for f in AGENT_FIELDS.values() if f.required_on_create], closed=True),
    "UpdateAgentConfig": _object(
        {f.name: nullable(_write_schema(f)) if f.nullable else _write_schema(f) for f in AGENT_FIELDS.values()},
        [], closed=True),
    "LlmIntegration": _object({**_ENVELOPE_READ, "type": {"const": "LLM"}, "config": ref("LlmConfig"),
                               "created_by_user_id": _STRING}, _ENVELOPE_REQUIRED, closed=False),
    "AgentIntegration": _object({**_ENVELOPE_READ, "type": {"const": "AGENT"}, "config": ref("AgentConfig"),
                                 "description": nullable(_STRING), "created_by_user_id": nullable(_STRING)},
                                _ENVELOPE_REQUIRED, closed=False),
    "Integration": {"oneOf": [ref("LlmIntegration"), ref("AgentIntegration")],
                    "discriminator": {"propertyName": "type", "mapping": {
                        "LLM": "#/components/schemas/LlmIntegration",
                        "AGENT": "#/components/schemas/AgentIntegration"}}},
    "CreateLlmIntegration": _object({"type": {"const": "LLM"}, "name": {"type": "string", "pattern": r"\S"},
                                     "scopings": _SCOPINGS, "config": ref("CreateLlmConfig")},
                                    ["type", "name", "config"], closed=True),
    "CreateAgentIntegration": _object({"type": {"const": "AGENT"}, "name": {"type": "string", "pattern": r"\S"},
                                       "description": nullable(_STRING), "scopings": _SCOPINGS,
                                       "config": ref("CreateAgentConfig")},
                                      ["type", "name", "config"], closed=True),
    "CreateIntegration": {"oneOf": [ref("CreateLlmIntegration"), ref("CreateAgentIntegration")]},
    "UpdateLlmIntegration": {**_object({"type": {"const": "LLM"}, "name": {"type": "string", "pattern": r"\S"},
                                        "scopings": _SCOPINGS, "config": ref("UpdateLlmConfig")},
                                       ["type"], closed=True), "minProperties": 2},
    "UpdateAgentIntegration": {**_object({"type": {"const": "AGENT"}, "name": {"type": "string", "pattern": r"\S"},
                                          "description": nullable(_STRING), "scopings": _SCOPINGS,
                                          "config": ref("UpdateAgentConfig")},
                                         ["type"], closed=True), "minProperties": 2},
    "UpdateIntegration": {"oneOf": [ref("UpdateLlmIntegration"), ref("UpdateAgentIntegration")]},
}

_ID = [path_param("integration_id")]

OPENAPI_PATHS: dict[str, Any] = {
    "/v2/integrations": {
        "get": {
            "operationId": "listIntegrations",
            "parameters": list_parameters(
                query_param("type", "LLM or AGENT; omitted lists both.", {"enum": list(INTEGRATION_TYPES)}),
                query_param("space_id", "Only integrations usable from this space (404 if it names none)."),
                query_param("name", "Case-insensitive substring of the name."),
            ),
            "responses": {**ok("A page of integrations, newest first",
                               list_envelope("integrations", ref("Integration"))), **problems(400, 404)},
        },
        "post": {
            "operationId": "createIntegration",
            "requestBody": json_body(ref("CreateIntegration")),
            "responses": {**ok("The created integration", ref("Integration"), 201),
                          **problems(400, 409, 422)},
        },
    },
    "/v2/integrations/{integration_id}": {
        "get": {
            "operationId": "getIntegration",
            "parameters": _ID,
            "responses": {**ok("The integration", ref("Integration")), **problems(404)},
        },
        "patch": {
            "operationId": "updateIntegration",
            "description": "Alpha. Partial update (api-spec 4.1): omitted keeps, null clears nullable fields,"
                           " collections replace, presets are matched by name.",
            "parameters": _ID,
            "requestBody": json_body(ref("UpdateIntegration")),
            "responses": {**ok("The updated integration", ref("Integration")),
                          **problems(400, 404, 409, 422)},
        },
        "delete": {
            "operationId": "deleteIntegration",
            "parameters": _ID,
            "responses": {"204": {"description": "Deleted"}, **problems(404)},
        },
    },
}
