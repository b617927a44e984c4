"""One resource declared twice, its space written by name and by id (reconciler/plan/planner.py):
the second is refused naming the first; the same name in two spaces, or in a space that does not
exist, is not a duplicate."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from reconciler.errors import PlanError
from reconciler.manifests import load_manifests
from reconciler.model import DatasetObject, ExperimentObject, LiveDataset
from reconciler.plan.model import PlanOptions
from reconciler.plan.planner import make_plan
from tests.plan.helpers import RESEARCH, manifests, res, state

EXAMPLES = [{"q": 1}]


def error(tree) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(PlanError) as err:
        make_plan(tree, state())
    return str(err.value)


def test_a_space_written_by_name_and_by_id_is_one_resource_declared_twice(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("t.yaml").write_text("kind: Dataset\nspace: research\nname: d\nexamples: [{q: 1}]\n---\n"
                              "kind: Dataset\nspace: U3BhY2U6Mg\nname: d\nexamples: [{q: 1}]\n")
    assert error(load_manifests(["t.yaml"])) == (
        "cannot plan:\n  t.yaml:7: Dataset/U3BhY2U6Mg/d: space: declares Dataset/research/d again (space "
        "'U3BhY2U6Mg' is space 'research', declared at t.yaml:2); declare it once")
    assert error(manifests(res("Dataset", "d", "research", examples=EXAMPLES),
                           res("Dataset", "d", "U3BhY2U6Mg", examples=EXAMPLES),
                           res("Dataset", "e", "U3BhY2U6Mg", examples=EXAMPLES))) == (
        "cannot plan:\n"
        "  Dataset/U3BhY2U6Mg/d: space: declares Dataset/research/d again (space 'U3BhY2U6Mg' is space 'research'); "
        "declare it once")


def test_the_same_name_in_two_spaces_or_in_unknown_spaces_is_no_duplicate() -> None:
    plan = make_plan(manifests(res("Dataset", "d", "research", examples=EXAMPLES),
                               res("Dataset", "d", "default", examples=EXAMPLES),
                               res("Prompt", "d", "research", version={"commit_message": "v1", "provider": "VENDOR_A",
                                                                       "messages": [{"role": "user", "content": "q"}]})),
                     state())
    assert sorted((op.kind, op.space, op.method) for op in plan.operations) == [
        ("Dataset", "default", "POST"), ("Dataset", "research", "POST"), ("Prompt", "research", "POST")]
    message = error(manifests(res("Dataset", "d", "nowhere", examples=EXAMPLES),
                              res("Dataset", "d", "elsewhere", examples=EXAMPLES)))
    assert "again" not in message and message.count("no space named (or with the id)") == 2


def test_a_duplicate_does_not_hide_the_problems_after_it() -> None:
    message = error(manifests(res("Dataset", "d", "research", examples=EXAMPLES),
                              res("Dataset", "d", "U3BhY2U6Mg", examples=EXAMPLES),
                              res("Dataset", "x", "nowhere", examples=EXAMPLES)))
    assert "declares Dataset/research/d again" in message
    assert "Dataset/nowhere/x: space: no space named (or with the id) 'nowhere' exists" in message


def test_a_targeted_plan_says_it_may_be_incomplete() -> None:
    tree = manifests(res("Dataset", "d", "research", examples=EXAMPLES), res("Dataset", "e", "research",
                                                                             examples=EXAMPLES))
    plan = make_plan(tree, state(), PlanOptions(targets=("Dataset/*",)))
    assert plan.warnings == ("--target limits this run to Dataset/research/d, Dataset/research/e; the plan may be "
                             "incomplete for everything else",)


def test_retention_counts_days_from_the_time_given_or_now() -> None:
    live = state()
    exps = [ExperimentObject.read({"id": "X1", "name": "e1", "created_at": "2026-05-01T00:00:00Z"}),
            ExperimentObject.read({"id": "X2", "name": "e2", "created_at": "2026-05-10T00:00:00Z"})]
    live.datasets[(RESEARCH, "d")] = LiveDataset(dataset=DatasetObject.read({"id": "D1", "name": "d", "space_id": RESEARCH}),
                                                 examples=[{"id": "E1", "q": 1}], experiments=exps)
    tree = manifests(res("Dataset", "d", "research", examples=EXAMPLES,
                         experiment_retention={"keep_last": 1, "older_than_days": 30}))
    assert make_plan(tree, live, now=datetime(2026, 5, 15, tzinfo=UTC)).operations == ()
    later = make_plan(tree, live, now=datetime(2026, 7, 1, tzinfo=UTC))
    assert [op.path for op in later.operations] == ["/v2/experiments/X1"]
    assert len(make_plan(tree, live).operations) == 1  # now: the clock, in UTC


def test_a_plan_that_hides_restrictions_records_it_for_apply() -> None:
    from tests.plan.test_kinds_plan import VERSION, live_prompt  # a reader key: it sees no restriction
    live = state()
    live.prompts[(RESEARCH, "p")] = live_prompt()
    plan = make_plan(manifests(res("Prompt", "p", "research", restricted=True, version=VERSION)), live)
    assert plan.options.restrictions == "skip"


def test_the_ownership_s_ignore_changes_leave_a_difference_as_live_and_name_a_rule_matching_nothing() -> None:
    from reconciler.model import Ownership
    from tests.plan.helpers import key, live_llm, llm

    own = Ownership("team", integrations=("*",), ignore_changes=(
        (("Integration/a",), ("config.is_function_calling_enabled",)), (("Prompt/none*",), ("description",))))
    live = state(live_llm("a", id="I1", has_api_key=True, is_function_calling_enabled=False))
    plan = make_plan(manifests(llm("a", api_key=key(), is_function_calling_enabled=True), ownership=own), live)
    assert plan.operations == ()
    assert [(i.address, i.path, i.before, i.after) for i in plan.ignored] == [
        ("Integration/a", "config.is_function_calling_enabled", False, True)]
    assert plan.warnings == ("Ownership/team: ignore_changes match ['Prompt/none*'] matches no declared resource",)


def test_account_wide_resources_of_one_name_are_not_duplicates_even_beside_a_space_named_none() -> None:
    """An LLM and an AGENT integration may share a name; they have no space, so a live space whose name
    is the word "None" is not theirs and does not make them one resource declared twice."""
    from reconciler.model import LiveSpace
    from tests.plan.helpers import key, llm

    live = state()
    live.spaces.append(LiveSpace.model_validate({"id": "U3BhY2U6Nw", "name": "None", "organization_id": "T3JnOjE"}))
    agent = res("Integration", "x", type="AGENT", config={"endpoint": "https://a.example/run"})
    plan = make_plan(manifests(llm("x", api_key=key()), agent), live)
    assert [(op.id, op.method) for op in plan.operations] == [
        ("Integration/LLM/x#create", "POST"), ("Integration/AGENT/x#create", "POST")]
