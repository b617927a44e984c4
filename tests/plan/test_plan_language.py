"""The plan speaks the user's language, and never carries a call that changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from reconciler.model import (
    DatasetObject,
    EvaluatorObject,
    EvaluatorVersionObject,
    ExperimentObject,
    LiveDataset,
    LiveEvaluator,
)
from reconciler.plan.model import Operation, PlanOptions
from reconciler.plan.planner import changes_nothing, make_plan
from reconciler.plan.render import render_text
from tests.plan.helpers import RESEARCH, key, live_llm, llm, manifests, res, state
from tests.plan.test_kinds_plan import VERSION, live_prompt

AGENT_LIVE = {"id": "QUc6MQ", "type": "AGENT", "name": "agent", "description": None, "scopings": [],
              "config": {"endpoint": "https://a.example/run", "has_headers": False,
                         "input_schema": {"type": "object"},
                         "request_presets": [{"name": "cold", "description": None, "config": {}},
                                             {"name": "warm", "description": None, "config": {}}]}}


def test_a_removed_preset_is_said_in_words() -> None:
    agent = res("Integration", "agent", type="AGENT", config={"request_presets": [
        {"name": "warm", "description": None, "config": {}}]})
    text = render_text(make_plan(manifests(agent), state(AGENT_LIVE)))
    assert "preset cold removed" in text
    assert "-> null" not in text


def test_a_changed_evaluator_integration_is_shown_by_name() -> None:
    tc = {"name": "f", "template": "t", "llm_config": {"integration": "new", "model_name": "m"}}
    live = state(live_llm("old", id="SW50OjE", has_api_key=True), live_llm("new", id="SW50OjI", has_api_key=True))
    live.evaluators[(RESEARCH, "ev")] = LiveEvaluator(
        evaluator=EvaluatorObject.read({"id": "RXY6MQ", "name": "ev", "description": None}),
        latest=EvaluatorVersionObject.read({"id": "RVY6MQ", "commit_message": "first", "template_config": {
            "name": "f", "template": "t", "llm_config": {"ai_integration_id": "SW50OjE", "model_name": "m"}}}))
    plan = make_plan(manifests(res("Evaluator", "ev", "research", commit_message="second", template_config=tc)),
                     live)
    text = render_text(plan)
    assert 'template_config.llm_config.integration: "old" -> "new"' in text
    assert "SW50Oj" not in text
    assert 'commit_message = "second"' in text and "reused" not in text


def test_a_new_evaluator_names_a_planned_integration_not_a_reference() -> None:
    tc = {"name": "f", "template": "t", "llm_config": {"integration": "a", "model_name": "m"}}
    text = render_text(make_plan(manifests(res("Evaluator", "ev", "research", commit_message="c", template_config=tc),
                                           llm("a", api_key=key())), state()))
    assert 'template_config.llm_config.integration = "a"' in text and "ai_integration_id" not in text


def test_retention_says_why_an_experiment_is_deleted() -> None:
    live = state()
    exps = [ExperimentObject.read({"id": f"E{i}", "name": f"exp-{i}", "created_at": f"2026-0{i}-01T00:00:00Z"}) for i in range(1, 5)]
    live.datasets[(RESEARCH, "d")] = LiveDataset(
        dataset=DatasetObject.read({"id": "RGF0OjE", "name": "d", "space_id": RESEARCH}), examples=[], experiments=exps)
    d = res("Dataset", "d", "research", experiment_retention={"keep_last": 2, "older_than_days": 30})
    text = render_text(make_plan(manifests(d), live, now=datetime(2026, 5, 15, tzinfo=UTC)))
    assert "experiment exp-2 (created 2026-02-01): older than 30 days and not among the 2 newest" in text
    assert "-> null" not in text


def test_a_new_prompt_version_shows_its_commit_message_and_says_when_it_is_reused() -> None:
    live = state()
    live.prompts[(RESEARCH, "p")] = live_prompt(commit_message="v1", messages=[{"role": "user", "content": "old"}])
    p = res("Prompt", "p", "research", version={**VERSION, "commit_message": "v1"})
    text = render_text(make_plan(manifests(p), live))
    assert 'version.commit_message = "v1"' in text
    assert "its commit_message is the live version's (reused)" in text
    fresh = res("Prompt", "p", "research", version={**VERSION, "commit_message": "v2"})
    text = render_text(make_plan(manifests(fresh), live))
    assert 'version.commit_message = "v2"' in text and "reused" not in text


def test_needs_allow_replace_is_said_only_when_it_was_not_given() -> None:
    live = state(live_llm("a", provider="VENDOR_A", has_api_key=True))
    want = llm("a", provider="VENDOR_C", api_key=key())
    assert "needs --allow-replace" in render_text(make_plan(manifests(want), live))
    allowed = render_text(make_plan(manifests(want), live, PlanOptions(allow_replace=True)))
    assert "1 to replace (delete, then create)." in allowed and "needs --allow-replace" not in allowed


def test_a_plan_in_sync_is_one_line_and_names_what_it_cannot_compare() -> None:
    live = state(live_llm("a", has_api_key=True, is_function_calling_enabled=True))
    plan = make_plan(manifests(llm("a", api_key=key())), live)
    text = render_text(plan)
    assert text.count("\n") == 1
    assert text.startswith("No changes. Live state matches the manifests (1 write-only secret cannot be compared")
    assert "-v lists them" in text
    verbose = render_text(plan, verbose=True)
    assert "Integration/a: config.api_key" in verbose


@pytest.mark.parametrize(("method", "path", "body", "nothing"), [
    ("PATCH", "/v2/datasets/D/examples", {"examples": []}, True),
    ("POST", "/v2/datasets/D/examples", {"examples": []}, True),
    ("DELETE", "/v2/datasets/D/examples", {"dataset_version_id": "V", "example_ids": []}, True),
    ("PATCH", "/v2/datasets/D/examples", {"examples": [], "new_version": "v2"}, False),  # a version: a change
    ("PATCH", "/v2/datasets/D/examples", {"examples": [{"id": "x", "q": 1}]}, False),
    ("PATCH", "/v2/integrations/I", {"type": "LLM"}, True),
    ("PATCH", "/v2/integrations/I", {"type": "LLM", "description": "d"}, False),
])
def test_a_call_that_changes_nothing_is_recognised(method: str, path: str, body: dict[str, object],
                                                   nothing: bool) -> None:
    op = Operation(id="x", action="update", kind="Integration" if "integrations" in path else "Dataset", name="n",
                   method=method, path=path, body=body)
    assert changes_nothing(op) is nothing


def test_no_dataset_plan_holds_a_call_that_changes_nothing() -> None:
    live = state()
    rows = [{"id": f"X{i}", "k": i, "q": f"q{i}"} for i in range(6)]
    live.datasets[(RESEARCH, "d")] = LiveDataset(dataset=DatasetObject.read({"id": "RGF0OjE", "name": "d", "space_id": RESEARCH}),
                                                 examples=rows, experiments=[])
    for want in ([{"k": i, "q": f"q{i}"} for i in range(6)],  # in sync
                 [{"k": i, "q": f"q{i}"} for i in range(7)],  # one appended
                 [{"k": i, "q": f"q{i}"} for i in range(5)],  # one deleted
                 [{"k": i, "q": "changed" if i == 0 else f"q{i}"} for i in range(6)]):  # one updated
        plan = make_plan(manifests(res("Dataset", "d", "research", key="k", examples=want)), live)
        assert not any(changes_nothing(op) for op in plan.operations)
        assert all(op.body.get("examples") or op.body.get("example_ids") or op.body.get("new_version")
                   for op in plan.operations if op.path.endswith("/examples"))
