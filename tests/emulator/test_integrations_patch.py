"""PATCH /v2/integrations/{id}: every rule of api-spec 4.1, parametrised over the provider table,
over a real socket and in-process (``client``)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from reconciler.providers import (
    AGENT_ENDPOINT_MAX_CHARS,
    HEADER_MAP_MAX_BYTES,
    LLM_CONFIG_FIELDS,
    PRESET_DESCRIPTION_MAX,
    PRESET_NAME_MAX,
    PROVIDERS,
    FieldKind,
    serialized_header_bytes,
)

from . import (
    CANARY,
    FIELD_SAMPLES,
    INPUT_SCHEMA,
    assert_problem,
    create_agent,
    create_llm,
    llm_config,
    unique,
)

PROVIDER_NAMES = list(PROVIDERS)
APPLICABLE = [(p.name, name) for p in PROVIDERS.values() for name in p.fields]
MISPLACED = [(p.name, name) for p in PROVIDERS.values() for name in sorted(LLM_CONFIG_FIELDS - {"provider"})
             if not p.applies(name)]
NULLABLE = [(p.name, f.name) for p in PROVIDERS.values() for f in p.fields.values() if f.nullable]
NOT_NULLABLE = [(p.name, f.name) for p in PROVIDERS.values() for f in p.fields.values() if not f.nullable]
MODEL_SOURCE = [p.name for p in PROVIDERS.values() if p.needs_model_source]
HEADER_PROVIDERS = [p.name for p in PROVIDERS.values() if "headers" in p.fields]


def patch(client: httpx.Client, integration: dict[str, Any], body: dict[str, Any]) -> httpx.Response:
    return client.patch(f"/v2/integrations/{integration['id']}", json=body)


def patched(client: httpx.Client, integration: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    r = patch(client, integration, body)
    assert r.status_code == 200, r.text
    return dict(r.json())


def headers_of_size(size: int) -> dict[str, str]:
    """A header map whose serialized size is exactly ``size`` bytes."""
    headers = {"X-Pad": ""}
    headers["X-Pad"] = "v" * (size - serialized_header_bytes(headers))
    assert serialized_header_bytes(headers) == size
    return headers


def other_provider(provider: str) -> str:
    return next(p for p in PROVIDERS if p != provider)


# ---------------------------------------------------------------- the six 422 causes of 4.1


def test_each_of_the_six_422_causes_of_the_spec_answers_exactly_422(client: httpx.Client) -> None:
    llm = create_llm(client, "CUSTOM")
    agent = create_agent(client)
    causes: list[tuple[dict[str, Any], dict[str, Any]]] = [
        (llm, {"type": "AGENT", "name": unique()}),  # type does not match the stored type
        (llm, {"type": "LLM", "description": "not for LLM"}),  # description on an LLM
        (llm, {"type": "LLM", "config": {"provider": "NIM_F"}}),  # provider differs
        (llm, {"type": "LLM", "config": {"project_id": "p"}}),  # field not applicable to the provider
        (llm, {"type": "LLM", "config": {"base_url": None}}),  # base_url null for CUSTOM
        (llm, {"type": "LLM", "config": {"model_names": []}}),  # no model source left
        (agent, {"type": "LLM", "name": unique()}),  # type mismatch, the other way round
    ]
    for integration, body in causes:
        problem = assert_problem(patch(client, integration, body), 422)
        assert problem["detail"], body
    assert client.get(f"/v2/integrations/{llm['id']}").json() == llm


# ---------------------------------------------------------------- general rules


@pytest.mark.parametrize("body", [{}, {"type": "LLM"}, {"name": "x"}, {"type": 5, "name": "x"},
                                  {"type": "TOOL", "name": "x"}],
                         ids=["empty", "type-only", "no-type", "type-not-string", "type-unknown"])
def test_a_body_without_type_or_without_any_updatable_field_is_400(
    client: httpx.Client, body: dict[str, Any]
) -> None:
    assert_problem(patch(client, create_llm(client, "VENDOR_A"), body), 400)


def test_an_agent_body_with_type_only_is_400(client: httpx.Client) -> None:
    assert_problem(patch(client, create_agent(client), {"type": "AGENT"}), 400)


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_type_cannot_change(client: httpx.Client, provider: str) -> None:
    created = create_llm(client, provider)
    assert_problem(patch(client, created, {"type": "AGENT", "description": "d"}), 422)


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_description_is_rejected_for_llm(client: httpx.Client, provider: str) -> None:
    assert_problem(patch(client, create_llm(client, provider), {"type": "LLM", "description": None}), 422)


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_provider_cannot_change(client: httpx.Client, provider: str) -> None:
    created = create_llm(client, provider)
    body = assert_problem(patch(client, created, {"type": "LLM", "config": {"provider": other_provider(provider)}}),
                          422)
    assert "provider" in body["detail"]
    same = patched(client, created, {"type": "LLM", "config": {"provider": provider}})
    assert same["updated_at"] == created["updated_at"]


@pytest.mark.parametrize(("provider", "field"), MISPLACED)
def test_a_field_of_another_provider_is_422(client: httpx.Client, provider: str, field: str) -> None:
    created = create_llm(client, provider)
    body = assert_problem(patch(client, created, {"type": "LLM", "config": {field: FIELD_SAMPLES[field]}}), 422)
    assert field in body["detail"]


@pytest.mark.parametrize(("provider", "field"), APPLICABLE)
def test_an_applicable_field_updates_and_reads_back(client: httpx.Client, provider: str, field: str) -> None:
    created = create_llm(client, provider)
    value = FIELD_SAMPLES[field]
    updated = patched(client, created, {"type": "LLM", "config": {field: value}})
    f = PROVIDERS[provider].fields[field]
    read = updated["config"][f.read_name]
    if f.kind is FieldKind.SECRET:
        assert read is True
    elif f.kind is FieldKind.HEADERS:
        assert read == sorted(value)
    elif f.kind is FieldKind.AUTH:
        assert read == {**value, "external_id": None, "base_url": None}
    else:
        assert read == value
    assert CANARY not in str(updated)
    assert updated["updated_at"] > created["updated_at"]


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_omitted_fields_are_left_unchanged(client: httpx.Client, provider: str) -> None:
    created = create_llm(client, provider)
    renamed = patched(client, created, {"type": "LLM", "name": unique("renamed")})
    assert renamed["config"] == created["config"]
    assert renamed["scopings"] == created["scopings"]
    assert renamed["created_at"] == created["created_at"]


@pytest.mark.parametrize(("provider", "field"), NULLABLE)
def test_an_explicit_null_clears_a_nullable_field(client: httpx.Client, provider: str, field: str) -> None:
    created = create_llm(client, provider, config=llm_config(provider, **{field: FIELD_SAMPLES[field]}))
    cleared = patched(client, created, {"type": "LLM", "config": {field: None}})
    f = PROVIDERS[provider].fields[field]
    assert cleared["config"][f.read_name] == {"has_api_key": False, "header_names": []}.get(f.read_name)


@pytest.mark.parametrize(("provider", "field"), NOT_NULLABLE)
def test_null_on_a_field_that_cannot_be_cleared_is_422(client: httpx.Client, provider: str, field: str) -> None:
    created = create_llm(client, provider)
    assert_problem(patch(client, created, {"type": "LLM", "config": {field: None}}), 422)


def test_null_base_url_restores_the_provider_default_for_nim_f_and_vendor_b(client: httpx.Client) -> None:
    for provider in ("NIM_F", "VENDOR_B"):
        created = create_llm(client, provider, config=llm_config(provider, base_url="https://self.example"))
        assert patched(client, created, {"type": "LLM", "config": {"base_url": None}})["config"]["base_url"] is None


def test_omitting_api_key_keeps_it_and_a_new_one_rotates_it(client: httpx.Client) -> None:
    created = create_llm(client, "VENDOR_A")
    kept = patched(client, created, {"type": "LLM", "config": {"is_function_calling_enabled": False}})
    assert kept["config"]["has_api_key"] is True
    rotated = patched(client, kept, {"type": "LLM", "config": {"api_key": f"{CANARY}-new"}})
    assert rotated["config"]["has_api_key"] is True and rotated["updated_at"] > kept["updated_at"]


# ---------------------------------------------------------------- collections replace


@pytest.mark.parametrize("provider", MODEL_SOURCE)
def test_model_names_replace_the_stored_list(client: httpx.Client, provider: str) -> None:
    created = create_llm(client, provider, config=llm_config(provider, model_names=["a", "b"]))
    assert patched(client, created, {"type": "LLM", "config": {"model_names": ["c"]}})["config"]["model_names"] == ["c"]


@pytest.mark.parametrize("provider", HEADER_PROVIDERS)
def test_headers_replace_the_whole_map_and_null_clears_it(client: httpx.Client, provider: str) -> None:
    created = create_llm(client, provider, config=llm_config(provider, headers={"A": "1", "B": "2"}))
    replaced = patched(client, created, {"type": "LLM", "config": {"headers": {"C": CANARY}}})
    assert replaced["config"]["header_names"] == ["C"]
    assert patched(client, replaced, {"type": "LLM", "config": {"headers": None}})["config"]["header_names"] == []


def test_scopings_replace_and_an_empty_list_reverts_to_account_wide(client: httpx.Client) -> None:
    space = client.get("/v2/spaces", params={"name": "research"}).json()["spaces"][0]
    org_scope = [{"organization_id": space["organization_id"], "space_id": None}]
    created = create_llm(client, "VENDOR_A", scopings=org_scope)
    space_scope = [{"organization_id": space["organization_id"], "space_id": space["id"]}]
    assert patched(client, created, {"type": "LLM", "scopings": space_scope})["scopings"] == space_scope
    assert patched(client, created, {"type": "LLM", "scopings": []})["scopings"] == []


def test_scopings_naming_nothing_are_422_and_unknown_scoping_properties_400(client: httpx.Client) -> None:
    created = create_llm(client, "VENDOR_A")
    assert_problem(patch(client, created, {"type": "LLM", "scopings": [{"space_id": "nope"}]}), 422)
    assert_problem(patch(client, created, {"type": "LLM", "scopings": [{"org": "x"}]}), 400)
    agent = create_agent(client)
    space = client.get("/v2/spaces", params={"name": "default"}).json()["spaces"][0]
    assert_problem(patch(client, agent, {"type": "AGENT", "scopings": [{"space_id": space["id"]}]}), 422)


# ---------------------------------------------------------------- the model-source rule


@pytest.mark.parametrize("provider", MODEL_SOURCE)
def test_the_model_source_rule_applies_to_the_merged_config(client: httpx.Client, provider: str) -> None:
    created = create_llm(client, provider, config=llm_config(provider, is_default_models_enabled=False,
                                                             model_names=["m"]))
    assert_problem(patch(client, created, {"type": "LLM", "config": {"model_names": []}}), 422)
    both = patched(client, created, {"type": "LLM", "config": {"model_names": [], "is_default_models_enabled": True}})
    assert both["config"]["model_names"] == [] and both["config"]["is_default_models_enabled"] is True
    assert_problem(patch(client, both, {"type": "LLM", "config": {"is_default_models_enabled": False}}), 422)


# ---------------------------------------------------------------- CLOUD_D auth


def test_cloud_d_auth_is_replaced_wholesale_and_may_change_mode(client: httpx.Client) -> None:
    full_default = {"auth_type": "DEFAULT", "role_arn": "arn:r", "external_id": "ext", "base_url": "https://b.example"}
    created = create_llm(client, "CLOUD_D", config=llm_config("CLOUD_D", auth=full_default))
    bearer = patched(client, created, {"type": "LLM", "config": {"auth": {"auth_type": "BEARER_TOKEN",
                                                                          "api_key": CANARY}}})
    assert bearer["config"]["auth"] == {"auth_type": "BEARER_TOKEN", "has_api_key": True, "base_url": None}
    back = patched(client, bearer, {"type": "LLM", "config": {"auth": {"auth_type": "DEFAULT", "role_arn": "arn:s"}}})
    assert back["config"]["auth"] == {"auth_type": "DEFAULT", "role_arn": "arn:s", "external_id": None,
                                      "base_url": None}
    proxy = patched(client, back, {"type": "LLM", "config": {"auth": {
        "auth_type": "PROXY_WITH_HEADERS", "base_url": "https://proxy.example", "headers": {"P": CANARY}}}})
    assert proxy["config"]["auth"] == {"auth_type": "PROXY_WITH_HEADERS", "base_url": "https://proxy.example",
                                       "header_names": ["P"]}
    assert CANARY not in str(proxy)


@pytest.mark.parametrize("auth", [
    {"role_arn": "arn:r"},
    {"auth_type": "DEFAULT", "role_arn": "arn:r", "api_key": "k"},
    {"auth_type": "BEARER_TOKEN"},
    {"auth_type": "DEFAULT", "role_arn": "arn:r", "extra": 1},
], ids=["no-auth-type", "field-of-another-mode", "missing-required", "unknown-property"])
def test_a_malformed_auth_is_400(client: httpx.Client, auth: dict[str, Any]) -> None:
    created = create_llm(client, "CLOUD_D")
    assert_problem(patch(client, created, {"type": "LLM", "config": {"auth": auth}}), 400)


# ---------------------------------------------------------------- header-size limit


@pytest.mark.parametrize("provider", HEADER_PROVIDERS)
def test_config_headers_up_to_the_limit_pass_and_one_byte_more_is_422(client: httpx.Client, provider: str) -> None:
    created = create_llm(client, provider)
    patched(client, created, {"type": "LLM", "config": {"headers": headers_of_size(HEADER_MAP_MAX_BYTES)}})
    too_big = headers_of_size(HEADER_MAP_MAX_BYTES + 1)
    assert_problem(patch(client, created, {"type": "LLM", "config": {"headers": too_big}}), 422)


def test_proxy_auth_headers_have_the_same_limit(client: httpx.Client) -> None:
    created = create_llm(client, "CLOUD_D")

    def auth(size: int) -> dict[str, Any]:
        return {"auth": {"auth_type": "PROXY_WITH_HEADERS", "base_url": "https://p.example",
                         "headers": headers_of_size(size)}}

    patched(client, created, {"type": "LLM", "config": auth(HEADER_MAP_MAX_BYTES)})
    assert_problem(patch(client, created, {"type": "LLM", "config": auth(HEADER_MAP_MAX_BYTES + 1)}), 422)


def test_agent_headers_have_the_same_limit_and_empty_or_null_clears_them(client: httpx.Client) -> None:
    agent = create_agent(client)
    patched(client, agent, {"type": "AGENT", "config": {"headers": headers_of_size(HEADER_MAP_MAX_BYTES)}})
    assert_problem(patch(client, agent, {"type": "AGENT", "config": {
        "headers": headers_of_size(HEADER_MAP_MAX_BYTES + 1)}}), 422)
    cleared: dict[str, str] | None
    for cleared in ({}, None):
        assert patched(client, agent, {"type": "AGENT", "config": {"headers": cleared}})["config"]["has_headers"] is False
        patched(client, agent, {"type": "AGENT", "config": {"headers": {"H": "v"}}})


# ---------------------------------------------------------------- schema violations


@pytest.mark.parametrize("body", [
    {"type": "LLM", "config": {"api_token": "x"}},
    {"type": "LLM", "nickname": "x"},
    {"type": "LLM", "name": 5},
    {"type": "LLM", "name": None},
    {"type": "LLM", "config": {"model_names": "m"}},
    {"type": "LLM", "config": {"model_names": [1]}},
    {"type": "LLM", "config": {"is_function_calling_enabled": "yes"}},
    {"type": "LLM", "config": {"headers": {"A": 1}}},
    {"type": "LLM", "config": None},
    {"type": "LLM", "config": []},
    {"type": "LLM", "scopings": {"space_id": None}},
], ids=["unknown-config-field", "unknown-envelope-field", "name-number", "name-null", "list-as-string",
        "list-of-numbers", "bool-as-string", "header-value-number", "config-null", "config-array",
        "scopings-object"])
def test_schema_violations_are_400(client: httpx.Client, body: dict[str, Any]) -> None:
    assert_problem(patch(client, create_llm(client, "CUSTOM"), body), 400)


def test_malformed_json_is_400(client: httpx.Client) -> None:
    created = create_llm(client, "VENDOR_A")
    r = client.patch(f"/v2/integrations/{created['id']}", content=b"{type: LLM}",
                     headers={"content-type": "application/json"})
    assert_problem(r, 400)


def test_an_unknown_id_is_404(client: httpx.Client) -> None:
    assert_problem(client.patch("/v2/integrations/SW50ZWdyYXRpb246OTk5OmFiYw", json={"type": "LLM", "name": "x"}),
                   404)


def test_renaming_onto_a_name_of_the_same_type_is_409(client: httpx.Client) -> None:
    taken = create_llm(client, "VENDOR_A")
    other = create_llm(client, "VENDOR_C")
    assert_problem(patch(client, other, {"type": "LLM", "name": taken["name"]}), 409)
    agent = create_agent(client)
    assert patched(client, agent, {"type": "AGENT", "name": taken["name"]})["name"] == taken["name"]


def test_updated_at_moves_only_on_a_real_change(client: httpx.Client) -> None:
    created = create_llm(client, "VENDOR_B")
    same = patched(client, created, {"type": "LLM", "name": created["name"], "config": {"base_url": "https://vendor-b.example/v1"}})
    assert same == created
    changed = patched(client, created, {"type": "LLM", "config": {"is_function_calling_enabled": False}})
    assert changed["updated_at"] > created["updated_at"]
    assert changed["created_at"] == created["created_at"]


# ---------------------------------------------------------------- AGENT


def test_agent_description_and_name_update_and_null_clears_the_description(client: httpx.Client) -> None:
    agent = create_agent(client)
    described = patched(client, agent, {"type": "AGENT", "description": "replays traffic"})
    assert described["description"] == "replays traffic"
    assert patched(client, described, {"type": "AGENT", "description": None})["description"] is None


@pytest.mark.parametrize("endpoint", [
    "http://agent.example.com/replay",
    "ftp://agent.example.com/replay",
    "https://localhost/replay",
    "https://api.localhost/replay",
    "https://127.0.0.1/replay",
    "https://127.1/replay",
    "https://2130706433/replay",
    "https://10.1.2.3/replay",
    "https://172.16.0.1/replay",
    "https://192.168.1.1/replay",
    "https://169.254.169.254/latest/meta-data",
    "https://0.0.0.0/replay",
    "https://100.64.0.1/replay",
    "https://224.0.0.1/replay",
    "https://240.0.0.1/replay",
    "https://[::1]/replay",
    "https://[::]/replay",
    "https://[fe80::1]/replay",
    "https://[fc00::1]/replay",
    "https://[ff02::1]/replay",
    "https://[::ffff:127.0.0.1]/replay",
    "https://metadata.google.internal/computeMetadata/v1",
    "https://printer.local/replay",
    "https://router.home.arpa/replay",
    "https://intranet/replay",
    "https://127.0.0.1.nip.io/replay",
    "https://10-0-0-5.sslip.io/replay",
    "https://localtest.me/replay",
    "https://app.lvh.me/replay",
    "https:///replay",
    "not a url",
    "https://agent.example.com/" + "a" * AGENT_ENDPOINT_MAX_CHARS,
])
def test_an_agent_endpoint_must_be_public_https_and_short_enough(client: httpx.Client, endpoint: str) -> None:
    agent = create_agent(client)
    assert_problem(patch(client, agent, {"type": "AGENT", "config": {"endpoint": endpoint}}), 422)


@pytest.mark.parametrize("endpoint", [
    "https://agent.example.com/v2/replay?x=1",
    "https://8.8.8.8/replay",
    "https://[2606:4700:4700::1111]/replay",
    "https://agent.example.com:8443/",
    "https://8.8.8.8.nip.io/replay",  # the address written in the name is public
    "https://agent.example/replay",  # a name that may not resolve is the resolver's business, not refused here
])
def test_a_public_https_endpoint_is_accepted(client: httpx.Client, endpoint: str) -> None:
    agent = create_agent(client)
    assert patched(client, agent, {"type": "AGENT", "config": {"endpoint": endpoint}})["config"]["endpoint"] == endpoint


def test_an_endpoint_of_exactly_the_maximum_length_is_accepted(client: httpx.Client) -> None:
    base = "https://agent.example.com/"
    endpoint = base + "a" * (AGENT_ENDPOINT_MAX_CHARS - len(base))
    assert patched(client, create_agent(client), {"type": "AGENT", "config": {"endpoint": endpoint}})


def test_presets_are_matched_by_name(client: httpx.Client) -> None:
    agent = create_agent(client, request_presets=[
        {"name": "keep", "config": {"query": "a"}},
        {"name": "change", "description": "old", "config": {"query": "b"}},
        {"name": "drop", "config": {}},
    ])
    before = {p["name"]: p for p in agent["config"]["request_presets"]}
    after_body = patched(client, agent, {"type": "AGENT", "config": {"request_presets": [
        {"name": "keep", "config": {"query": "a"}},
        {"name": "change", "description": "new", "config": {"query": "b", "top_k": 3}},
        {"name": "added", "config": {"options": {}}},
    ]}})
    after = {p["name"]: p for p in after_body["config"]["request_presets"]}
    assert [p["name"] for p in after_body["config"]["request_presets"]] == ["keep", "change", "added"]
    assert after["keep"] == before["keep"]
    assert after["change"]["id"] == before["change"]["id"]
    assert after["change"]["created_at"] == before["change"]["created_at"]
    assert after["change"]["updated_at"] == before["change"]["updated_at"]  # "id and timestamps preserved"
    assert after["change"]["description"] == "new" and after["change"]["config"] == {"query": "b", "top_k": 3}
    assert after["added"]["id"] not in {p["id"] for p in before.values()}
    assert "drop" not in after


def test_a_matched_preset_keeps_an_omitted_description_and_clears_a_null_one(client: httpx.Client) -> None:
    agent = create_agent(client, request_presets=[
        {"name": "kept", "description": "stays", "config": {"query": "a"}},
        {"name": "cleared", "description": "goes", "config": {"query": "b"}},
    ])
    after = {p["name"]: p for p in patched(client, agent, {"type": "AGENT", "config": {"request_presets": [
        {"name": "kept", "config": {"query": "a2"}},
        {"name": "cleared", "description": None, "config": {"query": "b"}},
    ]}})["config"]["request_presets"]}
    assert after["kept"]["description"] == "stays" and after["kept"]["config"] == {"query": "a2"}
    assert after["cleared"]["description"] is None


@pytest.mark.parametrize("presets", [
    [{"name": "", "config": {}}],
    [{"name": "n" * (PRESET_NAME_MAX + 1), "config": {}}],
    [{"name": "twin", "config": {}}, {"name": "twin", "config": {}}],
    [{"name": "long", "description": "d" * (PRESET_DESCRIPTION_MAX + 1), "config": {}}],
    [{"name": "typed", "config": {"top_k": "three"}}],
    [{"name": "extra", "config": {"unknown": 1}}],
    [{"name": "nested", "config": {"options": {"lang": 7}}}],
], ids=["empty-name", "long-name", "duplicate-name", "long-description", "wrong-type", "not-in-schema",
        "nested-wrong-type"])
def test_invalid_presets_are_422(client: httpx.Client, presets: list[dict[str, Any]]) -> None:
    agent = create_agent(client)
    assert_problem(patch(client, agent, {"type": "AGENT", "config": {"request_presets": presets}}), 422)


def test_preset_limits_are_inclusive_and_names_are_case_sensitive(client: httpx.Client) -> None:
    presets = [{"name": "n" * PRESET_NAME_MAX, "description": "d" * PRESET_DESCRIPTION_MAX, "config": {}},
               {"name": "Same", "config": {}}, {"name": "same", "config": {}}]
    body = patched(client, create_agent(client), {"type": "AGENT", "config": {"request_presets": presets}})
    assert len(body["config"]["request_presets"]) == 3


def test_preset_configs_are_validated_with_required_dropped(client: httpx.Client) -> None:
    agent = create_agent(client)
    partial = [{"name": "partial", "config": {"options": {}}}]  # misses required query, top_k and options.lang
    assert patched(client, agent, {"type": "AGENT", "config": {"request_presets": partial}})


@pytest.mark.parametrize("preset", [
    {"id": "p1", "name": "p", "config": {}},
    {"name": "p", "config": {}, "created_at": "2024-01-01T00:00:00Z"},
    {"name": "p"},
    {"config": {}},
    {"name": "p", "config": []},
], ids=["id", "created-at", "no-config", "no-name", "config-array"])
def test_malformed_presets_are_400(client: httpx.Client, preset: dict[str, Any]) -> None:
    agent = create_agent(client)
    assert_problem(patch(client, agent, {"type": "AGENT", "config": {"request_presets": [preset]}}), 400)


def test_a_new_input_schema_must_accept_the_existing_presets(client: httpx.Client) -> None:
    agent = create_agent(client, request_presets=[{"name": "p", "config": {"query": "q"}}])
    stricter = {**INPUT_SCHEMA, "properties": {"query": {"type": "integer"}}}
    assert_problem(patch(client, agent, {"type": "AGENT", "config": {"input_schema": stricter}}), 422)
    together = patched(client, agent, {"type": "AGENT", "config": {
        "input_schema": stricter, "request_presets": [{"name": "p", "config": {"query": 1}}]}})
    assert together["config"]["input_schema"] == stricter


def test_an_input_schema_that_is_not_a_json_schema_is_422(client: httpx.Client) -> None:
    agent = create_agent(client)
    assert_problem(patch(client, agent, {"type": "AGENT", "config": {"input_schema": {"type": "banana"}}}), 422)


def test_an_llm_config_field_on_an_agent_is_400(client: httpx.Client) -> None:
    agent = create_agent(client)
    assert_problem(patch(client, agent, {"type": "AGENT", "config": {"provider": "CUSTOM"}}), 400)
