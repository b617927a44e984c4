"""What a rule's CEL condition sees (docs/manifests.md, "Policy"), value by value: ``op`` whole,
``before`` and ``after`` on each action (a create, a delete, an experiment retention deletes, a
replacement), the live value of each form of change put back into ``before``, a field the API does
not store, ``plan`` beside ``op``; and what a verdict on the whole plan says."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.errors import PlanError
from reconciler.manifests import load_manifests
from reconciler.model import ManifestSet
from reconciler.plan.model import Change, Operation, Plan, Verdict
from reconciler.policy.evaluate import (
    _Activation,
    check_allowed,
    evaluate,
    manifest_shape,
    subjects,
    without_blocked,
)

TREE = """\
kind: Integration
name: vendor-a-prod
type: LLM
config: {provider: VENDOR_A, api_key: {env: VENDOR_A_KEY}}
---
kind: Dataset
space: research
name: golden
key: t
examples: [{t: '1', q: a}, {t: 'x=y', q: b}]
experiment_retention: {keep_last: 3}
---
kind: Prompt
space: research
name: triage
description: new words
version:
  commit_message: x
  provider: VENDOR_A
  messages: [{role: user, content: hi}, {role: user, content: hi}]
  labels: [production]
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "tree.yaml").write_text(TREE)
    return tmp_path


def fired(tree: Path, condition: str, plan: Plan, earlier: dict | None = None, kinds: str = "") -> bool:
    """Whether a warn rule with this condition (and ``kinds``) fires on ``plan``."""
    match = f"    match: {{kinds: [{kinds}]}}\n" if kinds else ""
    (tree / "policy.yaml").write_text("kind: Policy\nname: p\nrules:\n  - name: r\n" + match
                                      + "    condition: >-\n      " + condition + "\n    effect: warn\n")
    ms = load_manifests([str(tree / "tree.yaml"), str(tree / "policy.yaml")])
    return bool(evaluate(plan, ms.policies, ms, earlier))


def op(action: str, kind: str, name: str, *changes: Change, space: str | None = "research",
       owner: str | None = None, path: str = "/x") -> Operation:
    address = owner or (f"{kind}/{space}/{name}" if space else f"{kind}/{name}")
    return Operation(id=f"{address}#{action}-{name}", action=action, kind=kind, name=name, method="PATCH", path=path,
                     changes=changes, space=space, address=address)


UPDATE = Plan((op("update", "Prompt", "triage", Change("description", "old words", "new words")),))


def test_op_is_the_subject_whole(tree: Path) -> None:
    assert fired(tree, "op == {'action': 'update', 'kind': 'Prompt', 'name': 'triage', 'space': 'research', "
                       "'address': 'Prompt/research/triage', 'changes': [{'path': 'description', "
                       "'before': 'old words', 'after': 'new words'}]}", UPDATE)
    assert fired(tree, "op.kind == 'Prompt' && op.address == 'Prompt/research/triage' && op.name == 'triage'", UPDATE)


def test_plan_is_seen_beside_op(tree: Path) -> None:
    assert fired(tree, "op.action == 'update' && plan.summary.update == 1", UPDATE)


def test_after_is_the_manifest_and_before_has_each_change_put_back(tree: Path) -> None:
    assert fired(tree, "after.kind == 'Prompt' && after.name == 'triage' && after.space == 'research'", UPDATE)
    assert fired(tree, "before['description'] == 'old words' && after['description'] == 'new words'", UPDATE)
    added = Plan((op("update", "Prompt", "triage", Change("description", None, "new words")),))
    assert fired(tree, "!has(before.description) && has(after.description)", added)


def test_a_create_has_no_before_and_a_delete_no_after(tree: Path) -> None:
    created = Plan((op("create", "Prompt", "triage"),))
    assert fired(tree, "before == null && after.name == 'triage'", created)
    deleted = Plan((op("delete", "Prompt", "gone"),))
    assert fired(tree, "after == null && before == {'kind': 'Prompt', 'name': 'gone', 'space': 'research'}", deleted)
    account_wide = Plan((op("delete", "Integration", "old", space=None),))
    assert fired(tree, "before == {'kind': 'Integration', 'name': 'old'}", account_wide)


def test_an_experiment_retention_deletes_is_its_own_head_not_its_dataset(tree: Path) -> None:
    plan = Plan((op("delete", "Experiment", "exp-3", Change("experiment_retention", "old", None),
                    owner="Dataset/research/golden", path="/v2/experiments/e3"),))
    assert [s.address for s in subjects(plan)] == ["Experiment/research/golden/exp-3 (e3)"]
    assert fired(tree, "after == null && before == {'kind': 'Experiment', 'name': 'exp-3', 'space': 'research'}",
                 plan, kinds="Experiment")


def test_a_replacement_with_a_change_of_the_resource_itself_is_judged(tree: Path) -> None:
    plan = Plan((op("replace", "Integration", "vendor-a-prod", Change("", "LLM vendor-a-prod", None),
                    Change("config.provider", "VENDOR_B", "VENDOR_A"), space=None),))
    assert fired(tree, "before['config']['provider'] == 'VENDOR_B' && op.action == 'replace'", plan)


def test_a_list_item_is_put_back_at_its_position_even_among_equal_items(tree: Path) -> None:
    plan = Plan((op("update", "Prompt", "triage",
                    Change("version.messages.1", {"role": "user", "content": "old"}, {"role": "user", "content": "hi"}),
                    Change("version.messages.2.content", "gone", None), Change("version.messages.7", "x", "y")),))
    assert fired(tree, "before['version']['messages'] == [{'role': 'user', 'content': 'hi'}, "
                       "{'role': 'user', 'content': 'old'}]", plan)


def test_a_keyed_example_is_found_by_its_key_whatever_its_value_holds(tree: Path) -> None:
    plan = Plan((op("update", "Dataset", "golden", Change("examples[t=x=y]", {"t": "x=y", "q": "old"},
                                                          {"t": "x=y", "q": "b"})),))
    assert fired(tree, "before['examples'] == [{'t': '1', 'q': 'a'}, {'t': 'x=y', 'q': 'old'}]", plan)


def test_a_change_of_an_example_the_tree_does_not_hold_leaves_before_as_it_is(tree: Path) -> None:
    plan = Plan((op("update", "Dataset", "golden", Change("examples[+]", None, {"q": "zzz"}),
                    Change("examples[t=9]", None, {"t": "9"}), Change("examples[+]", {"q": "odd"}, {"q": "a"})),))
    assert fired(tree, "before['examples'] == [{'t': '1', 'q': 'a'}, {'t': 'x=y', 'q': 'b'}]", plan)


def test_a_field_the_api_does_not_store_is_absent_from_before_without_since(tree: Path) -> None:
    examples = Plan((op("update", "Dataset", "golden", Change("examples[+]", None, {"t": "2", "q": "c"})),))
    assert fired(tree, "op.kind == 'Dataset'", examples)
    assert not fired(tree, "has(before.experiment_retention)", examples)
    assert fired(tree, "has(after.experiment_retention)", examples)
    earlier = {"Dataset/research/golden": {"experiment_retention": {"keep_last": 4}}}
    assert fired(tree, "before['experiment_retention'] == {'keep_last': 4}", examples, earlier)


def test_a_rule_on_the_plan_reads_whole_values_too(tree: Path) -> None:
    assert fired(tree, "op['kind'] == 'Prompt' && size(op['changes']) == 1", UPDATE)


def test_only_the_fields_a_condition_selects_are_converted() -> None:
    ms = load_manifests_text(TREE)
    prompt = next(r for r in ms if r.kind == "Prompt")
    assert manifest_shape(prompt, frozenset({"description", "absent"})) == {
        "kind": "Prompt", "name": "triage", "space": "research", "description": "new words"}
    assert set(manifest_shape(prompt)) == {"kind", "name", "space", "description", "version"}
    [s] = subjects(UPDATE)
    values = _Activation(s, prompt, None)
    assert dict(values.get("after", frozenset({"description"}))) == {
        "kind": "Prompt", "name": "triage", "space": "research", "description": "new words"}
    assert "version" not in dict(values.get("before", frozenset({"description"})))
    assert "changes" not in dict(values.get("op", frozenset({"kind"})))


def load_manifests_text(text: str) -> ManifestSet:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "t.yaml").write_text(text)
        return load_manifests([str(Path(tmp) / "t.yaml")])


def test_a_verdict_on_the_whole_plan_is_said_to_be_on_the_plan() -> None:
    with pytest.raises(PlanError, match=r"denied by many \(p.yaml:3\) on the plan: too many"):
        check_allowed(Plan((), policy=(Verdict("many", "deny", None, "too many", "p.yaml:3"),)), [])


def test_watch_holds_back_what_depends_on_a_blocked_call_listed_before_it() -> None:
    a = Operation(id="a", action="create", kind="Integration", name="a", method="POST", path="/a", address="Integration/a")
    b = Operation(id="b", action="create", kind="Integration", name="b", method="POST", path="/b", address="Integration/b",
                  depends_on=("a",))
    c = Operation(id="c", action="create", kind="Integration", name="c", method="POST", path="/c", address="Integration/c",
                  depends_on=("b",))
    plan = Plan((c, b, a), policy=(Verdict("r", "deny", "Integration/a", "m", "p.yaml:3"),))
    assert without_blocked(plan, [])[0].operations == ()
