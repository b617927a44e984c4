"""Emulator routes: prompts, their immutable versions and the labels on those versions.

Store kinds: "prompt" ``{id, name, description, space_id, created_at, updated_at,
created_by_user_id}`` and "prompt_version" (parent: the prompt id) in the API read shape.

Decisions where docs/api.md is silent:

- A prompt name is unique within its space, compared exactly (case-sensitive); a clash is 409.
- ``space_id`` naming no space is 404, on create and as a list filter.
- As in the integrations module, schema violations are 400: missing required properties, wrong
  JSON types, unknown properties (in the body, in ``version`` and in each message) and values
  outside an enum (a ``provider`` outside ``reconciler.providers.PROVIDERS``, an
  ``input_variable_format`` outside ``f_string``/``mustache``/``none``, a role outside
  ``system``/``user``/``assistant``/``tool``). Other failed rules are 422: an empty ``name``, an
  empty ``messages`` list, an empty label.
- Read-back defaults of a version: ``model`` null, ``input_variable_format`` ``f_string``,
  ``invocation_params`` and ``provider_params`` ``{}``, ``labels`` ``[]``; ``description`` reads
  back null when omitted.
- ``commit_hash`` is the SHA-1 of the version's content together with its id: unique per version.
- PATCH takes exactly ``{description}`` (string or null); an empty body, ``name`` or any other
  property is 400.
- Deleting a prompt deletes its versions and the PROMPT resource restriction on it.
- Lists are newest first; versions are newest first. A new version moves the prompt's
  ``updated_at``; label changes do not.
- Labels are non-empty strings; a PUT deduplicates them keeping the first occurrence order.

This module also holds the few helpers the other modules of its group (datasets, evaluators,
experiments, restrictions) share: ``by_method``, ``require_field``, ``require_space`` and some
OpenAPI fragments.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
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
from reconciler.providers import PROVIDERS

INPUT_VARIABLE_FORMATS = ("f_string", "mustache", "none")
MESSAGE_ROLES = ("system", "user", "assistant", "tool")
VERSION_FIELDS = frozenset({
    "commit_message", "provider", "messages", "model", "input_variable_format", "invocation_params",
    "provider_params",
})


Handler = Callable[[Request], Awaitable[Response]]


def by_method(path: str, **handlers: Handler) -> Route:
    """One route per path, dispatching on the method, so that a 405 lists every method the path
    supports in ``Allow`` (separate routes for one path would each claim only their own)."""
    table = {method.upper(): handler for method, handler in handlers.items()}

    async def dispatch(request: Request) -> Response:
        method = "GET" if request.method == "HEAD" else request.method
        return await table[method](request)

    return Route(path, dispatch, methods=list(table))


def require_field(body: dict[str, Any], key: str, expected: str, where: str, *, nullable: bool = False) -> Any:
    """A required property: missing or of the wrong JSON type is 400."""
    if key not in body:
        raise Problem(400, f"{where}.{key} is required")
    check_type(body[key], expected, f"{where}.{key}", nullable=nullable)
    return body[key]


def require_space(emu: Emulator, space_id: str) -> dict[str, Any]:
    space = emu.space_by_id(space_id)
    if space is None:
        raise Problem(404, f"space {space_id} not found")
    return space


def prompt_or_404(emu: Emulator, prompt_id: str) -> dict[str, Any]:
    prompt = emu.store.get("prompt", prompt_id)
    if prompt is None:
        raise Problem(404, f"prompt {prompt_id} not found")
    return prompt


def latest_version(emu: Emulator, prompt_id: str) -> dict[str, Any]:
    rows = emu.store.scan("prompt_version", parent=prompt_id, newest_first=True, limit=1)
    if not rows:
        raise Problem(404, f"prompt {prompt_id} has no version")
    return rows[0][1]


def _name_taken(emu: Emulator, space_id: str, name: str) -> bool:
    return bool(emu.store.scan("prompt", parent=space_id, name=name, limit=1))


def parse_version(body: dict[str, Any], where: str = "version") -> dict[str, Any]:
    """Validate a version body and return its content with defaults filled in."""
    check_keys(body, VERSION_FIELDS, where)
    commit_message = require_field(body, "commit_message", "string", where)
    provider = require_field(body, "provider", "string", where)
    messages = require_field(body, "messages", "array", where)
    if provider not in PROVIDERS:
        raise Problem(400, f"{where}.provider must be one of {', '.join(PROVIDERS)}")
    if not messages:
        raise Problem(422, f"{where}.messages must hold at least one message")
    for i, message in enumerate(messages):
        at = f"{where}.messages[{i}]"
        check_type(message, "object", at)
        check_keys(message, {"role", "content"}, at)
        role = require_field(message, "role", "string", at)
        require_field(message, "content", "string", at)
        if role not in MESSAGE_ROLES:
            raise Problem(400, f"{at}.role must be one of {', '.join(MESSAGE_ROLES)}")
    model = body.get("model")
    check_type(model, "string", f"{where}.model", nullable=True)
    fmt = body.get("input_variable_format", "f_string")
    check_type(fmt, "string", f"{where}.input_variable_format")
    if fmt not in INPUT_VARIABLE_FORMATS:
        raise Problem(400, f"{where}.input_variable_format must be one of {', '.join(INPUT_VARIABLE_FORMATS)}")
    params = {}
    for key in ("invocation_params", "provider_params"):
        params[key] = body.get(key, {})
        check_type(params[key], "object", f"{where}.{key}")
    return {
        "commit_message": commit_message,
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        "input_variable_format": fmt,
        "provider": provider,
        "model": model,
        **params,
    }


def new_version(emu: Emulator, prompt_id: str, content: dict[str, Any], principal: Principal) -> dict[str, Any]:
    version_id = emu.store.new_id("PromptVersion")
    digest = hashlib.sha1(json.dumps([version_id, content], sort_keys=True).encode()).hexdigest()
    version = {
        "id": version_id,
        "prompt_id": prompt_id,
        "commit_hash": digest,
        **content,
        "created_at": now(),
        "created_by_user_id": emu.user_id(principal),
        "labels": [],
    }
    return emu.store.insert("prompt_version", version, parent=prompt_id)


def _version_for(emu: Emulator, prompt_id: str, params: Any) -> dict[str, Any]:
    version_id, label = params.get("version_id"), params.get("label")
    if version_id is not None and label is not None:
        raise Problem(400, "give version_id or label, not both")
    if version_id is not None:
        version = emu.store.get("prompt_version", version_id)
        if version is None or version["prompt_id"] != prompt_id:
            raise Problem(404, f"prompt version {version_id} not found")
        return version
    if label is not None:
        rows = emu.store.scan("prompt_version", parent=prompt_id, where=lambda v: label in v["labels"], limit=1)
        if not rows:
            raise Problem(404, f"no version of prompt {prompt_id} has label {label}")
        return rows[0][1]
    return latest_version(emu, prompt_id)


def routes(emu: Emulator) -> list[Route]:
    store = emu.store

    async def list_prompts(request: Request) -> Response:
        emu.principal(request)
        params = request.query_params
        space_id = params.get("space_id")
        if space_id is not None:
            require_space(emu, space_id)
        return json_response(page(
            store, "prompt", params, plural="prompts", newest_first=True, parent=space_id,
            where=query_filters(emu, params),
        ))

    async def create_prompt(request: Request) -> Response:
        principal = emu.principal(request)
        require_write(principal)
        body = await read_json_object(request)
        check_keys(body, {"space_id", "name", "version", "description"}, "body")
        space_id = require_field(body, "space_id", "string", "body")
        name = require_field(body, "name", "string", "body")
        version_body = require_field(body, "version", "object", "body")
        description = body.get("description")
        check_type(description, "string", "body.description", nullable=True)
        content = parse_version(version_body)
        if not name.strip():
            raise Problem(422, "name must not be empty")
        with store.transaction():
            require_space(emu, space_id)
            if _name_taken(emu, space_id, name):
                raise Problem(409, f"a prompt named {name!r} already exists in space {space_id}")
            stamp = now()
            prompt = {
                "id": store.new_id("Prompt"),
                "name": name,
                "description": description,
                "space_id": space_id,
                "created_at": stamp,
                "updated_at": stamp,
                "created_by_user_id": emu.user_id(principal),
            }
            store.insert("prompt", prompt, parent=space_id)
            version = new_version(emu, prompt["id"], content, principal)
        return json_response({**prompt, "version": version}, 201)

    async def get_prompt(request: Request) -> Response:
        emu.principal(request)
        prompt = prompt_or_404(emu, request.path_params["prompt_id"])
        return json_response({**prompt, "version": _version_for(emu, prompt["id"], request.query_params)})

    async def update_prompt(request: Request) -> Response:
        require_write(emu.principal(request))
        body = await read_json_object(request)
        check_keys(body, {"description"}, "body")
        description = require_field(body, "description", "string", "body", nullable=True)
        with store.transaction():
            prompt = prompt_or_404(emu, request.path_params["prompt_id"])
            prompt.update(description=description, updated_at=now())
            store.put("prompt", prompt)
            version = latest_version(emu, prompt["id"])
        return json_response({**prompt, "version": version})

    async def delete_prompt(request: Request) -> Response:
        require_write(emu.principal(request))
        prompt_id = request.path_params["prompt_id"]
        with store.transaction():
            prompt_or_404(emu, prompt_id)
            store.delete_children("prompt_version", prompt_id)
            store.delete("restriction", prompt_id)
            store.delete("prompt", prompt_id)
        return no_content()

    async def list_versions(request: Request) -> Response:
        emu.principal(request)
        prompt = prompt_or_404(emu, request.path_params["prompt_id"])
        return json_response(page(store, "prompt_version", request.query_params, plural="prompt_versions",
                                  parent=prompt["id"], newest_first=True))

    async def create_version(request: Request) -> Response:
        principal = emu.principal(request)
        require_write(principal)
        body = await read_json_object(request)
        content = parse_version(body, "body")
        with store.transaction():
            prompt = prompt_or_404(emu, request.path_params["prompt_id"])
            version = new_version(emu, prompt["id"], content, principal)
            prompt["updated_at"] = version["created_at"]
            store.put("prompt", prompt)
        return json_response(version, 201)

    async def put_labels(request: Request) -> Response:
        require_write(emu.principal(request))
        body = await read_json_object(request)
        check_keys(body, {"labels"}, "body")
        labels = require_field(body, "labels", "array", "body")
        for i, label in enumerate(labels):
            check_type(label, "string", f"body.labels[{i}]")
            if not label.strip():
                raise Problem(422, f"body.labels[{i}] must not be empty")
        wanted = list(dict.fromkeys(labels))
        with store.transaction():
            version = _version_or_404(emu, request.path_params["version_id"])
            for _, other in store.scan("prompt_version", parent=version["prompt_id"]):
                if other["id"] != version["id"] and set(other["labels"]) & set(wanted):
                    other["labels"] = [x for x in other["labels"] if x not in wanted]
                    store.put("prompt_version", other)
            version["labels"] = wanted
            store.put("prompt_version", version)
        return json_response(version)

    async def delete_label(request: Request) -> Response:
        require_write(emu.principal(request))
        label = request.path_params["label"]
        with store.transaction():
            version = _version_or_404(emu, request.path_params["version_id"])
            if label not in version["labels"]:
                raise Problem(404, f"prompt version {version['id']} has no label {label}")
            version["labels"] = [x for x in version["labels"] if x != label]
            store.put("prompt_version", version)
        return no_content()

    return [
        by_method("/v2/prompts", get=list_prompts, post=create_prompt),
        by_method("/v2/prompts/{prompt_id}", get=get_prompt, patch=update_prompt, delete=delete_prompt),
        by_method("/v2/prompts/{prompt_id}/versions", get=list_versions, post=create_version),
        by_method("/v2/prompt-versions/{version_id}/labels", put=put_labels),
        # {label:path}: a label may hold "/" (sent as %2F, which the server decodes before routing)
        by_method("/v2/prompt-versions/{version_id}/labels/{label:path}", delete=delete_label),
    ]


def _version_or_404(emu: Emulator, version_id: str) -> dict[str, Any]:
    version = emu.store.get("prompt_version", version_id)
    if version is None:
        raise Problem(404, f"prompt version {version_id} not found")
    return version


# ---------------------------------------------------------------- a replica's prompts (seeding)


def seed(store: Store, items: Sequence[Mapping[str, Any]], stamp: str) -> None:
    """A replica's prompts, as their lists answer them (newest first), each with its ``versions``
    (newest first), stored (``core.Seed``)."""
    for item in reversed(items):
        prompt = {k: v for k, v in item.items() if k not in ("versions", "version")}
        prompt.setdefault("description", None)
        prompt.setdefault("created_at", stamp)
        prompt.setdefault("updated_at", prompt["created_at"])
        store.insert("prompt", prompt, parent=prompt.get("space_id"))
        for version in reversed(item.get("versions") or []):
            doc = {"prompt_id": prompt["id"], "model": None, "input_variable_format": "f_string",
                   "invocation_params": {}, "provider_params": {}, "created_at": stamp,
                   **copy.deepcopy(dict(version))}
            doc["labels"] = [label.get("name") if isinstance(label, Mapping) else label
                             for label in doc.get("labels") or []]
            store.insert("prompt_version", doc, parent=prompt["id"])


# ---------------------------------------------------------------- OpenAPI

NO_CONTENT = {"204": {"description": "Deleted"}}
DATE_TIME = {"type": "string", "format": "date-time"}
FREE_OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": True}
NULLABLE_STRING = {"type": ["string", "null"]}
SPACE_FILTER = query_param("space_id", "Only resources in this space (404 when it names no space).")
NAME_FILTER = query_param("name", "Case-insensitive substring of the name.")
SPACE_NAME_FILTER = query_param("space_name", "Case-insensitive substring of the space's name.")

_MESSAGE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["role", "content"],
    "properties": {"role": {"type": "string", "enum": list(MESSAGE_ROLES)}, "content": {"type": "string"}},
}
_VERSION_CONTENT = {
    "commit_message": {"type": "string"},
    "provider": {"type": "string", "enum": list(PROVIDERS)},
    "messages": {"type": "array", "minItems": 1, "items": _MESSAGE},
    "model": NULLABLE_STRING,
    "input_variable_format": {"type": "string", "enum": list(INPUT_VARIABLE_FORMATS), "default": "f_string"},
    "invocation_params": FREE_OBJECT,
    "provider_params": FREE_OBJECT,
}
_PROMPT_FIELDS = {
    "id": {"type": "string"},
    "name": {"type": "string"},
    "description": NULLABLE_STRING,
    "space_id": {"type": "string"},
    "created_at": DATE_TIME,
    "updated_at": DATE_TIME,
    "created_by_user_id": {"type": "string"},
}

OPENAPI_SCHEMAS: dict[str, Any] = {
    "PromptVersionCreate": {
        "type": "object",
        "additionalProperties": False,
        "required": ["commit_message", "provider", "messages"],
        "properties": _VERSION_CONTENT,
    },
    "PromptVersion": {
        "type": "object",
        "required": ["id", "prompt_id", "commit_hash", *_VERSION_CONTENT, "created_at", "created_by_user_id",
                     "labels"],
        "properties": {
            "id": {"type": "string"},
            "prompt_id": {"type": "string"},
            "commit_hash": {"type": "string"},
            **_VERSION_CONTENT,
            "created_at": DATE_TIME,
            "created_by_user_id": {"type": "string"},
            "labels": {"type": "array", "items": {"type": "string"}},
        },
    },
    "Prompt": {"type": "object", "required": list(_PROMPT_FIELDS), "properties": _PROMPT_FIELDS},
    "PromptWithVersion": {
        "type": "object",
        "required": [*_PROMPT_FIELDS, "version"],
        "properties": {**_PROMPT_FIELDS, "version": ref("PromptVersion")},
    },
    "PromptCreate": {
        "type": "object",
        "additionalProperties": False,
        "required": ["space_id", "name", "version"],
        "properties": {
            "space_id": {"type": "string"},
            "name": {"type": "string", "minLength": 1, "pattern": r"\S"},
            "description": NULLABLE_STRING,
            "version": ref("PromptVersionCreate"),
        },
    },
    "PromptUpdate": {
        "type": "object",
        "additionalProperties": False,
        "required": ["description"],
        "properties": {"description": NULLABLE_STRING},
    },
    "PromptLabels": {
        "type": "object",
        "additionalProperties": False,
        "required": ["labels"],
        "properties": {"labels": {"type": "array", "items": {"type": "string", "minLength": 1, "pattern": r"\S"}}},
    },
}

OPENAPI_PATHS: dict[str, Any] = {
    "/v2/prompts": {
        "get": {
            "summary": "List prompts (without versions), newest first",
            "parameters": list_parameters(SPACE_FILTER, SPACE_NAME_FILTER, NAME_FILTER),
            "responses": {**ok("A page of prompts", list_envelope("prompts", ref("Prompt"))),
                          **problems(400, 404)},
        },
        "post": {
            "summary": "Create a prompt with its first version",
            "requestBody": json_body(ref("PromptCreate")),
            "responses": {**ok("The prompt with its first version", ref("PromptWithVersion"), 201),
                          **problems(400, 404, 409, 422)},
        },
    },
    "/v2/prompts/{prompt_id}": {
        "parameters": [path_param("prompt_id")],
        "get": {
            "summary": "Get a prompt with one version (default the latest)",
            "parameters": [query_param("version_id", "This version (404 when not of this prompt)."),
                           query_param("label", "The version holding this label; not with version_id.")],
            "responses": {**ok("The prompt", ref("PromptWithVersion")), **problems(400, 404)},
        },
        "patch": {
            "summary": "Update a prompt's description",
            "requestBody": json_body(ref("PromptUpdate")),
            "responses": {**ok("The prompt with its latest version", ref("PromptWithVersion")),
                          **problems(400, 404)},
        },
        "delete": {
            "summary": "Delete a prompt, its versions and its restriction",
            "responses": {**NO_CONTENT, **problems(404)},
        },
    },
    "/v2/prompts/{prompt_id}/versions": {
        "parameters": [path_param("prompt_id")],
        "get": {
            "summary": "List a prompt's versions, newest first",
            "parameters": list_parameters(),
            "responses": {**ok("A page of versions", list_envelope("prompt_versions", ref("PromptVersion"))),
                          **problems(400, 404)},
        },
        "post": {
            "summary": "Create a new (immutable) version; it becomes the latest",
            "requestBody": json_body(ref("PromptVersionCreate")),
            "responses": {**ok("The version", ref("PromptVersion"), 201), **problems(400, 404, 422)},
        },
    },
    "/v2/prompt-versions/{version_id}/labels": {
        "parameters": [path_param("version_id")],
        "put": {
            "summary": "Replace a version's labels; a label held by another version of the prompt moves here",
            "requestBody": json_body(ref("PromptLabels")),
            "responses": {**ok("The version", ref("PromptVersion")), **problems(400, 404, 422)},
        },
    },
    "/v2/prompt-versions/{version_id}/labels/{label}": {
        "parameters": [path_param("version_id"), path_param("label")],
        "delete": {
            "summary": "Remove one label from a version",
            "responses": {**NO_CONTENT, **problems(404)},
        },
    },
}
