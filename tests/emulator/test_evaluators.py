"""The emulator's template evaluators and evaluator versions, over a real socket."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import jsonschema
import pytest

pytestmark = pytest.mark.socket


def space(api: httpx.Client, name: str = "default") -> dict[str, Any]:
    spaces = api.get("/v2/spaces", params={"name": name}).json()["spaces"]
    return dict(next(s for s in spaces if s["name"] == name))


def llm_integration(api: httpx.Client, name: str = "vendor-a", scopings: list[dict[str, Any]] | None = None) -> str:
    body = {"type": "LLM", "name": name, "scopings": scopings or [],
            "config": {"provider": "VENDOR_A", "api_key": "canary-secret"}}
    response = api.post("/v2/integrations", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def template_config(integration_id: str, **overrides: Any) -> dict[str, Any]:
    return {
        "name": "faithfulness",
        "template": "Is {{output}} supported by {{context}}?",
        "classification_choices": {"faithful": 1, "unfaithful": 0},
        "llm_config": {"ai_integration_id": integration_id, "model_name": "model-large"},
        **overrides,
    }


def create_body(api: httpx.Client, integration_id: str, name: str = "faithfulness", **fields: Any) -> dict[str, Any]:
    return {"space_id": space(api)["id"], "name": name, "type": "template",
            "version": {"commit_message": "first", "template_config": template_config(integration_id)}, **fields}


def create_evaluator(api: httpx.Client, integration_id: str, name: str = "faithfulness", **fields: Any) -> Any:
    response = api.post("/v2/evaluators", json=create_body(api, integration_id, name, **fields))
    assert response.status_code == 201, response.text
    return response.json()


def test_create_is_201_with_a_version_that_reads_back_every_field(api: httpx.Client) -> None:
    iid = llm_integration(api)
    evaluator = create_evaluator(api, iid, description="judge")
    assert evaluator["type"] == "template" and evaluator["description"] == "judge"
    version = evaluator["version"]
    assert set(version) == {"id", "evaluator_id", "commit_hash", "commit_message", "template_config",
                            "created_at", "created_by_user_id"}
    assert version["evaluator_id"] == evaluator["id"] and version["commit_message"] == "first"
    assert version["template_config"] == {
        **template_config(iid),
        "include_explanations": True,
        "use_function_calling_if_available": True,
        "direction": "maximize",
        "data_granularity": "span",
        "llm_config": {"ai_integration_id": iid, "model_name": "model-large",
                       "invocation_parameters": {}, "provider_parameters": {}},
    }


def test_given_optional_fields_read_back_as_given(api: httpx.Client) -> None:
    iid = llm_integration(api)
    config = template_config(iid, include_explanations=False, use_function_calling_if_available=False,
                             direction="minimize", data_granularity="session",
                             llm_config={"ai_integration_id": iid, "model_name": "m",
                                         "invocation_parameters": {"temperature": 0},
                                         "provider_parameters": {"x": [1]}})
    body = {**create_body(api, iid), "version": {"commit_message": "c", "template_config": config}}
    assert api.post("/v2/evaluators", json=body).json()["version"]["template_config"] == config


def test_create_rejects_bad_bodies_with_400_for_shape_and_422_for_rules(api: httpx.Client) -> None:
    iid = llm_integration(api)
    good = create_body(api, iid)

    def with_config(**overrides: Any) -> dict[str, Any]:
        body = copy.deepcopy(good)
        body["version"]["template_config"].update(overrides)
        return body

    def without(*path: str) -> dict[str, Any]:
        body = copy.deepcopy(good)
        target = body
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
        return body

    cases: list[tuple[dict[str, Any], int]] = [
        (without("space_id"), 400), (without("name"), 400), (without("type"), 400), (without("version"), 400),
        (without("version", "commit_message"), 400), (without("version", "template_config"), 400),
        (without("version", "template_config", "template"), 400),
        (without("version", "template_config", "classification_choices"), 400),
        (without("version", "template_config", "llm_config", "model_name"), 400),
        ({**good, "extra": 1}, 400),
        ({**good, "type": "code"}, 400),
        (with_config(extra=1), 400),
        (with_config(direction="up"), 400),
        (with_config(data_granularity="token"), 400),
        (with_config(include_explanations="yes"), 400),
        (with_config(classification_choices={"a": "1"}), 400),
        (with_config(llm_config={"ai_integration_id": iid, "model_name": "m", "x": 1}), 400),
        (with_config(template=""), 422),
        (with_config(classification_choices={}), 422),
        ({**good, "name": ""}, 422),
        (with_config(llm_config={"ai_integration_id": "SW50ZWdyYXRpb246OTk6YWI", "model_name": "m"}), 404),
        ({**good, "space_id": "U3BhY2U6OTk5OmFi"}, 404),
    ]
    for body, status in cases:
        response = api.post("/v2/evaluators", json=body)
        assert response.status_code == status, (body, response.text)
    assert api.get("/v2/evaluators").json()["evaluators"] == []


def test_the_integration_must_be_an_llm_integration_visible_from_the_space(api: httpx.Client) -> None:
    default, research = space(api), space(api, "research")
    research_only = llm_integration(api, "research-only", [{"organization_id": research["organization_id"],
                                                            "space_id": research["id"]}])
    org_wide = llm_integration(api, "org-wide", [{"organization_id": default["organization_id"], "space_id": None}])
    agent = api.post("/v2/integrations", json={
        "type": "AGENT", "name": "agent",
        "config": {"endpoint": "https://93.184.216.34/run", "input_schema": {"type": "object"}}})
    assert agent.status_code == 201, agent.text
    assert api.post("/v2/evaluators", json=create_body(api, research_only, "a")).status_code == 404
    assert api.post("/v2/evaluators", json=create_body(api, agent.json()["id"], "b")).status_code == 404
    create_evaluator(api, org_wide, "c")
    in_research = {**create_body(api, research_only, "d"), "space_id": research["id"]}
    assert api.post("/v2/evaluators", json=in_research).status_code == 201


def test_duplicate_name_in_a_space_is_409(api: httpx.Client) -> None:
    iid = llm_integration(api)
    create_evaluator(api, iid, "dup")
    assert api.post("/v2/evaluators", json=create_body(api, iid, "dup")).status_code == 409


def test_list_filters_by_space_and_name(api: httpx.Client) -> None:
    iid = llm_integration(api)
    create_evaluator(api, iid, "Faithfulness")
    create_evaluator(api, iid, "toxicity")
    page = api.get("/v2/evaluators", params={"space_id": space(api)["id"], "name": "FAITH"}).json()
    assert [e["name"] for e in page["evaluators"]] == ["Faithfulness"]
    assert page["pagination"] == {"has_more": False}
    assert api.get("/v2/evaluators", params={"space_id": space(api, "research")["id"]}).json()["evaluators"] == []


def test_new_version_is_201_becomes_latest_and_versions_list_newest_first(api: httpx.Client) -> None:
    iid = llm_integration(api)
    evaluator = create_evaluator(api, iid)
    config = template_config(iid, template="Judge {{output}}")
    response = api.post(f"/v2/evaluators/{evaluator['id']}/versions",
                        json={"commit_message": "second", "template_config": config})
    assert response.status_code == 201
    second = response.json()
    assert second["template_config"]["template"] == "Judge {{output}}"
    assert second["commit_hash"] != evaluator["version"]["commit_hash"]
    latest = api.get(f"/v2/evaluators/{evaluator['id']}").json()
    assert latest["version"]["id"] == second["id"]
    pinned = api.get(f"/v2/evaluators/{evaluator['id']}", params={"version_id": evaluator["version"]["id"]})
    assert pinned.json()["version"] == evaluator["version"]
    versions = api.get(f"/v2/evaluators/{evaluator['id']}/versions").json()["evaluator_versions"]
    assert [v["commit_message"] for v in versions] == ["second", "first"]


def test_new_version_validates_its_body_integration_and_evaluator(api: httpx.Client) -> None:
    iid = llm_integration(api)
    evaluator = create_evaluator(api, iid)
    url = f"/v2/evaluators/{evaluator['id']}/versions"
    assert api.post(url, json={"template_config": template_config(iid)}).status_code == 400
    assert api.post(url, json={"commit_message": "x", "template_config": template_config(iid),
                               "extra": 1}).status_code == 400
    missing = template_config("SW50ZWdyYXRpb246OTk6YWI")
    assert api.post(url, json={"commit_message": "x", "template_config": missing}).status_code == 404
    good = {"commit_message": "x", "template_config": template_config(iid)}
    assert api.post("/v2/evaluators/RXZhbHVhdG9yOjk5OmFi/versions", json=good).status_code == 404
    assert len(api.get(url).json()["evaluator_versions"]) == 1


def test_get_with_a_version_of_another_evaluator_is_404(api: httpx.Client) -> None:
    iid = llm_integration(api)
    a, b = create_evaluator(api, iid, "a"), create_evaluator(api, iid, "b")
    assert api.get(f"/v2/evaluators/{a['id']}", params={"version_id": b["version"]["id"]}).status_code == 404
    assert api.get("/v2/evaluators/RXZhbHVhdG9yOjk5OmFi").status_code == 404


def test_patch_renames_and_changes_the_description(api: httpx.Client) -> None:
    iid = llm_integration(api)
    evaluator = create_evaluator(api, iid, description="old")
    create_evaluator(api, iid, "taken")
    url = f"/v2/evaluators/{evaluator['id']}"
    updated = api.patch(url, json={"name": "renamed", "description": None})
    assert updated.status_code == 200
    assert updated.json()["name"] == "renamed" and updated.json()["description"] is None
    assert updated.json()["version"]["id"] == evaluator["version"]["id"]
    assert api.patch(url, json={"description": "new"}).json()["name"] == "renamed"
    for body, status in [({"name": "taken"}, 409), ({}, 400), ({"type": "template"}, 400), ({"name": 1}, 400),
                         ({"name": ""}, 422)]:
        assert api.patch(url, json=body).status_code == status, body
    assert api.patch("/v2/evaluators/RXZhbHVhdG9yOjk5OmFi", json={"name": "x"}).status_code == 404


def test_delete_is_204_then_404(api: httpx.Client) -> None:
    evaluator = create_evaluator(api, llm_integration(api))
    assert api.delete(f"/v2/evaluators/{evaluator['id']}").status_code == 204
    assert api.get(f"/v2/evaluators/{evaluator['id']}").status_code == 404
    assert api.get(f"/v2/evaluators/{evaluator['id']}/versions").status_code == 404
    assert api.delete(f"/v2/evaluators/{evaluator['id']}").status_code == 404


def test_reader_may_read_but_not_write(api: httpx.Client, reader: httpx.Client) -> None:
    iid = llm_integration(api)
    evaluator = create_evaluator(api, iid)
    assert reader.get(f"/v2/evaluators/{evaluator['id']}").status_code == 200
    assert reader.post("/v2/evaluators", json=create_body(api, iid, "r")).status_code == 403
    assert reader.patch(f"/v2/evaluators/{evaluator['id']}", json={"name": "r"}).status_code == 403
    assert reader.post(f"/v2/evaluators/{evaluator['id']}/versions",
                       json={"commit_message": "x", "template_config": template_config(iid)}).status_code == 403
    assert reader.delete(f"/v2/evaluators/{evaluator['id']}").status_code == 403


def test_responses_match_the_published_openapi_schemas(api: httpx.Client) -> None:
    document = api.get("/v2/openapi.json").json()

    def check(name: str, instance: Any) -> None:
        jsonschema.Draft202012Validator({**document, "$ref": f"#/components/schemas/{name}"}).validate(instance)

    iid = llm_integration(api)
    evaluator = create_evaluator(api, iid)
    check("EvaluatorWithVersion", evaluator)
    check("EvaluatorWithVersion", api.patch(f"/v2/evaluators/{evaluator['id']}", json={"name": "n"}).json())
    check("EvaluatorVersion", api.post(f"/v2/evaluators/{evaluator['id']}/versions", json={
        "commit_message": "c", "template_config": template_config(iid)}).json())
    for item in api.get("/v2/evaluators").json()["evaluators"]:
        check("Evaluator", item)
    for item in api.get(f"/v2/evaluators/{evaluator['id']}/versions").json()["evaluator_versions"]:
        check("EvaluatorVersion", item)
