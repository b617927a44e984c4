"""Pull and the planner compare an integration the same way: for random live and desired
integrations of every provider (and AGENT ones), the manifest as pull would write it
(``registry.resource_diff``'s edits applied) plans no change but what pull says it cannot write
(write-only secrets and headers, an auth whose secrets cannot be read: its notes).

The same one field at a time, for every field of the provider table (each provider's, the AGENT's,
the CLOUD_D auth in each of its modes): with a random declared value and a random live one, the
value pull writes leaves the planner nothing to change in that field, and a field the planner
would change is never left silently (pull writes it or notes why it cannot)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from reconciler.fieldkinds import ABSENT, Verdict
from reconciler.model import DesiredResource, LiveIntegration, LiveState, ManifestSet
from reconciler.plan.liveview import FieldEdit
from reconciler.plan.model import PlanOptions
from reconciler.plan.planner import make_plan
from reconciler.plan.registry import resource_diff
from reconciler.providers import AGENT_FIELDS, AUTH_MODES, PROVIDERS, ConfigField, FieldKind, has_model_source

from .test_integration_patch_property import (  # the same draws as the planner's own property
    HEADERS,
    MODELS,
    PRESETS,
    SCHEMAS,
    TEXT,
    URLS,
    agent_config,
    auth,
    client,
    config,
    counter,
    effective_after,
    resolve,
    secrets_in_env,
    value_for,
)

__all__ = ["client", "secrets_in_env"]  # fixtures, used by name


def pulled(spec: dict[str, Any], edits: list[Any]) -> dict[str, Any]:
    """``spec`` with each edit's live value written at its dotted path (``ABSENT``: the key removed)."""
    out = copy.deepcopy(spec)
    for edit in edits:
        *parents, last = edit.path.split(".")
        node = out
        for key in parents:
            node = node.setdefault(key, {})
        if edit.new is ABSENT:
            node.pop(last, None)
        else:
            node[last] = copy.deepcopy(edit.new)
    return out


def assert_pull_empties_the_plan(desired: DesiredResource, state: LiveState) -> None:
    diff = resource_diff(desired, state)
    after = DesiredResource(kind="Integration", name=desired.name, spec=pulled(desired.spec, diff.edits))
    replan = make_plan(ManifestSet((after,)), state, PlanOptions())
    left = sorted({c.path or "" for op in replan.operations for c in op.changes})
    assert [p for p in left if not excused(p, diff.notes)] == [], (left, diff.notes, [(e.path, e.new) for e in diff.edits])


def excused(change: str, notes: list[str]) -> bool:
    """Whether pull said it cannot write the change: a note names its path, a part of it, or (an
    auth of another type, replaced whole) the auth it is in."""
    for note in notes:
        match = re.search(r": (config\.[\w.]+) is ", note)
        if match is None:
            continue
        named = match.group(1)
        if named.endswith(".auth_type"):
            named = named.removesuffix(".auth_type")
        if change == named or change.startswith(named + ".") or named.startswith(change + "."):
            return True
    return False


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])
@given(data=st.data())
def test_the_value_pull_writes_empties_the_plan_of_an_llm_integration(
        client: TestClient, provider: str, data: st.DataObject) -> None:
    name = f"pull-{provider.lower()}-{next(counter)}"
    created = client.post("/v2/integrations", json={"type": "LLM", "name": name,
                                                    "config": resolve(data.draw(config(provider, creating=True)))})
    assume(created.status_code == 201)
    live = created.json()
    desired_cfg = data.draw(config(provider, creating=False))
    if PROVIDERS[provider].needs_model_source:
        assume(has_model_source(effective_after(live["config"], desired_cfg)))
    desired = DesiredResource(kind="Integration", name=name, spec={"type": "LLM", "config": desired_cfg})
    assert_pull_empties_the_plan(desired, LiveState(integrations={("LLM", name): LiveIntegration.read(live)}))


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_value_pull_writes_empties_the_plan_of_an_agent_integration(
        client: TestClient, data: st.DataObject) -> None:
    name = f"pull-agent-{next(counter)}"
    created = client.post("/v2/integrations", json={"type": "AGENT", "name": name,
                                                    "config": resolve(data.draw(agent_config(creating=True)))})
    assume(created.status_code == 201)
    desired = DesiredResource(kind="Integration", name=name,
                              spec={"type": "AGENT", "config": data.draw(agent_config(creating=False))})
    state = LiveState(integrations={("AGENT", name): LiveIntegration.read(created.json())})
    assert_pull_empties_the_plan(desired, state)


# ------------------------------------------------------------------ one field at a time

#: (the integration's type or provider, the field, the auth mode declared): every field of the table.
FIELD_CASES = [
    *((provider, name, None) for provider, spec in PROVIDERS.items() for name in spec.fields if name != "auth"),
    *(("CLOUD_D", "auth", mode) for mode in sorted(AUTH_MODES)),
    *(("AGENT", name, None) for name in AGENT_FIELDS),
]
MODEL_SOURCE = ("is_default_models_enabled", "model_names")


def fields_of(owner: str) -> dict[str, ConfigField]:
    return dict(AGENT_FIELDS if owner == "AGENT" else PROVIDERS[owner].fields)


@st.composite
def declared(draw: st.DrawFn, f: ConfigField, mode: str | None) -> Any:
    """A manifest value of ``f`` (an auth: one of ``mode``)."""
    if f.kind is FieldKind.AUTH:
        return draw(auth().filter(lambda a: a["auth_type"] == mode))
    if f.kind is FieldKind.OBJECT:
        return draw(st.sampled_from(SCHEMAS))
    if f.kind is FieldKind.PRESETS:
        return draw(st.lists(st.sampled_from(PRESETS), unique_by=lambda p: p["name"], max_size=3))
    if f.https:
        return draw(st.sampled_from(URLS))
    return value_for(draw, f, creating=False)


@st.composite
def stored(draw: st.DrawFn, f: ConfigField) -> Any:
    """A value of ``f`` as the service may store it (write side; read back by the kind's ``read``)."""
    if f.kind is FieldKind.AUTH:
        mode = AUTH_MODES[draw(st.sampled_from(sorted(AUTH_MODES)))]
        members = {m.name: draw(stored(m)) for m in mode.fields.values()}
        return {"auth_type": mode.auth_type, **{k: v for k, v in members.items()
                                                if v is not None or mode.fields[k].required_on_create}}
    by_kind: dict[FieldKind, st.SearchStrategy[Any]] = {
        FieldKind.BOOL: st.booleans(),
        FieldKind.STRING: st.sampled_from(URLS if "url" in f.name or f.https else TEXT),
        FieldKind.STRING_LIST: st.lists(st.sampled_from(MODELS), unique=True, max_size=3),
        FieldKind.SECRET: st.sampled_from(["value-1", "value-2"]),
        FieldKind.HEADERS: st.dictionaries(st.sampled_from(HEADERS), st.sampled_from(["v1", "v2"]), max_size=3),
        FieldKind.OBJECT: st.sampled_from(SCHEMAS),
        FieldKind.PRESETS: st.lists(st.fixed_dictionaries({
            "name": st.sampled_from([p["name"] for p in PRESETS]), "description": st.sampled_from([None, "w", "d"]),
            "config": st.sampled_from([p["config"] for p in PRESETS])}), unique_by=lambda p: p["name"], max_size=3),
    }
    value = draw(by_kind[f.kind])
    required = f.required_on_create or f.kind is FieldKind.BOOL
    return value if required or draw(st.booleans()) else None


@st.composite
def live_config(draw: st.DrawFn, owner: str, under_test: str) -> dict[str, Any]:
    """A read config of ``owner`` as the emulator reads back what it stores: a random value of the
    field under test; of a provider that needs one, a model source that the manifest declares too."""
    out: dict[str, Any] = {} if owner == "AGENT" else {"provider": owner}
    for f in fields_of(owner).values():
        value = draw(stored(f)) if f.name == under_test else _companion(f)
        out[f.read_name] = f.behaviour.read(f, value)
    return out


def _companion(f: ConfigField) -> Any:
    """The value of a field not under test, live and declared alike."""
    return {"is_default_models_enabled": True, "model_names": ["m-small"], "auth": {"auth_type": "DEFAULT", "role_arn": "arn"},
            "endpoint": URLS[0], "input_schema": SCHEMAS[1]}.get(f.name, f.default)


def manifest(owner: str, name: str, value: Any) -> dict[str, Any]:
    """An integration declaring only ``name`` (and a provider's model source, as live has it)."""
    if owner == "AGENT":
        return {"type": "AGENT", "config": {name: value}}
    cfg = {"provider": owner}
    if PROVIDERS[owner].needs_model_source:
        cfg |= {n: _companion(fields_of(owner)[n]) for n in MODEL_SOURCE if n != name}
    return {"type": "LLM", "config": {**cfg, name: value}}


def planned_changes(owner: str, name: str, spec: dict[str, Any], live_cfg: dict[str, Any]) -> tuple[list[str], bool]:
    """The paths the planner would change in ``config.NAME``, and whether it lists the field as
    unverified (write-only, present live and declared: not compared)."""
    itype = "AGENT" if owner == "AGENT" else "LLM"
    obj = LiveIntegration.read({"id": "i1", "type": itype, "name": "x", "scopings": [], "config": live_cfg})
    plan = make_plan(ManifestSet((DesiredResource(kind="Integration", name="x", spec=spec),)),
                     LiveState(integrations={(itype, "x"): obj}), PlanOptions())
    path = f"config.{name}"
    return ([c.path for op in plan.operations for c in op.changes if c.path == path or c.path.startswith(path + ".")],
            any(u.startswith(f"Integration/x: {path}") for u in plan.unverified_secrets))


@pytest.mark.parametrize(("owner", "name", "mode"), FIELD_CASES,
                         ids=[f"{o}.{n}" + (f".{m}" if m else "") for o, n, m in FIELD_CASES])
@settings(max_examples=25, deadline=None, derandomize=True)
@given(data=st.data())
def test_the_value_pull_writes_for_a_field_leaves_the_planner_nothing_to_change_in_it(
        owner: str, name: str, mode: str | None, data: st.DataObject) -> None:
    f = fields_of(owner)[name]
    want = data.draw(declared(f, mode))
    live_cfg = data.draw(live_config(owner, name))
    spec = manifest(owner, name, want)
    pulled_now = f.behaviour.pulled(f, want, live_cfg)
    planned, unverified = planned_changes(owner, name, spec, live_cfg)
    verdict = f.behaviour.compare(f, want, live_cfg)
    assert (bool(planned), unverified) == (verdict is Verdict.DIFFERS, verdict is Verdict.HIDDEN), planned
    assert bool(planned) == bool(pulled_now.edits or pulled_now.notes), (planned, pulled_now)  # never silent
    if f.write_only:
        assert not pulled_now.edits  # a value live cannot show is never written
    after = pulled(spec, [FieldEdit(f"config.{name}{below}", old, new) for below, old, new in pulled_now.edits])
    if pulled_now.notes or name not in after["config"]:
        return  # what pull cannot write it says; a field removed is no longer managed
    assert planned_changes(owner, name, after, live_cfg)[0] == [], (want, live_cfg, pulled_now)
