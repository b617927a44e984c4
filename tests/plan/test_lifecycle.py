"""Renames, protection, prune and ownership where they meet, seen in the plan: which calls it makes,
what it lists as unmanaged, and the exact warning or error a user reads."""

from __future__ import annotations

import pytest

from reconciler.errors import PlanError
from reconciler.model import (
    DatasetObject,
    DesiredResource,
    EvaluatorObject,
    ExperimentObject,
    LiveDataset,
    LiveEvaluator,
    LivePrompt,
    Ownership,
    PromptObject,
    RestrictionObject,
    Source,
)
from reconciler.plan.model import PlanOptions
from reconciler.plan.planner import make_plan
from reconciler.plan.render import render_text
from tests.plan.helpers import DEFAULT, OWN_ALL, RESEARCH, key, live_llm, llm, manifests, res, state

PRUNE = PlanOptions(prune=True)
PRUNE_ALL = PlanOptions(prune=True, allow_empty=True)
VERSION = {"commit_message": "v1", "provider": "VENDOR_A", "model": "m",
           "messages": [{"role": "user", "content": "{q}"}]}


def synced(name: str, id: str) -> dict[str, object]:
    return live_llm(name, id=id, is_function_calling_enabled=True, has_api_key=True)


def aliased(r: DesiredResource, *aliases: str, protect: bool = False,
            sources: dict[str, Source] | None = None) -> DesiredResource:
    return DesiredResource(kind=r.kind, name=r.name, spec=r.spec, space=r.space, aliases=aliases, protect=protect,
                           sources=sources or {})


def prompt(space: str, name: str) -> LivePrompt:
    return LivePrompt(prompt=PromptObject.read({"id": f"P-{name}", "name": name, "space_id": space}), latest=None, labels={})


def dataset(space: str, name: str, experiments: list[dict[str, str]] | None = None) -> LiveDataset:
    return LiveDataset(dataset=DatasetObject.read({"id": f"D-{name}", "name": name, "space_id": space}), examples=[],
                       experiments=experiments)


def evaluator(space: str, name: str) -> LiveEvaluator:
    return LiveEvaluator(evaluator=EvaluatorObject.read({"id": f"E-{name}", "name": name, "description": None}), latest=None)


def plan_error(*args: object) -> str:
    with pytest.raises(PlanError) as caught:
        make_plan(*args)  # type: ignore[arg-type]
    return str(caught.value)


# ---------------------------------------------------------------------- renames


def test_an_integration_found_under_its_alias_is_renamed_by_one_patch_keeping_its_id() -> None:
    live = state(synced("old", "I1"))
    plan = make_plan(manifests(aliased(llm("new", api_key=key(), is_function_calling_enabled=True), "gone", "old")),
                     live)
    (op,) = plan.operations
    assert (op.action, op.method, op.path) == ("update", "PATCH", "/v2/integrations/I1")
    assert op.body == {"type": "LLM", "name": "new"}
    assert live.integrations.keys() == {("LLM", "old")}  # the live state read is left as it was


def test_a_dataset_found_under_its_alias_in_its_space_is_renamed_in_place() -> None:
    live = state()
    live.datasets[(RESEARCH, "old")] = dataset(RESEARCH, "old")
    plan = make_plan(manifests(aliased(res("Dataset", "new", "research", examples=[]), "old")), live)
    assert [(op.method, op.path, op.body) for op in plan.operations] == [
        ("PATCH", "/v2/datasets/D-old", {"name": "new"})]


def test_an_evaluator_alias_in_another_space_is_not_a_rename() -> None:
    live = state()
    live.evaluators[(DEFAULT, "old")] = evaluator(DEFAULT, "old")
    tc = {"name": "f", "template": "t", "llm_config": {"ai_integration_id": "X", "model_name": "m"}}
    plan = make_plan(manifests(aliased(res("Evaluator", "new", "research", commit_message="c", template_config=tc),
                                       "old")), live)
    assert [op.method for op in plan.operations] == ["POST"]


def test_an_alias_in_a_space_that_does_not_exist_leaves_the_error_to_the_planner() -> None:
    message = plan_error(manifests(aliased(res("Dataset", "new", "nowhere", examples=[]), "old")), state())
    assert "nowhere" in message and "alias" not in message


def test_a_live_resource_under_both_its_name_and_an_alias_is_an_error_naming_both_ids() -> None:
    live = state(synced("new", "I1"), synced("old", "I2"))
    message = plan_error(manifests(aliased(llm("new", api_key=key()), "old")), live)
    assert "both new (I1) and its alias old (I2) exist live: delete or rename one of them first" in message


def test_two_aliases_found_live_is_an_error_listing_each_with_its_id() -> None:
    live = state(synced("a", "I1"), synced("b", "I2"))
    message = plan_error(manifests(aliased(llm("new", api_key=key()), "a", "b")), live)
    assert "several aliases exist live: a (I1), b (I2); only one can become new" in message


def test_an_alias_of_an_agent_integration_does_not_match_an_llm_of_that_name() -> None:
    live = state(synced("old", "I1"))
    agent = res("Integration", "new", type="AGENT", config={"endpoint": "https://a.example.com"})
    plan = make_plan(manifests(aliased(agent, "old")), live)
    assert [(op.method, op.path) for op in plan.operations] == [("POST", "/v2/integrations")]


# ---------------------------------------------------------------------- protection


def test_a_protected_resource_is_kept_by_prune_with_a_warning_naming_where_the_protection_is() -> None:
    live = state(synced("kept", "I1"), synced("mine", "I2"))
    own = Ownership("team", integrations=("*",), protect=("Integration/kept",),
                    sources={"protect.0": Source("own.yaml", 7, 5)})
    plan = make_plan(manifests(llm("mine", api_key=key(), is_function_calling_enabled=True), ownership=own),
                     live, PRUNE)
    assert plan.operations == ()
    assert "Integration/kept: kept, not deleted by --prune: protected (own.yaml:7)" in plan.warnings


def test_a_protect_glob_without_a_recorded_line_names_the_ownership_and_the_glob() -> None:
    live = state(synced("kept-1", "I1"), synced("mine", "I2"))
    own = Ownership("team", integrations=("*",), protect=("Integration/kept-*",))
    plan = make_plan(manifests(llm("mine", api_key=key(), is_function_calling_enabled=True), ownership=own),
                     live, PRUNE)
    assert plan.warnings == ("Integration/kept-1: kept, not deleted by --prune: protected "
                             "(Ownership team: protect Integration/kept-*)",)


def test_a_protect_glob_on_kind_and_name_covers_a_resource_in_any_space() -> None:
    live = state()
    live.prompts[(RESEARCH, "keep")] = prompt(RESEARCH, "keep")
    live.prompts[(RESEARCH, "stray")] = prompt(RESEARCH, "stray")
    live.prompts[(RESEARCH, "p")] = prompt(RESEARCH, "p")
    own = Ownership("team", spaces=("research",), protect=("Prompt/keep",))
    plan = make_plan(manifests(res("Prompt", "p", "research", version=VERSION), ownership=own), live, PRUNE)
    assert [op.path for op in plan.operations if op.action == "delete"] == ["/v2/prompts/P-stray"]
    assert "Prompt/research/keep: kept, not deleted by --prune: protected (Ownership team: protect Prompt/keep)" \
        in plan.warnings


def test_an_unprotected_resource_is_deleted_by_prune_when_globs_match_others() -> None:
    live = state(synced("x", "I1"), synced("mine", "I2"))
    own = Ownership("team", integrations=("*",), protect=("Integration/y*", "Prompt/x"))
    plan = make_plan(manifests(llm("mine", api_key=key(), is_function_calling_enabled=True), ownership=own),
                     live, PRUNE)
    assert [(op.action, op.path) for op in plan.operations] == [("delete", "/v2/integrations/I1")]
    assert plan.warnings == ()


def test_replacing_a_protected_integration_is_refused_naming_the_line_that_protects_it() -> None:
    live = state(live_llm("p", provider="VENDOR_A", id="I1", has_api_key=True))
    r = aliased(llm("p", provider="VENDOR_B", api_key=key()), protect=True, sources={"protect": Source("i.yaml", 4, 3)})
    message = plan_error(manifests(r), live, PlanOptions(allow_replace=True))
    assert "Integration/p is protected (i.yaml:4): the plan would replace it (" in message
    assert "change it back, or remove the protection first" in message


def test_a_protected_resource_without_a_recorded_line_is_named_by_its_address() -> None:
    live = state(live_llm("p", provider="VENDOR_A", id="I1", has_api_key=True))
    message = plan_error(manifests(aliased(llm("p", provider="VENDOR_B", api_key=key()), protect=True)), live,
                         PlanOptions(allow_replace=True))
    assert "Integration/p is protected (Integration/p): the plan would replace it" in message


def test_a_protected_dataset_keeps_the_experiments_retention_would_delete() -> None:
    live = state()
    exps = [ExperimentObject.read({"id": f"X{i}", "name": f"e{i}", "created_at": f"2026-0{i}-01T00:00:00Z"}) for i in (1, 2)]
    live.datasets[(RESEARCH, "d")] = dataset(RESEARCH, "d", exps)
    d = aliased(res("Dataset", "d", "research", examples=[], experiment_retention={"keep_last": 1}), protect=True)
    plan = make_plan(manifests(d), live)
    assert plan.operations == ()
    assert plan.warnings == ("Experiment/research/d/e1 (X1): kept, not deleted by retention: Dataset/research/d is "
                             "protected (Dataset/research/d)",)


def test_protection_does_not_stop_an_update() -> None:
    live = state(live_llm("p", id="I1", has_api_key=True, is_function_calling_enabled=False))
    r = aliased(llm("p", api_key=key(), is_function_calling_enabled=True), protect=True)
    (op,) = make_plan(manifests(r), live).operations
    assert (op.action, op.method) == ("update", "PATCH")


# ---------------------------------------------------------------------- prune and ownership


def test_without_prune_the_undeclared_resources_are_listed_in_prune_order_and_nothing_is_deleted() -> None:
    live = state(synced("stray", "I9"), synced("mine", "I1"),
                 restrictions={("PROJECT", "PJ1"): RestrictionObject.read({"resource_type": "PROJECT", "resource_id": "PJ1"}),
                               ("PROMPT", "P-x"): RestrictionObject.read({"resource_type": "PROMPT", "resource_id": "P-x"})})
    live.prompts[(RESEARCH, "x")] = prompt(RESEARCH, "x")
    live.datasets[(RESEARCH, "dx")] = dataset(RESEARCH, "dx")
    live.evaluators[(RESEARCH, "ex")] = evaluator(RESEARCH, "ex")
    live.prompts[(DEFAULT, "elsewhere")] = prompt(DEFAULT, "elsewhere")
    plan = make_plan(manifests(llm("mine", api_key=key(), is_function_calling_enabled=True), ownership=OWN_ALL),
                     live)
    assert plan.operations == ()
    assert [(u.address, u.path) for u in plan.unmanaged] == [
        ("ResourceRestriction/PROJECT/PJ1", "/v2/resource-restrictions/PJ1"),
        ("Evaluator/research/ex", "/v2/evaluators/E-ex"),
        ("Prompt/research/x", "/v2/prompts/P-x"),
        ("Dataset/research/dx", "/v2/datasets/D-dx"),
        ("Integration/stray", "/v2/integrations/I9")]
    assert plan.owner == "all"


def test_prune_deletes_in_prune_order_with_the_reason_on_each_call() -> None:
    live = state(synced("stray", "I9"), synced("mine", "I1"),
                 restrictions={("DASHBOARD", "DB1"): RestrictionObject.read({"resource_type": "DASHBOARD", "resource_id": "DB1"}),
                               ("PROJECT", "PJ1"): RestrictionObject.read({"resource_type": "PROJECT", "resource_id": "PJ1"})})
    live.prompts[(RESEARCH, "x")] = prompt(RESEARCH, "x")
    live.prompts[(RESEARCH, "p")] = prompt(RESEARCH, "p")
    own = Ownership("t", spaces=("research",), integrations=("*",), resource_restrictions=("DASHBOARD/*",))
    desired = manifests(llm("mine", api_key=key(), is_function_calling_enabled=True),
                        res("Prompt", "p", "research", version=VERSION), ownership=own)
    plan = make_plan(desired, live, PRUNE)
    deletes = [op for op in plan.operations if op.action == "delete"]
    assert [(op.kind, op.method, op.path, op.note) for op in deletes] == [
        ("ResourceRestriction", "DELETE", "/v2/resource-restrictions/DB1", "not declared, inside the ownership of t: --prune"),
        ("Prompt", "DELETE", "/v2/prompts/P-x", "not declared, inside the ownership of t: --prune"),
        ("Integration", "DELETE", "/v2/integrations/I9", "not declared, inside the ownership of t: --prune")]
    assert deletes[1].id == "Prompt/research/x#prune" and deletes[1].space == "research"
    assert plan.unmanaged == ()
    assert "- ResourceRestriction/DASHBOARD/DB1" in render_text(plan)


def test_prune_refuses_to_delete_every_integration_of_the_account_unless_allowed() -> None:
    live = state(synced("a", "I1"), synced("b", "I2"))
    desired = manifests(res("Prompt", "p", "research", version=VERSION), ownership=OWN_ALL)
    live.prompts[(RESEARCH, "p")] = prompt(RESEARCH, "p")
    message = plan_error(desired, live, PRUNE)
    assert "--prune would delete every live Integration in the account (2); pass --allow-empty if that is " \
           "intended" in message
    assert [op.path for op in make_plan(desired, live, PRUNE_ALL).operations if op.action == "delete"] == [
        "/v2/integrations/I1", "/v2/integrations/I2"]


def test_prune_refuses_to_delete_every_project_restriction_but_not_only_some() -> None:
    restrictions = {("PROJECT", "A"): RestrictionObject(resource_type="PROJECT", resource_id="A"),
                    ("PROJECT", "B"): RestrictionObject(resource_type="PROJECT", resource_id="B"),
                    ("PROMPT", "C"): RestrictionObject(resource_type="PROMPT", resource_id="C")}
    desired = manifests(llm("mine", api_key=key(), is_function_calling_enabled=True), ownership=OWN_ALL)
    message = plan_error(desired, state(synced("mine", "I1"), restrictions=restrictions), PRUNE)
    assert "every live ResourceRestriction in the account (2)" in message
    keep_one = manifests(llm("mine", api_key=key(), is_function_calling_enabled=True),
                         res("ResourceRestriction", "r", resource_type="PROJECT", resource_id="A"), ownership=OWN_ALL)
    plan = make_plan(keep_one, state(synced("mine", "I1"), restrictions=restrictions), PRUNE)
    assert [op.path for op in plan.operations if op.action == "delete"] == ["/v2/resource-restrictions/B"]


def test_prune_may_delete_some_of_a_kind_in_a_space() -> None:
    live = state()
    for name in ("p", "stray"):
        live.prompts[(RESEARCH, name)] = prompt(RESEARCH, name)
    plan = make_plan(manifests(res("Prompt", "p", "research", version=VERSION)), live, PRUNE)
    assert [op.path for op in plan.operations if op.action == "delete"] == ["/v2/prompts/P-stray"]


def test_emptying_two_spaces_names_both_with_their_counts() -> None:
    live = state()
    live.datasets[(RESEARCH, "a")] = dataset(RESEARCH, "a")
    live.datasets[(DEFAULT, "b")] = dataset(DEFAULT, "b")
    live.datasets[(DEFAULT, "c")] = dataset(DEFAULT, "c")
    own = Ownership("t", spaces=("research", "default"))
    message = plan_error(manifests(res("Prompt", "p", "research", version=VERSION), ownership=own), live, PRUNE)
    assert "--prune would delete every live Dataset in space default (2), in space research (1);" in message


def test_without_an_ownership_prune_keeps_to_the_declared_kinds_and_spaces_and_says_integrations_are_left() -> None:
    live = state(synced("stray", "I9"), synced("mine", "I1"))
    live.prompts[(RESEARCH, "stray")] = prompt(RESEARCH, "stray")
    live.prompts[(RESEARCH, "p")] = prompt(RESEARCH, "p")
    live.prompts[(DEFAULT, "other")] = prompt(DEFAULT, "other")
    live.datasets[(RESEARCH, "d")] = dataset(RESEARCH, "d")
    desired = manifests(llm("mine", api_key=key(), is_function_calling_enabled=True), res("Prompt", "p", "research", version=VERSION))
    plan = make_plan(desired, live, PRUNE)
    assert [op.path for op in plan.operations if op.action == "delete"] == ["/v2/prompts/P-stray"]
    assert plan.warnings == (
        "--prune leaves integrations and resource restrictions alone: they are account-wide and this tree declares "
        "no ownership of them. Declare it in a `kind: Ownership` document (integrations: [name globs], "
        "resource_restrictions: [TYPE/id globs])",)


def test_without_an_ownership_and_no_account_wide_kind_prune_gives_no_warning() -> None:
    live = state(synced("stray", "I9"))
    plan = make_plan(manifests(res("Prompt", "p", "research", version=VERSION)), live, PRUNE)
    assert plan.warnings == () and plan.operations[0].method == "POST"


def test_an_owned_space_written_by_id_is_pruned_like_one_written_by_name() -> None:
    live = state()
    live.prompts[(RESEARCH, "stray")] = prompt(RESEARCH, "stray")
    live.prompts[(RESEARCH, "p")] = prompt(RESEARCH, "p")
    own = Ownership("t", spaces=(RESEARCH,))
    plan = make_plan(manifests(res("Prompt", "p", RESEARCH, version=VERSION), ownership=own), live, PRUNE)
    assert [op.address for op in plan.operations if op.action == "delete"] == ["Prompt/research/stray"]


def test_an_owned_space_that_does_not_exist_is_an_error_at_its_line() -> None:
    own = Ownership("team", spaces=("research", "nope"), sources={"spaces.1": Source("own.yaml", 3, 5)})
    message = plan_error(manifests(res("Prompt", "p", "research", version=VERSION), ownership=own), state())
    assert "own.yaml:3: Ownership/team: spaces.1: no space named (or with the id) 'nope' exists" in message
    bare = Ownership("team", spaces=("nope",))
    assert "Ownership team: no space 'nope'" in plan_error(manifests(ownership=bare), state())


def test_an_ownership_owns_only_the_integrations_its_globs_match() -> None:
    live = state(synced("team-a", "I1"), synced("other", "I2"), synced("team-b", "I3"))
    own = Ownership("t", integrations=("team-*",))
    desired = manifests(llm("team-a", api_key=key(), is_function_calling_enabled=True), ownership=own)
    assert [u.address for u in make_plan(desired, live).unmanaged] == ["Integration/team-b"]


def test_an_ownership_owns_restrictions_by_type_and_id_or_by_id() -> None:
    restrictions = {(t, i): RestrictionObject(resource_type=t, resource_id=i)
                    for t, i in (("PROJECT", "PJ1"), ("DASHBOARD", "DB1"), ("PROJECT", "PJ2"))}
    own = Ownership("t", resource_restrictions=("PROJECT/PJ1", "DB1"))
    plan = make_plan(manifests(ownership=own), state(restrictions=restrictions))
    assert [u.address for u in plan.unmanaged] == ["ResourceRestriction/DASHBOARD/DB1",
                                                   "ResourceRestriction/PROJECT/PJ1"]
    assert [u.name for u in plan.unmanaged] == ["DASHBOARD DB1", "PROJECT PJ1"]


def test_prune_deletes_an_undeclared_evaluator_beside_a_declared_one() -> None:
    live = state()
    live.evaluators[(RESEARCH, "kept")] = evaluator(RESEARCH, "kept")
    live.evaluators[(RESEARCH, "stray")] = evaluator(RESEARCH, "stray")
    tc = {"name": "f", "template": "t", "llm_config": {"ai_integration_id": "X", "model_name": "m"}}
    desired = manifests(res("Evaluator", "kept", "research", commit_message="c", template_config=tc),
                        ownership=Ownership("t", spaces=("research",)))
    plan = make_plan(desired, live, PRUNE)
    assert [(op.method, op.path) for op in plan.operations if op.action == "delete"] == [
        ("DELETE", "/v2/evaluators/E-stray")]


def test_pruning_one_space_leaves_a_space_whose_only_resource_is_declared_alone() -> None:
    live = state()
    live.datasets[(DEFAULT, "only")] = dataset(DEFAULT, "only")
    live.datasets[(RESEARCH, "kept")] = dataset(RESEARCH, "kept")
    live.datasets[(RESEARCH, "stray")] = dataset(RESEARCH, "stray")
    desired = manifests(res("Dataset", "only", "default", examples=[]), res("Dataset", "kept", "research", examples=[]),
                        ownership=Ownership("t", spaces=("research", "default")))
    plan = make_plan(desired, live, PRUNE)
    assert [op.path for op in plan.operations if op.action == "delete"] == ["/v2/datasets/D-stray"]


# --------------------------------------------------------------------------------------------------
# Renames and protect globs where resources of several kinds meet (reconciler/plan/lifecycle.py):
# every aliased resource of a tree is renamed whatever comes before it, an evaluator is found under
# its alias, and a ``KIND/SPACE/NAME`` protect glob keeps exactly the resources of that space.


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
