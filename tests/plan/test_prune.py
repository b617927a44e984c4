"""Prune where it meets --exclude and protect (reconciler/plan/prune.py): what --exclude names is
neither listed nor pruned, in either address form; a protected resource counts as kept, so pruning
the rest of a space is not refused as emptying it."""

from __future__ import annotations

import json

from reconciler.model import Ownership
from reconciler.plan.model import PlanOptions
from reconciler.plan.planner import make_plan
from reconciler.plan.render import render_json, render_text
from tests.plan.helpers import RESEARCH, manifests, res, state
from tests.plan.test_lifecycle import VERSION, evaluator, plan_error, prompt

OWNER = Ownership("team", spaces=("research",), protect=("Prompt/keep",))


def live_prompts(*names: str):  # type: ignore[no-untyped-def]
    live = state()
    for name in names:
        live.prompts[(RESEARCH, name)] = prompt(RESEARCH, name)
    return live


def test_excluded_resources_are_neither_listed_nor_pruned() -> None:
    tree = manifests(res("Prompt", "p", "research", version=VERSION), ownership=OWNER)
    live = live_prompts("a", "b", "c")
    plan = make_plan(tree, live, PlanOptions(excludes=("Prompt/a", "Prompt/research/b")))
    assert [u.address for u in plan.unmanaged] == ["Prompt/research/c"]
    plan = make_plan(tree, live, PlanOptions(prune=True, excludes=("Prompt/a", "Prompt/research/b")))
    assert [op.address for op in plan.operations if op.method == "DELETE"] == ["Prompt/research/c"]


def test_a_protected_resource_counts_as_kept_when_the_rest_of_its_space_is_pruned() -> None:
    tree = manifests(res("Prompt", "p", "research", version=VERSION), ownership=OWNER)
    plan = make_plan(tree, live_prompts("keep", "drop"), PlanOptions(prune=True))
    assert [op.address for op in plan.operations if op.method == "DELETE"] == ["Prompt/research/drop"]
    assert plan.warnings == ("Prompt/research/keep: kept, not deleted by --prune: protected (Ownership team: "
                             "protect Prompt/keep)",)


def test_a_prune_without_ownership_says_so_in_text_and_json() -> None:
    live = live_prompts("p", "drop")
    plan = make_plan(manifests(res("Prompt", "p", "research", version=VERSION)), live, PlanOptions(prune=True))
    assert ("- Prompt/research/drop\n"
            "    DELETE /v2/prompts/P-drop  (not declared (--prune))\n"
            '      (resource) = "drop" -> null\n') in render_text(plan)
    (delete,) = [op for op in json.loads(render_json(plan))["operations"] if op["method"] == "DELETE"]
    assert delete["changes"] == [{"path": "", "before": "drop", "after": None, "source": None}]


def test_every_kind_a_prune_would_empty_is_named() -> None:
    live = live_prompts("a")
    live.evaluators[(RESEARCH, "e")] = evaluator(RESEARCH, "e")
    tree = manifests(res("Dataset", "d", "research", examples=[{"q": 1}]),
                     ownership=Ownership("team", spaces=("research",)))
    message = plan_error(tree, live, PlanOptions(prune=True))
    assert message == ("cannot plan:\n"
                       "  --prune would delete every live Evaluator in space research (1); pass --allow-empty if "
                       "that is intended\n"
                       "  --prune would delete every live Prompt in space research (1); pass --allow-empty if that "
                       "is intended")
