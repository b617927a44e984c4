"""``ignore_changes`` as the plan shows it (reconciler/plan/ignore.py): a difference an ignore rule covers
is left as live (no call) and listed in the plan's ``ignored`` (address, path, live, declared, the rule's
``file:line``); a rule inside a free-form object leaves only that key as live; Ownership rules apply to
the resources their ``match`` globs name; a rule matching nothing declared is a warning."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from reconciler.manifests import load_manifests
from reconciler.model import DatasetObject, EvaluatorObject, EvaluatorVersionObject, LiveEvaluator, LiveState
from reconciler.plan.model import Plan
from reconciler.plan.planner import make_plan
from reconciler.plan.render import render_json
from tests.plan.helpers import RESEARCH, live_llm, state
from tests.plan.test_kinds_plan import live_prompt

PROMPT = """\
kind: Prompt
space: research
name: p
{rules}description: declared
version:
  commit_message: v1
  provider: VENDOR_A
  model: m
  messages: [{{role: user, content: "{{q}}"}}]
  labels: [production, staging]
{extra}"""


def plan_of(tmp_path: Path, text: str, live: LiveState) -> Plan:
    (tmp_path / "t.yaml").write_text(text)
    return make_plan(load_manifests(["t.yaml"]), live)


def listed(plan: Plan) -> list[tuple[str, str, Any, Any, str | None]]:
    return [(i["address"], i["path"], i["before"], i["after"], i["source"])
            for i in json.loads(render_json(plan)).get("ignored", [])]


def version_op(plan: Plan) -> Any:
    """The new version the plan makes (its labels move onto it in a second call)."""
    (op,) = [op for op in plan.operations if op.path.endswith("/versions") or op.path.startswith("/v2/evaluators/")]
    return op


def prompt_live(**version: Any) -> LiveState:
    live = state()
    live.prompts[(RESEARCH, "p")] = live_prompt(**version)
    return live


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


# ---------------------------------------------------------------------- a resource's own rules


def test_ignored_fields_are_left_as_live_and_listed_with_their_rule(tmp_path: Path) -> None:
    text = PROMPT.format(rules="ignore_changes: [description, version.labels]\n", extra="")
    plan = plan_of(tmp_path, text, prompt_live())
    assert plan.operations == ()
    assert listed(plan) == [
        ("Prompt/research/p", "description", "d", "declared", "t.yaml:4"),
        ("Prompt/research/p", "version.labels", ["production"], ["production", "staging"], "t.yaml:4")]
    assert plan.warnings == ()


def test_a_field_no_rule_covers_is_still_updated_beside_an_ignored_one(tmp_path: Path) -> None:
    text = PROMPT.format(rules="ignore_changes:\n  - version.labels\n", extra="")
    plan = plan_of(tmp_path, text, prompt_live())
    assert [(op.method, op.path, op.body) for op in plan.operations] == [
        ("PATCH", "/v2/prompts/UHI6MQ", {"description": "declared"})]
    assert listed(plan) == [("Prompt/research/p", "version.labels", ["production"], ["production", "staging"],
                             "t.yaml:5")]


def test_a_glob_segment_covers_every_field_under_it(tmp_path: Path) -> None:
    text = PROMPT.format(rules="ignore_changes: ['ver*on']\n", extra="")
    plan = plan_of(tmp_path, text, prompt_live(model="m2"))
    assert [op.body for op in plan.operations] == [{"description": "declared"}]
    assert [(path, before, after) for _, path, before, after, _ in listed(plan)] == [
        ("version.model", "m2", "m"), ("version.labels", ["production"], ["production", "staging"])]


def test_a_rule_longer_than_the_field_that_differs_does_not_cover_it(tmp_path: Path) -> None:
    text = PROMPT.format(rules="ignore_changes: [description.x, version.model.y]\n", extra="")
    plan = plan_of(tmp_path, text, prompt_live(model="m2", labels=["production", "staging"]))
    assert listed(plan) == []
    assert [op.method for op in plan.operations] == ["PATCH", "POST", "PUT"]
    assert plan.warnings == (
        "t.yaml:4: ignore_changes 'description.x' matches no field Prompt/research/p declares",
        "t.yaml:4: ignore_changes 'version.model.y' matches no field Prompt/research/p declares")


def test_a_resource_not_live_yet_is_created_as_declared_ignored_fields_included(tmp_path: Path) -> None:
    text = PROMPT.format(rules="ignore_changes: [description]\n", extra="")
    plan = plan_of(tmp_path, text, state())
    assert plan.operations[0].body["description"] == "declared" and listed(plan) == []


def test_a_rule_with_nothing_to_leave_changes_nothing(tmp_path: Path) -> None:
    text = PROMPT.format(rules="ignore_changes: [description]\n", extra="")
    plan = plan_of(tmp_path, text.replace("declared", "d"), prompt_live(labels=["production", "staging"]))
    assert plan.operations == () and listed(plan) == []


# ---------------------------------------------------------------------- inside free-form objects


def test_a_rule_inside_a_free_form_object_leaves_only_that_key_as_live(tmp_path: Path) -> None:
    extra = "  invocation_params: {temperature: 0, max_tokens: 5}\n"
    text = PROMPT.format(rules="ignore_changes: [version.invocation_params.temperature, version.labels]\n",
                         extra=extra)
    plan = plan_of(tmp_path, text.replace("declared", "d"),
                   prompt_live(invocation_params={"temperature": 0.7, "max_tokens": 5}))
    assert plan.operations == ()
    assert listed(plan)[0] == ("Prompt/research/p", "version.invocation_params.temperature", 0.7, 0,
                               "t.yaml:4")  # the key the rule names, not the whole object
    plan = plan_of(tmp_path, text.replace("declared", "d"),
                   prompt_live(invocation_params={"temperature": 0.7, "max_tokens": 6}))
    op = version_op(plan)
    assert op.body["invocation_params"] == {"temperature": 0.7, "max_tokens": 5}  # the rest is managed


def test_a_free_form_rule_covers_keys_live_added_or_removed_and_leaves_others(tmp_path: Path) -> None:
    extra = "  invocation_params: {temperature: 0, top_p: 1, max_tokens: 5}\n"
    text = PROMPT.format(rules="ignore_changes: ['version.invocation_params.t*', version.labels]\n", extra=extra)
    plan = plan_of(tmp_path, text.replace("declared", "d"),
                   prompt_live(invocation_params={"temperature": 0.7, "top_k": 3, "max_tokens": 6}))
    op = version_op(plan)
    assert op.body["invocation_params"] == {"temperature": 0.7, "top_k": 3, "max_tokens": 5}


def test_a_free_form_rule_matching_no_key_of_either_side_leaves_the_difference_managed(tmp_path: Path) -> None:
    extra = "  invocation_params: {max_tokens: 5}\n"
    text = PROMPT.format(rules="ignore_changes: [version.invocation_params.temperature, version.labels]\n",
                         extra=extra)
    plan = plan_of(tmp_path, text.replace("declared", "d"), prompt_live(invocation_params={"max_tokens": 6}))
    op = version_op(plan)
    assert op.body["invocation_params"] == {"max_tokens": 5}
    assert [path for _, path, *_ in listed(plan)] == ["version.labels"]
    assert plan.warnings == ()  # a key inside a free-form object need not be declared


def test_a_free_form_rule_that_leaves_nothing_different_is_not_counted(tmp_path: Path) -> None:
    extra = "  invocation_params: {temperature: 0.7, max_tokens: 5}\n"
    text = PROMPT.format(rules="ignore_changes: [version.invocation_params.temperature, version.labels]\n",
                         extra=extra)
    plan = plan_of(tmp_path, text.replace("declared", "d"),
                   prompt_live(invocation_params={"temperature": 0.7, "max_tokens": 6}))
    op = version_op(plan)
    assert op.body["invocation_params"] == {"temperature": 0.7, "max_tokens": 5}
    assert [path for _, path, *_ in listed(plan)] == ["version.labels"]


EVALUATOR = """\
kind: Ownership
name: support
spaces: [research]
integrations: [judge]
ignore_changes:
  - match: [{match}]
    fields: [{fields}]
---
kind: Integration
name: judge
type: LLM
config: {{provider: VENDOR_A, api_key: {{env: A_KEY}}, is_function_calling_enabled: true}}
---
kind: Evaluator
space: research
name: ev
commit_message: c
template_config:
  name: f
  template: t
  classification_choices: {{a: 1}}
  llm_config:
    integration: judge
    model_name: m
    invocation_parameters: {{temperature: 0, sampling: {{top_p: 1, top_k: 3}}}}
"""


def evaluator_live(**parameters: Any) -> LiveState:
    live = state(live_llm("judge", id="SW50OjE", has_api_key=True, is_function_calling_enabled=True))
    tc = {"name": "f", "template": "t", "classification_choices": {"a": 1},
          "llm_config": {"ai_integration_id": "SW50OjE", "model_name": "m",
                         **({"invocation_parameters": parameters} if parameters else {})}}
    live.evaluators[(RESEARCH, "ev")] = LiveEvaluator(
        evaluator=EvaluatorObject.read({"id": "RXY6MQ", "name": "ev", "description": None}),
        latest=EvaluatorVersionObject.read({"id": "RVY6MQ", "template_config": tc, "commit_message": "c"}))
    return live


def evaluator_plan(tmp_path: Path, live: LiveState, match: str = "'Evaluator/research/*'",
                   fields: str = "template_config.llm_config.invocation_parameters.sampling.top_p") -> Plan:
    return plan_of(tmp_path, EVALUATOR.format(match=match, fields=fields), live)


def test_an_ownership_rule_reaches_into_nested_free_form_objects(tmp_path: Path) -> None:
    plan = evaluator_plan(tmp_path, evaluator_live(temperature=0, sampling={"top_p": 0.5, "top_k": 3}))
    assert plan.operations == ()
    assert listed(plan) == [("Evaluator/research/ev",
                             "template_config.llm_config.invocation_parameters.sampling.top_p", 0.5, 1, "t.yaml:7")]
    plan = evaluator_plan(tmp_path, evaluator_live(temperature=0, sampling={"top_p": 0.5, "top_k": 4}))
    op = version_op(plan)
    assert op.body["template_config"]["llm_config"]["invocation_parameters"] == {
        "temperature": 0, "sampling": {"top_p": 0.5, "top_k": 3}}


def test_a_nested_free_form_rule_where_live_is_not_an_object_takes_the_whole_key(tmp_path: Path) -> None:
    plan = evaluator_plan(tmp_path, evaluator_live(temperature=0, sampling="off"))
    assert plan.operations == ()
    assert listed(plan)[0][1:4] == ("template_config.llm_config.invocation_parameters.sampling", "off",
                                    {"top_p": 1, "top_k": 3})  # as deep as both sides are objects


def test_a_nested_free_form_rule_for_a_key_live_lacks_drops_it(tmp_path: Path) -> None:
    plan = evaluator_plan(tmp_path, evaluator_live(temperature=0, sampling={"top_k": 3}))
    assert plan.operations == ()
    plan = evaluator_plan(tmp_path, evaluator_live(temperature=1, sampling={"top_k": 3}))
    op = version_op(plan)
    assert op.body["template_config"]["llm_config"]["invocation_parameters"] == {
        "temperature": 0, "sampling": {"top_k": 3}}


def test_a_nested_free_form_rule_covering_no_key_leaves_the_object_managed(tmp_path: Path) -> None:
    plan = evaluator_plan(tmp_path, evaluator_live(temperature=1, sampling={"top_p": 1, "top_k": 3}),
                          fields="template_config.llm_config.invocation_parameters.sampling.x")
    op = version_op(plan)
    assert op.body["template_config"]["llm_config"]["invocation_parameters"] == {
        "temperature": 0, "sampling": {"top_p": 1, "top_k": 3}}
    assert listed(plan) == []
    assert plan.warnings == ()  # a key inside a nested free-form object need not be declared


# ---------------------------------------------------------------------- Ownership rules


@pytest.mark.parametrize("match", ["'Evaluator/research/ev'", "'Evaluator/ev'", "'Evaluator/*'", "'*/e?'"])
def test_an_ownership_rule_matches_by_address_or_kind_and_name(tmp_path: Path, match: str) -> None:
    plan = evaluator_plan(tmp_path, evaluator_live(temperature=1, sampling={"top_p": 1, "top_k": 3}), match=match,
                          fields="template_config.llm_config.invocation_parameters")
    assert plan.operations == () and len(listed(plan)) == 1 and plan.warnings == ()


@pytest.mark.parametrize("match", ["'Evaluator/default/*'", "'Prompt/*'", "'Evaluator/e'", "'*/research/x*'"])
def test_an_ownership_rule_that_matches_no_resource_ignores_nothing_and_warns(tmp_path: Path, match: str) -> None:
    plan = evaluator_plan(tmp_path, evaluator_live(temperature=1, sampling={"top_p": 1, "top_k": 3}), match=match,
                          fields="template_config.llm_config.invocation_parameters")
    assert len(plan.operations) == 1 and listed(plan) == []
    assert plan.warnings == (f"t.yaml:6: ignore_changes match [{match[1:-1]!r}] matches no declared resource",)


def test_an_integration_is_matched_by_its_address(tmp_path: Path) -> None:
    live = evaluator_live(temperature=0, sampling={"top_p": 1, "top_k": 3})
    live.integrations[("LLM", "judge")] = live.integrations[("LLM", "judge")].model_copy(
        update={"config": {"provider": "VENDOR_A", "has_api_key": True, "is_function_calling_enabled": False}})
    plan = evaluator_plan(tmp_path, live, match="'Integration/judge'", fields="config.is_function_calling_enabled")
    assert plan.operations == ()
    assert listed(plan) == [("Integration/judge", "config.is_function_calling_enabled", False, True, "t.yaml:7")]


def test_an_ownership_field_no_matched_resource_declares_is_a_warning(tmp_path: Path) -> None:
    plan = evaluator_plan(tmp_path, evaluator_live(temperature=0, sampling={"top_p": 1, "top_k": 3}),
                          fields="description, template_config.template, template_config.nothing")
    assert plan.warnings == (
        "t.yaml:6: ignore_changes field 'description' matches no field the matched resources declare",
        "t.yaml:6: ignore_changes field 'template_config.nothing' matches no field the matched resources declare")


def test_every_ownership_rule_and_every_resource_rule_is_applied(tmp_path: Path) -> None:
    text = EVALUATOR.format(match="'Evaluator/*'", fields="commit_message").replace(
        "---\nkind: Integration", "  - match: ['Integration/*']\n    fields: [config.is_function_calling_enabled]\n"
        "---\nkind: Integration", 1)
    text = text.replace("name: ev\n", "name: ev\nignore_changes: [template_config.template]\n")
    text = text.replace("template: t\n", "template: declared\n")
    live = evaluator_live(temperature=0, sampling={"top_p": 1, "top_k": 3})
    live.integrations[("LLM", "judge")] = live.integrations[("LLM", "judge")].model_copy(
        update={"config": {"provider": "VENDOR_A", "has_api_key": True, "is_function_calling_enabled": False}})
    plan = plan_of(tmp_path, text, live)
    assert plan.operations == ()
    assert [(a, p, s) for a, p, _, _, s in listed(plan)] == [
        ("Integration/judge", "config.is_function_calling_enabled", "t.yaml:9"),
        ("Evaluator/research/ev", "template_config.template", "t.yaml:19")]


# ---------------------------------------------------------------------- fields live lacks, examples


AGENT = """\
kind: Integration
name: agent
type: AGENT
ignore_changes: [{rule}]
config:
  endpoint: https://a.example/run
  input_schema: {{type: object}}
  auth: {{auth_type: DEFAULT, role_arn: arn}}
"""


def test_a_field_live_lacks_is_left_out_as_live_has_it(tmp_path: Path) -> None:
    live = state({"id": "QUc6MQ", "type": "AGENT", "name": "agent", "scopings": [],
                  "config": {"endpoint": "https://a.example/run", "has_headers": False}})
    text = AGENT.format(rule="config.input_schema").replace("  auth: {auth_type: DEFAULT, role_arn: arn}\n", "")
    plan = plan_of(tmp_path, text, live)
    assert plan.operations == ()
    assert listed(plan) == [("Integration/agent", "config.input_schema", None, {"type": "object"}, "t.yaml:4")]
    assert plan.warnings == ()


DATASET = """\
kind: Dataset
space: research
name: d
ignore_changes: [{rule}]
examples:
  - {{q: 1}}
  - {{q: 2}}
"""


def dataset_live(*qs: int) -> LiveState:
    from reconciler.model import LiveDataset

    live = state()
    live.datasets[(RESEARCH, "d")] = LiveDataset(dataset=DatasetObject.read({"id": "RDox", "name": "d", "space_id": RESEARCH}),
                                                 examples=[{"id": f"E{q}", "q": q} for q in qs])
    return live


def test_examples_edited_live_are_left_and_counted(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, DATASET.format(rule="examples"), dataset_live(1, 3, 4))
    assert plan.operations == ()
    assert listed(plan) == [("Dataset/research/d", "examples", "3 examples differ", None, "t.yaml:4")]
    assert plan.warnings == ()  # the rule matched the examples declared (a bug once warned it matched nothing)
    assert plan_of(tmp_path, DATASET.format(rule="examples"), dataset_live(2, 1)).operations == ()


def test_a_whole_free_form_object_live_lacks_is_left_out_when_ignored(tmp_path: Path) -> None:
    plan = evaluator_plan(tmp_path, evaluator_live(), fields="template_config.llm_config.invocation_parameters")
    assert plan.operations == ()
    assert listed(plan) == [("Evaluator/research/ev", "template_config.llm_config.invocation_parameters", None,
                             {"temperature": 0, "sampling": {"top_p": 1, "top_k": 3}}, "t.yaml:7")]


def test_a_rule_inside_a_free_form_object_live_lacks_leaves_it_managed(tmp_path: Path) -> None:
    live = state({"id": "QUc6MQ", "type": "AGENT", "name": "agent", "scopings": [],
                  "config": {"endpoint": "https://a.example/run", "has_headers": False}})
    text = AGENT.format(rule="config.input_schema.type").replace("  auth: {auth_type: DEFAULT, role_arn: arn}\n", "")
    (op,) = plan_of(tmp_path, text, live).operations
    assert (op.method, op.body["config"]) == ("PATCH", {"input_schema": {"type": "object"}})


def test_each_rule_is_tried_on_a_free_form_object_whatever_its_order(tmp_path: Path) -> None:
    extra = "  invocation_params: {temperature: 0, max_tokens: 5}\n"
    for rules in ("[version.labels, version.invocation_params.temperature]",
                  "[version.invocation_params.nothing, version.invocation_params.temperature, version.labels]"):
        text = PROMPT.format(rules=f"ignore_changes: {rules}\n", extra=extra).replace("declared", "d")
        plan = plan_of(tmp_path, text, prompt_live(invocation_params={"temperature": 0.7, "max_tokens": 5}))
        assert plan.operations == (), rules
        assert [path for _, path, *_ in listed(plan)] == ["version.invocation_params.temperature", "version.labels"]


def test_a_glob_inside_a_free_form_object_covers_every_key_it_matches(tmp_path: Path) -> None:
    extra = "  invocation_params: {a: {top_p: 1, n: 1}, b: {top_p: 1, n: 1}}\n"
    text = PROMPT.format(rules="ignore_changes: ['version.invocation_params.*.top_p', version.labels]\n",
                         extra=extra).replace("declared", "d")
    live = prompt_live(invocation_params={"a": {"top_p": 2, "n": 1}, "b": {"top_p": 3, "n": 1}})
    assert plan_of(tmp_path, text, live).operations == ()
    live = prompt_live(invocation_params={"a": {"top_p": 2, "n": 1}, "b": {"top_p": 3, "n": 2}})
    op = version_op(plan_of(tmp_path, text, live))
    assert op.body["invocation_params"] == {"a": {"top_p": 2, "n": 1}, "b": {"top_p": 3, "n": 1}}


def test_examples_a_rule_does_not_cover_are_managed(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, DATASET.format(rule="key"), dataset_live(1, 3))
    assert [(op.method, op.path) for op in plan.operations] == [
        ("PATCH", "/v2/datasets/RDox/examples"), ("POST", "/v2/datasets/RDox/examples"),
        ("DELETE", "/v2/datasets/RDox/examples")]
    assert listed(plan) == []


def test_resources_after_one_with_nothing_to_leave_are_still_planned(tmp_path: Path) -> None:
    text = PROMPT.format(rules="ignore_changes: [description]\n", extra="")
    text = text + "---\n" + text.replace("name: p", "name: q")
    plan = plan_of(tmp_path, text, state())
    assert [(op.method, op.name) for op in plan.operations if op.method == "POST"] == [("POST", "p"), ("POST", "q")]


def test_the_manifests_are_left_as_declared_for_the_next_plan(tmp_path: Path) -> None:
    """watch and apply's convergence check plan again from the same manifests: a value left as live for one
    plan must not become the declared value of the next."""
    text = PROMPT.format(rules="ignore_changes: [version.labels]\n", extra="").replace("declared", "d")
    (tmp_path / "t.yaml").write_text(text)
    tree = load_manifests(["t.yaml"])
    assert make_plan(tree, prompt_live()).operations == ()
    (create, labels) = make_plan(tree, state()).operations
    assert labels.body == {"labels": ["production", "staging"]}


def test_every_ownership_rule_is_checked_for_what_it_matches(tmp_path: Path) -> None:
    text = EVALUATOR.format(match="'Prompt/*'", fields="description").replace(
        "---\nkind: Integration", "  - match: ['Evaluator/*']\n    fields: [template_config.nothing]\n"
        "---\nkind: Integration", 1)
    plan = plan_of(tmp_path, text, evaluator_live(temperature=0, sampling={"top_p": 1, "top_k": 3}))
    assert plan.warnings == (
        "t.yaml:6: ignore_changes match ['Prompt/*'] matches no declared resource",
        "t.yaml:8: ignore_changes field 'template_config.nothing' matches no field the matched resources declare")


def test_a_field_left_out_for_one_plan_is_still_declared_for_the_next(tmp_path: Path) -> None:
    """apply plans again from the same manifests to confirm it converged (watch plans every cycle): a
    field the first plan left out as live lacks it must still be declared, so its rule still matches."""
    live = state({"id": "QUc6MQ", "type": "AGENT", "name": "agent", "scopings": [],
                  "config": {"endpoint": "https://a.example/run", "has_headers": False}})
    text = AGENT.format(rule="config.input_schema").replace("  auth: {auth_type: DEFAULT, role_arn: arn}\n", "")
    (tmp_path / "t.yaml").write_text(text)
    tree = load_manifests(["t.yaml"])
    first, again = make_plan(tree, live), make_plan(tree, live)
    assert (first.operations, first.warnings) == ((), ())
    assert (again.operations, again.warnings, len(again.ignored)) == ((), (), 1)


def test_a_rule_of_a_resource_built_without_sources_is_listed_without_a_place(tmp_path: Path) -> None:
    text = PROMPT.format(rules="ignore_changes: [description]\n", extra="")
    (tmp_path / "t.yaml").write_text(text)
    manifests = load_manifests(["t.yaml"])
    bare = replace(manifests, resources=tuple(replace(r, sources={}) for r in manifests.resources))
    plan = make_plan(bare, prompt_live())
    assert listed(plan) == [("Prompt/research/p", "description", "d", "declared", None)]
