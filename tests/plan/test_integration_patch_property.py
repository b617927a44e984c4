"""Property: for random live and desired integrations of every provider, the planned PATCH, applied
by the service's merge rules (the emulator's implementation of docs/api.md), yields the desired
value of every managed field (valid), and carries no field whose live value already matches (minimal)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from reconciler.apply.resolve import request_for
from reconciler.emulator.app import create_app
from reconciler.emulator.core import Emulator, EmulatorSettings
from reconciler.model import DesiredResource, LiveIntegration, LiveState, ManifestSet, SecretRef
from reconciler.plan.context import parse_secret_spec
from reconciler.plan.model import PlanOptions
from reconciler.plan.planner import make_plan
from reconciler.providers import AUTH_MODES, PROVIDERS, FieldKind, has_model_source

URLS = ["https://a.example/v1", "https://b.example/v2", "https://c.example"]
MODELS = ["m-small", "m-large", "m-code"]
HEADERS = ["X-A", "X-B", "X-Tenant"]
TEXT = ["alpha", "beta", "gamma"]
counter = itertools.count()


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    emu = Emulator(EmulatorSettings())
    with TestClient(create_app(emu), headers={"Authorization": "Bearer admin-key"}) as c:
        yield c


@pytest.fixture(autouse=True)
def secrets_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("K1", "K2", "H1", "H2"):
        monkeypatch.setenv(name, f"value-of-{name}")


def secret() -> st.SearchStrategy[SecretRef]:
    return st.sampled_from([SecretRef("env", "K1"), SecretRef("env", "K2")])


def header_map() -> st.SearchStrategy[dict[str, SecretRef]]:
    return st.dictionaries(st.sampled_from(HEADERS), st.sampled_from([SecretRef("env", "H1"), SecretRef("env", "H2")]),
                           max_size=3)


@st.composite
def auth(draw: st.DrawFn) -> dict[str, Any]:
    mode = AUTH_MODES[draw(st.sampled_from(sorted(AUTH_MODES)))]
    out: dict[str, Any] = {"auth_type": mode.auth_type}
    for f in mode.fields.values():
        if not f.required_on_create and draw(st.booleans()):
            continue
        if f.kind is FieldKind.SECRET:
            out[f.name] = draw(secret())
        elif f.kind is FieldKind.HEADERS:
            out[f.name] = draw(header_map())
        else:
            out[f.name] = draw(st.sampled_from(URLS if f.name == "base_url" else TEXT))
    return out


def value_for(draw: st.DrawFn, f: Any, creating: bool) -> Any:
    if f.nullable and not creating and draw(st.integers(0, 4)) == 0:
        return None
    if f.kind is FieldKind.BOOL:
        return draw(st.booleans())
    if f.kind is FieldKind.STRING:
        return draw(st.sampled_from(URLS if "url" in f.name else TEXT))
    if f.kind is FieldKind.STRING_LIST:
        return draw(st.lists(st.sampled_from(MODELS), unique=True, max_size=3))
    if f.kind is FieldKind.SECRET:
        return draw(secret())
    if f.kind is FieldKind.HEADERS:
        return draw(header_map())
    if f.kind is FieldKind.AUTH:
        return draw(auth())
    raise AssertionError(f.kind)


@st.composite
def config(draw: st.DrawFn, provider: str, creating: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"provider": provider}
    for f in PROVIDERS[provider].fields.values():
        if (creating and f.required_on_create) or draw(st.booleans()):
            out[f.name] = value_for(draw, f, creating)
    return out


def effective_after(live_cfg: dict[str, Any], desired: dict[str, Any]) -> dict[str, Any]:
    return {**live_cfg, **{k: v for k, v in desired.items() if k in ("is_default_models_enabled", "model_names")}}


def resolve(value: Any) -> Any:
    if isinstance(value, SecretRef):
        return value.resolve()
    if isinstance(value, dict):
        return {k: resolve(v) for k, v in value.items()}
    return value


def managed_view(field: Any, value: Any) -> Any:
    """What the read shape shows of a desired value."""
    if field.kind is FieldKind.SECRET:
        return value is not None
    if field.kind is FieldKind.HEADERS:
        return sorted((value or {}).keys())
    return value


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])
@given(data=st.data())
def test_planned_patch_is_valid_and_minimal(client: TestClient, provider: str, data: st.DataObject) -> None:
    create_cfg = data.draw(config(provider, creating=True))
    name = f"{provider.lower()}-{next(counter)}"
    created = client.post("/v2/integrations", json={"type": "LLM", "name": name, "config": resolve(create_cfg)})
    assume(created.status_code == 201)  # random create configs may lack a model source
    live = created.json()
    desired_cfg = data.draw(config(provider, creating=False))
    if PROVIDERS[provider].needs_model_source:
        assume(has_model_source(effective_after(live["config"], desired_cfg)))
    desired = DesiredResource(kind="Integration", name=name, spec={"type": "LLM", "config": desired_cfg})
    state = LiveState(integrations={("LLM", name): LiveIntegration.read(live)})
    plan = make_plan(ManifestSet((desired,)), state, PlanOptions())
    for op in plan.operations:
        assert op.method == "PATCH"
        sent = op.body.get("config", {})
        for key in sent:  # minimal: nothing already equal live is sent
            f = PROVIDERS[provider].fields[key]
            if f.kind is FieldKind.AUTH:
                continue  # auth is sent whole when any part differs
            if f.kind is FieldKind.SECRET:
                assert (desired_cfg[key] is None) == bool(live["config"][f.read_name]), key
            elif f.kind is FieldKind.HEADERS:  # sent only when the header names differ (no --rotate here)
                assert managed_view(f, desired_cfg[key]) != sorted(live["config"].get(f.read_name) or []), key
            else:
                assert managed_view(f, desired_cfg[key]) != live["config"].get(f.read_name), key
        path, body = request_for(op, {}, "now")
        answer = client.patch(path, json=body)
        assert answer.status_code == 200, answer.text
        live = answer.json()
    # valid: every managed field now reads back as desired, so a new plan is empty
    replan = make_plan(ManifestSet((desired,)), LiveState(integrations={("LLM", name): LiveIntegration.read(live)}), PlanOptions())
    assert replan.empty, [(c.path, c.before, c.after) for op in replan.operations for c in op.changes]
    for key, value in desired_cfg.items():
        if key == "provider" or PROVIDERS[provider].fields[key].kind is FieldKind.AUTH:
            continue
        f = PROVIDERS[provider].fields[key]
        got = live["config"].get(f.read_name)
        want = managed_view(f, value)
        as_set = isinstance(got, list) and f.kind in (FieldKind.HEADERS, FieldKind.STRING_LIST)  # names, models
        assert (sorted(got) if as_set else got) == (sorted(want) if as_set else want), key


def test_secret_specs_round_trip() -> None:
    assert parse_secret_spec("env:K1") == SecretRef("env", "K1")


SCHEMAS = [
    {"type": "object", "properties": {"question": {"type": "string"}, "temperature": {"type": "number"}},
     "required": ["question"]},
    {"type": "object", "properties": {"question": {"type": "string"}, "temperature": {"type": "number"},
                                      "top_p": {"type": "number"}}},
]
PRESETS = [{"name": "cold", "config": {"temperature": 0}}, {"name": "warm", "description": "w", "config": {"temperature": 0.7}},
           {"name": "hot", "description": None, "config": {"temperature": 1.2, "question": "hi"}}]


@st.composite
def agent_config(draw: st.DrawFn, creating: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if creating or draw(st.booleans()):
        out["endpoint"] = draw(st.sampled_from(URLS))
    if creating or draw(st.booleans()):
        out["input_schema"] = draw(st.sampled_from(SCHEMAS))
    if draw(st.booleans()):
        out["headers"] = draw(header_map()) if creating or draw(st.booleans()) else None
    if draw(st.booleans()):
        out["request_presets"] = draw(st.lists(st.sampled_from(PRESETS), unique_by=lambda p: p["name"], max_size=3))
    return out


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_planned_agent_patch_is_valid_and_minimal(client: TestClient, data: st.DataObject) -> None:
    name = f"agent-{next(counter)}"
    create = {"type": "AGENT", "name": name, "config": resolve(data.draw(agent_config(creating=True)))}
    if data.draw(st.booleans()):
        create["description"] = data.draw(st.sampled_from(TEXT))
    created = client.post("/v2/integrations", json=create)
    assert created.status_code == 201, created.text
    live = created.json()
    spec: dict[str, Any] = {"type": "AGENT", "config": data.draw(agent_config(creating=False))}
    if data.draw(st.booleans()):
        spec["description"] = data.draw(st.sampled_from([*TEXT, None]))
    desired = DesiredResource(kind="Integration", name=name, spec=spec)
    plan = make_plan(ManifestSet((desired,)), LiveState(integrations={("AGENT", name): LiveIntegration.read(live)}), PlanOptions())
    for op in plan.operations:
        sent = op.body.get("config", {})
        for key in ("endpoint", "input_schema"):  # minimal: nothing already equal is sent
            assert key not in sent or sent[key] != live["config"][key], key
        if "description" in op.body:
            assert op.body["description"] != live.get("description")
        if "headers" in sent:
            assert (sent["headers"] is None) == live["config"]["has_headers"]
        path, body = request_for(op, {}, "now")
        answer = client.patch(path, json=body)
        assert answer.status_code == 200, answer.text
        live = answer.json()
    replan = make_plan(ManifestSet((desired,)), LiveState(integrations={("AGENT", name): LiveIntegration.read(live)}), PlanOptions())
    assert replan.empty, [(c.path, c.before, c.after) for op in replan.operations for c in op.changes]
