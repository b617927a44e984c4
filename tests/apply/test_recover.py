"""``reconciler/apply/recover.py`` on its own: after an ambiguous POST (or the PATCH that makes a
dataset version), each recover function re-reads and answers "it took effect" (the object) or
"it did not" (None), against the emulator in-process."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from reconciler.apply.recover import recover_for, recover_for_patch
from reconciler.client.http import ApiClient, open_client
from reconciler.client.settings import Endpoint

MESSAGES = [{"role": "user", "content": "hi {x}"}]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[ApiClient]:
    with open_client(Endpoint(base_url=None, emulator_db=str(tmp_path / "state.db")), "admin-key") as c:
        yield c


@pytest.fixture
def research(client: ApiClient) -> str:
    return str(next(s["id"] for s in client.run(client.get("/v2/spaces"))["spaces"] if s["name"] == "research"))


def integration(name: str) -> dict[str, Any]:
    return {"type": "LLM", "name": name, "config": {"provider": "VENDOR_A", "api_key": "k-123456"}}


def test_an_integration_create_is_found_by_name_and_type(client: ApiClient) -> None:
    body = integration("found-me")
    recover = recover_for(client, "/v2/integrations", body)
    assert recover is not None and client.run(recover()) is None  # not made yet: the POST may be sent again
    made = client.run(client.post("/v2/integrations", body))
    assert client.run(recover())["id"] == made["id"]
    other_type = recover_for(client, "/v2/integrations", {**body, "type": "AGENT"})
    assert other_type is not None and client.run(other_type()) is None  # identity is (type, name)


def test_a_name_that_only_contains_the_wanted_one_is_not_taken_for_it(client: ApiClient) -> None:
    client.run(client.post("/v2/integrations", integration("found-me-too")))  # the list's name filter is a substring match
    recover = recover_for(client, "/v2/integrations", integration("found-me"))
    assert recover is not None and client.run(recover()) is None


def test_a_prompt_create_is_found_in_its_space_with_its_version(client: ApiClient, research: str) -> None:
    body = {"space_id": research, "name": "p1", "version": {"commit_message": "c", "provider": "VENDOR_A",
                                                             "messages": MESSAGES}}
    recover = recover_for(client, "/v2/prompts", body)
    assert recover is not None and client.run(recover()) is None
    made = client.run(client.post("/v2/prompts", body))
    found = client.run(recover())
    assert found["id"] == made["id"] and found["version"]["messages"] == MESSAGES


def test_a_prompt_of_that_name_in_another_space_is_not_it(client: ApiClient, research: str) -> None:
    default = str(next(s["id"] for s in client.run(client.get("/v2/spaces"))["spaces"] if s["name"] == "default"))
    client.run(client.post("/v2/prompts", {"space_id": default, "name": "p2", "version": {
        "commit_message": "c", "provider": "VENDOR_A", "messages": MESSAGES}}))
    recover = recover_for(client, "/v2/prompts", {"space_id": research, "name": "p2"})
    assert recover is not None and client.run(recover()) is None


def test_a_dataset_create_is_found_by_name(client: ApiClient, research: str) -> None:
    body = {"space_id": research, "name": "d1", "examples": [{"q": 1}]}
    recover = recover_for(client, "/v2/datasets", body)
    assert recover is not None and client.run(recover()) is None
    made = client.run(client.post("/v2/datasets", body))
    assert client.run(recover())["id"] == made["id"]


def test_a_prompt_version_took_effect_only_when_the_newest_version_is_the_one_sent(
        client: ApiClient, research: str) -> None:
    prompt = client.run(client.post("/v2/prompts", {"space_id": research, "name": "p3", "version": {
        "commit_message": "c", "provider": "VENDOR_A", "messages": MESSAGES}}))
    path = f"/v2/prompts/{prompt['id']}/versions"
    new = {"commit_message": "second", "provider": "VENDOR_A", "messages": [{"role": "user", "content": "bye"}]}
    recover = recover_for(client, path, new)
    assert recover is not None and client.run(recover()) is None  # the newest is still the first version
    client.run(client.post(path, new))
    assert client.run(recover())["messages"] == new["messages"]


def test_appended_examples_took_effect_only_when_every_one_is_there(client: ApiClient, research: str) -> None:
    dataset = client.run(client.post("/v2/datasets", {"space_id": research, "name": "d2", "examples": [{"q": 1}]}))
    path = f"/v2/datasets/{dataset['id']}/examples"
    body = {"examples": [{"q": 2}, {"q": 3}]}
    recover = recover_for(client, path, body)
    assert recover is not None and client.run(recover()) is None
    client.run(client.post(path, {"examples": [{"q": 2}]}))
    assert client.run(recover()) is None  # one of two is not proof
    client.run(client.post(path, {"examples": [{"q": 3}]}))
    assert client.run(recover()) == {"recovered": True}


def test_a_restriction_post_is_idempotent_so_its_recover_always_resends(client: ApiClient) -> None:
    recover = recover_for(client, "/v2/resource-restrictions", {"resource_id": "X"})
    assert recover is not None and client.run(recover()) is None


def test_paths_without_a_recover_rule_get_none(client: ApiClient) -> None:
    assert recover_for(client, "/v2/unknown", {"name": "x"}) is None
    assert recover_for(client, "/v2/integrations", ["not", "an", "object"]) is None


def test_an_evaluator_version_took_effect_when_the_live_template_is_the_one_sent() -> None:
    live = {"template_config": {"name": "t", "template": "old"}}

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"id": "E1", "version": live})

    client = ApiClient(httpx.AsyncClient(base_url="https://api.test", transport=httpx.MockTransport(handler)))
    recover = recover_for(client, "/v2/evaluators/E1/versions", {"template_config": {"name": "t", "template": "new"}})
    assert recover is not None and client.run(recover()) is None
    live["template_config"] = {"template": "new", "name": "t"}  # key order does not matter
    assert client.run(recover()) == live


def test_a_dataset_version_patch_took_effect_when_the_newest_version_has_its_name_and_is_recent(
        client: ApiClient, research: str) -> None:
    dataset = client.run(client.post("/v2/datasets", {"space_id": research, "name": "d3", "examples": [{"q": 1}]}))
    path = f"/v2/datasets/{dataset['id']}/examples"
    started = datetime.now(UTC)
    recover = recover_for_patch(client, path, {"examples": [], "new_version": "v9"}, started)
    assert recover is not None and client.run(recover()) is None
    client.run(client.patch(path, {"examples": [], "new_version": "v9"}))
    assert client.run(recover())["recovered"] is True
    stale = recover_for_patch(client, path, {"examples": [], "new_version": "v9"}, started + timedelta(hours=1))
    assert stale is not None and client.run(stale()) is None  # a version of that name made long before this apply


def test_only_the_patch_that_makes_a_version_has_a_recover(client: ApiClient) -> None:
    now = datetime.now(UTC)
    assert recover_for_patch(client, "/v2/datasets/D1/examples", {"examples": [{"id": "x"}]}, now) is None
    assert recover_for_patch(client, "/v2/integrations/I1", {"new_version": "v"}, now) is None
