"""A read-only key sees no restriction (reconciler/plan/restrictions.py): when the tree was applied
before (any of its resources exists live, whatever its kind) and declares a restriction, the plan
leaves restrictions out with one warning naming them; in a fresh account, or for a tree that only
says ``restricted: false``, it compares (and creates) them."""

from __future__ import annotations

import pytest

from reconciler.model import LiveDataset, LiveEvaluator, LiveIntegration, LiveState
from reconciler.plan.planner import make_plan
from tests.plan.helpers import RESEARCH, key, live_llm, llm, manifests, res, state
from tests.plan.test_kinds_plan import VERSION, live_prompt
from tests.plan.test_plan_language import AGENT_LIVE

TC = {"name": "f", "template": "t", "llm_config": {"integration": "judge", "model_name": "m"},
      "classification_choices": {"a": 1}}
DASH = res("ResourceRestriction", "dash", resource_type="DASHBOARD", resource_id="RGFzaDox")
WARNING = ("restrictions were not compared: the API key sees no resource restriction (the list holds only those a "
           "key may manage, and a read-only key manages none), so these are left out: {}. apply compares them; "
           "it needs a key that may manage restrictions")
DECLARED = {"prompt": res("Prompt", "p", "research", restricted=True, version=VERSION),
            "dataset": res("Dataset", "d", "research", examples=[]),
            "evaluator": res("Evaluator", "ev", "research", commit_message="c", template_config=TC),
            "llm": llm("judge", api_key=key()),
            "agent": res("Integration", "agent", type="AGENT", config={"endpoint": "https://a.example/run"})}


def live_with(which: str) -> LiveState:
    s = state(live_llm("judge", has_api_key=True)) if which in ("llm", "evaluator") else state()
    if which == "agent":
        s.integrations[("AGENT", "agent")] = LiveIntegration.model_validate(AGENT_LIVE)
    if which == "prompt":
        s.prompts[(RESEARCH, "p")] = live_prompt()
    if which == "dataset":
        s.datasets[(RESEARCH, "d")] = LiveDataset(dataset={"id": "RDox", "name": "d", "space_id": RESEARCH},
                                                  examples=[], experiments=[])
    if which == "evaluator":
        s.evaluators[(RESEARCH, "ev")] = LiveEvaluator(evaluator={"id": "RXY6MQ", "name": "ev", "description": None},
                                                       latest={"id": "RVY6MQ", "template_config": TC})
    return s


@pytest.mark.parametrize("which", ["llm", "agent", "prompt", "dataset", "evaluator"])
def test_a_tree_applied_before_leaves_restrictions_out_with_one_warning(which: str) -> None:
    plan = make_plan(manifests(DASH, DECLARED[which]), live_with(which))
    left_out = "ResourceRestriction/dash" + (", Prompt/research/p (restricted)" if which == "prompt" else "")
    assert WARNING.format(left_out) in plan.warnings
    assert not any(op.kind == "ResourceRestriction" for op in plan.operations)


def test_a_restricted_prompt_alone_is_a_restriction_left_out() -> None:
    p = res("Prompt", "p", "research", restricted=True, version=VERSION)
    plan = make_plan(manifests(p), live_with("prompt"))
    assert WARNING.format("Prompt/research/p (restricted)") in plan.warnings
    assert [op.method for op in plan.operations] == []


def test_a_fresh_account_or_a_tree_saying_only_unrestricted_compares() -> None:
    plan = make_plan(manifests(DASH, llm("judge", api_key=key())), state())
    assert not plan.warnings
    assert [(op.method, op.path) for op in plan.operations if op.kind == "ResourceRestriction"] == [
        ("POST", "/v2/resource-restrictions")]
    p = res("Prompt", "p", "research", restricted=False, version=VERSION)
    assert make_plan(manifests(p), live_with("prompt")).warnings == ()
