"""The emulator's front door: authentication on every /v2 route, 403 for writes by non-admins,
and problem+json for every error (unknown route, wrong method, crash), over a real socket and
in-process; plus the OpenAPI document, which needs no key."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from reconciler.emulator.app import create_app
from reconciler.emulator.core import Emulator, EmulatorSettings

from . import assert_problem, bearer, create_llm, llm_config, unique

READER = "reader-key"
SPACE_KEY = "space-key-default"
FAKE_ID = "SW50ZWdyYXRpb246OTk5OmFiYw"

ROUTES = [
    ("GET", "/v2/integrations"), ("POST", "/v2/integrations"), ("GET", f"/v2/integrations/{FAKE_ID}"),
    ("PATCH", f"/v2/integrations/{FAKE_ID}"), ("DELETE", f"/v2/integrations/{FAKE_ID}"),
    ("GET", "/v2/spaces"), ("POST", "/v2/spaces"), ("GET", f"/v2/spaces/{FAKE_ID}"), ("GET", "/v2/organizations"),
    ("GET", "/v2/prompts"), ("POST", "/v2/prompts"), ("GET", "/v2/datasets"), ("GET", "/v2/evaluators"),
    ("DELETE", f"/v2/experiments/{FAKE_ID}"), ("GET", "/v2/resource-restrictions"),
    ("GET", "/v2/no-such-thing"), ("PUT", "/v2/integrations"),
]
WRITES = [(m, p) for m, p in ROUTES if m in ("POST", "PATCH", "DELETE", "PUT") and "restriction" not in p]


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize("authorization", [None, "", "Bearer", "Bearer wrong-key", "Basic YWRtaW46YWRtaW4="],
                         ids=["no-header", "empty", "no-token", "wrong-key", "basic"])
def test_every_v2_route_needs_a_valid_bearer_key(
    client: httpx.Client, method: str, path: str, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization is not None else {}
    request = client.build_request(method, path, json={"type": "LLM", "name": "x"}, headers=headers)
    if authorization is None:
        del request.headers["Authorization"]
    assert_problem(client.send(request), 401)


@pytest.mark.parametrize(("method", "path"), WRITES)
def test_a_reader_key_cannot_write_anywhere(client: httpx.Client, method: str, path: str) -> None:
    r = client.request(method, path, json={"type": "LLM", "name": "x"}, headers=bearer(READER))
    assert_problem(r, 403)


def test_a_reader_may_read(client: httpx.Client) -> None:
    created = create_llm(client, "VENDOR_A")
    r = client.get(f"/v2/integrations/{created['id']}", headers=bearer(READER))
    assert r.status_code == 200 and r.json() == created
    assert client.get("/v2/spaces", headers=bearer(READER)).status_code == 200


def test_a_reader_patch_is_403_before_the_body_is_looked_at(client: httpx.Client) -> None:
    created = create_llm(client, "VENDOR_A")
    r = client.patch(f"/v2/integrations/{created['id']}", content=b"not json", headers=bearer(READER))
    assert_problem(r, 403)


@pytest.fixture(params=["socket", "inproc"])
def space_keyed(
    request: pytest.FixtureRequest, emulator_factory: Callable[..., tuple[str, Emulator]]
) -> Iterator[httpx.Client]:
    """An emulator with a space key for ``default``, and an admin client to it."""
    settings = EmulatorSettings(space_keys={SPACE_KEY: "default"})
    if request.param == "socket":
        url, _ = emulator_factory(space_keys=settings.space_keys)
        with httpx.Client(base_url=url, headers=bearer("admin-key"), timeout=10) as c:
            yield c
        return
    emu = Emulator(settings)
    with TestClient(create_app(emu), base_url="http://testserver", headers=bearer("admin-key")) as c:
        yield c
    emu.store.close()


def test_a_space_key_reads_but_cannot_write_integrations_or_spaces(space_keyed: httpx.Client) -> None:
    assert space_keyed.get("/v2/integrations", headers=bearer(SPACE_KEY)).status_code == 200
    body = {"type": "LLM", "name": unique(), "config": llm_config("VENDOR_A")}
    assert_problem(space_keyed.post("/v2/integrations", json=body, headers=bearer(SPACE_KEY)), 403)
    assert_problem(space_keyed.post("/v2/spaces", json={"name": unique()}, headers=bearer(SPACE_KEY)), 403)


def test_an_unknown_route_is_a_404_problem_for_a_known_key(client: httpx.Client) -> None:
    assert_problem(client.get("/v2/no-such-thing"), 404)
    assert_problem(client.get("/elsewhere"), 404)


def test_a_wrong_method_is_a_405_problem_with_allow(client: httpx.Client) -> None:
    r = client.put("/v2/integrations", json={})
    assert_problem(r, 405)
    assert "GET" in r.headers["allow"] and "POST" in r.headers["allow"]


@pytest.mark.parametrize("request_args", [
    ("POST", "/v2/integrations", {"content": b"{", "headers": {"content-type": "application/json"}}),
    ("POST", "/v2/integrations", {"json": {"type": "LLM"}}),
    ("GET", "/v2/integrations", {"params": {"limit": "0"}}),
    ("GET", f"/v2/integrations/{FAKE_ID}", {}),
    ("PATCH", f"/v2/integrations/{FAKE_ID}", {"json": {"type": "LLM", "name": "x"}}),
    ("GET", f"/v2/spaces/{FAKE_ID}", {}),
    ("POST", "/v2/spaces", {"json": {"name": "default"}}),
    ("GET", "/v2/spaces", {"params": {"cursor": "x"}}),
], ids=["malformed-json", "missing-fields", "bad-limit", "unknown-integration", "patch-unknown",
        "unknown-space", "duplicate-space", "bad-cursor"])
def test_every_error_is_problem_json_with_title_status_and_type(
    client: httpx.Client, request_args: tuple[str, str, dict[str, Any]]
) -> None:
    method, path, kwargs = request_args
    r = client.request(method, path, **kwargs)
    expected = {"/v2/spaces": 409 if method == "POST" else 400}.get(path, 404 if FAKE_ID in path else 400)
    assert r.status_code == expected, r.text  # malformed or invalid 400, unknown 404, duplicate 409
    body = assert_problem(r, r.status_code)
    assert set(body) <= {"title", "status", "type", "detail", "instance"}


def test_an_unexpected_exception_is_a_500_problem_not_a_traceback(
    client: httpx.Client, shared_server: tuple[str, Emulator], shared_clients: dict[str, httpx.Client],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    emulators = [shared_server[1], shared_clients["inproc"].app.state.emulator]  # type: ignore[attr-defined]

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("disk on fire")

    for emu in emulators:
        monkeypatch.setattr(emu.store, "get", broken)
    r = client.get(f"/v2/integrations/{FAKE_ID}")
    body = assert_problem(r, 500)
    assert "disk on fire" not in r.text and "Traceback" not in r.text
    assert "type" not in body  # section 7 has no problem type for 500


def test_the_problem_type_uses_the_configured_errors_url(
    emulator_factory: Callable[..., tuple[str, Emulator]]
) -> None:
    url, _ = emulator_factory(errors_url="https://errors.example.test/api")
    with httpx.Client(base_url=url, timeout=10) as anonymous:
        assert_problem(anonymous.get("/v2/integrations"), 401, errors_url="https://errors.example.test/api")


def test_the_openapi_document_needs_no_key_and_describes_what_is_served(client: httpx.Client) -> None:
    r = client.get("/v2/openapi.json", headers={"Authorization": ""})
    assert r.status_code == 200
    document = r.json()
    assert document["openapi"].startswith("3.")
    assert document["components"]["securitySchemes"]["bearer"] == {
        "type": "http", "scheme": "bearer", "description": "Authorization: Bearer <API_KEY>"}
    paths = document["paths"]
    assert set(paths["/v2/integrations"]) == {"get", "post"}
    assert set(paths["/v2/integrations/{integration_id}"]) == {"get", "patch", "delete"}
    assert set(paths["/v2/spaces"]) == {"get", "post"}
    assert "/v2/organizations" in paths and "/v2/spaces/{space_id}" in paths
    patch = paths["/v2/integrations/{integration_id}"]["patch"]
    assert {"200", "400", "401", "403", "404", "409", "422", "429"} <= set(patch["responses"])
    problem = document["components"]["responses"]["UnprocessableEntity"]["content"]
    assert list(problem) == ["application/problem+json"]
    schemas = document["components"]["schemas"]
    assert schemas["UpdateLlmConfig"]["additionalProperties"] is False
    assert schemas["IntegrationScoping"]["additionalProperties"] is False
    assert schemas["CreateAwsBedrockAuthDEFAULT"]["additionalProperties"] is False
