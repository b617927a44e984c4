"""What a lenient emulator would take and the service does not: numbers JSON does not have, bodies
not sent as JSON, loose ``limit`` values, trailing slashes, a null provider; and ids that are real
base64, an empty API key that reads back as given. Over a real socket and in-process (``client``)."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest

from . import assert_problem, create_agent, create_llm, llm_config, unique


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
def test_numbers_json_does_not_have_are_400_and_nothing_is_saved(client: httpx.Client, literal: str) -> None:
    name = unique("nan")
    body = ('{"type": "AGENT", "name": "NAME", "config": {"endpoint": "https://agent.example.com/r", '
            '"input_schema": {"type": "object", "maximum": NUMBER}}}').replace("NAME", name).replace("NUMBER", literal)
    r = client.post("/v2/integrations", content=body, headers={"Content-Type": "application/json"})
    assert_problem(r, 400)
    assert client.get("/v2/integrations", params={"name": name}).json()["integrations"] == []
    agent = create_agent(client)
    patch = ('{"type": "AGENT", "config": {"request_presets": [{"name": "p", "config": {"top_k": NUMBER}}]}}'
             .replace("NUMBER", literal))
    r = client.patch(f"/v2/integrations/{agent['id']}", content=patch, headers={"Content-Type": "application/json"})
    assert_problem(r, 400)
    assert client.get(f"/v2/integrations/{agent['id']}").status_code == 200


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
def test_a_body_declared_as_something_else_than_json_is_400(client: httpx.Client, content_type: str) -> None:
    agent = create_agent(client)
    r = client.patch(f"/v2/integrations/{agent['id']}", content=b'{"type": "AGENT", "name": "renamed"}',
                     headers={"Content-Type": content_type})
    assert_problem(r, 400)
    for declared in ({"Content-Type": "application/json; charset=utf-8"}, {}):  # undeclared: read as JSON
        ok = client.patch(f"/v2/integrations/{agent['id']}", content=b'{"type": "AGENT", "name": "%s"}'
                          % unique("ok").encode(), headers=declared)
        assert ok.status_code == 200, ok.text


@pytest.mark.parametrize("limit", ["+5", " 5", "1_0", "\uff15", "5.0", "0x5", "-1", "0", "101"])
def test_limit_is_plain_ascii_digits_from_1_to_100(client: httpx.Client, limit: str) -> None:
    assert_problem(client.get("/v2/resource-restrictions", params={"limit": limit}), 400)


def test_a_trailing_slash_is_an_unknown_route_not_a_redirect(client: httpx.Client) -> None:
    r = client.get("/v2/resource-restrictions/")
    assert_problem(r, 404)


def test_a_null_provider_in_a_patch_is_422(client: httpx.Client) -> None:
    llm = create_llm(client, "VENDOR_A")
    r = client.patch(f"/v2/integrations/{llm['id']}", json={"type": "LLM", "config": {"provider": None}})
    assert_problem(r, 422)


def test_ids_are_standard_base64(client: httpx.Client) -> None:
    made: list[dict[str, Any]] = [create_llm(client, "VENDOR_A") for _ in range(6)]
    for integration in made:
        for value in (integration["id"], integration["created_by_user_id"]):
            assert base64.b64encode(base64.b64decode(value, validate=True)).decode() == value
        assert client.get(f"/v2/integrations/{integration['id']}").status_code == 200


def test_an_api_key_given_reads_back_as_present_even_when_empty(client: httpx.Client) -> None:
    r = client.post("/v2/integrations", json={"type": "LLM", "name": unique("empty-key"),
                                              "config": llm_config("VENDOR_A", api_key="")})
    assert r.status_code == 201, r.text
    assert r.json()["config"]["has_api_key"] is True
    cleared = client.patch(f"/v2/integrations/{r.json()['id']}", json={"type": "LLM", "config": {"api_key": None}})
    assert cleared.json()["config"]["has_api_key"] is False
