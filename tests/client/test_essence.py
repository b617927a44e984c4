"""Normalisation: only the fields a manifest can manage survive; server-set and unknown fields go."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.client.live import labels_of
from reconciler.essence import essence
from reconciler.model import PromptVersionObject
from reconciler.providers import PROVIDERS

SERVER = {"id": "X1", "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-02T00:00:00Z",
          "created_by_user_id": "U1", "some_future_field": {"a": 1}}


def test_an_llm_integration_keeps_its_managed_fields_only() -> None:
    live = {**SERVER, "type": "LLM", "name": "vendor-a", "scopings": [],
            "config": {"provider": "VENDOR_A", "has_api_key": True, "is_function_calling_enabled": False,
                       "new_flag": True}}
    assert essence("Integration", live) == {
        "name": "vendor-a", "type": "LLM", "scopings": [],
        "config": {"provider": "VENDOR_A", "has_api_key": True, "is_function_calling_enabled": False},
    }


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_every_provider_keeps_the_read_names_of_its_fields(provider: str) -> None:
    fields = {f.read_name: f"value-{f.read_name}" for f in PROVIDERS[provider].fields.values()}
    live = {**SERVER, "type": "LLM", "name": "n", "scopings": [],
            "config": {"provider": provider, **fields, "unknown_later": 1}}
    config = essence("Integration", live)["config"]
    assert config == {"provider": provider, **fields}


def test_cloud_d_auth_is_reduced_to_its_modes_fields() -> None:
    live = {"type": "LLM", "name": "n", "config": {
        "provider": "CLOUD_D", "is_default_models_enabled": True, "model_names": [],
        "auth": {"auth_type": "BEARER_TOKEN", "has_api_key": True, "base_url": None, "extra": 1}}}
    assert essence("Integration", live)["config"]["auth"] == {
        "auth_type": "BEARER_TOKEN", "has_api_key": True, "base_url": None}


def test_an_unknown_provider_keeps_its_config_whole() -> None:
    live = {"type": "LLM", "name": "n", "config": {"provider": "VENDOR_Z", "anything": 1}}
    assert essence("Integration", live)["config"] == {"provider": "VENDOR_Z", "anything": 1}


def test_an_agent_keeps_description_and_preset_essences() -> None:
    live = {**SERVER, "type": "AGENT", "name": "agent", "description": None,
            "scopings": [{"organization_id": "O2", "space_id": "S2"}, {"organization_id": "O1", "space_id": None}],
            "config": {"endpoint": "https://a.example", "has_headers": True, "input_schema": {"type": "object"},
                       "request_presets": [{**SERVER, "name": "cold", "description": None, "config": {"t": 0}}],
                       "later": 1}}
    assert essence("Integration", live) == {
        "name": "agent", "type": "AGENT", "description": None,
        "scopings": [{"organization_id": "O1", "space_id": None}, {"organization_id": "O2", "space_id": "S2"}],
        "config": {"endpoint": "https://a.example", "has_headers": True, "input_schema": {"type": "object"},
                   "request_presets": [{"name": "cold", "description": None, "config": {"t": 0}}]},
    }


def test_an_llm_integration_never_gains_a_description() -> None:
    assert "description" not in essence("Integration", {"type": "LLM", "name": "n", "description": "x"})


def test_a_prompt_version_drops_commit_fields_and_labels() -> None:
    version = {**SERVER, "prompt_id": "P", "commit_hash": "abc", "commit_message": "m", "labels": ["prod"],
               "provider": "VENDOR_A", "model": "m", "messages": [{"role": "user", "content": "{x}"}],
               "input_variable_format": "f_string", "invocation_params": {}, "provider_params": {}}
    assert essence("PromptVersion", version) == {
        "provider": "VENDOR_A", "model": "m", "messages": [{"role": "user", "content": "{x}"}],
        "input_variable_format": "f_string", "invocation_params": {}, "provider_params": {}}


def test_a_dataset_example_keeps_the_users_fields_only() -> None:
    example = {"id": "E", "created_at": "t", "updated_at": "t", "ticket_id": 7, "q": "why?"}
    assert essence("DatasetExample", example) == {"ticket_id": 7, "q": "why?"}


def test_an_evaluator_version_keeps_the_known_template_config() -> None:
    version: dict[str, Any] = {**SERVER, "evaluator_id": "E", "commit_hash": "h", "commit_message": "m",
                               "template_config": {"name": "f", "template": "{{a}}", "direction": "maximize",
                                                   "future": 1, "llm_config": {"ai_integration_id": "I",
                                                                               "model_name": "m", "x": 2}}}
    assert essence("EvaluatorVersion", version) == {"template_config": {
        "name": "f", "template": "{{a}}", "direction": "maximize",
        "llm_config": {"ai_integration_id": "I", "model_name": "m"}}}


@pytest.mark.parametrize(("kind", "obj", "expected"), [
    ("Prompt", {**SERVER, "name": "p", "description": None, "space_id": "S"}, {"name": "p", "description": None}),
    ("Evaluator", {**SERVER, "name": "e", "type": "template"}, {"name": "e"}),
    ("Dataset", {**SERVER, "name": "d", "versions": []}, {"name": "d"}),
    ("Preset", {**SERVER, "name": "p", "config": {}}, {"name": "p", "config": {}}),
    ("ResourceRestriction", {"resource_type": "PROMPT", "resource_id": "P", "created_at": "t"},
     {"resource_type": "PROMPT", "resource_id": "P"}),
])
def test_the_other_kinds_keep_their_managed_fields(kind: str, obj: dict[str, Any], expected: dict[str, Any]) -> None:
    assert essence(kind, obj) == expected


def test_an_unknown_kind_is_a_programming_error() -> None:
    with pytest.raises(ValueError) as error:
        essence("Widget", {})
    assert str(error.value) == ("essence: unknown kind 'Widget' (one of Prompt, Dataset, Evaluator, ResourceRestriction, "
                                "Integration, Preset, PromptVersion, DatasetExample, EvaluatorVersion)")


def test_an_agent_keeps_its_description() -> None:
    live = {"type": "AGENT", "name": "a", "description": "Replays support conversations"}
    assert essence("Integration", live) == {"name": "a", "type": "AGENT", "description": "Replays support conversations"}
    assert "description" not in essence("Integration", {"type": "AGENT", "name": "a"})  # absent live: not invented


def test_scopings_are_sorted_with_an_absent_organization_first() -> None:
    live = {"type": "LLM", "name": "n", "scopings": [
        {"organization_id": "O1", "space_id": "S1"}, {"organization_id": None, "space_id": "S2"},
        {"organization_id": "O1", "space_id": None}, "not a scoping"]}
    assert essence("Integration", live)["scopings"] == [
        {"organization_id": None, "space_id": "S2"}, {"organization_id": "O1", "space_id": None},
        {"organization_id": "O1", "space_id": "S1"}]


def test_a_field_of_an_unexpected_shape_is_left_out_or_kept_as_read() -> None:
    assert essence("Integration", {"type": "LLM", "name": "n", "scopings": None, "config": None}) == {
        "name": "n", "type": "LLM"}
    assert essence("Integration", {"type": "LLM", "name": "n", "config": {"provider": "CLOUD_D", "auth": "odd"}})[
        "config"] == {"provider": "CLOUD_D", "auth": "odd"}
    assert essence("Integration", {"type": "LLM", "name": "n", "config": {
        "provider": "CLOUD_D", "auth": {"auth_type": "FUTURE_MODE", "token_url": "u"}}})["config"]["auth"] == {
        "auth_type": "FUTURE_MODE", "token_url": "u"}
    agent = {"type": "AGENT", "name": "a", "config": {"endpoint": "e", "request_presets": None}}
    assert essence("Integration", agent)["config"] == {"endpoint": "e", "request_presets": None}
    agent["config"]["request_presets"] = [{"name": "cold", "id": "P1"}, "odd"]
    assert essence("Integration", agent)["config"]["request_presets"] == [{"name": "cold"}]
    assert essence("EvaluatorVersion", {"template_config": None}) == {}
    assert essence("EvaluatorVersion", {"template_config": {"name": "f", "llm_config": None}}) == {
        "template_config": {"name": "f", "llm_config": None}}


def test_a_typed_integration_has_the_essence_of_what_was_read() -> None:
    from reconciler.essence import integration_essence
    from reconciler.model import LiveIntegration

    for live in ({**SERVER, "type": "AGENT", "name": "a", "description": "d", "scopings": [],
                  "config": {"endpoint": "e", "has_headers": False, "later": 1}},
                 {"id": "I2", "type": "AGENT", "name": "a"},
                 {"id": "I3", "type": "LLM", "name": "n", "description": "x",
                  "config": {"provider": "VENDOR_A", "has_api_key": True}}):
        assert integration_essence(LiveIntegration.read(live)) == essence("Integration", live)


@pytest.mark.parametrize(("live", "want", "same"), [
    ({"q": 1}, {"q": 1}, True),
    ({"id": "E", "created_at": "t", "updated_at": "t", "q": 1}, {"q": 1}, True),
    ({"id": "E", "q": 1}, {"q": 1}, True),
    ({"created_at": "t", "q": 1}, {"q": 1}, True),
    ({"updated_at": "t", "q": 1}, {"q": 1}, True),
    ({"id": "E", "q": 1, "r": 2}, {"q": 1}, False),  # a field the manifest lacks
    ({"id": "E", "q": 1}, {"q": 1, "r": 2}, False),
    ({"id": "E", "q": 1}, {"q": 2}, False),
    ({"id": "E", "created_at": "t", "q": 1}, {"q": 1, "id": "E"}, False),  # "id" is never the user's
])
def test_an_example_is_the_same_when_its_user_fields_are(live: dict[str, Any], want: dict[str, Any],
                                                         same: bool) -> None:
    from reconciler.essence import same_example, user_fields

    assert same_example(live, want) is same
    assert (user_fields(live) == want) is same


def test_labels_point_to_the_newest_version_holding_them() -> None:
    versions: list[dict[str, Any]] = [{"id": "v3", "labels": ["staging"]}, {"id": "v2", "labels": ["production", "staging"]},
                {"id": "v1", "labels": [{"name": "legacy"}]}, {"id": "v0"}]
    assert labels_of([PromptVersionObject.read(v) for v in versions]) == {
        "staging": "v3", "production": "v2", "legacy": "v1"}
