from __future__ import annotations

import json
from datetime import UTC, datetime

from reconciler.model import (
    DatasetObject,
    EvaluatorObject,
    EvaluatorVersionObject,
    ExperimentObject,
    LiveDataset,
    LiveEvaluator,
    LivePrompt,
    PromptObject,
    PromptVersionObject,
    RestrictionObject,
)
from reconciler.plan.model import PlanOptions
from reconciler.plan.planner import make_plan
from reconciler.plan.render import render_json, render_markdown, render_text
from tests.plan.helpers import DEFAULT, OWN_ALL, RESEARCH, key, live_llm, llm, manifests, res, state

VERSION = {"commit_message": "v1", "provider": "VENDOR_A", "model": "m",
           "messages": [{"role": "user", "content": "{q}"}]}
LIVE_VERSION = {"id": "UHY6MQ", "prompt_id": "UHI6MQ", "commit_hash": "abc", "commit_message": "v1",
                "provider": "VENDOR_A", "model": "m", "input_variable_format": "f_string",
                "messages": [{"role": "user", "content": "{q}"}], "invocation_params": {}, "provider_params": {},
                "labels": ["production"]}


def live_prompt(**version: object) -> LivePrompt:
    latest = {**LIVE_VERSION, **version}
    return LivePrompt(prompt=PromptObject.read({"id": "UHI6MQ", "name": "p", "description": "d", "space_id": RESEARCH}),
                      latest=PromptVersionObject.read(latest), labels={lab: latest["id"] for lab in latest["labels"]})


def test_new_prompt_is_one_create_then_labels_and_restriction_after_it() -> None:
    p = res("Prompt", "p", "research", restricted=True, version={**VERSION, "labels": ["production"]})
    plan = make_plan(manifests(p), state())
    assert [op.method for op in plan.operations] == ["POST", "PUT", "POST"]
    create, labels, restrict = plan.operations
    assert create.body["version"]["messages"] == VERSION["messages"] and "labels" not in create.body["version"]
    assert labels.depends_on == (create.id,) and "(known after apply)" in render_text(plan)
    assert restrict.body == {"resource_id": "${" + create.id + ":id}"}


def test_prompt_in_sync_plans_nothing() -> None:
    p = res("Prompt", "p", "research", description="d", version={**VERSION, "labels": ["production"]})
    live = state()
    live.prompts[(RESEARCH, "p")] = live_prompt()
    assert make_plan(manifests(p), live).empty


def test_changed_messages_make_one_new_version_and_move_the_labels() -> None:
    p = res("Prompt", "p", "research",
            version={**VERSION, "messages": [{"role": "user", "content": "{q}!"}], "labels": ["production"]})
    live = state()
    live.prompts[(RESEARCH, "p")] = live_prompt()
    plan = make_plan(manifests(p), live)
    assert [(op.method, op.path) for op in plan.operations] == [
        ("POST", "/v2/prompts/UHI6MQ/versions"),
        ("PUT", "/v2/prompt-versions/${Prompt/research/p#version:id}/labels")]
    assert plan.operations[0].body["input_variable_format"] == "f_string"  # unmanaged field kept from live


def test_label_missing_on_latest_is_added_keeping_existing_labels() -> None:
    p = res("Prompt", "p", "research", version={**VERSION, "labels": ["staging"]})
    live = state()
    live.prompts[(RESEARCH, "p")] = live_prompt()
    (op,) = make_plan(manifests(p), live).operations
    assert (op.method, op.body) == ("PUT", {"labels": ["production", "staging"]})
    (change,) = op.changes  # what is shown is what is sent
    assert (change.before, change.after) == (["production"], ["production", "staging"])


def test_a_changed_prompt_text_is_shown_as_a_unified_diff() -> None:
    old = "You summarize support tickets.\nBe brief.\nNever guess the customer's plan."
    new = "You summarize support tickets.\nBe brief and factual.\nNever guess the customer's plan."
    p = res("Prompt", "p", "research", version={**VERSION, "messages": [{"role": "system", "content": new}]})
    live = state()
    live.prompts[(RESEARCH, "p")] = live_prompt(messages=[{"role": "system", "content": old}])
    plan = make_plan(manifests(p), live)
    text = render_text(plan)
    assert "version.messages.0.content: (changed, see below)" in text
    assert "        -Be brief.\n        +Be brief and factual.\n" in text
    markdown = render_markdown(plan)
    assert "```diff" in markdown and "-Be brief.\n+Be brief and factual." in markdown
    assert json.loads(render_json(plan))["operations"][0]["changes"][0]["after"] == new  # JSON keeps it whole


def examples_live(*rows: dict[str, object]) -> list[dict[str, object]]:
    return [{"id": f"RXg6{i}", "created_at": "t", "updated_at": "t", **row} for i, row in enumerate(rows)]


def test_dataset_changes_are_one_versioned_update_one_append_one_delete() -> None:
    live = state()
    live.datasets[(RESEARCH, "d")] = LiveDataset(
        dataset=DatasetObject.read({"id": "RGF0OjE", "name": "d", "space_id": RESEARCH}),
        examples=examples_live({"k": "1", "q": "a"}, {"k": "2", "q": "b"}, {"k": "3", "q": "c"}))
    want = [{"k": "1", "q": "a"}, {"k": "2", "q": "B"}, {"k": "4", "q": "d"}]
    plan = make_plan(manifests(res("Dataset", "d", "research", key="k", examples=want)), live,
                     PlanOptions(version_name="v2"))
    assert [(op.method, op.body) for op in plan.operations] == [
        ("PATCH", {"examples": [{"id": "RXg61", "k": "2", "q": "B"}], "new_version": "v2"}),
        ("POST", {"examples": [{"k": "4", "q": "d"}]}),
        ("DELETE", {"dataset_version_id": "${Dataset/research/d#examples-version:dataset_version_id}",
                    "example_ids": ["RXg62"]}),
    ]


def test_dataset_without_key_matches_by_content_and_ignores_order() -> None:
    live = state()
    live.datasets[(RESEARCH, "d")] = LiveDataset(
        dataset=DatasetObject.read({"id": "RGF0OjE", "name": "d", "space_id": RESEARCH}),
        examples=examples_live({"q": "b"}, {"q": "a"}))
    assert make_plan(manifests(res("Dataset", "d", "research", examples=[{"q": "a"}, {"q": "b"}])), live).empty


def test_retention_deletes_old_experiments_beyond_keep_last() -> None:
    live = state()
    exps = [ExperimentObject.read({"id": f"E{i}", "name": f"e{i}", "created_at": f"2026-0{i}-01T00:00:00Z"}) for i in range(1, 6)]
    live.datasets[(RESEARCH, "d")] = LiveDataset(
        dataset=DatasetObject.read({"id": "RGF0OjE", "name": "d", "space_id": RESEARCH}), examples=[], experiments=exps)
    d = res("Dataset", "d", "research", experiment_retention={"keep_last": 2, "older_than_days": 60})
    plan = make_plan(manifests(d), live, now=datetime(2026, 5, 15, tzinfo=UTC))
    # newest two (E5, E4) kept; E3 (March) older than 60 days -> deleted, as are E2 and E1.
    assert [op.path for op in plan.operations] == ["/v2/experiments/E3", "/v2/experiments/E2", "/v2/experiments/E1"]
    assert plan.summary() == {"create": 0, "update": 0, "delete": 3, "replace": 0, "unmanaged": 0}  # per experiment
    text = render_text(plan)
    assert "- Experiment/research/d/e3 (E3)" in text and "- Dataset/research/d" not in text
    assert "Plan: 0 to create, 0 to update, 3 to delete." in text


def test_retention_deletes_beside_an_examples_change_leave_the_dataset_an_update() -> None:
    live = state()
    exps = [ExperimentObject.read({"id": f"E{i}", "name": f"e{i}", "created_at": f"2026-0{i}-01T00:00:00Z"}) for i in range(1, 4)]
    live.datasets[(RESEARCH, "d")] = LiveDataset(
        dataset=DatasetObject.read({"id": "RGF0OjE", "name": "d", "space_id": RESEARCH}), examples=examples_live({"q": "a"}),
        experiments=exps)
    d = res("Dataset", "d", "research", examples=[{"q": "b"}], experiment_retention={"keep_last": 2})
    plan = make_plan(manifests(d), live, now=datetime(2026, 5, 15, tzinfo=UTC))
    assert plan.summary() == {"create": 0, "update": 1, "delete": 1, "replace": 0, "unmanaged": 0}
    text = render_text(plan)
    assert "~ Dataset/research/d" in text and "- Experiment/research/d/e1 (E1)" in text


def test_evaluator_after_the_integration_it_names_with_a_reference() -> None:
    tc = {"name": "f", "template": "t", "llm_config": {"integration": "a", "model_name": "m"}}
    plan = make_plan(manifests(res("Evaluator", "ev", "research", commit_message="c", template_config=tc),
                               llm("a", api_key=key())), state())
    assert [op.kind for op in plan.operations] == ["Integration", "Evaluator"]
    ev = plan.operations[1]
    assert ev.body["version"]["template_config"]["llm_config"]["ai_integration_id"] == "${Integration/LLM/a#create:id}"
    assert ev.depends_on == (plan.operations[0].id,)


def test_evaluator_in_sync_with_a_live_integration_plans_nothing() -> None:
    tc = {"name": "f", "template": "t", "llm_config": {"integration": "a", "model_name": "m"}}
    live = state(live_llm("a", id="SW50OjE", is_function_calling_enabled=True, has_api_key=True))
    live.evaluators[(RESEARCH, "ev")] = LiveEvaluator(
        evaluator=EvaluatorObject.read({"id": "RXY6MQ", "name": "ev", "description": None}),
        latest=EvaluatorVersionObject.read({"id": "RVY6MQ", "template_config": {
            "name": "f", "template": "t", "include_explanations": True,
            "llm_config": {"ai_integration_id": "SW50OjE", "model_name": "m", "invocation_parameters": {}}}}))
    assert make_plan(manifests(res("Evaluator", "ev", "research", commit_message="c", template_config=tc)),
                     live).empty


def test_prune_deletes_undeclared_last_and_refuses_to_empty_a_kind() -> None:
    live = state(live_llm("a", id="A", is_function_calling_enabled=True, has_api_key=True),
                 live_llm("b", id="B", is_function_calling_enabled=True, has_api_key=True))
    desired = manifests(llm("a", api_key=key()), llm("c", api_key=key()), ownership=OWN_ALL)
    plan = make_plan(desired, live, PlanOptions(prune=True))
    assert [(op.action, op.path) for op in plan.operations] == [
        ("create", "/v2/integrations"), ("delete", "/v2/integrations/B")]
    import pytest

    from reconciler.errors import PlanError

    with pytest.raises(PlanError, match="--allow-empty"):
        make_plan(manifests(llm("c", api_key=key()), ownership=OWN_ALL), live, PlanOptions(prune=True))
    assert len(make_plan(manifests(llm("c", api_key=key()), ownership=OWN_ALL), live,
                         PlanOptions(prune=True, allow_empty=True)).operations) == 3


def test_prune_refuses_to_empty_a_kind_in_one_space_even_when_another_keeps_some() -> None:
    import pytest

    from reconciler.errors import PlanError

    live = state()
    for space_id, name in ((RESEARCH, "kept"), (DEFAULT, "stray-1"), (DEFAULT, "stray-2")):
        live.prompts[(space_id, name)] = LivePrompt(prompt=PromptObject.read({"id": f"P-{name}", "name": name, "space_id": space_id}),
                                                    latest=None, labels={})
    desired = manifests(res("Prompt", "kept", "research", description="d", version=VERSION),
                        res("Dataset", "d", "default", experiment_retention={"keep_last": 1}))
    with pytest.raises(PlanError, match="every live Prompt in space default \\(2\\)"):
        make_plan(desired, live, PlanOptions(prune=True))
    plan = make_plan(desired, live, PlanOptions(prune=True, allow_empty=True))
    assert sorted(op.path for op in plan.operations if op.action == "delete") == [
        "/v2/prompts/P-stray-1", "/v2/prompts/P-stray-2"]


def test_a_resource_declared_by_space_name_and_again_by_space_id_is_an_error() -> None:
    import pytest

    from reconciler.errors import PlanError

    twice = manifests(res("Prompt", "p", "research", description="a", version=VERSION),
                      res("Prompt", "p", RESEARCH, description="b", version=VERSION))
    with pytest.raises(PlanError, match="declares Prompt/research/p again"):
        make_plan(twice, state())


def test_long_values_are_never_cut_and_markdown_fences_outlast_backticks_in_them() -> None:
    text = "Answer in Markdown. Quote code as:\n```\ncode\n```\n" + "Keep it short. " * 20
    p = res("Prompt", "p", "research", version={**VERSION, "messages": [
        {"role": "system", "content": "hi"}, {"role": "user", "content": text}]})
    live = state()
    live.prompts[(RESEARCH, "p")] = live_prompt(messages=[{"role": "system", "content": "hi"}])
    plan = make_plan(manifests(p), live)
    rendered = render_text(plan)
    assert "version.messages.1.content: (added, see below)" in rendered
    assert "        +" + "Keep it short. " * 20 in rendered  # whole, never cut
    markdown = render_markdown(plan)
    assert "````diff" in markdown and markdown.count("````") == 2  # the prompt's ``` cannot close the block


def test_a_changed_example_shows_only_the_fields_that_differ() -> None:
    live = state()
    live.datasets[(RESEARCH, "d")] = LiveDataset(
        dataset=DatasetObject.read({"id": "RGF0OjE", "name": "d", "space_id": RESEARCH}),
        examples=examples_live({"k": 1, "long": "x" * 300, "label": "bug"}))
    d = res("Dataset", "d", "research", key="k", examples=[{"k": 1, "long": "x" * 300, "label": "defect"}])
    changes = [c for op in make_plan(manifests(d), live).operations for c in op.changes]
    assert [(c.path, c.before, c.after) for c in changes] == [("examples[k=1].label", "bug", "defect")]


def test_every_example_change_sits_on_the_call_that_makes_it() -> None:
    live = state()
    live.datasets[(RESEARCH, "d")] = LiveDataset(
        dataset=DatasetObject.read({"id": "RGF0OjE", "name": "d", "space_id": RESEARCH}),
        examples=examples_live({"k": 1, "a": "x"}, {"k": 2, "gone": "y"}, {"k": 3, "n": 1}, {"k": 9}))
    d = res("Dataset", "d", "research", key="k", examples=[
        {"k": 1, "a": "x", "note": "new field"}, {"k": 2}, {"k": 3, "n": None}, {"k": 4}])
    ops = {op.method: op for op in make_plan(manifests(d), live).operations}
    assert sorted((c.path, c.before, c.after) for c in ops["PATCH"].changes) == [
        ("examples[k=1].note", None, "new field"), ("examples[k=2].gone", "y", None), ("examples[k=3].n", 1, None)]
    assert [c.path for c in ops["POST"].changes] == ["examples[k=4]"]
    assert [c.path for c in ops["DELETE"].changes] == ["examples[k=9]"]


def test_a_restriction_on_a_prompt_whose_manifest_says_unrestricted_is_an_error() -> None:
    import pytest

    from reconciler.errors import PlanError

    live = state(restrictions={("PROMPT", "UHI6MQ"): RestrictionObject.read({"resource_id": "UHI6MQ", "resource_type": "PROMPT"})})
    live.prompts[(RESEARCH, "p")] = live_prompt()
    desired = manifests(res("Prompt", "p", "research", restricted=False, version=VERSION),
                        res("ResourceRestriction", "r", resource_type="PROJECT", resource_id="UHI6MQ"))
    with pytest.raises(PlanError, match="whose manifest says restricted: false"):
        make_plan(desired, live)


def test_pruning_an_integration_named_like_a_declared_one_of_the_other_type_keeps_them_apart() -> None:
    agent = {**live_llm("twin", id="AG"), "type": "AGENT", "config": {"endpoint": "https://a.example.com"}}
    live = state(live_llm("twin", id="LL", is_function_calling_enabled=False, has_api_key=True), agent)
    plan = make_plan(manifests(llm("twin", api_key=key(), is_function_calling_enabled=True), ownership=OWN_ALL),
                     live, PlanOptions(prune=True, allow_empty=True))
    assert {op.subject for op in plan.operations} == {"Integration/twin", "Integration/AGENT/twin"}
    assert plan.summary() == {"create": 0, "update": 1, "delete": 1, "replace": 0, "unmanaged": 0}
