"""``--target`` and ``--exclude`` through make_plan (reconciler/plan/select.py): which resources a
plan carries, an evaluator's LLM integration pulled in (an AGENT of the same name is not), the
typo hint, and the refusal when an exclusion leaves out an integration a kept evaluator needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.errors import PlanError
from reconciler.manifests import load_manifests
from reconciler.plan.model import PlanOptions
from reconciler.plan.planner import make_plan
from tests.plan.helpers import key, live_llm, llm, manifests, res, state
from tests.plan.test_kinds_plan import VERSION

TC = {"name": "f", "template": "t", "llm_config": {"integration": "judge", "model_name": "m"}}
AGENT = res("Integration", "judge", type="AGENT", config={"endpoint": "https://a.example/run"})


def tree():  # type: ignore[no-untyped-def]
    return manifests(
        res("Prompt", "p", "research", version=VERSION),
        AGENT,
        llm("judge", api_key=key()),
        llm("other", api_key=key()),
        res("Evaluator", "ev", "research", commit_message="c", template_config=TC),
        res("Evaluator", "ev2", "research", commit_message="c", template_config=TC))


def planned(**options: tuple[str, ...]) -> list[str]:
    plan = make_plan(tree(), state(), PlanOptions(**options))  # type: ignore[arg-type]
    return sorted({f"{op.kind}/{op.name}" for op in plan.operations})


def test_a_target_by_kind_and_name_keeps_a_spaced_resource_and_only_it() -> None:
    assert planned(targets=("Prompt/p",)) == ["Prompt/p"]
    assert planned(targets=("Prompt/research/p",)) == ["Prompt/p"]


def test_a_targeted_evaluator_brings_its_llm_integration_not_an_agent_of_that_name() -> None:
    plan = make_plan(tree(), state(), PlanOptions(targets=("Evaluator/research/ev",)))
    assert sorted({(op.kind, op.name, op.path) for op in plan.operations}) == [
        ("Evaluator", "ev", "/v2/evaluators"), ("Integration", "judge", "/v2/integrations")]
    (create,) = [op for op in plan.operations if op.kind == "Integration"]
    assert create.body["type"] == "LLM"


def test_a_target_naming_nothing_says_which_with_the_closest_address() -> None:
    with pytest.raises(PlanError) as err:
        planned(targets=("Prompt/research/pp", "Zzz/qqq", "Prompt/p"))
    assert str(err.value) == ("--target names nothing in the manifests: "
                              "Prompt/research/pp (did you mean Prompt/research/p?), Zzz/qqq")


def test_exclude_leaves_out_what_it_names() -> None:
    assert planned(excludes=("Evaluator/*", "Prompt/p")) == ["Integration/judge", "Integration/other"]
    assert planned(excludes=("*/ev*",)) == ["Integration/judge", "Integration/other", "Prompt/p"]


def test_excluding_an_agent_or_a_live_integration_keeps_the_evaluators() -> None:
    agent_only = manifests(AGENT, res("Evaluator", "ev", "research", commit_message="c", template_config=TC))
    with pytest.raises(PlanError) as err:  # the planner's own refusal: excluding an AGENT leaves no LLM out
        make_plan(agent_only, state(), PlanOptions(excludes=("Integration/*",)))
    assert "no LLM integration named 'judge' in the manifests or live" in str(err.value)
    live = state(live_llm("judge", has_api_key=True))
    plan = make_plan(tree(), live, PlanOptions(excludes=("Integration/judge",)))
    assert {op.name for op in plan.operations if op.kind == "Evaluator"} == {"ev", "ev2"}


def test_excluding_an_llm_integration_a_kept_evaluator_needs_is_refused(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("t.yaml").write_text("""\
kind: Integration
name: judge
type: LLM
config: {provider: VENDOR_A, api_key: {env: K}}
---
kind: Evaluator
space: research
name: ev
commit_message: c
template_config:
  name: f
  template: t
  classification_choices: {a: 1}
  llm_config:
    integration: judge
    model_name: m
""")
    with pytest.raises(PlanError) as err:
        make_plan(load_manifests(["t.yaml"]), state(), PlanOptions(excludes=("Integration/judge",)))
    assert str(err.value) == (
        "cannot plan:\n  Evaluator/research/ev needs Integration/judge created first, and --exclude leaves it out"
        " (t.yaml:15); exclude Evaluator/research/ev too, or keep Integration/judge")


def test_every_evaluator_left_without_its_integration_is_named() -> None:
    with pytest.raises(PlanError) as err:
        make_plan(tree(), state(), PlanOptions(excludes=("Integration/judge",)))
    assert str(err.value) == (
        "cannot plan:\n"
        "  Evaluator/research/ev needs Integration/judge created first, and --exclude leaves it out; "
        "exclude Evaluator/research/ev too, or keep Integration/judge\n"
        "  Evaluator/research/ev2 needs Integration/judge created first, and --exclude leaves it out; "
        "exclude Evaluator/research/ev2 too, or keep Integration/judge")
