"""Renames and protect globs where resources of several kinds meet (reconciler/plan/lifecycle.py):
every aliased resource of a tree is renamed whatever comes before it, an evaluator is found under
its alias, and a ``KIND/SPACE/NAME`` protect glob keeps exactly the resources of that space."""

from __future__ import annotations

from reconciler.model import Ownership
from reconciler.plan.model import PlanOptions
from reconciler.plan.planner import make_plan
from reconciler.plan.render import render_text
from tests.plan.helpers import RESEARCH, key, llm, manifests, res, state
from tests.plan.test_lifecycle_edges import VERSION, aliased, dataset, evaluator, plan_error, prompt, synced

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
