"""The emulator's prompts, prompt versions and labels, over a real socket."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema
import pytest

pytestmark = pytest.mark.socket

MESSAGES = [{"role": "system", "content": "You summarize."}, {"role": "user", "content": "{ticket}"}]


def space_id(api: httpx.Client, name: str = "default") -> str:
    spaces = api.get("/v2/spaces", params={"name": name}).json()["spaces"]
    return str(next(s["id"] for s in spaces if s["name"] == name))


def version_body(**overrides: Any) -> dict[str, Any]:
    return {"commit_message": "first", "provider": "VENDOR_A", "messages": MESSAGES, **overrides}


def create_prompt(api: httpx.Client, name: str = "summarize", space: str = "default", **fields: Any) -> Any:
    body = {"space_id": space_id(api, space), "name": name, "version": version_body(), **fields}
    response = api.post("/v2/prompts", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def test_create_returns_201_with_the_first_version_and_read_defaults(api: httpx.Client) -> None:
    prompt = create_prompt(api, description="Summaries")
    assert prompt["name"] == "summarize"
    assert prompt["description"] == "Summaries"
    assert prompt["space_id"] == space_id(api)
    version = prompt["version"]
    assert version["prompt_id"] == prompt["id"]
    assert version["messages"] == MESSAGES
    assert version["input_variable_format"] == "f_string"
    assert version["model"] is None
    assert version["invocation_params"] == {} and version["provider_params"] == {}
    assert version["labels"] == []
    assert len(version["commit_hash"]) == 40
    assert prompt["created_by_user_id"] == version["created_by_user_id"]


def test_description_reads_back_null_when_omitted(api: httpx.Client) -> None:
    assert create_prompt(api)["description"] is None


def test_duplicate_name_in_the_same_space_is_409_but_allowed_in_another(api: httpx.Client) -> None:
    create_prompt(api, "dup")
    again = api.post("/v2/prompts", json={"space_id": space_id(api), "name": "dup", "version": version_body()})
    assert again.status_code == 409
    assert again.headers["content-type"].startswith("application/problem+json")
    create_prompt(api, "dup", space="research")


def test_unknown_space_is_404(api: httpx.Client) -> None:
    response = api.post("/v2/prompts", json={"space_id": "U3BhY2U6OTk5OmFi", "name": "x", "version": version_body()})
    assert response.status_code == 404
    assert api.get("/v2/prompts", params={"space_id": "U3BhY2U6OTk5OmFi"}).status_code == 404


BAD_CREATE_BODIES: list[tuple[dict[str, Any], int]] = [
    ({"name": "x", "version": version_body()}, 400),  # space_id missing
    ({"space_id": "@", "name": 5, "version": version_body()}, 400),
    ({"space_id": "@", "version": version_body()}, 400),
    ({"space_id": "@", "name": "x"}, 400),
    ({"space_id": "@", "name": "x", "version": version_body(), "extra": 1}, 400),
    ({"space_id": "@", "name": "x", "version": {**version_body(), "labels": []}}, 400),
    ({"space_id": "@", "name": "x", "version": version_body(provider="NOPE")}, 400),
    ({"space_id": "@", "name": "x", "version": version_body(input_variable_format="jinja")}, 400),
    ({"space_id": "@", "name": "x", "version": version_body(messages=[{"role": "robot", "content": "hi"}])}, 400),
    ({"space_id": "@", "name": "x", "version": version_body(messages=[{"role": "user"}])}, 400),
    ({"space_id": "@", "name": "x", "version": version_body(messages=[{"role": "user", "content": "a", "x": 1}])}, 400),
    ({"space_id": "@", "name": "x", "version": version_body(invocation_params=[])}, 400),
    ({"space_id": "@", "name": "x", "version": {"provider": "VENDOR_A", "messages": MESSAGES}}, 400),  # commit_message
    ({"space_id": "@", "name": "x", "version": version_body(messages=[])}, 422),
    ({"space_id": "@", "name": " ", "version": version_body()}, 422),
]


def test_create_rejects_bad_bodies_with_400_for_shape_and_422_for_rules(api: httpx.Client) -> None:
    for body, status in BAD_CREATE_BODIES:
        if body.get("space_id") == "@":
            body = {**body, "space_id": space_id(api)}
        response = api.post("/v2/prompts", json=body)
        assert response.status_code == status, (body, response.text)
        assert response.headers["content-type"].startswith("application/problem+json")
    malformed = api.post("/v2/prompts", content=b"{not json", headers={"content-type": "application/json"})
    assert malformed.status_code == 400
    assert api.get("/v2/prompts").json()["prompts"] == []


def test_every_documented_option_is_accepted(api: httpx.Client) -> None:
    messages = [{"role": r, "content": "x"} for r in ("system", "user", "assistant", "tool")]
    for fmt in ("f_string", "mustache", "none"):
        body = {"space_id": space_id(api), "name": f"p-{fmt}", "version": version_body(
            input_variable_format=fmt, messages=messages, model="model-large", provider="NIM_F",
            invocation_params={"temperature": 0.2}, provider_params={"x": {"y": 1}})}
        version = api.post("/v2/prompts", json=body).json()["version"]
        assert version["input_variable_format"] == fmt
        assert version["model"] == "model-large" and version["provider"] == "NIM_F"
        assert version["invocation_params"] == {"temperature": 0.2}
        assert version["messages"] == messages


def test_list_filters_by_space_and_case_insensitive_substring_without_version(api: httpx.Client) -> None:
    create_prompt(api, "Summarize-Ticket")
    create_prompt(api, "classify")
    create_prompt(api, "summarize-other", space="research")
    page = api.get("/v2/prompts", params={"space_id": space_id(api), "name": "SUMMAR"}).json()
    assert [p["name"] for p in page["prompts"]] == ["Summarize-Ticket"]
    assert "version" not in page["prompts"][0]
    assert page["pagination"] == {"has_more": False}
    assert len(api.get("/v2/prompts").json()["prompts"]) == 3


def test_list_pages_with_an_opaque_cursor(api: httpx.Client) -> None:
    for i in range(5):
        create_prompt(api, f"p{i}")
    names, cursor = [], None
    while True:
        params: dict[str, Any] = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = api.get("/v2/prompts", params=params).json()
        names += [p["name"] for p in page["prompts"]]
        if not page["pagination"]["has_more"]:
            assert "next_cursor" not in page["pagination"]
            break
        cursor = page["pagination"]["next_cursor"]
    assert names == ["p4", "p3", "p2", "p1", "p0"]
    assert api.get("/v2/prompts", params={"limit": 0}).status_code == 400
    assert api.get("/v2/prompts", params={"limit": 101}).status_code == 400
    assert api.get("/v2/prompts", params={"cursor": "garbage"}).status_code == 400


def test_new_version_is_201_immutable_and_becomes_latest(api: httpx.Client) -> None:
    prompt = create_prompt(api)
    response = api.post(f"/v2/prompts/{prompt['id']}/versions", json=version_body(commit_message="second"))
    assert response.status_code == 201
    second = response.json()
    assert second["commit_hash"] != prompt["version"]["commit_hash"]
    assert api.get(f"/v2/prompts/{prompt['id']}").json()["version"]["id"] == second["id"]
    versions = api.get(f"/v2/prompts/{prompt['id']}/versions").json()["prompt_versions"]
    assert [v["commit_message"] for v in versions] == ["second", "first"]
    assert versions[1] == prompt["version"]


def test_identical_versions_still_get_distinct_commit_hashes(api: httpx.Client) -> None:
    prompt = create_prompt(api)
    again = api.post(f"/v2/prompts/{prompt['id']}/versions", json=version_body()).json()
    assert again["commit_hash"] != prompt["version"]["commit_hash"]


def test_new_version_validates_its_body_and_the_prompt(api: httpx.Client) -> None:
    prompt = create_prompt(api)
    assert api.post(f"/v2/prompts/{prompt['id']}/versions", json=version_body(messages=[])).status_code == 422
    assert api.post(f"/v2/prompts/{prompt['id']}/versions", json={**version_body(), "x": 1}).status_code == 400
    assert api.post("/v2/prompts/UHJvbXB0Ojk5OmFi/versions", json=version_body()).status_code == 404


def test_get_resolves_a_version_id_or_a_label_but_not_both(api: httpx.Client) -> None:
    prompt = create_prompt(api)
    first = prompt["version"]
    api.post(f"/v2/prompts/{prompt['id']}/versions", json=version_body(commit_message="second"))
    api.put(f"/v2/prompt-versions/{first['id']}/labels", json={"labels": ["production"]})
    url = f"/v2/prompts/{prompt['id']}"
    assert api.get(url, params={"version_id": first["id"]}).json()["version"]["id"] == first["id"]
    assert api.get(url, params={"label": "production"}).json()["version"]["id"] == first["id"]
    assert api.get(url, params={"version_id": first["id"], "label": "production"}).status_code == 400
    assert api.get(url, params={"label": "staging"}).status_code == 404
    assert api.get(url, params={"version_id": "UHJvbXB0VmVyc2lvbjo5OTphYg"}).status_code == 404
    other = create_prompt(api, "other")
    assert api.get(url, params={"version_id": other["version"]["id"]}).status_code == 404


def test_get_unknown_prompt_is_404(api: httpx.Client) -> None:
    response = api.get("/v2/prompts/UHJvbXB0Ojk5OmFi")
    assert response.status_code == 404
    assert response.json()["title"] == "Resource not found"


def test_patch_changes_only_the_description_and_null_clears_it(api: httpx.Client) -> None:
    prompt = create_prompt(api, description="old")
    url = f"/v2/prompts/{prompt['id']}"
    updated = api.patch(url, json={"description": "new"}).json()
    assert updated["description"] == "new" and updated["name"] == "summarize"
    assert updated["version"]["id"] == prompt["version"]["id"]
    assert api.patch(url, json={"description": None}).json()["description"] is None
    assert api.get(url).json()["description"] is None


def test_patch_rejects_anything_but_a_description(api: httpx.Client) -> None:
    prompt = create_prompt(api)
    for body in ({}, {"name": "renamed"}, {"description": "x", "name": "y"}, {"description": 3}):
        assert api.patch(f"/v2/prompts/{prompt['id']}", json=body).status_code == 400, body
    assert api.get(f"/v2/prompts/{prompt['id']}").json()["name"] == "summarize"


def test_patch_unknown_prompt_is_404(api: httpx.Client) -> None:
    assert api.patch("/v2/prompts/UHJvbXB0Ojk5OmFi", json={"description": None}).status_code == 404


def test_delete_is_204_and_takes_versions_and_the_restriction_along(api: httpx.Client) -> None:
    prompt = create_prompt(api)
    assert api.post("/v2/resource-restrictions", json={"resource_id": prompt["id"]}).json()["resource_type"] == "PROMPT"
    assert api.delete(f"/v2/prompts/{prompt['id']}").status_code == 204
    assert api.get(f"/v2/prompts/{prompt['id']}").status_code == 404
    assert api.get(f"/v2/prompts/{prompt['id']}/versions").status_code == 404
    assert api.put(f"/v2/prompt-versions/{prompt['version']['id']}/labels", json={"labels": []}).status_code == 404
    assert api.get("/v2/resource-restrictions").json()["resource_restrictions"] == []
    assert api.delete(f"/v2/prompts/{prompt['id']}").status_code == 404
    create_prompt(api)  # the name is free again


def test_put_labels_replaces_and_moves_a_label_from_another_version(api: httpx.Client) -> None:
    prompt = create_prompt(api)
    first = prompt["version"]
    second = api.post(f"/v2/prompts/{prompt['id']}/versions", json=version_body()).json()
    labelled = api.put(f"/v2/prompt-versions/{first['id']}/labels", json={"labels": ["production", "staging"]})
    assert labelled.status_code == 200
    assert labelled.json()["labels"] == ["production", "staging"]
    moved = api.put(f"/v2/prompt-versions/{second['id']}/labels", json={"labels": ["production"]}).json()
    assert moved["id"] == second["id"] and moved["labels"] == ["production"]
    versions = {v["id"]: v for v in api.get(f"/v2/prompts/{prompt['id']}/versions").json()["prompt_versions"]}
    assert versions[first["id"]]["labels"] == ["staging"]
    assert api.put(f"/v2/prompt-versions/{first['id']}/labels", json={"labels": []}).json()["labels"] == []


def test_labels_of_other_prompts_are_not_touched(api: httpx.Client) -> None:
    a, b = create_prompt(api, "a"), create_prompt(api, "b")
    api.put(f"/v2/prompt-versions/{a['version']['id']}/labels", json={"labels": ["production"]})
    api.put(f"/v2/prompt-versions/{b['version']['id']}/labels", json={"labels": ["production"]})
    assert api.get(f"/v2/prompts/{a['id']}", params={"label": "production"}).status_code == 200


def test_put_labels_validates_its_body(api: httpx.Client) -> None:
    prompt = create_prompt(api)
    url = f"/v2/prompt-versions/{prompt['version']['id']}/labels"
    for body, status in [({}, 400), ({"labels": "production"}, 400), ({"labels": [1]}, 400),
                         ({"labels": ["x"], "y": 1}, 400), ({"labels": [""]}, 422)]:
        assert api.put(url, json=body).status_code == status, body
    assert api.put(url, json={"labels": ["a", "a", "b"]}).json()["labels"] == ["a", "b"]


def test_delete_label_is_204_and_404_when_the_version_lacks_it(api: httpx.Client) -> None:
    prompt = create_prompt(api)
    vid = prompt["version"]["id"]
    api.put(f"/v2/prompt-versions/{vid}/labels", json={"labels": ["production", "staging"]})
    assert api.delete(f"/v2/prompt-versions/{vid}/labels/production").status_code == 204
    assert api.get(f"/v2/prompts/{prompt['id']}").json()["version"]["labels"] == ["staging"]
    assert api.delete(f"/v2/prompt-versions/{vid}/labels/production").status_code == 404
    assert api.delete("/v2/prompt-versions/UHJvbXB0VmVyc2lvbjo5OTphYg/labels/x").status_code == 404


def test_reader_may_read_but_not_write(api: httpx.Client, reader: httpx.Client) -> None:
    prompt = create_prompt(api)
    assert reader.get(f"/v2/prompts/{prompt['id']}").status_code == 200
    assert reader.get("/v2/prompts").status_code == 200
    body = {"space_id": space_id(api), "name": "r", "version": version_body()}
    assert reader.post("/v2/prompts", json=body).status_code == 403
    assert reader.patch(f"/v2/prompts/{prompt['id']}", json={"description": None}).status_code == 403
    assert reader.delete(f"/v2/prompts/{prompt['id']}").status_code == 403
    assert reader.put(f"/v2/prompt-versions/{prompt['version']['id']}/labels", json={"labels": []}).status_code == 403


def test_requests_without_a_valid_key_are_401(server: tuple[str, Any]) -> None:
    with httpx.Client(base_url=server[0]) as anonymous:
        assert anonymous.get("/v2/prompts").status_code == 401
        assert anonymous.get("/v2/prompts", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_responses_match_the_published_openapi_schemas(api: httpx.Client) -> None:
    document = api.get("/v2/openapi.json").json()

    def check(name: str, instance: Any) -> None:
        jsonschema.Draft202012Validator({**document, "$ref": f"#/components/schemas/{name}"}).validate(instance)

    prompt = create_prompt(api, description="d")
    check("PromptWithVersion", prompt)
    check("PromptWithVersion", api.patch(f"/v2/prompts/{prompt['id']}", json={"description": None}).json())
    check("PromptVersion", api.put(f"/v2/prompt-versions/{prompt['version']['id']}/labels",
                                   json={"labels": ["production"]}).json())
    for item in api.get("/v2/prompts").json()["prompts"]:
        check("Prompt", item)
    for item in api.get(f"/v2/prompts/{prompt['id']}/versions").json()["prompt_versions"]:
        check("PromptVersion", item)
    assert "/v2/prompt-versions/{version_id}/labels/{label}" in document["paths"]
