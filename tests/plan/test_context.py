"""A create as the saved plan carries it (reconciler/plan/context.py): secrets masked in the body,
named by reference in the changes, and recorded under JSON pointers that escape ``/`` and ``~``;
nested objects and lists of objects flattened to one change a field."""

from __future__ import annotations

import json

from reconciler.model import SecretRef
from reconciler.plan.planner import make_plan
from reconciler.plan.render import render_json
from tests.plan.helpers import key, llm, manifests, res, state


def test_a_created_agent_masks_its_secrets_under_escaped_pointers() -> None:
    agent = res("Integration", "agent", type="AGENT", config={
        "endpoint": "https://a.example/run", "headers": {"X/A~B": key("K"), "Y": SecretRef("file", "/run/y")},
        "request_presets": [{"name": "cold", "config": {"t": 1, "tags": ["a"]}}]})
    (op,) = json.loads(render_json(make_plan(manifests(agent), state())))["operations"]
    assert op["body"] == {"type": "AGENT", "name": "agent", "config": {
        "endpoint": "https://a.example/run", "headers": {"X/A~B": "(sensitive)", "Y": "(sensitive)"},
        "request_presets": [{"name": "cold", "config": {"t": 1, "tags": ["a"]}}]}}
    assert op["secrets"] == {"/config/headers/X~1A~0B": "env:K", "/config/headers/Y": "file:/run/y"}
    assert [(c["path"], c["before"], c["after"]) for c in op["changes"]] == [
        ("config.endpoint", None, "https://a.example/run"),
        ("config.headers.X/A~B", None, "(sensitive, env:K)"),
        ("config.headers.Y", None, "(sensitive, file:/run/y)"),
        ("config.request_presets.0.name", None, "cold"),
        ("config.request_presets.0.config.t", None, 1),
        ("config.request_presets.0.config.tags", None, ["a"])]
    assert op["id"] == "Integration/AGENT/agent#create" and op["address"] == "Integration/agent"


def test_rotate_says_secrets_are_sent_only_when_one_is() -> None:
    from reconciler.plan.model import PlanOptions
    from tests.plan.helpers import live_llm
    from tests.plan.test_plan_language import AGENT_LIVE

    live = state(live_llm("a", id="I1", has_api_key=True, is_function_calling_enabled=True), AGENT_LIVE)
    rotate = PlanOptions(rotate=("Integration/a", "Integration/agent"))
    (op,) = make_plan(manifests(llm("a", api_key=key(), is_function_calling_enabled=True)), live, rotate).operations
    assert (op.path, op.note) == ("/v2/integrations/I1", "secrets sent: --rotate")
    agent = res("Integration", "agent", type="AGENT", config={"endpoint": "https://b.example/run"})
    (op,) = make_plan(manifests(agent), live, rotate).operations
    assert (op.path, op.note) == ("/v2/integrations/QUc6MQ", None)


def test_an_update_without_secrets_is_sent_as_planned() -> None:
    from reconciler.apply.resolve import request_for
    from tests.plan.helpers import RESEARCH
    from tests.plan.test_kinds_plan import VERSION, live_prompt

    live = state()
    live.prompts[(RESEARCH, "p")] = live_prompt()
    (op,) = make_plan(manifests(res("Prompt", "p", "research", description="new", version=VERSION)), live).operations
    assert request_for(op, {}, "2026-01-01T00:00:00Z") == ("/v2/prompts/UHI6MQ", {"description": "new"})
