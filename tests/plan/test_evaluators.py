"""Evaluators at their edges (reconciler/plan/evaluators.py), seen in the plan a user reads: a rename
and a description in one PATCH, the commit message of a new version, the integration shown by name
at the line that names it, and the warning when that integration is not visible from the space."""

from __future__ import annotations

import json
from typing import Any

from reconciler.model import (
    DesiredResource,
    EvaluatorObject,
    EvaluatorVersionObject,
    LiveEvaluator,
    LiveState,
    Source,
)
from reconciler.plan.planner import make_plan
from reconciler.plan.render import render_json, render_text
from tests.plan.helpers import DEFAULT, RESEARCH, live_llm, manifests, res, state
from tests.plan.test_lifecycle import plan_error

TC = {"name": "f", "template": "t", "llm_config": {"integration": "a", "model_name": "m"}}
LIVE_TC = {"name": "f", "template": "t", "llm_config": {"ai_integration_id": "A", "model_name": "m"}}
ORG = "T3JnOjE"

#: What an unknown space's error adds: the spaces there are, and how to make one.
SPACES = ("; the spaces are: default, research (create it in the platform first; the emulator: "
          "`reconciler emulator --space NAME`)")


def live_a(scopings: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {**live_llm("a", id="A", is_function_calling_enabled=True, has_api_key=True), "scopings": scopings or []}


def with_evaluator(live: LiveState, name: str = "ev", description: str | None = None,
                   template: dict[str, Any] | None = None, message: str = "c") -> LiveState:
    live.evaluators[(RESEARCH, name)] = LiveEvaluator(
        evaluator=EvaluatorObject.read({"id": "E1", "name": name, "description": description}),
        latest=EvaluatorVersionObject.read({"id": "V1", "commit_message": message, "template_config": template or LIVE_TC}))
    return live


def evaluator(name: str = "ev", space: str = "research", sources: dict[str, Source] | None = None,
              aliases: tuple[str, ...] = (), **spec: Any) -> DesiredResource:
    r = res("Evaluator", name, space, **{"template_config": TC, **spec})
    return DesiredResource(kind=r.kind, name=r.name, space=r.space, spec=r.spec, sources=sources or {},
                           aliases=aliases)


def test_a_renamed_evaluator_with_a_new_description_is_one_patch() -> None:
    live = with_evaluator(state(live_a()), name="old", description="was")
    plan = make_plan(manifests(evaluator("new", aliases=("old",), description="now", commit_message="c")), live)
    assert ("~ Evaluator/research/new\n"
            "    PATCH /v2/evaluators/E1\n"
            '      name: "old" -> "new"\n'
            '      description: "was" -> "now"\n') in render_text(plan)
    (op,) = plan.operations
    assert (op.id, op.body) == ("Evaluator/research/new#description", {"name": "new", "description": "now"})


def test_an_unchanged_description_is_not_sent() -> None:
    live = with_evaluator(state(live_a()), description="same")
    assert make_plan(manifests(evaluator(description="same", commit_message="c")), live).empty


def test_a_new_version_reusing_the_live_commit_message_says_so() -> None:
    live = with_evaluator(state(live_a()), template={**LIVE_TC, "template": "old"}, message="same")
    (op,) = make_plan(manifests(evaluator(commit_message="same")), live).operations
    assert op.note == ("new version; its commit_message is the live version's (reused): write a new one to tell the "
                       "versions apart")


def test_the_integration_is_shown_by_name_at_the_line_that_names_it() -> None:
    live = with_evaluator(state(live_a(), live_llm("b", id="B")))
    sources = {"": Source("ev.yaml", 1), "template_config": Source("ev.yaml", 3),
               "template_config.llm_config.integration": Source("ev.yaml", 6)}
    plan = make_plan(manifests(evaluator(sources=sources, commit_message="c2",
                                         template_config={**TC, "llm_config": {"integration": "b", "model_name": "m"}})),
                     live)
    (op,) = json.loads(render_json(plan))["operations"]
    assert op["changes"][0] == {"path": "template_config.llm_config.integration", "before": "a", "after": "b",
                                "source": "ev.yaml:6"}


def test_an_integration_id_written_in_the_manifest_points_at_its_own_line() -> None:
    live = with_evaluator(state(live_a(), live_llm("b", id="B")))
    sources = {"": Source("ev.yaml", 1), "template_config.llm_config": Source("ev.yaml", 5),
               "template_config.llm_config.ai_integration_id": Source("ev.yaml", 6)}
    tc = {**TC, "llm_config": {"ai_integration_id": "B", "model_name": "m"}}
    plan = make_plan(manifests(evaluator(sources=sources, commit_message="c2", template_config=tc)), live)
    (op,) = plan.operations
    assert [(c.path, c.before, c.after, c.source) for c in op.changes][0] == (
        "template_config.llm_config.integration", "a", "b", "ev.yaml:6")


def test_a_live_integration_id_that_no_longer_exists_is_shown_as_the_id() -> None:
    live = with_evaluator(state(live_a()), template={**LIVE_TC, "llm_config": {"ai_integration_id": "GONE",
                                                                               "model_name": "m"}})
    plan = make_plan(manifests(evaluator(commit_message="c2")), live)
    (op,) = json.loads(render_json(plan))["operations"]
    assert op["changes"][0] == {"path": "template_config.llm_config.integration", "before": "GONE", "after": "a",
                                "source": None}


def test_a_template_equal_to_an_integration_id_is_shown_as_written() -> None:
    live = with_evaluator(state(live_a()))
    (op,) = make_plan(manifests(evaluator(commit_message="c2", template_config={**TC, "template": "A"})),
                      live).operations
    assert [(c.path, c.before, c.after) for c in op.changes][0] == ("template_config.template", "t", "A")


def test_an_unknown_integration_is_an_error_at_the_line_that_names_it() -> None:
    r = evaluator(template_config={**TC, "llm_config": {"integration": "nope", "model_name": "m"}},
                  sources={"template_config.llm_config.integration": Source("ev.yaml", 6)})
    assert plan_error(manifests(r), state()) == (
        "cannot plan:\n  ev.yaml:6: Evaluator/research/ev: template_config.llm_config.integration: no LLM integration "
        "named 'nope' in the manifests or live")


# ------------------------------------------------------------------ visibility of the integration


def warnings(*resources: DesiredResource, live: LiveState | None = None) -> tuple[str, ...]:
    return make_plan(manifests(*resources), live or state()).warnings


def scoped(name: str, scopings: list[dict[str, Any]], **config: Any) -> DesiredResource:
    return res("Integration", name, type="LLM", scopings=scopings, config={"provider": "VENDOR_A", **config})


NOT_VISIBLE = ("Evaluator/research/ev: template_config.llm_config.integration: the LLM integration 'a' is scoped to "
               "{}, so it is not visible from space 'research': the API will refuse the evaluator (404)")


def test_an_integration_scoped_elsewhere_is_a_warning_naming_its_scopings_and_line() -> None:
    live = state(live_a([{"organization_id": ORG, "space_id": DEFAULT}, {"organization_id": "T3JnOjI"}]))
    r = evaluator(commit_message="c", sources={"template_config.llm_config.integration": Source("ev.yaml", 6)})
    assert warnings(r, live=live) == (
        NOT_VISIBLE.format("space 'default', organization 'T3JnOjI'") + " (ev.yaml:6)",)
    assert warnings(evaluator(commit_message="c"), live=live) == (
        NOT_VISIBLE.format("space 'default', organization 'T3JnOjI'"),)


def test_an_integration_scoped_to_the_space_or_its_organization_is_no_warning() -> None:
    for scopings in ([{"organization_id": ORG, "space_id": RESEARCH}], [{"organization_id": ORG, "space_id": None}]):
        assert warnings(evaluator(commit_message="c"), live=state(live_a(scopings))) == ()


def test_the_organization_of_the_evaluators_own_space_is_what_counts() -> None:
    live = state(live_a([{"organization_id": "T3JnOjI", "space_id": None}]))
    live.spaces = [live.spaces[0].model_copy(update={"organization_id": "T3JnOjI"}), live.spaces[1]]
    assert warnings(evaluator(commit_message="c"), live=live) == (NOT_VISIBLE.format("organization 'T3JnOjI'"),)


def test_the_scopings_the_same_plan_gives_the_integration_are_what_counts() -> None:
    narrowed = scoped("a", [{"space": "default"}])
    assert warnings(evaluator(commit_message="c"), narrowed) == (NOT_VISIBLE.format("space 'default'"),)
    live = state(live_a([{"organization_id": ORG, "space_id": DEFAULT}]))
    widened = scoped("a", [], is_function_calling_enabled=True)
    assert warnings(evaluator(commit_message="c"), widened, live=live) == ()


def test_scopings_of_another_integration_or_an_agent_of_the_same_name_do_not_count() -> None:
    other = scoped("b", [{"space": "default"}])
    assert warnings(evaluator(commit_message="c"), other, live=state(live_a())) == ()
    agent = res("Integration", "a", type="AGENT", scopings=[{"space": "default"}],
                config={"endpoint": "https://agent.example/run"})
    declared = scoped("a", [], is_function_calling_enabled=True)
    assert warnings(evaluator(commit_message="c"), declared, agent, live=state(live_a())) == ()


def test_a_new_version_naming_an_integration_created_by_the_same_plan_waits_for_it() -> None:
    live = with_evaluator(state(live_a()))
    tc = {**TC, "llm_config": {"integration": "n", "model_name": "m"}}
    plan = make_plan(manifests(evaluator(commit_message="c2", template_config=tc), scoped("n", [])), live)
    create, version = plan.operations
    assert (version.path, version.depends_on) == ("/v2/evaluators/E1/versions", (create.id,))
    assert version.body["template_config"]["llm_config"]["ai_integration_id"] == "${Integration/LLM/n#create:id}"
    assert [(c.path, c.before, c.after) for c in version.changes][0] == (
        "template_config.llm_config.integration", "a", "n")


def test_a_new_evaluator_with_a_description_shows_it_first() -> None:
    (op,) = make_plan(manifests(evaluator(description="judges tone", commit_message="c")), state(live_a())).operations
    assert op.body == {"space_id": RESEARCH, "name": "ev", "type": "template", "description": "judges tone",
                       "version": {"commit_message": "c", "template_config": {
                           "name": "f", "template": "t", "llm_config": {"ai_integration_id": "A", "model_name": "m"}}}}
    assert [(c.path, c.after) for c in op.changes][:3] == [
        ("description", "judges tone"), ("commit_message", "c"), ("template_config.name", "f")]


def test_every_evaluator_that_cannot_be_planned_is_named() -> None:
    unknown = {**TC, "llm_config": {"integration": "nope", "model_name": "m"}}
    assert plan_error(manifests(evaluator("a", "nowhere", commit_message="c"), evaluator("b", "elsewhere", commit_message="c"),
                                evaluator("c", template_config=unknown, commit_message="c"),
                                evaluator("d", template_config=unknown, commit_message="c")), state()) == (
        "cannot plan:\n"
        "  Evaluator/nowhere/a: space: no space named (or with the id) 'nowhere' exists" + SPACES + "\n"
        "  Evaluator/elsewhere/b: space: no space named (or with the id) 'elsewhere' exists" + SPACES + "\n"
        "  Evaluator/research/c: template_config.llm_config.integration: no LLM integration named 'nope' in the "
        "manifests or live\n"
        "  Evaluator/research/d: template_config.llm_config.integration: no LLM integration named 'nope' in the "
        "manifests or live")
