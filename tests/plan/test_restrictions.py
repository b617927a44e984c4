"""A read-only key sees no restriction (reconciler/plan/restrictions.py): when the tree was applied
before (any of its resources exists live, whatever its kind) and declares a restriction, the plan
leaves restrictions out with one warning naming them; in a fresh account, or for a tree that only
says ``restricted: false``, it compares (and creates) them."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.errors import PlanError
from reconciler.manifests import load_manifests
from reconciler.model import (
    DatasetObject,
    EvaluatorObject,
    EvaluatorVersionObject,
    LiveDataset,
    LiveEvaluator,
    LiveIntegration,
    LiveState,
    RestrictionObject,
)
from reconciler.plan.model import PlanOptions
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
        s.datasets[(RESEARCH, "d")] = LiveDataset(dataset=DatasetObject.read({"id": "RDox", "name": "d", "space_id": RESEARCH}),
                                                  examples=[], experiments=[])
    if which == "evaluator":
        s.evaluators[(RESEARCH, "ev")] = LiveEvaluator(evaluator=EvaluatorObject.read({"id": "RXY6MQ", "name": "ev", "description": None}),
                                                       latest=EvaluatorVersionObject.read({"id": "RVY6MQ", "template_config": TC}))
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


def test_only_live_prompts_that_declare_restricted_are_named() -> None:
    unrestricted = res("Prompt", "p", "research", version=VERSION)  # says nothing about restricted
    plan = make_plan(manifests(DASH, unrestricted), live_with("prompt"))
    assert WARNING.format("ResourceRestriction/dash") in plan.warnings
    not_live = res("Prompt", "new", "research", restricted=True, version=VERSION)
    plan = make_plan(manifests(DASH, not_live, llm("judge", api_key=key())), live_with("llm"))
    assert WARNING.format("ResourceRestriction/dash") in plan.warnings


def test_apply_compares_restrictions_whatever_the_list_shows() -> None:
    plan = make_plan(manifests(DASH, llm("judge", api_key=key())), live_with("llm"),
                     PlanOptions(restrictions="compare"))
    assert not plan.warnings and plan.options.restrictions == "compare"
    assert [op.path for op in plan.operations if op.kind == "ResourceRestriction"] == ["/v2/resource-restrictions"]


def test_a_plan_that_skipped_restrictions_names_them_even_in_a_fresh_account() -> None:
    plan = make_plan(manifests(DASH), state(), PlanOptions(restrictions="skip"))
    assert plan.warnings == (WARNING.format("ResourceRestriction/dash"),)
    assert plan.operations == () and plan.options.restrictions == "skip"


def test_a_restriction_of_a_prompt_declared_unrestricted_names_both_lines(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("t.yaml").write_text("""\
kind: Prompt
space: research
name: p
restricted: false
version: {commit_message: v1, provider: VENDOR_A, model: m, messages: [{role: user, content: "{q}"}]}
---
kind: ResourceRestriction
name: pr
resource_type: PROMPT
resource_id: UHI6MQ
""")
    live = live_with("prompt")
    live.restrictions[("PROJECT", "UHJvajo5")] = RestrictionObject.model_validate(
        {"resource_type": "PROJECT", "resource_id": "UHJvajo5", "created_at": "2026-01-01T00:00:00Z"})
    with pytest.raises(PlanError) as err:
        make_plan(load_manifests(["t.yaml"]), live)
    assert str(err.value) == (
        "cannot plan:\n  t.yaml:10: ResourceRestriction/pr: resource_id: UHI6MQ is the id of Prompt/research/p, "
        "whose manifest says restricted: false (t.yaml:4); declare the restriction in one place")


def seen(*restrictions: tuple[str, str]) -> LiveState:
    """The live prompt p (UHI6MQ) and restrictions a key that manages them sees."""
    s = live_with("prompt")
    for rtype, rid in (("PROJECT", "UHJvajo5"), *restrictions):
        s.restrictions[(rtype, rid)] = RestrictionObject.model_validate(
            {"resource_type": rtype, "resource_id": rid, "created_at": "2026-01-01T00:00:00Z"})
    return s


def test_a_conflict_without_recorded_lines_is_said_without_them_and_others_are_still_planned() -> None:
    pr = res("ResourceRestriction", "pr", resource_type="PROMPT", resource_id="UHI6MQ")
    p = res("Prompt", "p", "research", restricted=False, version=VERSION)
    pr2 = res("ResourceRestriction", "pr2", resource_type="PROMPT", resource_id="UHI6MQ")
    with pytest.raises(PlanError) as err:
        make_plan(manifests(pr, pr2, p), seen())
    assert str(err.value) == "cannot plan:\n" + "\n".join(
        f"  ResourceRestriction/{n}: resource_id: UHI6MQ is the id of Prompt/research/p, whose manifest says "
        "restricted: false; declare the restriction in one place" for n in ("pr", "pr2"))
    plan = make_plan(manifests(DASH, p), seen())  # without the conflict the other restriction is created
    assert [op.path for op in plan.operations] == ["/v2/resource-restrictions"]


def test_a_restricted_prompt_and_its_restriction_declared_both_agree() -> None:
    pr = res("ResourceRestriction", "pr", resource_type="PROMPT", resource_id="UHI6MQ")
    p = res("Prompt", "p", "research", restricted=True, version=VERSION)
    assert make_plan(manifests(pr, p), seen(("PROMPT", "UHI6MQ"))).operations == ()


def test_a_restriction_already_there_is_no_change_and_another_type_is_a_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert make_plan(manifests(DASH), seen(("DASHBOARD", "RGFzaDox"))).empty
    plan = make_plan(manifests(DASH), seen(("PROJECT", "RGFzaDox")))
    assert plan.empty and plan.warnings == ("ResourceRestriction/dash: resource_type is DASHBOARD, but the service "
                                            "reports RGFzaDox as a PROJECT, and it is restricted",)
    monkeypatch.chdir(tmp_path)
    Path("r.yaml").write_text("kind: ResourceRestriction\nname: dash\nresource_type: DASHBOARD\n"
                              "resource_id: RGFzaDox\n")
    plan = make_plan(load_manifests(["r.yaml"]), seen(("PROJECT", "RGFzaDox")))
    assert plan.warnings == ("ResourceRestriction/dash: resource_type is DASHBOARD, but the service reports "
                             "RGFzaDox as a PROJECT, and it is restricted (r.yaml:3)",)


def test_a_conflict_is_found_whatever_prompts_come_before_the_unrestricted_one() -> None:
    """Prompts that say nothing of restriction, or are restricted, come first in the tree: the one that
    says ``restricted: false`` is still the one a restriction of its id contradicts."""
    pr = res("ResourceRestriction", "pr", resource_type="PROMPT", resource_id="UHI6MQ")
    quiet = res("Prompt", "q", "research", version=VERSION)
    restricted = res("Prompt", "r", "research", restricted=True, version=VERSION)
    p = res("Prompt", "p", "research", restricted=False, version=VERSION)
    with pytest.raises(PlanError) as err:
        make_plan(manifests(quiet, restricted, pr, p), seen())
    assert str(err.value) == (
        "cannot plan:\n  ResourceRestriction/pr: resource_id: UHI6MQ is the id of Prompt/research/p, whose manifest "
        "says restricted: false; declare the restriction in one place")
