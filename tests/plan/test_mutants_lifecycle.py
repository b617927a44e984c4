"""Renames and protect globs where resources of several kinds meet (reconciler/plan/lifecycle.py):
every aliased resource of a tree is renamed whatever comes before it, an evaluator is found under
its alias, and a ``KIND/SPACE/NAME`` protect glob keeps exactly the resources of that space."""

from __future__ import annotations

import pytest

from reconciler.model import ExperimentObject, Ownership
from reconciler.plan.model import PlanOptions
from reconciler.plan.planner import make_plan
from reconciler.plan.render import render_text
from tests.plan.helpers import RESEARCH, key, live_llm, llm, manifests, res, state
from tests.plan.test_lifecycle import VERSION, aliased, dataset, evaluator, plan_error, prompt, synced

TC = {"name": "f", "template": "t", "llm_config": {"integration": "judge", "model_name": "m"},
      "classification_choices": {"a": 1}}


def test_every_aliased_resource_is_renamed_after_a_plain_one() -> None:
    live = state(synced("old", "I1"), synced("judge", "I2"))
    live.evaluators[(RESEARCH, "ev-old")] = evaluator(RESEARCH, "ev-old")
    plan = make_plan(manifests(llm("judge", api_key=key(), is_function_calling_enabled=True),
                               aliased(llm("new", api_key=key(), is_function_calling_enabled=True), "old"),
                               aliased(res("Evaluator", "ev", "research", commit_message="c", template_config=TC),
                                       "ev-old")), live)
    assert [(op.method, op.path) for op in plan.operations if op.method != "POST"] == [
        ("PATCH", "/v2/integrations/I1"), ("PATCH", "/v2/evaluators/E-ev-old")]
    assert not any(op.method == "POST" and op.path == "/v2/evaluators" for op in plan.operations)


def test_an_unknown_space_does_not_stop_the_renames_after_it() -> None:
    live = state()
    live.datasets[(RESEARCH, "d")] = dataset(RESEARCH, "d")
    live.datasets[(RESEARCH, "d-old")] = dataset(RESEARCH, "d-old")
    message = plan_error(manifests(aliased(res("Dataset", "x", "nowhere", examples=[]), "x-old"),
                                   aliased(res("Dataset", "d", "research", examples=[]), "d-old")), live)
    assert "Dataset/nowhere/x: space: no space named (or with the id) 'nowhere' exists" in message
    assert "Dataset/research/d: aliases: both d (D-d) and its alias d-old (D-d-old) exist live" in message


def test_a_protect_glob_with_a_space_keeps_only_that_space_s_matches() -> None:
    live = state()
    for space in (RESEARCH, "U3BhY2U6MQ"):
        for name in ("keep-1", "drop"):
            live.prompts[(space, name)] = prompt(space, name)
    owner = Ownership("team", spaces=("research", "default"), protect=("Prompt/research/keep*",))
    plan = make_plan(manifests(res("Prompt", "p", "research", version=VERSION), ownership=owner), live,
                     PlanOptions(prune=True, allow_empty=True))
    assert sorted(op.address for op in plan.operations if op.method == "DELETE") == [
        "Prompt/default/drop", "Prompt/default/keep-1", "Prompt/research/drop"]
    assert ("Prompt/research/keep-1: kept, not deleted by --prune: protected (Ownership team: protect "
            "Prompt/research/keep*)") in plan.warnings
    assert "Prompt/research/keep-1" not in render_text(plan).split("Warning:")[0]


def test_alias_errors_name_the_aliases_field() -> None:
    live = state(synced("a", "I1"), synced("b", "I2"))
    assert plan_error(manifests(aliased(llm("new", api_key=key()), "a", "b")), live) == (
        "cannot plan:\n  Integration/new: aliases: several aliases exist live: a (I1), b (I2); only one can become new")


def test_a_saved_plan_of_a_rename_goes_stale_when_the_old_object_changes() -> None:
    tree = manifests(aliased(llm("new", api_key=key(), is_function_calling_enabled=True), "old"))
    before = make_plan(tree, state(synced("old", "I1"))).fingerprints["Integration/new"]
    moved = live_llm("old", id="I1", is_function_calling_enabled=False, has_api_key=True)
    assert make_plan(tree, state(moved)).fingerprints["Integration/new"] != before


def test_replacing_a_protected_integration_says_why_once() -> None:
    live = state(live_llm("p", provider="VENDOR_A", id="I1", has_api_key=True))
    message = plan_error(manifests(aliased(llm("p", provider="VENDOR_B", api_key=key()), protect=True)), live,
                         PlanOptions(allow_replace=True))
    assert message == ("cannot plan:\n  Integration/p is protected (Integration/p): the plan would replace it "
                       "(replace: provider VENDOR_A -> VENDOR_B); change it back, or remove the protection "
                       "first")


@pytest.mark.parametrize("glob", ["Dataset/d", "Dataset/research/d"])
def test_a_protect_glob_on_a_dataset_keeps_its_experiments(glob: str) -> None:
    live = state()
    exps = [ExperimentObject.read({"id": f"X{i}", "name": f"e{i}", "created_at": f"2026-0{i}-01T00:00:00Z"}) for i in (1, 2)]
    live.datasets[(RESEARCH, "d")] = dataset(RESEARCH, "d", exps)
    owner = Ownership("team", spaces=("research",), protect=(glob,))
    d = res("Dataset", "d", "research", examples=[], experiment_retention={"keep_last": 1})
    plan = make_plan(manifests(d, ownership=owner), live)
    assert plan.operations == ()
    assert plan.warnings == ("Experiment/research/d/e1 (X1): kept, not deleted by retention: Dataset/research/d is "
                             f"protected (Ownership team: protect {glob})",)
