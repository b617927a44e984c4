"""Emulator routes: template (LLM-judge) evaluators and their immutable versions.

Store kinds: "evaluator" ``{id, name, description, type, space_id, created_at, updated_at,
created_by_user_id}`` and "evaluator_version" (parent: the evaluator id) in the shape of
docs/api.md, "Evaluators".

Decisions where docs/api.md is silent:

- ``type`` must be ``template`` (422 otherwise; code evaluators are not emulated).
- A name is unique within its space (exact match): 409 on create and rename. ``space_id`` naming
  no space is 404, on create and as a list filter.
- ``template_config`` required fields: ``name``, ``template`` (both non-empty), ``classification_choices``
  (a non-empty object of label -> number) and ``llm_config`` with ``ai_integration_id`` and
  ``model_name``. Optional, with the value they read back as when omitted:
  ``include_explanations`` true, ``use_function_calling_if_available`` true, ``direction``
  ``maximize`` (or ``minimize``, ``none``), ``data_granularity`` ``span`` (or ``trace``,
  ``session``), ``llm_config.invocation_parameters`` and ``provider_parameters`` ``{}``. A version
  always reads back with every field.
- ``llm_config.ai_integration_id`` must name an LLM integration visible from the evaluator's space
  (``integrations.visible_in_space``); otherwise 404, as docs/api.md says. It is checked on
  create and on every new version (an integration deleted later does not touch stored versions).
- ``commit_message`` is a required string in requests (it reads back as given).
- As in the integrations module, schema violations are 400: missing required properties, wrong
  JSON types, unknown properties at any depth (except inside the free-form parameter objects) and
  values outside an enum (``type``, ``direction``, ``data_granularity``). Other failed rules are
  422: empty strings, no classification choices.
- PATCH takes ``name`` and/or ``description`` (string or null); an empty body is 400. It returns
  the evaluator with its latest version.
- Lists are newest first; versions are newest first. Deleting an evaluator deletes its versions.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from reconciler.emulator.core import (
    Emulator,
    Principal,
    Problem,
    Store,
    check_keys,
    check_type,
    json_response,
    no_content,
    now,
    page,
    query_filters,
    read_json_object,
    require_write,
)
from reconciler.emulator.integrations import visible_in_space
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
from reconciler.emulator.prompts import (
    DATE_TIME,
    FREE_OBJECT,
    NAME_FILTER,
    NO_CONTENT,
    NULLABLE_STRING,
    SPACE_FILTER,
    SPACE_NAME_FILTER,
    by_method,
    require_field,
    require_space,
)

EVALUATOR_TYPES = ("template",)
DIRECTIONS = ("maximize", "minimize", "none")
DATA_GRANULARITIES = ("span", "trace", "session")
TEMPLATE_CONFIG_DEFAULTS: dict[str, Any] = {
    "include_explanations": True,
    "use_function_calling_if_available": True,
    "direction": "maximize",
    "data_granularity": "span",
}
TEMPLATE_CONFIG_FIELDS = frozenset({"name", "template", "classification_choices", "llm_config",
                                    *TEMPLATE_CONFIG_DEFAULTS})
LLM_CONFIG_FIELDS = frozenset({"ai_integration_id", "model_name", "invocation_parameters", "provider_parameters"})


def evaluator_or_404(emu: Emulator, evaluator_id: str) -> dict[str, Any]:
    evaluator = emu.store.get("evaluator", evaluator_id)
    if evaluator is None:
        raise Problem(404, f"evaluator {evaluator_id} not found")
    return evaluator


def latest_version(store: Store, evaluator_id: str) -> dict[str, Any]:
    rows = store.scan("evaluator_version", parent=evaluator_id, newest_first=True, limit=1)
    if not rows:
        raise Problem(404, f"evaluator {evaluator_id} has no version")
    return rows[0][1]


def parse_template_config(value: Any, where: str) -> dict[str, Any]:
    """Validate a template_config (types 400, values 422) and fill in the documented defaults."""
    check_type(value, "object", where)
    check_keys(value, TEMPLATE_CONFIG_FIELDS, where)
    config: dict[str, Any] = {}
    for key in ("name", "template"):
        config[key] = require_field(value, key, "string", where)
        if not config[key].strip():
            raise Problem(422, f"{where}.{key} must not be empty")
    for key in ("include_explanations", "use_function_calling_if_available"):
        config[key] = value.get(key, TEMPLATE_CONFIG_DEFAULTS[key])
        check_type(config[key], "boolean", f"{where}.{key}")
    choices = require_field(value, "classification_choices", "object", where)
    for label, score in choices.items():
        check_type(score, "number", f"{where}.classification_choices.{label}")
    if not choices:
        raise Problem(422, f"{where}.classification_choices must hold at least one label")
    config["classification_choices"] = choices
    for key, allowed in (("direction", DIRECTIONS), ("data_granularity", DATA_GRANULARITIES)):
        config[key] = value.get(key, TEMPLATE_CONFIG_DEFAULTS[key])
        check_type(config[key], "string", f"{where}.{key}")
        if config[key] not in allowed:
            raise Problem(400, f"{where}.{key} must be one of {', '.join(allowed)}")
    llm = require_field(value, "llm_config", "object", where)
    at = f"{where}.llm_config"
    check_keys(llm, LLM_CONFIG_FIELDS, at)
    llm_config = {
        "ai_integration_id": require_field(llm, "ai_integration_id", "string", at),
        "model_name": require_field(llm, "model_name", "string", at),
    }
    if not llm_config["model_name"].strip():
        raise Problem(422, f"{at}.model_name must not be empty")
    for key in ("invocation_parameters", "provider_parameters"):
        llm_config[key] = llm.get(key, {})
        check_type(llm_config[key], "object", f"{at}.{key}")
    config["llm_config"] = llm_config
    return config


def parse_version(body: dict[str, Any], where: str) -> tuple[str, dict[str, Any]]:
    check_keys(body, {"commit_message", "template_config"}, where)
    commit_message = require_field(body, "commit_message", "string", where)
    config = parse_template_config(require_field(body, "template_config", "object", where),
                                   f"{where}.template_config")
    return commit_message, config


def _check_integration(emu: Emulator, config: dict[str, Any], space: dict[str, Any]) -> None:
    integration_id = config["llm_config"]["ai_integration_id"]
    integration = emu.store.get("integration", integration_id)
    if integration is None or integration.get("type") != "LLM" or not visible_in_space(integration, space):
        raise Problem(404, f"no LLM integration {integration_id} is visible from space {space['id']}")


def _new_version(emu: Emulator, evaluator_id: str, commit_message: str, config: dict[str, Any],
                 principal: Principal) -> dict[str, Any]:
    version_id = emu.store.new_id("EvaluatorVersion")
    digest = hashlib.sha1(json.dumps([version_id, commit_message, config], sort_keys=True).encode()).hexdigest()
    version = {
        "id": version_id,
        "evaluator_id": evaluator_id,
        "commit_hash": digest,
        "commit_message": commit_message,
        "template_config": config,
        "created_at": now(),
        "created_by_user_id": emu.user_id(principal),
    }
    return emu.store.insert("evaluator_version", version, parent=evaluator_id)


def _name_taken(store: Store, space_id: str, name: str, except_id: str | None = None) -> bool:
    return bool(store.scan("evaluator", parent=space_id, name=name, limit=1, where=lambda d: d["id"] != except_id))


def _check_name(name: str, where: str) -> None:
    if not name.strip():
        raise Problem(422, f"{where} must not be empty")


def routes(emu: Emulator) -> list[Route]:
    store = emu.store

    async def list_evaluators(request: Request) -> Response:
        emu.principal(request)
        params = request.query_params
        space_id = params.get("space_id")
        if space_id is not None:
            require_space(emu, space_id)
        return json_response(page(
            store, "evaluator", params, plural="evaluators", newest_first=True, parent=space_id,
            where=query_filters(emu, params),
        ))

    async def create_evaluator(request: Request) -> Response:
        principal = emu.principal(request)
        require_write(principal)
        body = await read_json_object(request)
        check_keys(body, {"space_id", "name", "type", "description", "version"}, "body")
        space_id = require_field(body, "space_id", "string", "body")
        name = require_field(body, "name", "string", "body")
        kind = require_field(body, "type", "string", "body")
        description = body.get("description")
        check_type(description, "string", "body.description", nullable=True)
        commit_message, config = parse_version(require_field(body, "version", "object", "body"), "body.version")
        _check_name(name, "body.name")
        if kind not in EVALUATOR_TYPES:
            raise Problem(400, f"body.type must be one of {', '.join(EVALUATOR_TYPES)}")
        with store.transaction():
            space = require_space(emu, space_id)
            _check_integration(emu, config, space)
            if _name_taken(store, space_id, name):
                raise Problem(409, f"an evaluator named {name!r} already exists in space {space_id}")
            stamp = now()
            evaluator = {
                "id": store.new_id("Evaluator"),
                "name": name,
                "description": description,
                "type": kind,
                "space_id": space_id,
                "created_at": stamp,
                "updated_at": stamp,
                "created_by_user_id": emu.user_id(principal),
            }
            store.insert("evaluator", evaluator, parent=space_id)
            version = _new_version(emu, evaluator["id"], commit_message, config, principal)
        return json_response({**evaluator, "version": version}, 201)

    async def get_evaluator(request: Request) -> Response:
        emu.principal(request)
        evaluator = evaluator_or_404(emu, request.path_params["evaluator_id"])
        version_id = request.query_params.get("version_id")
        if version_id is None:
            version = latest_version(store, evaluator["id"])
        else:
            found = store.get("evaluator_version", version_id)
            if found is None or found["evaluator_id"] != evaluator["id"]:
                raise Problem(404, f"evaluator version {version_id} not found")
            version = found
        return json_response({**evaluator, "version": version})

    async def update_evaluator(request: Request) -> Response:
        require_write(emu.principal(request))
        body = await read_json_object(request)
        check_keys(body, {"name", "description"}, "body")
        if not body:
            raise Problem(400, "give name and/or description")
        if "name" in body:
            check_type(body["name"], "string", "body.name")
            _check_name(body["name"], "body.name")
        if "description" in body:
            check_type(body["description"], "string", "body.description", nullable=True)
        with store.transaction():
            evaluator = evaluator_or_404(emu, request.path_params["evaluator_id"])
            if "name" in body and _name_taken(store, evaluator["space_id"], body["name"], evaluator["id"]):
                raise Problem(409, f"an evaluator named {body['name']!r} already exists in space "
                                   f"{evaluator['space_id']}")
            evaluator.update(body, updated_at=now())
            store.put("evaluator", evaluator)
            version = latest_version(store, evaluator["id"])
        return json_response({**evaluator, "version": version})

    async def delete_evaluator(request: Request) -> Response:
        require_write(emu.principal(request))
        evaluator_id = request.path_params["evaluator_id"]
        with store.transaction():
            evaluator_or_404(emu, evaluator_id)
            store.delete_children("evaluator_version", evaluator_id)
            store.delete("evaluator", evaluator_id)
        return no_content()

    async def list_versions(request: Request) -> Response:
        emu.principal(request)
        evaluator = evaluator_or_404(emu, request.path_params["evaluator_id"])
        return json_response(page(store, "evaluator_version", request.query_params, plural="evaluator_versions",
                                  parent=evaluator["id"], newest_first=True))

    async def create_version(request: Request) -> Response:
        principal = emu.principal(request)
        require_write(principal)
        body = await read_json_object(request)
        commit_message, config = parse_version(body, "body")
        with store.transaction():
            evaluator = evaluator_or_404(emu, request.path_params["evaluator_id"])
            space = require_space(emu, evaluator["space_id"])
            _check_integration(emu, config, space)
            version = _new_version(emu, evaluator["id"], commit_message, config, principal)
            evaluator["updated_at"] = version["created_at"]
            store.put("evaluator", evaluator)
        return json_response(version, 201)

    return [
        by_method("/v2/evaluators", get=list_evaluators, post=create_evaluator),
        by_method("/v2/evaluators/{evaluator_id}",
                  get=get_evaluator, patch=update_evaluator, delete=delete_evaluator),
        by_method("/v2/evaluators/{evaluator_id}/versions", get=list_versions, post=create_version),
    ]


# ---------------------------------------------------------------- a replica's evaluators (seeding)


def seed(store: Store, items: Sequence[Mapping[str, Any]], stamp: str) -> None:
    """A replica's evaluators, as their lists answer them (newest first), each with its ``versions``
    (newest first), stored (``core.Seed``)."""
    for item in reversed(items):
        evaluator = {k: v for k, v in item.items() if k not in ("versions", "version")}
        evaluator.setdefault("description", None)
        evaluator.setdefault("type", "template")
        evaluator.setdefault("created_at", stamp)
        evaluator.setdefault("updated_at", evaluator["created_at"])
        store.insert("evaluator", evaluator, parent=evaluator.get("space_id"))
        for version in reversed(item.get("versions") or []):
            doc = {"evaluator_id": evaluator["id"], "created_at": stamp, **copy.deepcopy(dict(version))}
            store.insert("evaluator_version", doc, parent=evaluator["id"])


# ---------------------------------------------------------------- OpenAPI

_LLM_CONFIG = {
    "type": "object",
    "additionalProperties": False,
    "required": ["ai_integration_id", "model_name"],
    "properties": {
        "ai_integration_id": {"type": "string", "description": "an LLM integration visible from the space"},
        "model_name": {"type": "string", "minLength": 1, "pattern": r"\S"},
        "invocation_parameters": {**FREE_OBJECT, "default": {}},
        "provider_parameters": {**FREE_OBJECT, "default": {}},
    },
}
_TEMPLATE_CONFIG_PROPERTIES: dict[str, Any] = {
    "name": {"type": "string", "minLength": 1, "pattern": r"\S"},
    "template": {"type": "string", "minLength": 1, "pattern": r"\S"},
    "include_explanations": {"type": "boolean", "default": True},
    "use_function_calling_if_available": {"type": "boolean", "default": True},
    "classification_choices": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "number"}},
    "direction": {"type": "string", "enum": list(DIRECTIONS), "default": "maximize"},
    "data_granularity": {"type": "string", "enum": list(DATA_GRANULARITIES), "default": "span"},
    "llm_config": _LLM_CONFIG,
}
_EVALUATOR_FIELDS: dict[str, Any] = {
    "id": {"type": "string"},
    "name": {"type": "string"},
    "description": NULLABLE_STRING,
    "type": {"type": "string", "enum": list(EVALUATOR_TYPES)},
    "space_id": {"type": "string"},
    "created_at": DATE_TIME,
    "updated_at": DATE_TIME,
    "created_by_user_id": {"type": "string"},
}

OPENAPI_SCHEMAS: dict[str, Any] = {
    "TemplateConfig": {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "template", "classification_choices", "llm_config"],
        "properties": _TEMPLATE_CONFIG_PROPERTIES,
    },
    "EvaluatorVersionCreate": {
        "type": "object",
        "additionalProperties": False,
        "required": ["commit_message", "template_config"],
        "properties": {"commit_message": {"type": "string"}, "template_config": ref("TemplateConfig")},
    },
    "EvaluatorVersion": {
        "type": "object",
        "required": ["id", "evaluator_id", "commit_hash", "commit_message", "template_config", "created_at",
                     "created_by_user_id"],
        "properties": {
            "id": {"type": "string"},
            "evaluator_id": {"type": "string"},
            "commit_hash": {"type": "string"},
            "commit_message": NULLABLE_STRING,
            "template_config": ref("TemplateConfig"),
            "created_at": DATE_TIME,
            "created_by_user_id": NULLABLE_STRING,
        },
    },
    "Evaluator": {"type": "object", "required": list(_EVALUATOR_FIELDS), "properties": _EVALUATOR_FIELDS},
    "EvaluatorWithVersion": {
        "type": "object",
        "required": [*_EVALUATOR_FIELDS, "version"],
        "properties": {**_EVALUATOR_FIELDS, "version": ref("EvaluatorVersion")},
    },
    "EvaluatorCreate": {
        "type": "object",
        "additionalProperties": False,
        "required": ["space_id", "name", "type", "version"],
        "properties": {
            "space_id": {"type": "string"},
            "name": {"type": "string", "minLength": 1, "pattern": r"\S"},
            "type": {"type": "string", "enum": list(EVALUATOR_TYPES)},
            "description": NULLABLE_STRING,
            "version": ref("EvaluatorVersionCreate"),
        },
    },
    "EvaluatorUpdate": {
        "type": "object",
        "additionalProperties": False,
        "minProperties": 1,
        "properties": {"name": {"type": "string", "minLength": 1, "pattern": r"\S"}, "description": NULLABLE_STRING},
    },
}

OPENAPI_PATHS: dict[str, Any] = {
    "/v2/evaluators": {
        "get": {
            "summary": "List evaluators, newest first",
            "parameters": list_parameters(SPACE_FILTER, SPACE_NAME_FILTER, NAME_FILTER),
            "responses": {**ok("A page of evaluators", list_envelope("evaluators", ref("Evaluator"))),
                          **problems(400, 404)},
        },
        "post": {
            "summary": "Create a template evaluator with its first version",
            "requestBody": json_body(ref("EvaluatorCreate")),
            "responses": {**ok("The evaluator with its first version", ref("EvaluatorWithVersion"), 201),
                          **problems(400, 404, 409, 422)},
        },
    },
    "/v2/evaluators/{evaluator_id}": {
        "parameters": [path_param("evaluator_id")],
        "get": {
            "summary": "Get an evaluator with one version (default the latest)",
            "parameters": [query_param("version_id", "This version (404 when not of this evaluator).")],
            "responses": {**ok("The evaluator", ref("EvaluatorWithVersion")), **problems(404)},
        },
        "patch": {
            "summary": "Rename an evaluator or change its description",
            "requestBody": json_body(ref("EvaluatorUpdate")),
            "responses": {**ok("The evaluator with its latest version", ref("EvaluatorWithVersion")),
                          **problems(400, 404, 409, 422)},
        },
        "delete": {
            "summary": "Delete an evaluator and its versions",
            "responses": {**NO_CONTENT, **problems(404)},
        },
    },
    "/v2/evaluators/{evaluator_id}/versions": {
        "parameters": [path_param("evaluator_id")],
        "get": {
            "summary": "List an evaluator's versions, newest first",
            "parameters": list_parameters(),
            "responses": {**ok("A page of versions", list_envelope("evaluator_versions", ref("EvaluatorVersion"))),
                          **problems(400, 404)},
        },
        "post": {
            "summary": "Create a new (immutable) version; it becomes the latest",
            "requestBody": json_body(ref("EvaluatorVersionCreate")),
            "responses": {**ok("The version", ref("EvaluatorVersion"), 201), **problems(400, 404, 422)},
        },
    },
}
