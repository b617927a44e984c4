"""Pull and the planner compare an integration the same way: for random live and desired
integrations of every provider (and AGENT ones), the manifest as pull would write it
(``registry.resource_diff``'s edits applied) plans no change but what pull says it cannot write
(write-only secrets and headers, an auth whose secrets cannot be read: its notes)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from reconciler.model import DesiredResource, LiveIntegration, LiveState, ManifestSet
from reconciler.plan.liveview import ABSENT
from reconciler.plan.model import PlanOptions
from reconciler.plan.planner import make_plan
from reconciler.plan.registry import resource_diff
from reconciler.providers import PROVIDERS, has_model_source

from .test_integration_patch_property import (  # the same draws as the planner's own property
    agent_config,
    client,
    config,
    counter,
    effective_after,
    resolve,
    secrets_in_env,
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
