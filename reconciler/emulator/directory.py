"""Emulator routes for the account's directory: spaces and organizations.

Spaces are what manifests are scoped to and what space keys name, so their names are unique in
the account (a duplicate is 409). A space's ``organization_id`` defaults to the account's first
organization; one that names no organization is 422, like any body field that fails validation.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from reconciler.emulator.core import (
    Emulator,
    Problem,
    check_keys,
    check_type,
    json_response,
    name_matches,
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

SPACE_FIELDS = ("id", "name", "organization_id", "description", "created_at")
ORGANIZATION_FIELDS = ("id", "name", "created_at")


def render_space(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: doc.get(k) for k in SPACE_FIELDS}


def render_organization(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: doc.get(k) for k in ORGANIZATION_FIELDS}


def routes(emu: Emulator) -> list[BaseRoute]:
    store = emu.store

    async def list_spaces(request: Request) -> JSONResponse:
        params = request.query_params
        needle = params.get("name")
        return json_response(page(store, "space", params, plural="spaces",
                                  where=lambda d: name_matches(d, needle), render=render_space))

    async def create_space(request: Request) -> JSONResponse:
        body = await read_json_object(request)
        check_keys(body, {"name", "organization_id", "description"}, "the space")
        name = body.get("name")
        if name is None:
            raise Problem(400, "name is required")
        check_type(name, "string", "name")
        check_type(body.get("organization_id"), "string", "organization_id", nullable=True)
        check_type(body.get("description"), "string", "description", nullable=True)
        if not name.strip():
            raise Problem(422, "name must not be empty")
        with store.transaction():
            org_id = body.get("organization_id")
            if org_id is None:
                org_id = store.scan("organization", limit=1)[0][1]["id"]
            elif store.get("organization", org_id) is None:
                raise Problem(422, f"organization_id {org_id!r} names no organization")
            if store.scan("space", where=lambda d: d["name"] == name, limit=1):
                raise Problem(409, f"a space named {name!r} already exists")
            space = emu.create_space(name, org_id, body.get("description"))
        return json_response(render_space(space), 201)

    async def get_space(request: Request) -> JSONResponse:
        space = emu.space_by_id(request.path_params["space_id"])
        if space is None:
            raise Problem(404, "no space has this id")
        return json_response(render_space(space))

    async def list_organizations(request: Request) -> JSONResponse:
        return json_response(page(store, "organization", request.query_params, plural="organizations",
                                  render=render_organization))

    return [
        Route("/v2/spaces", list_spaces, methods=["GET"]),
        Route("/v2/spaces", create_space, methods=["POST"]),
        Route("/v2/spaces/{space_id}", get_space, methods=["GET"]),
        Route("/v2/organizations", list_organizations, methods=["GET"]),
    ]


_NULLABLE_STRING = {"type": ["string", "null"]}

OPENAPI_SCHEMAS: dict[str, Any] = {
    "Space": {
        "type": "object",
        "required": list(SPACE_FIELDS),
        "properties": {
            "id": {"type": "string"},
            "name": {"type": "string"},
            "organization_id": {"type": "string"},
            "description": _NULLABLE_STRING,
            "created_at": {"type": "string", "format": "date-time"},
        },
    },
    "CreateSpace": {
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "minLength": 1, "pattern": r"\S"},
            "organization_id": _NULLABLE_STRING,
            "description": _NULLABLE_STRING,
        },
    },
    "Organization": {
        "type": "object",
        "required": list(ORGANIZATION_FIELDS),
        "properties": {
            "id": {"type": "string"},
            "name": {"type": "string"},
            "created_at": {"type": "string", "format": "date-time"},
        },
    },
}

OPENAPI_PATHS: dict[str, Any] = {
    "/v2/spaces": {
        "get": {
            "operationId": "listSpaces",
            "parameters": list_parameters(query_param("name", "Case-insensitive substring of the name.")),
            "responses": {**ok("A page of spaces, oldest first", list_envelope("spaces", ref("Space"))),
                          **problems(400)},
        },
        "post": {
            "operationId": "createSpace",
            "requestBody": json_body(ref("CreateSpace")),
            "responses": {**ok("The created space", ref("Space"), 201), **problems(400, 409, 422)},
        },
    },
    "/v2/spaces/{space_id}": {
        "get": {
            "operationId": "getSpace",
            "parameters": [path_param("space_id")],
            "responses": {**ok("The space", ref("Space")), **problems(404)},
        },
    },
    "/v2/organizations": {
        "get": {
            "operationId": "listOrganizations",
            "parameters": list_parameters(),
            "responses": {**ok("A page of organizations, oldest first",
                               list_envelope("organizations", ref("Organization"))), **problems(400)},
        },
    },
}
