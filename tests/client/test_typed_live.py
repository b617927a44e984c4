"""Live state is typed at the client: every API object becomes an ``ApiObject`` model whose managed
fields are attributes, unknown fields are kept (objects may gain fields), and an object that lacks
a field the reconciler reads is refused with the path and the field, never its value."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from reconciler.client.http import ApiClient
from reconciler.client.live import read_live
from reconciler.errors import ResponseError
from reconciler.model import (
    DesiredResource,
    EvaluatorVersionObject,
    ManifestSet,
    PromptObject,
    PromptVersionObject,
    ReadScope,
    RestrictionObject,
)
from reconciler.plan.model import PlanOptions
from reconciler.plan.planner import make_plan

SECRETISH = "sk-live-9f8e7d6c5b4a"
SPACE = {"id": "U3BhY2U6MQ", "name": "research", "organization_id": "T3JnOjE"}
PROMPT = {"id": "UHJvbXB0OjE", "name": "p", "description": "d", "space_id": SPACE["id"],
          "owner_team": "search", "created_at": "2026-01-01T00:00:00Z"}
VERSION = {"id": "UHY6MQ", "commit_message": "first", "provider": "VENDOR_A", "model": "m",
           "messages": [{"role": "user", "content": "hi"}], "labels": ["production"],
           "commit_hash": "abc", "review_state": "approved"}


def _client(prompts: list[dict[str, Any]], versions: list[dict[str, Any]]) -> ApiClient:
    lists = {"/v2/integrations": ("integrations", []), "/v2/spaces": ("spaces", [SPACE]),
             "/v2/organizations": ("organizations", [{"id": "T3JnOjE", "name": "acme"}]),
             "/v2/resource-restrictions": ("resource_restrictions", []),
             "/v2/prompts": ("prompts", prompts),
             f"/v2/prompts/{PROMPT['id']}/versions": ("prompt_versions", versions)}

    def handler(request: httpx.Request) -> httpx.Response:
        key, items = lists[request.url.path]
        return httpx.Response(200, json={key: items, "pagination": {"has_more": False, "next_cursor": None}})

    return ApiClient(httpx.AsyncClient(base_url="https://api.test", transport=httpx.MockTransport(handler)))


PROMPT_DOC = DesiredResource(kind="Prompt", name="p", space="research", spec={
    "description": "d", "version": {"commit_message": "first", "provider": "VENDOR_A", "model": "m",
                                    "messages": [{"role": "user", "content": "hi"}], "labels": ["production"]}})
SCOPE = ReadScope(spaces=frozenset({"research"}), prompts=frozenset({("research", "p")}), kinds=frozenset({"Prompt"}))


def test_live_objects_are_models_that_keep_the_fields_they_do_not_know() -> None:
    with _client([PROMPT], [VERSION]) as client:
        live = client.run(read_live(client, SCOPE))
    prompt = live.prompts[(SPACE["id"], "p")]
    assert isinstance(prompt.prompt, PromptObject) and isinstance(prompt.latest, PromptVersionObject)
    assert (prompt.id, prompt.prompt.description, prompt.latest.model) == (PROMPT["id"], "d", "m")
    assert prompt.prompt.raw()["owner_team"] == "search"  # a field the API added is kept, not refused
    assert prompt.latest.raw()["review_state"] == "approved"
    assert "input_variable_format" not in prompt.latest.raw()  # a field the API left out is not invented
    assert prompt.labels == {"production": VERSION["id"]}
    # ... and never seen as drift: the planner compares the fields it manages
    assert make_plan(ManifestSet((PROMPT_DOC,)), live, PlanOptions()).empty


@pytest.mark.parametrize(("prompts", "versions", "path", "field"), [
    ([{k: v for k, v in PROMPT.items() if k != "name"}], [VERSION], "/v2/prompts", "name"),
    ([{**PROMPT, "description": {"text": SECRETISH}}], [VERSION], "/v2/prompts", "description"),
    ([PROMPT], [{**VERSION, "labels": SECRETISH}], f"/v2/prompts/{PROMPT['id']}/versions", "labels"),
    ([PROMPT], [{**VERSION, "messages": [SECRETISH]}], f"/v2/prompts/{PROMPT['id']}/versions", "messages.0"),
])
def test_an_object_without_a_field_the_reconciler_reads_is_refused_by_path_and_field(
        prompts: list[dict[str, Any]], versions: list[dict[str, Any]], path: str, field: str) -> None:
    with _client(prompts, versions) as client, pytest.raises(ResponseError) as caught:
        client.run(read_live(client, SCOPE))
    message = str(caught.value)
    assert message.startswith(f"GET {path}: the API answered a prompt")
    assert f"cannot read: {field}:" in message
    assert SECRETISH not in message and SECRETISH not in repr(caught.value)
    assert caught.value.exit_code == 1


def test_typed_accessors_read_nested_fields() -> None:
    version = EvaluatorVersionObject.read({"id": "v", "template_config": {
        "name": "n", "template": "t", "llm_config": {"ai_integration_id": "I1", "model_name": "m", "extra": 1}}})
    assert version.integration_id == "I1"
    assert version.template_config is not None
    assert list(version.template_config.raw()) == ["name", "template", "llm_config"]  # the API's order, as sent
    assert version.template_config.raw()["llm_config"]["extra"] == 1
    assert EvaluatorVersionObject.read({"id": "v"}).integration_id is None
    labels = PromptVersionObject.read({"id": "v", "labels": ["a", {"name": "b"}, {"other": 1}]}).label_names()
    assert labels == ["a", "b"]
    assert RestrictionObject.read({"resource_type": "PROMPT", "resource_id": "X"}).resource_id == "X"
