"""Integrations in the emulator: create, read shapes, secrets, list, get, delete (api-spec 2.1,
api-reference "Integrations"). Every test runs over a real socket and in-process (``client``)."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema
import pytest

from reconciler.emulator.core import PROBLEM_TITLES
from reconciler.providers import AGENT_FIELDS, AUTH_MODES, LLM_CONFIG_FIELDS, PROVIDERS

from . import (
    CANARY,
    FIELD_SAMPLES,
    agent_config,
    assert_problem,
    create_agent,
    create_llm,
    llm_config,
    unique,
)

PROVIDER_NAMES = list(PROVIDERS)
REQUIRED_FIELDS = [(p.name, f.name) for p in PROVIDERS.values() for f in p.fields.values() if f.required_on_create]
MISPLACED_FIELDS = [(p.name, name) for p in PROVIDERS.values() for name in sorted(LLM_CONFIG_FIELDS - {"provider"})
                    if not p.applies(name)]
MODEL_SOURCE_PROVIDERS = [p.name for p in PROVIDERS.values() if p.needs_model_source]


def post(client: httpx.Client, body: dict[str, Any]) -> httpx.Response:
    return client.post("/v2/integrations", json=body)


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_create_answers_201_with_the_read_shape_of_the_provider(client: httpx.Client, provider: str) -> None:
    created = create_llm(client, provider)
    spec = PROVIDERS[provider]
    assert created["type"] == "LLM"
    assert created["scopings"] == []
    assert set(created["config"]) == {"provider", *[f.read_name for f in spec.fields.values()]}
    assert created["config"]["provider"] == provider
    assert created["created_at"] == created["updated_at"]
    assert created["created_by_user_id"]
    assert "description" not in created
    assert client.get(f"/v2/integrations/{created['id']}").json() == created


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_reads_never_return_secrets_only_their_presence(client: httpx.Client, provider: str) -> None:
    created = create_llm(client, provider)
    listed = client.get("/v2/integrations", params={"type": "LLM"})
    fetched = client.get(f"/v2/integrations/{created['id']}")
    for text in (str(created), listed.text, fetched.text):
        assert CANARY not in text
    config = created["config"]
    if "api_key" in PROVIDERS[provider].fields:
        assert config["has_api_key"] is ("api_key" in llm_config(provider))
    if "headers" in PROVIDERS[provider].fields:
        assert config["header_names"] == sorted(llm_config(provider)["headers"])
    if provider == "CLOUD_D":
        assert config["auth"] == {"auth_type": "BEARER_TOKEN", "has_api_key": True, "base_url": None}


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_omitted_optional_fields_read_back_as_their_defaults(client: httpx.Client, provider: str) -> None:
    spec = PROVIDERS[provider]
    minimal = {"provider": provider, **{k: v for k, v in llm_config(provider).items()
                                        if k in spec.fields and spec.fields[k].required_on_create}}
    if spec.needs_model_source:
        minimal["model_names"] = ["only"]
    r = post(client, {"type": "LLM", "name": unique(), "config": minimal})
    assert r.status_code == 201, r.text
    config = r.json()["config"]
    for f in spec.fields.values():
        if f.required_on_create or f.name == "model_names" and spec.needs_model_source:
            continue
        expected: Any = {"has_api_key": False, "header_names": []}.get(f.read_name, f.default)
        assert config[f.read_name] == (list(expected) if isinstance(expected, tuple) else expected), f.name


@pytest.mark.parametrize(("provider", "field"), REQUIRED_FIELDS)
def test_create_without_a_required_config_field_is_400(client: httpx.Client, provider: str, field: str) -> None:
    config = llm_config(provider, **({field: FIELD_SAMPLES[field]} if field == "auth" else {}))
    config.pop(field, None)
    assert_problem(post(client, {"type": "LLM", "name": unique(), "config": config}), 400)


@pytest.mark.parametrize(("provider", "field"), MISPLACED_FIELDS)
def test_create_with_a_field_of_another_provider_is_422(client: httpx.Client, provider: str, field: str) -> None:
    config = llm_config(provider, **{field: FIELD_SAMPLES[field]})
    body = assert_problem(post(client, {"type": "LLM", "name": unique(), "config": config}), 422)
    assert field in body["detail"]


@pytest.mark.parametrize("provider", MODEL_SOURCE_PROVIDERS)
def test_create_without_a_model_source_is_422(client: httpx.Client, provider: str) -> None:
    config = llm_config(provider, is_default_models_enabled=False, model_names=[])
    body = assert_problem(post(client, {"type": "LLM", "name": unique(), "config": config}), 422)
    assert "model source" in body["detail"]


@pytest.mark.parametrize("body", [
    {"type": "LLM", "name": "x", "config": {"provider": "VENDOR_A", "api_key": "k", "api_token": "k"}},
    {"type": "LLM", "name": "x", "config": {"provider": "VENDOR_A", "api_key": "k"}, "labels": []},
    {"type": "LLM", "name": "x", "config": {"provider": "VENDOR_Z", "api_key": "k"}},
    {"type": "LLM", "name": "x", "config": {"api_key": "k"}},
    {"type": "LLM", "config": {"provider": "VENDOR_A", "api_key": "k"}},
    {"type": "LLM", "name": "x"},
    {"name": "x", "config": {"provider": "VENDOR_A", "api_key": "k"}},
    {"type": "TOOL", "name": "x", "config": {}},
    {"type": "LLM", "name": 7, "config": {"provider": "VENDOR_A", "api_key": "k"}},
    {"type": "LLM", "name": "x", "config": {"provider": "VENDOR_A", "api_key": "k",
                                             "is_function_calling_enabled": "yes"}},
    {"type": "LLM", "name": "x", "config": {"provider": "VENDOR_A", "api_key": "k"},
     "scopings": [{"organization_id": None, "space": "s"}]},
    {"type": "LLM", "name": "x", "config": {"provider": "CLOUD_D", "is_default_models_enabled": True,
                                             "auth": {"auth_type": "DEFAULT", "role_arn": "r", "api_key": "k"}}},
    {"type": "LLM", "name": "x", "config": {"provider": "CLOUD_D", "is_default_models_enabled": True,
                                             "auth": {"auth_type": "KERBEROS"}}},
    {"type": "AGENT", "name": "x", "config": {"endpoint": "https://a.example.com", "input_schema": {},
                                               "request_presets": [{"id": "p", "name": "n", "config": {}}]}},
    {"type": "AGENT", "name": "x", "config": {"endpoint": "https://a.example.com"}},
], ids=["unknown-config-field", "unknown-envelope-field", "unknown-provider", "no-provider", "no-name",
        "no-config", "no-type", "unknown-type", "name-not-string", "bool-as-string", "unknown-scoping-field",
        "auth-field-of-other-mode", "unknown-auth-type", "preset-with-id", "agent-without-input-schema"])
def test_schema_violations_on_create_are_400(client: httpx.Client, body: dict[str, Any]) -> None:
    assert_problem(post(client, body), 400)


def test_malformed_json_is_400(client: httpx.Client) -> None:
    r = client.post("/v2/integrations", content=b'{"type": "LLM",', headers={"content-type": "application/json"})
    assert_problem(r, 400)
    assert_problem(client.post("/v2/integrations", json=["not", "an", "object"]), 400)


def test_description_on_an_llm_create_is_422(client: httpx.Client) -> None:
    body = {"type": "LLM", "name": unique(), "description": "d", "config": llm_config("VENDOR_A")}
    assert_problem(post(client, body), 422)


def test_names_are_unique_per_type_and_a_duplicate_is_409(client: httpx.Client) -> None:
    name = unique("shared")
    assert post(client, {"type": "LLM", "name": name, "config": llm_config("VENDOR_A")}).status_code == 201
    assert_problem(post(client, {"type": "LLM", "name": name, "config": llm_config("VENDOR_C")}), 409)
    assert post(client, {"type": "AGENT", "name": name, "config": agent_config()}).status_code == 201


@pytest.mark.parametrize("auth", [
    ({"auth_type": "DEFAULT", "role_arn": "arn:r"},
     {"auth_type": "DEFAULT", "role_arn": "arn:r", "external_id": None, "base_url": None}),
    ({"auth_type": "DEFAULT", "role_arn": "arn:r", "external_id": "ext", "base_url": "https://br.example"},
     {"auth_type": "DEFAULT", "role_arn": "arn:r", "external_id": "ext", "base_url": "https://br.example"}),
    ({"auth_type": "BEARER_TOKEN", "api_key": CANARY, "base_url": "https://br.example"},
     {"auth_type": "BEARER_TOKEN", "has_api_key": True, "base_url": "https://br.example"}),
    ({"auth_type": "PROXY_WITH_HEADERS", "base_url": "https://proxy.example", "headers": {"B": CANARY, "A": "x"}},
     {"auth_type": "PROXY_WITH_HEADERS", "base_url": "https://proxy.example", "header_names": ["A", "B"]}),
    ({"auth_type": "PROXY_WITH_HEADERS", "base_url": "https://proxy.example"},
     {"auth_type": "PROXY_WITH_HEADERS", "base_url": "https://proxy.example", "header_names": []}),
], ids=["default-minimal", "default-full", "bearer", "proxy-headers", "proxy-bare"])
def test_cloud_d_auth_reads_back_in_the_shape_of_its_mode(
    client: httpx.Client, auth: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    written, expected = auth
    created = create_llm(client, "CLOUD_D", config=llm_config("CLOUD_D", auth=written))
    assert created["config"]["auth"] == expected
    assert set(expected) == {"auth_type", *[f.read_name for f in AUTH_MODES[expected["auth_type"]].fields.values()]}


def test_a_plain_http_proxy_url_is_422(client: httpx.Client) -> None:
    config = llm_config("CLOUD_D", auth={"auth_type": "PROXY_WITH_HEADERS", "base_url": "http://proxy.example"})
    assert_problem(post(client, {"type": "LLM", "name": unique(), "config": config}), 422)
    assert_problem(post(client, {"type": "LLM", "name": unique(),
                                 "config": llm_config("CUSTOM", base_url="http://llm.example")}), 422)


def test_agent_create_reads_back_endpoint_schema_presets_and_only_header_presence(client: httpx.Client) -> None:
    created = create_agent(client, request_presets=[{"name": "short", "config": {"query": "hi"}}])
    assert created["type"] == "AGENT"
    assert created["description"] is None
    config = created["config"]
    assert set(config) == {"endpoint", "has_headers", "input_schema", "request_presets"}
    assert config["has_headers"] is True
    assert CANARY not in str(created)
    [preset] = config["request_presets"]
    assert set(preset) == {"id", "name", "description", "config", "created_at", "updated_at"}
    assert preset["name"] == "short" and preset["description"] is None


def test_agent_without_presets_reads_an_empty_list(client: httpx.Client) -> None:
    created = create_agent(client, headers=None)
    assert created["config"]["request_presets"] == []
    assert created["config"]["has_headers"] is False


def test_scopings_must_name_existing_organizations_and_spaces(client: httpx.Client) -> None:
    org = client.get("/v2/organizations").json()["organizations"][0]["id"]
    space = client.get("/v2/spaces", params={"name": "research"}).json()["spaces"][0]["id"]
    good = [{"organization_id": org, "space_id": space}, {"organization_id": org, "space_id": None}]
    created = create_llm(client, "VENDOR_A", scopings=good)
    assert created["scopings"] == good
    for bad in ([{"organization_id": "nope", "space_id": None}], [{"organization_id": org, "space_id": "nope"}]):
        body = {"type": "LLM", "name": unique(), "config": llm_config("VENDOR_A"), "scopings": bad}
        assert_problem(post(client, body), 422)


def test_an_agent_space_scoping_must_carry_its_organization(client: httpx.Client) -> None:
    space = client.get("/v2/spaces", params={"name": "default"}).json()["spaces"][0]
    body = {"type": "AGENT", "name": unique(), "config": agent_config(),
            "scopings": [{"space_id": space["id"]}]}
    assert_problem(post(client, body), 422)
    body["scopings"] = [{"space_id": space["id"], "organization_id": space["organization_id"]}]
    assert post(client, body).status_code == 201


def test_list_is_newest_first_and_filters_by_type_and_name_substring(client: httpx.Client) -> None:
    prefix = unique("listed")
    first = create_llm(client, "VENDOR_A", name=f"{prefix}-Alpha-Router")
    second = create_llm(client, "VENDOR_C", name=f"{prefix}-beta-router")
    agent = create_agent(client, name=f"{prefix}-agent")
    listed = client.get("/v2/integrations", params={"name": prefix}).json()
    assert [i["id"] for i in listed["integrations"]] == [agent["id"], second["id"], first["id"]]
    assert listed["pagination"] == {"has_more": False}
    only_llm = client.get("/v2/integrations", params={"type": "LLM", "name": prefix}).json()["integrations"]
    assert [i["id"] for i in only_llm] == [second["id"], first["id"]]
    named = client.get("/v2/integrations", params={"name": f"{prefix}-ALPHA"}).json()["integrations"]
    assert [i["name"] for i in named] == [f"{prefix}-Alpha-Router"]


def test_list_filters_by_the_space_an_integration_is_usable_from(client: httpx.Client) -> None:
    spaces = {s["name"]: s for s in client.get("/v2/spaces").json()["spaces"]}
    default, research = spaces["default"], spaces["research"]
    prefix = unique("scoped")
    account_wide = create_llm(client, "VENDOR_A", name=f"{prefix}-a")
    org_wide = create_llm(client, "VENDOR_A", name=f"{prefix}-b",
                          scopings=[{"organization_id": default["organization_id"]}])
    in_research = create_llm(client, "VENDOR_A", name=f"{prefix}-c",
                             scopings=[{"organization_id": research["organization_id"], "space_id": research["id"]}])

    def usable_from(space: dict[str, Any]) -> set[str]:
        params = {"space_id": space["id"], "name": prefix}
        return {i["id"] for i in client.get("/v2/integrations", params=params).json()["integrations"]}

    assert usable_from(default) == {account_wide["id"], org_wide["id"]}
    assert usable_from(research) == {account_wide["id"], org_wide["id"], in_research["id"]}
    assert_problem(client.get("/v2/integrations", params={"space_id": "nope"}), 404)


def test_list_pages_with_an_opaque_cursor(client: httpx.Client) -> None:
    prefix = unique("paged")
    ids = [create_llm(client, "VENDOR_A", name=f"{prefix}-{i}")["id"] for i in range(5)]
    seen: list[str] = []
    params: dict[str, Any] = {"limit": 2, "type": "LLM", "name": prefix}
    while True:
        body = client.get("/v2/integrations", params=params).json()
        assert len(body["integrations"]) <= 2
        seen += [i["id"] for i in body["integrations"]]
        if not body["pagination"]["has_more"]:
            break
        params["cursor"] = body["pagination"]["next_cursor"]
    assert seen == list(reversed(ids))


@pytest.mark.parametrize("params", [
    {"limit": 0}, {"limit": 101}, {"limit": "ten"}, {"cursor": "garbage"}, {"type": "TOOL"},
], ids=["limit-0", "limit-101", "limit-text", "bad-cursor", "bad-type"])
def test_bad_list_parameters_are_400(client: httpx.Client, params: dict[str, Any]) -> None:
    assert_problem(client.get("/v2/integrations", params=params), 400)


def test_a_cursor_is_only_valid_with_its_own_query(client: httpx.Client) -> None:
    for _ in range(3):
        create_llm(client, "VENDOR_A")
    cursor = client.get("/v2/integrations", params={"limit": 1}).json()["pagination"]["next_cursor"]
    assert_problem(client.get("/v2/integrations", params={"limit": 1, "type": "LLM", "cursor": cursor}), 400)


def test_get_and_delete_of_an_unknown_id_are_404(client: httpx.Client) -> None:
    assert_problem(client.get("/v2/integrations/SW50ZWdyYXRpb246OTk5OmFiYw"), 404)
    assert_problem(client.delete("/v2/integrations/SW50ZWdyYXRpb246OTk5OmFiYw"), 404)


def test_delete_answers_204_and_the_integration_is_gone(client: httpx.Client) -> None:
    created = create_llm(client, "VENDOR_B")
    r = client.delete(f"/v2/integrations/{created['id']}")
    assert r.status_code == 204 and r.content == b""
    assert_problem(client.get(f"/v2/integrations/{created['id']}"), 404)


def test_responses_match_the_openapi_document(client: httpx.Client) -> None:
    from jsonschema import Draft202012Validator

    document = client.get("/v2/openapi.json").json()
    validator = Draft202012Validator({"$ref": "#/components/schemas/Integration", "components": document["components"]})
    created = [create_llm(client, p) for p in PROVIDER_NAMES] + [
        create_agent(client, request_presets=[{"name": "p", "description": "d", "config": {"query": "q"}}])]
    for item in created:
        assert not list(validator.iter_errors(item)), item["config"]
    assert PROBLEM_TITLES[422][0] == "Unprocessable Entity"


def _another_type(value: Any) -> Any:
    """A JSON value of another type than ``value``."""
    return "a string" if not isinstance(value, str) else 0


AUTH_SAMPLES = {
    "DEFAULT": {"auth_type": "DEFAULT", "role_arn": "arn:aws:iam::123456789012:role/reader", "external_id": "x-1",
                "base_url": "https://bedrock.example/v1"},
    "BEARER_TOKEN": {"auth_type": "BEARER_TOKEN", "api_key": f"{CANARY}-t", "base_url": "https://bedrock.example/v1"},
    "PROXY_WITH_HEADERS": {"auth_type": "PROXY_WITH_HEADERS", "base_url": "https://proxy.example/v1",
                           "headers": {"X-Proxy": f"{CANARY}-p"}},
}
assert set(AUTH_SAMPLES) == set(AUTH_MODES)


def _refuses_another_type_in_each_field(validator: Any, read: dict[str, Any], names: Any) -> None:
    validator.validate(read)
    for name in names:
        assert not validator.is_valid({**read, name: _another_type(read[name])}), name
        if isinstance(read[name], list) and read[name]:  # and a list: an item of another type
            assert not validator.is_valid({**read, name: [_another_type(read[name][0])]}), name


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_the_published_read_schema_of_each_field_takes_what_a_read_shows_and_no_other_type(
        client: httpx.Client, provider: str) -> None:
    document = client.get("/v2/openapi.json").json()

    def validator(name: str) -> Any:
        return jsonschema.Draft202012Validator({**document, "$ref": f"#/components/schemas/{name}"})

    spec = PROVIDERS[provider]
    every = {**llm_config(provider), **{n: v for n, v in FIELD_SAMPLES.items() if n in spec.fields}}
    config = client.get(f"/v2/integrations/{create_llm(client, provider, config=every)['id']}").json()["config"]
    assert all(config[f.read_name] is not None for f in spec.fields.values())
    _refuses_another_type_in_each_field(validator(f"LlmConfig{provider}"), config,
                                        [f.read_name for f in spec.fields.values()])
    # published nullable exactly where a read shows null (omitted on create, with no default)
    required = {n: v for n, v in llm_config(provider).items() if n in spec.fields and spec.fields[n].required_on_create}
    if spec.needs_model_source:
        required["model_names"] = ["only"]
    minimal = create_llm(client, provider, config={"provider": provider, **required})["config"]
    for f in spec.fields.values():
        nulled = {**config, f.read_name: None}
        assert validator(f"LlmConfig{provider}").is_valid(nulled) == (minimal[f.read_name] is None), f.name
    if provider == "CLOUD_D":
        for mode, auth in AUTH_SAMPLES.items():
            read = create_llm(client, provider, config={**llm_config(provider), "auth": auth})["config"]["auth"]
            fields = AUTH_MODES[mode].fields.values()
            _refuses_another_type_in_each_field(validator(f"AwsBedrockAuth{mode}"), read, [f.read_name for f in fields])
            _refuses_another_type_in_each_field(validator("AwsBedrockAuth"), read, [f.read_name for f in fields])


def test_the_published_read_schema_of_an_agent_takes_what_a_read_shows_and_no_other_type(client: httpx.Client) -> None:
    document = client.get("/v2/openapi.json").json()
    validator = jsonschema.Draft202012Validator({**document, "$ref": "#/components/schemas/AgentConfig"})
    presets = [{"name": "p1", "description": "d", "config": {"query": "q", "top_k": 2}}]
    config = client.get(f"/v2/integrations/{create_agent(client, request_presets=presets)['id']}").json()["config"]
    _refuses_another_type_in_each_field(validator, config, [f.read_name for f in AGENT_FIELDS.values()])
    preset = config["request_presets"][0]
    for key in ("name", "description", "config"):
        assert not validator.is_valid({**config, "request_presets": [{**preset, key: _another_type(preset[key])}]}), key
