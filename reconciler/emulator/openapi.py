"""The emulator's OpenAPI document (GET /v2/openapi.json, no key needed), composed from the route
modules: each may define ``OPENAPI_PATHS`` (path -> path item) and ``OPENAPI_SCHEMAS`` (name ->
schema), which are merged here with the shared pieces below.

What every operation shares is added here once, so modules describe only their own behaviour:
the bearer security requirement and its 401, the 429 of the rate limiter, and 403 on writes
(the app's authentication gate answers those before any handler runs). Modules reference the
shared problem responses with ``problems(400, 404, ...)`` and schemas with ``ref("Name")``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from reconciler.emulator.core import OTHER_TITLES, PROBLEM_TITLES, Emulator

OPENAPI_PATH = "/v2/openapi.json"

_RESPONSE_NAMES: Mapping[int, str] = {
    400: "InvalidRequest", 401: "AuthenticationRequired", 403: "AccessForbidden", 404: "ResourceNotFound",
    405: "MethodNotAllowed", 409: "ResourceConflict", 422: "UnprocessableEntity", 429: "RateLimitExceeded",
    500: "InternalError",
}

_WRITE_METHODS = frozenset({"post", "put", "patch", "delete"})


def ref(schema_name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{schema_name}"}


def problems(*statuses: int) -> dict[str, Any]:
    """Response entries for the given error statuses, each a shared problem+json response."""
    return {str(s): {"$ref": f"#/components/responses/{_RESPONSE_NAMES[s]}"} for s in statuses}


def json_content(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": dict(schema)}}


def json_body(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": json_content(schema)}


def ok(description: str, schema: Mapping[str, Any], status: int = 200) -> dict[str, Any]:
    return {str(status): {"description": description, "content": json_content(schema)}}


def list_parameters(*filters: Mapping[str, Any], maximum: int = 100) -> list[dict[str, Any]]:
    """The query parameters of a paged list: the given filters, then limit and cursor."""
    return [
        *[dict(f) for f in filters],
        {"name": "limit", "in": "query", "required": False,
         "schema": {"type": "integer", "minimum": 1, "maximum": maximum, "default": 50}},
        {"name": "cursor", "in": "query", "required": False, "schema": {"type": "string", "minLength": 1},
         "description": "Opaque; from pagination.next_cursor of the same query."},
    ]


def query_param(name: str, description: str, schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "description": description,
            "schema": dict(schema or {"type": "string"})}


def path_param(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def list_envelope(plural: str, item: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": [plural, "pagination"],
        "properties": {plural: {"type": "array", "items": dict(item)}, "pagination": ref("Pagination")},
    }


def _shared_components() -> dict[str, Any]:
    responses: dict[str, Any] = {}
    for status, name in _RESPONSE_NAMES.items():
        title = PROBLEM_TITLES[status][0] if status in PROBLEM_TITLES else OTHER_TITLES[status]
        response: dict[str, Any] = {
            "description": title,
            "content": {"application/problem+json": {"schema": ref("Problem")}},
        }
        if status == 429:
            response["headers"] = {"Retry-After": {
                "description": "Seconds to wait before retrying.",
                "schema": {"type": "integer", "minimum": 0}, "required": True,
            }}
        if status == 405:
            response["headers"] = {"Allow": {"schema": {"type": "string"}}}
        responses[name] = response
    schemas: dict[str, Any] = {
        "Problem": {
            "type": "object",
            "description": "RFC 9457 problem details; may gain fields.",
            "required": ["title", "status"],
            "properties": {
                "title": {"type": "string"},
                "status": {"type": "integer"},
                "type": {"type": "string", "format": "uri-reference"},
                "detail": {"type": "string"},
                "instance": {"type": "string", "format": "uri-reference"},
            },
        },
        "Pagination": {
            "type": "object",
            "required": ["has_more"],
            "properties": {"has_more": {"type": "boolean"}, "next_cursor": {"type": "string"}},
        },
    }
    return {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                       "description": "Authorization: Bearer <API_KEY>"}},
        "responses": responses,
        "schemas": schemas,
    }


def build_document(modules: Iterable[ModuleType]) -> dict[str, Any]:
    """The whole document from the route modules' ``OPENAPI_PATHS`` and ``OPENAPI_SCHEMAS``."""
    components = _shared_components()
    paths: dict[str, Any] = {
        OPENAPI_PATH: {"get": {
            "operationId": "getOpenApiDocument",
            "summary": "This document",
            "security": [],
            "responses": ok("The OpenAPI document", {"type": "object"}),
        }},
    }
    for module in modules:
        components["schemas"].update(copy.deepcopy(getattr(module, "OPENAPI_SCHEMAS", {})))
        for path, item in getattr(module, "OPENAPI_PATHS", {}).items():
            paths.setdefault(path, {}).update(copy.deepcopy(item))
    for path, item in paths.items():
        if path == OPENAPI_PATH:
            continue
        for method, operation in item.items():
            if method == "parameters":
                continue
            operation.setdefault("security", [{"bearer": []}])
            shared = [401, 429] + ([403] if method in _WRITE_METHODS else [])
            for status, response in problems(*shared).items():
                operation["responses"].setdefault(status, response)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Management API emulator",
            "version": "2.0.0",
            "description": "The subset of the platform's management API that the emulator implements.",
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": dict(sorted(paths.items())),
        "components": components,
    }


def routes(emu: Emulator, modules: Iterable[ModuleType]) -> list[BaseRoute]:
    document = build_document(modules)

    async def get_document(request: Request) -> JSONResponse:
        return JSONResponse(document)

    return [Route(OPENAPI_PATH, get_document, methods=["GET"])]
