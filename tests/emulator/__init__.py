"""Helpers shared by the emulator's tests: valid integration bodies per provider (with canary
secrets that must never come back), a sample value per config field, and problem assertions."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import httpx

from reconciler.emulator.core import DEFAULT_ERRORS_URL, OTHER_TITLES, PROBLEM_TITLES
from reconciler.providers import PROVIDERS

CANARY = "canary-secret-7f3a9"

_LLM_CREATE: dict[str, dict[str, Any]] = {
    "VENDOR_A": {"api_key": f"{CANARY}-a"},
    "VENDOR_B": {"api_key": f"{CANARY}-b", "base_url": "https://vendor-b.example/v1"},
    "VENDOR_C": {"api_key": f"{CANARY}-c"},
    "CLOUD_D": {"auth": {"auth_type": "BEARER_TOKEN", "api_key": f"{CANARY}-d"}, "model_names": ["d-model"]},
    "CUSTOM": {"base_url": "https://llm.example/v1", "api_key": f"{CANARY}-e",
               "headers": {"X-Team": f"{CANARY}-h"}, "model_names": ["m1"]},
    "CLOUD_E": {"project_id": "proj-1", "location": "us-central1", "project_access_label": "label-1"},
    "NIM_F": {"model_names": ["llama"], "headers": {"X-Nim": f"{CANARY}-n"}},
}
assert set(_LLM_CREATE) == set(PROVIDERS), "a sample create config is needed for every provider"

#: A valid value for every UpdateLlmConfig field (for the provider it applies to).
FIELD_SAMPLES: dict[str, Any] = {
    "api_key": f"{CANARY}-rotated",
    "is_function_calling_enabled": False,
    "auth": {"auth_type": "DEFAULT", "role_arn": "arn:aws:iam::123456789012:role/reader"},
    "base_url": "https://other.example/v2",
    "headers": {"X-Other": f"{CANARY}-o"},
    "is_default_models_enabled": True,
    "model_names": ["m2", "m3"],
    "project_id": "proj-2",
    "location": "europe-west4",
    "project_access_label": "label-2",
}

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "top_k": {"type": "integer", "minimum": 1},
                   "options": {"type": "object", "properties": {"lang": {"type": "string"}},
                               "required": ["lang"]}},
    "required": ["query", "top_k"],
    "additionalProperties": False,
}

_names = itertools.count(1)


def unique(prefix: str = "it") -> str:
    return f"{prefix}-{next(_names)}"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def llm_config(provider: str, **overrides: Any) -> dict[str, Any]:
    return {"provider": provider, **copy.deepcopy(_LLM_CREATE[provider]), **overrides}


def agent_config(**overrides: Any) -> dict[str, Any]:
    return {"endpoint": "https://agent.example.com/replay", "input_schema": copy.deepcopy(INPUT_SCHEMA),
            "headers": {"X-Agent": f"{CANARY}-g"}, **overrides}


def create_llm(client: httpx.Client, provider: str, **overrides: Any) -> dict[str, Any]:
    r = client.post("/v2/integrations", json={"type": "LLM", "name": unique(provider.lower()),
                                              "config": llm_config(provider), **overrides})
    assert r.status_code == 201, r.text
    return dict(r.json())


def create_agent(client: httpx.Client, *, name: str | None = None, **config: Any) -> dict[str, Any]:
    r = client.post("/v2/integrations", json={"type": "AGENT", "name": name or unique("agent"),
                                              "config": agent_config(**config)})
    assert r.status_code == 201, r.text
    return dict(r.json())


def assert_problem(response: httpx.Response, status: int, errors_url: str = DEFAULT_ERRORS_URL) -> dict[str, Any]:
    """The response is an application/problem+json of this status with the spec's title and type."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = dict(response.json())
    assert body["status"] == status
    if status in PROBLEM_TITLES:
        title, slug = PROBLEM_TITLES[status]
        assert body["title"] == title
        assert body["type"] == f"{errors_url}#{slug}"
    else:  # a status docs/api.md, "Errors" gives no problem type: none is made up
        assert body["title"] == OTHER_TITLES[status] and "type" not in body
    return body
