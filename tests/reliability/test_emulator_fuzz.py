"""The emulator never answers 5xx to what a client sends: malformed bodies, over-long values, odd
encodings, odd paths and queries. Four sources of input:

- the corpus in ``fuzz/bodies/`` (raw bodies: broken JSON, non-JSON numbers, bad escapes, every
  wrong encoding), sent to every write operation with several content types;
- mutations of a valid body of every write operation: each field in turn replaced by each value of
  ``MUTANTS`` (wrong types, over-long strings and lists, odd Unicode, extra properties) or removed;
- odd path ids and query values on every route, and a few raw HTTP requests over a socket;
- schemathesis in negative mode (bodies, paths and queries that break the OpenAPI document).

Every answer must be below 500, and every error a problem+json body. In-process, so it is fast.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import hypothesis
import pytest
import schemathesis
from schemathesis import Case, GenerationMode, checks
from starlette.testclient import TestClient

from reconciler.emulator.app import create_app
from reconciler.emulator.core import Emulator, EmulatorSettings
from tests.reliability.harness import serve

CORPUS = sorted((Path(__file__).parent / "fuzz" / "bodies").glob("*.bin"))
CONTENT_TYPES = ["application/json", "application/json; charset=latin-1", "text/plain", None]
SENTINEL = "__FUZZ_VALUE__"
#: raw JSON texts put in place of a field's value
MUTANTS = [
    "null", "true", "0", "-1", "9223372036854775808", "1e308", "-0.0", "0.5", '""', '" "',
    json.dumps("x" * 100_000), json.dumps(["x"] * 10_000), json.dumps({f"k{i}": i for i in range(2_000)}),
    "[" * 60 + "]" * 60, '{"unexpected": {"deeper": [1]}}', '"\\u0000"', json.dumps("\U0001F600\u202e" * 500),
    '"../../etc/passwd"', '"%00%ff"', json.dumps("' OR 1=1 --"), '["a", "a"]', "[null]", "[{}]",
]
#: values that once made the emulator answer 500 (each has its own test at the end)
KNOWN_500 = ['"\\ud800"', "[" * 5_000 + "]" * 5_000]
ODD_IDS = ["%00", "%ff%fe", "x" * 5_000, "..%2f..%2fv2", "%F0%9F%98%80", "'%20OR%201=1--", "%20", "null", "-1"]
ODD_QUERIES = [
    {"limit": v} for v in ("0", "-1", "101", "1e3", "abc", "", "9" * 100, "1.5")
] + [
    {"cursor": v} for v in ("\x00", "x" * 5_000, "!!!", "eyJ4IjoxfQ", "%ff")
] + [
    {"name": v} for v in ("\x00", "%", "_", "x" * 5_000, "\U0001F600")
] + [{"type": "NOPE"}, {"space_id": "nope"}, {"resource_type": "prompt"}, {"label": "\x00"}, {"dataset_id": "x"}]


@pytest.fixture(scope="module")
def emulator() -> Iterator[tuple[TestClient, dict[str, str]]]:
    emu = Emulator(EmulatorSettings())
    with TestClient(create_app(emu), headers={"Authorization": "Bearer admin-key"},
                    raise_server_exceptions=False) as client:
        yield client, seed(client)
    emu.store.close()


def _ok(response: Any) -> dict[str, Any]:
    assert response.status_code < 300, response.text
    body: dict[str, Any] = response.json()
    return body


def seed(c: TestClient) -> dict[str, str]:
    """One of each resource, so that every route with an id has a real one to be fuzzed with."""
    ids: dict[str, str] = {"space_id": c.get("/v2/spaces").json()["spaces"][0]["id"]}
    for name in SEED_ORDER:
        method, path, body = templates(ids)[name]
        created = _ok(c.request(method, path.format(**ids), json=body))
        ids.update(SEED_ORDER[name](c, created, ids))
    return ids


def _examples(c: TestClient, created: dict[str, Any], ids: dict[str, str]) -> dict[str, str]:
    examples = c.get(f"/v2/datasets/{created['id']}/examples").json()["examples"]
    versions = created.get("versions") or [{}]
    return {"dataset_id": created["id"], "example_id": examples[0]["id"],
            "dataset_version_id": str(versions[-1].get("id", ""))}


SEED_ORDER: dict[str, Callable[[TestClient, dict[str, Any], dict[str, str]], dict[str, str]]] = {
    "create LLM integration": lambda c, r, ids: {"integration_id": r["id"]},
    "create AGENT integration": lambda c, r, ids: {"agent_id": r["id"]},
    "create prompt": lambda c, r, ids: {"prompt_id": r["id"], "version_id": r["version"]["id"]},
    "create dataset": _examples,
    "create evaluator": lambda c, r, ids: {"evaluator_id": r["id"]},
    "create experiment": lambda c, r, ids: {"experiment_id": r["id"]},
}


def templates(ids: dict[str, str]) -> dict[str, tuple[str, str, Any]]:
    """A valid body of every write operation: (method, path template, body)."""
    space = ids.get("space_id", "")
    llm = ids.get("integration_id", "")
    template_config = {
        "name": "judge", "template": "Is {{output}} right?", "include_explanations": True,
        "use_function_calling_if_available": True, "classification_choices": {"yes": 1, "no": 0},
        "direction": "maximize", "data_granularity": "span",
        "llm_config": {"ai_integration_id": llm, "model_name": "m", "invocation_parameters": {"t": 0},
                       "provider_parameters": {}},
    }
    version = {"commit_message": "c", "provider": "VENDOR_A", "model": "m", "input_variable_format": "f_string",
               "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "{x}"}],
               "invocation_params": {"temperature": 0.1}, "provider_params": {}}
    return {
        "create LLM integration": ("POST", "/v2/integrations", {
            "type": "LLM", "name": "fuzz-llm", "scopings": [],
            "config": {"provider": "CUSTOM", "base_url": "https://llm.example.com/v1", "api_key": "k",
                       "headers": {"X-A": "v"}, "is_function_calling_enabled": True,
                       "is_default_models_enabled": False, "model_names": ["m"]}}),
        "create AGENT integration": ("POST", "/v2/integrations", {
            "type": "AGENT", "name": "fuzz-agent", "description": "d", "scopings": [],
            "config": {"endpoint": "https://agent.example.com/run", "headers": {"X-T": "v"},
                       "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
                       "request_presets": [{"name": "p", "description": "d", "config": {"q": "a"}}]}}),
        "update LLM integration": ("PATCH", "/v2/integrations/{integration_id}", {
            "type": "LLM", "name": "fuzz-llm-2", "scopings": [],
            "config": {"provider": "CUSTOM", "base_url": "https://llm.example.com/v2", "api_key": None,
                       "headers": {"X-B": "w"}, "model_names": ["m", "n"], "is_default_models_enabled": True}}),
        "update AGENT integration": ("PATCH", "/v2/integrations/{agent_id}", {
            "type": "AGENT", "description": None,
            "config": {"endpoint": "https://agent.example.com/v2", "headers": None,
                       "request_presets": [{"name": "p", "config": {"q": "b"}}]}}),
        "create prompt": ("POST", "/v2/prompts", {"space_id": space, "name": "fuzz-prompt", "description": "d",
                                                  "version": version}),
        "update prompt": ("PATCH", "/v2/prompts/{prompt_id}", {"description": "new"}),
        "create prompt version": ("POST", "/v2/prompts/{prompt_id}/versions", version),
        "move labels": ("PUT", "/v2/prompt-versions/{version_id}/labels", {"labels": ["production", "x"]}),
        "create dataset": ("POST", "/v2/datasets", {"name": "fuzz-ds", "space_id": space,
                                                    "examples": [{"q": "a", "n": 1}, {"q": "b", "n": 2}]}),
        "rename dataset": ("PATCH", "/v2/datasets/{dataset_id}", {"name": "fuzz-ds-2"}),
        "append examples": ("POST", "/v2/datasets/{dataset_id}/examples", {"examples": [{"q": "c"}]}),
        "update examples": ("PATCH", "/v2/datasets/{dataset_id}/examples", {
            "examples": [{"id": ids.get("example_id", ""), "q": "z"}], "new_version": "v2"}),
        "delete examples": ("DELETE", "/v2/datasets/{dataset_id}/examples", {
            "dataset_version_id": ids.get("dataset_version_id", ""), "example_ids": ["nope"]}),
        "create evaluator": ("POST", "/v2/evaluators", {
            "space_id": space, "name": "fuzz-eval", "type": "template", "description": "d",
            "version": {"commit_message": "c", "template_config": template_config}}),
        "update evaluator": ("PATCH", "/v2/evaluators/{evaluator_id}", {"name": "fuzz-eval-2", "description": None}),
        "create evaluator version": ("POST", "/v2/evaluators/{evaluator_id}/versions", {
            "commit_message": "c2", "template_config": template_config}),
        "create experiment": ("POST", "/v2/experiments", {
            "name": "fuzz-exp", "dataset_id": ids.get("dataset_id", ""),
            "experiment_runs": [{"example_id": ids.get("example_id", ""), "output": "o"}]}),
        "restrict": ("POST", "/v2/resource-restrictions", {"resource_id": "RGFzaGJvYXJkOjk5", "resource_type": "DASHBOARD"}),
        "create space": ("POST", "/v2/spaces", {"name": "fuzz-space", "description": "d"}),
    }


def assert_handled(response: Any, what: str) -> None:
    assert response.status_code < 500, f"{what}: {response.status_code} {response.text[:300]}"
    if response.status_code >= 400:
        assert response.headers["content-type"].startswith("application/problem+json"), what
        problem = response.json()
        assert problem["status"] == response.status_code and isinstance(problem["title"], str), what


def _body_routes(ids: dict[str, str]) -> list[tuple[str, str]]:
    return sorted({(m, p.format(**ids)) for m, p, _ in templates(ids).values()})


@pytest.mark.parametrize("corpus_file", [
    pytest.param(p, id=p.stem) for p in CORPUS])
def test_every_write_operation_refuses_a_malformed_body_without_a_5xx(
        corpus_file: Path, emulator: tuple[TestClient, dict[str, str]]) -> None:
    client, ids = emulator
    body = corpus_file.read_bytes()
    for method, path in _body_routes(ids):
        for content_type in CONTENT_TYPES:
            headers = {"Content-Type": content_type} if content_type else {}
            response = client.request(method, path, content=body, headers=headers)
            assert_handled(response, f"{corpus_file.name} {method} {path} ({content_type})")


def paths(body: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every field path of a JSON value (dict keys; list index 0), depth first."""
    if isinstance(body, dict):
        for key, value in body.items():
            yield (*prefix, key)
            yield from paths(value, (*prefix, key))
    elif isinstance(body, list) and body:
        yield (*prefix, 0)
        yield from paths(body[0], (*prefix, 0))


def mutated(body: Any, path: tuple[Any, ...], raw: str | None) -> bytes:
    """``body`` with the value at ``path`` replaced by the raw JSON text ``raw`` (None: removed)."""
    copy = json.loads(json.dumps(body))
    parent = copy
    for step in path[:-1]:
        parent = parent[step]
    if raw is None:
        del parent[path[-1]]
        return json.dumps(copy).encode()
    parent[path[-1]] = SENTINEL
    return json.dumps(copy).replace(json.dumps(SENTINEL), raw, 1).encode("utf-8", "surrogatepass")


@pytest.mark.parametrize("operation", sorted(templates({})), ids=sorted(templates({})))
def test_every_field_of_every_write_operation_survives_wrong_and_over_long_values(
        operation: str, emulator: tuple[TestClient, dict[str, str]]) -> None:
    client, ids = emulator
    method, path, body = templates(ids)[operation]
    sent = 0
    for field_path in paths(body):
        for raw in [*MUTANTS, None]:
            response = client.request(method, path.format(**ids), content=mutated(body, field_path, raw),
                                      headers={"Content-Type": "application/json"})
            assert_handled(response, f"{operation}: {'.'.join(map(str, field_path))} = {str(raw)[:40]}")
            sent += 1
    assert sent >= len(MUTANTS)


def test_odd_ids_and_query_values_on_every_route_get_no_5xx(emulator: tuple[TestClient, dict[str, str]]) -> None:
    client, ids = emulator
    doc = client.get("/v2/openapi.json").json()
    for template, operations in doc["paths"].items():
        for method in (m for m in operations if m != "parameters"):
            for odd in ODD_IDS:
                path = template
                for name in [p.split("}")[0] for p in template.split("{")[1:]]:
                    path = path.replace("{" + name + "}", odd)
                if path != template:
                    response = client.request(method.upper(), path, content=b"{}" if method != "get" else None)
                    assert_handled(response, f"{method.upper()} {path[:80]}")
            if method == "get":
                for query in ODD_QUERIES:
                    real = template.format(**{k: ids.get(k, "x") for k in ("dataset_id", "evaluator_id",
                                                                           "experiment_id", "integration_id",
                                                                           "prompt_id", "space_id")})
                    assert_handled(client.get(real, params=query), f"GET {real} {str(query)[:60]}")


RAW_REQUESTS = [
    b"GET /v2/integrations/%FF%FE HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer admin-key\r\n\r\n",
    b"GET /v2/integrations?limit=%FF HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer admin-key\r\n\r\n",
    b"GET /v2/integrations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer caf\xe9\r\n\r\n",
    b"GET /v2/integrations HTTP/1.1\r\nHost: x\r\nAuthorization: \xff\xfe\r\n\r\n",
    b"POST /v2/prompts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer admin-key\r\nContent-Type: application/json"
    b"\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}",
    b"POST /v2/prompts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer admin-key\r\nTransfer-Encoding: chunked"
    b"\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    b"POST /v2/datasets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer admin-key\r\nContent-Type: application/json"
    b"; charset=utf-16\r\nContent-Length: 6\r\n\r\n\xff\xfe{\x00}\x00",
]


def test_raw_http_with_odd_bytes_in_paths_headers_and_framing_gets_no_5xx() -> None:
    with serve() as served:
        port = int(served.url.rsplit(":", 1)[1])
        for raw in RAW_REQUESTS:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(raw)
                status_line = sock.recv(4096).split(b"\r\n", 1)[0]
            status = int(status_line.split()[1])
            assert status < 500, (raw[:80], status_line)


# ---------------------------------------------------------------- schemathesis, negative mode

_EMULATOR = Emulator(EmulatorSettings())
schema = schemathesis.openapi.from_asgi("/v2/openapi.json", create_app(_EMULATOR))
schema.config.update(headers={"Authorization": "Bearer admin-key"})
schema.config.generation.update(modes=[GenerationMode.NEGATIVE], max_examples=8, deterministic=True,
                                database="none", allow_x00=True)


@schema.parametrize()
@hypothesis.settings(max_examples=8, deadline=None, derandomize=True, database=None,
                     suppress_health_check=list(hypothesis.HealthCheck))
def test_requests_that_break_the_openapi_document_never_get_a_5xx(case: Case[Any]) -> None:
    case.call_and_validate(checks=[checks.not_a_server_error])


# ---------------------------------------------------------------- defects this suite found (fixed)


def test_a_deeply_nested_body_is_a_400(emulator: tuple[TestClient, dict[str, str]]) -> None:
    client, ids = emulator
    failures = [(m, p) for m, p in _body_routes(ids)
                if client.request(m, p, content=KNOWN_500[1].encode()).status_code >= 500]
    assert failures == []


def test_a_lone_surrogate_in_any_field_is_refused_without_a_5xx(emulator: tuple[TestClient, dict[str, str]]) -> None:
    client, ids = emulator
    failures = []
    for operation, (method, path, body) in templates(ids).items():
        for field_path in paths(body):
            response = client.request(method, path.format(**ids), content=mutated(body, field_path, KNOWN_500[0]),
                                      headers={"Content-Type": "application/json"})
            if response.status_code >= 500:
                failures.append(f"{operation}: {'.'.join(map(str, field_path))}")
    assert failures == []
