"""Emulator routes: resource restrictions (docs/api.md, "Resource restrictions").

Store kind "restriction", one document per restricted resource, keyed by the resource id:
``{id: resource_id, resource_type, resource_id, created_at, space_id}``. ``space_id`` is private:
it is the space the resource lives in, which decides who may see and manage the restriction.

Who may do what:

- admin keys list, create and delete every restriction; the reader key may manage none, so it
  lists none (docs/api.md), and may not write (403);
- a space-scoped key (``settings.space_keys``) lists only the restrictions of resources in its
  own space and creates or deletes only those (403 for a resource in another space). As the
  service does, the list is filtered AFTER a page is read (``core.page(visible=...)``), so a page
  may hold fewer items than ``limit``, or none, while ``has_more`` is true.

Decisions where docs/api.md is silent:

- POST ``{resource_id, resource_type?, space_id?}`` answers 200 with the restriction and is
  idempotent: a second POST returns the stored restriction unchanged (no duplicate, ``created_at``
  kept). The service takes only ``{resource_id}`` and knows the type from the id; the emulator
  does the same: when the id names one of its prompts the type is PROMPT and the space is the prompt's (a ``resource_type`` other than PROMPT,
  or a ``space_id`` other than the prompt's, is 422). Any other id is taken as a project or
  dashboard the emulator does not model: ``resource_type`` is PROJECT or DASHBOARD, by default
  decoded from the id as the service's ids decode (``Dashboard:12`` -> DASHBOARD; else PROJECT),
  PROMPT is 404 (no such prompt), and ``space_id`` (default: the space named ``default``) must
  name a space (404 otherwise).
- DELETE of a resource that is not restricted is 404; deleting a prompt also lifts its restriction.
- The list is oldest first; a bad ``resource_type``, ``limit`` or ``cursor`` is 400.
- Missing ``resource_id``, wrong JSON types, unknown properties and a ``resource_type`` outside
  the enum are 400; an empty ``resource_id`` is 422.
"""

from __future__ import annotations

import base64
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
    read_json_object,
)
from reconciler.emulator.openapi import (
    json_body,
    list_envelope,
    list_parameters,
    ok,
    path_param,
    problems,
    ref,
)
from reconciler.emulator.prompts import DATE_TIME, by_method, require_field, require_space

RESOURCE_TYPES = ("PROJECT", "DASHBOARD", "PROMPT")
UNMODELLED_TYPES = ("PROJECT", "DASHBOARD")
DEFAULT_SPACE_NAME = "default"


def render(doc: dict[str, Any]) -> dict[str, Any]:
    return {"resource_type": doc["resource_type"], "resource_id": doc["resource_id"], "created_at": doc["created_at"]}


class _SpaceNames:
    """Space id -> name, looked up once per request (the list checks every restriction)."""

    def __init__(self, emu: Emulator) -> None:
        self._emu = emu
        self._names: dict[str, str | None] = {}

    def __call__(self, space_id: str) -> str | None:
        if space_id not in self._names:
            space = self._emu.space_by_id(space_id)
            self._names[space_id] = None if space is None else str(space["name"])
        return self._names[space_id]


def may_manage(principal: Principal, space_name: str | None) -> bool:
    """Whether a key may manage, and so see (spec 4.2 rule 1), a restriction on a resource in the
    named space: the admin everywhere, a space key in its space, the read-only key nowhere."""
    if principal.role == "admin":
        return True
    return principal.role == "space" and space_name is not None and space_name == principal.space


def _require_manage(principal: Principal, space_name: str | None, resource_id: str) -> None:
    if principal.role == "reader":
        raise Problem(403, "this API key may not write")
    if not may_manage(principal, space_name):
        raise Problem(403, f"this API key may not manage restrictions in the space of {resource_id}")


def _default_space(emu: Emulator) -> dict[str, Any]:
    rows = emu.store.scan("space", where=lambda d: d["name"] == DEFAULT_SPACE_NAME, limit=1)
    if not rows:
        raise Problem(404, f"no space named {DEFAULT_SPACE_NAME!r}; give space_id")
    return rows[0][1]


def _target(emu: Emulator, body: dict[str, Any], resource_id: str) -> tuple[str, dict[str, Any]]:
    """The restriction's (resource_type, space) for a create body."""
    resource_type, space_id = body.get("resource_type"), body.get("space_id")
    prompt = emu.store.get("prompt", resource_id)
    if prompt is not None:
        if resource_type not in (None, "PROMPT"):
            raise Problem(422, f"{resource_id} is a prompt: resource_type must be PROMPT")
        if space_id not in (None, prompt["space_id"]):
            raise Problem(422, f"prompt {resource_id} is not in space {space_id}")
        return "PROMPT", require_space(emu, prompt["space_id"])
    if resource_type == "PROMPT":
        raise Problem(404, f"prompt {resource_id} not found")
    space = _default_space(emu) if space_id is None else require_space(emu, space_id)
    return resource_type or _type_from_id(resource_id), space


def _type_from_id(resource_id: str) -> str:
    """PROJECT or DASHBOARD from an id shaped like the service's (base64 of ``Kind:number[:suffix]``)."""
    try:
        kind = base64.b64decode(resource_id + "=" * (-len(resource_id) % 4)).decode("utf-8").split(":")[0]
    except (ValueError, UnicodeDecodeError):
        return "PROJECT"
    return "DASHBOARD" if kind.lower() == "dashboard" else "PROJECT"


def routes(emu: Emulator) -> list[Route]:
    store = emu.store

    async def list_restrictions(request: Request) -> Response:
        principal = emu.principal(request)
        params = request.query_params
        resource_type = params.get("resource_type")
        if resource_type is not None and resource_type not in RESOURCE_TYPES:
            raise Problem(400, f"resource_type must be one of {', '.join(RESOURCE_TYPES)}")
        names = _SpaceNames(emu)
        return json_response(page(
            store, "restriction", params, plural="resource_restrictions", render=render,
            where=lambda d: resource_type is None or d["resource_type"] == resource_type,
            visible=lambda d: may_manage(principal, names(d["space_id"])),
        ))

    async def create_restriction(request: Request) -> Response:
        principal = emu.principal(request)
        body = await read_json_object(request)
        check_keys(body, {"resource_id", "resource_type", "space_id"}, "body")
        resource_id = require_field(body, "resource_id", "string", "body")
        check_type(body.get("resource_type"), "string", "body.resource_type", nullable=True)
        check_type(body.get("space_id"), "string", "body.space_id", nullable=True)
        if not resource_id.strip():
            raise Problem(422, "body.resource_id must not be empty")
        if body.get("resource_type") not in (None, *RESOURCE_TYPES):
            raise Problem(400, f"body.resource_type must be one of {', '.join(RESOURCE_TYPES)}")
        with store.transaction():
            existing = store.get("restriction", resource_id)
            if existing is not None:
                _require_manage(principal, _SpaceNames(emu)(existing["space_id"]), resource_id)
                return json_response(render(existing))
            resource_type, space = _target(emu, body, resource_id)
            _require_manage(principal, space["name"], resource_id)
            restriction = {"id": resource_id, "resource_type": resource_type, "resource_id": resource_id,
                           "created_at": now(), "space_id": space["id"]}
            store.insert("restriction", restriction)
        return json_response(render(restriction))

    async def delete_restriction(request: Request) -> Response:
        principal = emu.principal(request)
        resource_id = request.path_params["resource_id"]
        with store.transaction():
            existing = store.get("restriction", resource_id)
            if existing is None:
                if principal.role == "reader":
                    raise Problem(403, "this API key may not write")
                raise Problem(404, f"{resource_id} is not restricted")
            _require_manage(principal, _SpaceNames(emu)(existing["space_id"]), resource_id)
            store.delete("restriction", resource_id)
        return no_content()

    return [
        by_method("/v2/resource-restrictions", get=list_restrictions, post=create_restriction),
        by_method("/v2/resource-restrictions/{resource_id}", delete=delete_restriction),
    ]


# ---------------------------------------------------------------- a replica's restrictions (seeding)


def seed(store: Store, items: Sequence[Mapping[str, Any]], stamp: str) -> None:
    """A replica's restrictions, as their list answers them (oldest first), stored (``core.Seed``):
    a restriction's space is its prompt's, else the first space (the spaces are seeded first)."""
    spaces = store.scan("space", limit=1)
    first_space = spaces[0][1]["id"] if spaces else None
    for item in items:
        prompt = store.get("prompt", item["resource_id"])
        space_id = item.get("space_id") or (prompt["space_id"] if prompt else first_space)
        store.insert("restriction", {"id": item["resource_id"], "resource_type": item["resource_type"],
                                     "resource_id": item["resource_id"],
                                     "created_at": item.get("created_at") or stamp, "space_id": space_id})


# ---------------------------------------------------------------- OpenAPI

OPENAPI_SCHEMAS: dict[str, Any] = {
    "ResourceRestriction": {
        "type": "object",
        "required": ["resource_type", "resource_id", "created_at"],
        "properties": {
            "resource_type": {"type": "string", "enum": list(RESOURCE_TYPES)},
            "resource_id": {"type": "string"},
            "created_at": DATE_TIME,
        },
    },
    "ResourceRestrictionCreate": {
        "type": "object",
        "additionalProperties": False,
        "required": ["resource_id"],
        "properties": {
            "resource_id": {"type": "string", "minLength": 1, "pattern": r"\S"},
            "resource_type": {"type": "string", "enum": list(RESOURCE_TYPES),
                              "description": "emulator: PROMPT for its prompts (found by id); else PROJECT "
                                             "(default) or DASHBOARD"},
            "space_id": {"type": "string",
                         "description": "emulator: the space of a project or dashboard (default: the "
                                        "space named default)"},
        },
    },
}

OPENAPI_PATHS: dict[str, Any] = {
    "/v2/resource-restrictions": {
        "get": {
            "summary": "List the restrictions the caller may manage (filtered after the page is read)",
            "parameters": list_parameters({
                "name": "resource_type", "in": "query", "required": False,
                "description": "Only this type; all types when omitted.",
                "schema": {"type": "string", "enum": list(RESOURCE_TYPES)},
            }),
            "responses": {
                **ok("A page; it may be short or empty while has_more is true",
                     list_envelope("resource_restrictions", ref("ResourceRestriction"))),
                **problems(400),
            },
        },
        "post": {
            "summary": "Restrict a resource (idempotent)",
            "requestBody": json_body(ref("ResourceRestrictionCreate")),
            "responses": {**ok("The restriction (new or already present)", ref("ResourceRestriction")),
                          **problems(400, 404, 422)},
        },
    },
    "/v2/resource-restrictions/{resource_id}": {
        "parameters": [path_param("resource_id")],
        "delete": {
            "summary": "Lift a resource's restriction",
            "responses": {"204": {"description": "Lifted"}, **problems(404)},
        },
    },
}
