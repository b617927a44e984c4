"""Spaces and organizations in the emulator (api-reference "Spaces and organizations"), over a
real socket and in-process."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from . import assert_problem, bearer, unique


def spaces_named(client: httpx.Client, needle: str, **params: Any) -> dict[str, Any]:
    return dict(client.get("/v2/spaces", params={"name": needle, **params}).json())


def test_the_seeded_spaces_belong_to_the_seeded_organization(client: httpx.Client) -> None:
    [org] = [o for o in client.get("/v2/organizations").json()["organizations"] if o["name"] == "default-org"]
    assert set(org) == {"id", "name", "created_at"}
    for name in ("default", "research"):
        [space] = [s for s in spaces_named(client, name)["spaces"] if s["name"] == name]
        assert set(space) == {"id", "name", "organization_id", "description", "created_at"}
        assert space["organization_id"] == org["id"]


def test_create_space_answers_201_and_the_space_can_be_read_back(client: httpx.Client) -> None:
    name = unique("Space")
    r = client.post("/v2/spaces", json={"name": name, "description": "team"})
    assert r.status_code == 201, r.text
    space = r.json()
    assert space["name"] == name and space["description"] == "team" and space["organization_id"]
    assert client.get(f"/v2/spaces/{space['id']}").json() == space


def test_a_space_can_name_its_organization(client: httpx.Client) -> None:
    org = client.get("/v2/organizations").json()["organizations"][0]["id"]
    r = client.post("/v2/spaces", json={"name": unique(), "organization_id": org})
    assert r.status_code == 201 and r.json()["organization_id"] == org
    assert_problem(client.post("/v2/spaces", json={"name": unique(), "organization_id": "nope"}), 422)


def test_a_duplicate_space_name_is_409(client: httpx.Client) -> None:
    name = unique()
    assert client.post("/v2/spaces", json={"name": name}).status_code == 201
    assert_problem(client.post("/v2/spaces", json={"name": name}), 409)
    assert_problem(client.post("/v2/spaces", json={"name": "default"}), 409)


@pytest.mark.parametrize("body", [{}, {"name": 3}, {"name": "x", "owner": "me"}, {"name": "x", "description": 1}],
                         ids=["no-name", "name-number", "unknown-property", "description-number"])
def test_malformed_space_bodies_are_400(client: httpx.Client, body: dict[str, Any]) -> None:
    assert_problem(client.post("/v2/spaces", json=body), 400)


def test_an_empty_space_name_is_422(client: httpx.Client) -> None:
    assert_problem(client.post("/v2/spaces", json={"name": "  "}), 422)


def test_the_name_filter_is_a_case_insensitive_substring_and_lists_page(client: httpx.Client) -> None:
    prefix = unique("dir")
    names = [f"{prefix}-Alpha", f"{prefix}-beta", f"{prefix}-gamma"]
    for name in names:
        assert client.post("/v2/spaces", json={"name": name}).status_code == 201
    assert [s["name"] for s in spaces_named(client, f"{prefix}-ALPHA")["spaces"]] == [f"{prefix}-Alpha"]
    seen: list[str] = []
    params: dict[str, Any] = {"limit": 2}
    while True:
        body = spaces_named(client, prefix, **params)
        seen += [s["name"] for s in body["spaces"]]
        if not body["pagination"]["has_more"]:
            break
        params["cursor"] = body["pagination"]["next_cursor"]
    assert seen == names


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 101}, {"cursor": "nope"}])
def test_bad_space_list_parameters_are_400(client: httpx.Client, params: dict[str, Any]) -> None:
    assert_problem(client.get("/v2/spaces", params=params), 400)
    assert_problem(client.get("/v2/organizations", params=params), 400)


def test_an_unknown_space_is_404(client: httpx.Client) -> None:
    assert_problem(client.get("/v2/spaces/U3BhY2U6OTk5OmFiYw"), 404)


def test_a_reader_lists_spaces_but_cannot_create_one(client: httpx.Client) -> None:
    assert client.get("/v2/spaces", headers=bearer("reader-key")).status_code == 200
    assert_problem(client.post("/v2/spaces", json={"name": unique()}, headers=bearer("reader-key")), 403)
