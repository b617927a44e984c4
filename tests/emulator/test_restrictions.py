"""The emulator's resource restrictions (docs/api.md, "Resource restrictions"), over a real socket."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import jsonschema
import pytest

from reconciler.emulator.core import Emulator

pytestmark = pytest.mark.socket

SPACE_KEY = "research-key"
ADMIN = {"Authorization": "Bearer admin-key"}


def space_id(api: httpx.Client, name: str = "default") -> str:
    spaces = api.get("/v2/spaces", params={"name": name}).json()["spaces"]
    return str(next(s["id"] for s in spaces if s["name"] == name))


def create_prompt(api: httpx.Client, name: str, space: str = "default") -> str:
    body = {"space_id": space_id(api, space), "name": name, "version": {
        "commit_message": "c", "provider": "VENDOR_A", "messages": [{"role": "user", "content": "hi"}]}}
    response = api.post("/v2/prompts", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def restrict(client: httpx.Client, resource_id: str, **fields: Any) -> httpx.Response:
    return client.post("/v2/resource-restrictions", json={"resource_id": resource_id, **fields})


def listed(client: httpx.Client, **params: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while True:
        response = client.get("/v2/resource-restrictions", params=params)
        assert response.status_code == 200, response.text
        page = response.json()
        out += page["resource_restrictions"]
        if not page["pagination"]["has_more"]:
            return out
        params = {**params, "cursor": page["pagination"]["next_cursor"]}


@pytest.fixture
def scoped(emulator_factory: Callable[..., tuple[str, Emulator]]) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    """(admin, research space key) clients on an emulator that knows the space key."""
    url, _ = emulator_factory(space_keys={SPACE_KEY: "research"})
    with httpx.Client(base_url=url, headers=ADMIN) as admin, \
            httpx.Client(base_url=url, headers={"Authorization": f"Bearer {SPACE_KEY}"}) as key:
        yield admin, key


def test_create_is_200_and_idempotent(api: httpx.Client) -> None:
    first = restrict(api, "UHJvamVjdDoxMjphYg")
    assert first.status_code == 200
    body = first.json()
    assert set(body) == {"resource_type", "resource_id", "created_at"}
    assert body["resource_type"] == "PROJECT" and body["resource_id"] == "UHJvamVjdDoxMjphYg"
    again = restrict(api, "UHJvamVjdDoxMjphYg", resource_type="DASHBOARD")
    assert again.status_code == 200 and again.json() == body
    assert listed(api) == [body]


def test_a_prompt_id_is_a_prompt_restriction_and_other_ids_take_the_given_type(api: httpx.Client) -> None:
    prompt_id = create_prompt(api, "p")
    assert restrict(api, prompt_id).json()["resource_type"] == "PROMPT"
    assert restrict(api, "RGFzaGJvYXJkOjEy", resource_type="DASHBOARD").json()["resource_type"] == "DASHBOARD"
    assert restrict(api, "UHJvamVjdDox", space_id=space_id(api, "research")).json()["resource_type"] == "PROJECT"
    other_prompt = create_prompt(api, "q")
    cases: list[tuple[dict[str, Any], int]] = [
        ({}, 400),
        ({"resource_id": 5}, 400),
        ({"resource_id": "x", "extra": 1}, 400),
        ({"resource_id": "x", "resource_type": "SPACE"}, 400),
        ({"resource_id": ""}, 422),
        ({"resource_id": other_prompt, "resource_type": "DASHBOARD"}, 422),
        ({"resource_id": other_prompt, "space_id": space_id(api, "research")}, 422),
        ({"resource_id": "UHJvbXB0Ojk5OmFi", "resource_type": "PROMPT"}, 404),
        ({"resource_id": "UHJvamVjdDoy", "space_id": "U3BhY2U6OTk5OmFi"}, 404),
    ]
    for body, status in cases:
        response = api.post("/v2/resource-restrictions", json=body)
        assert response.status_code == status, (body, response.text)
    assert len(listed(api)) == 3


def test_list_filters_by_resource_type_and_rejects_bad_queries(api: httpx.Client) -> None:
    prompt_id = create_prompt(api, "p")
    restrict(api, prompt_id)
    restrict(api, "RGFzaGJvYXJkOjEy", resource_type="DASHBOARD")
    restrict(api, "UHJvamVjdDox")
    assert [r["resource_id"] for r in listed(api, resource_type="PROMPT")] == [prompt_id]
    assert [r["resource_type"] for r in listed(api)] == ["PROMPT", "DASHBOARD", "PROJECT"]
    for params in ({"resource_type": "prompt"}, {"limit": 0}, {"limit": 101}, {"limit": "x"}, {"cursor": "nope"}):
        response = api.get("/v2/resource-restrictions", params=params)
        assert response.status_code == 400, params
        assert response.json()["status"] == 400
    page = api.get("/v2/resource-restrictions", params={"limit": 1}).json()
    other_query = {"limit": 1, "resource_type": "PROJECT", "cursor": page["pagination"]["next_cursor"]}
    assert api.get("/v2/resource-restrictions", params=other_query).status_code == 400


def test_list_defaults_to_50_and_allows_100(api: httpx.Client) -> None:
    for i in range(101):
        restrict(api, f"UHJvamVjdDp{i}")
    assert len(api.get("/v2/resource-restrictions").json()["resource_restrictions"]) == 50
    page = api.get("/v2/resource-restrictions", params={"limit": 100}).json()
    assert len(page["resource_restrictions"]) == 100 and page["pagination"]["has_more"] is True
    assert len(listed(api, limit=100)) == 101


def test_delete_is_204_then_404(api: httpx.Client) -> None:
    restrict(api, "UHJvamVjdDox")
    assert api.delete("/v2/resource-restrictions/UHJvamVjdDox").status_code == 204
    assert listed(api) == []
    missing = api.delete("/v2/resource-restrictions/UHJvamVjdDox")
    assert missing.status_code == 404
    assert missing.headers["content-type"].startswith("application/problem+json")


def test_reader_may_manage_no_restriction_so_it_lists_none_and_writes_nothing(
        api: httpx.Client, reader: httpx.Client) -> None:
    for i in range(3):
        restrict(api, f"UHJvamVjdDo{i}")
    assert len(listed(api)) == 3
    page = reader.get("/v2/resource-restrictions", params={"limit": 2}).json()
    assert page["resource_restrictions"] == [] and page["pagination"]["has_more"] is True  # filtered after the read
    assert listed(reader) == []
    assert restrict(reader, "UHJvamVjdDoy").status_code == 403
    assert reader.delete("/v2/resource-restrictions/UHJvamVjdDox").status_code == 403
    assert reader.delete("/v2/resource-restrictions/UHJvamVjdDo5").status_code == 403


def test_a_space_key_pages_through_empty_pages_until_has_more_is_false(
        scoped: tuple[httpx.Client, httpx.Client]) -> None:
    admin, key = scoped
    research = space_id(admin, "research")
    for i in range(3):
        restrict(admin, f"RGVmYXVsdFByb2plY3Q6{i}")  # default space: invisible to the key
    for i in range(2):
        restrict(admin, f"UmVzZWFyY2hQcm9qZWN0Ok{i}", space_id=research)
    restrict(admin, "RGVmYXVsdFByb2plY3Q6OQ")
    pages: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": 2}
    while True:
        page = key.get("/v2/resource-restrictions", params=params).json()
        pages.append(page)
        if not page["pagination"]["has_more"]:
            break
        params["cursor"] = page["pagination"]["next_cursor"]
    assert len(pages) == 3
    assert pages[0]["resource_restrictions"] == [] and pages[0]["pagination"]["has_more"] is True
    ids = [[r["resource_id"] for r in page["resource_restrictions"]] for page in pages]
    assert ids == [[], ["UmVzZWFyY2hQcm9qZWN0Ok0"], ["UmVzZWFyY2hQcm9qZWN0Ok1"]]
    assert pages[2]["pagination"] == {"has_more": False}
    assert len(listed(admin)) == 6


def test_a_space_key_manages_only_its_own_space(scoped: tuple[httpx.Client, httpx.Client]) -> None:
    admin, key = scoped
    research = space_id(admin, "research")
    mine = create_prompt(admin, "mine", space="research")
    theirs = create_prompt(admin, "theirs")
    assert restrict(key, mine).status_code == 200
    assert restrict(key, mine).status_code == 200
    assert restrict(key, theirs).status_code == 403
    assert restrict(key, "UHJvamVjdDox").status_code == 403  # default space
    assert restrict(key, "UHJvamVjdDox", space_id=research).status_code == 200
    restrict(admin, theirs)
    assert key.delete(f"/v2/resource-restrictions/{theirs}").status_code == 403
    assert restrict(key, theirs).status_code == 403
    assert {r["resource_id"] for r in listed(key)} == {mine, "UHJvamVjdDox"}
    assert key.delete(f"/v2/resource-restrictions/{mine}").status_code == 204
    assert key.delete(f"/v2/resource-restrictions/{mine}").status_code == 404
    assert {r["resource_id"] for r in listed(admin)} == {theirs, "UHJvamVjdDox"}


def test_a_space_key_may_not_write_anything_else(scoped: tuple[httpx.Client, httpx.Client]) -> None:
    admin, key = scoped
    body = {"space_id": space_id(admin, "research"), "name": "p", "version": {
        "commit_message": "c", "provider": "VENDOR_A", "messages": [{"role": "user", "content": "hi"}]}}
    assert key.post("/v2/prompts", json=body).status_code == 403
    assert key.post("/v2/datasets", json={"name": "d", "space_id": body["space_id"],
                                          "examples": [{}]}).status_code == 403
    assert key.get("/v2/prompts").status_code == 200


def test_responses_match_the_published_openapi_schemas(api: httpx.Client) -> None:
    document = api.get("/v2/openapi.json").json()
    validator = jsonschema.Draft202012Validator({**document, "$ref": "#/components/schemas/ResourceRestriction"})
    validator.validate(restrict(api, create_prompt(api, "p")).json())
    validator.validate(restrict(api, "UHJvamVjdDox").json())
    for item in listed(api):
        validator.validate(item)
