"""Policy rules on plans, without a server: what each ``match`` and condition sees, which rules fire,
what ``watch`` holds back, and every bad policy refused at its line (README.md, "Guardrails")."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.errors import ManifestError, PlanError
from reconciler.manifests import load_manifests
from reconciler.manifests import policy_fields as fields
from reconciler.plan.model import Change, Operation, Plan, Verdict
from reconciler.policy.evaluate import check_allowed, evaluate, without_blocked

TREE = """\
kind: Integration
name: vendor-a-prod
type: LLM
config: {provider: VENDOR_A, api_key: {env: VENDOR_A_KEY}}
---
kind: Dataset
space: research
name: golden
examples: [{q: a}]
experiment_retention: {keep_last: 3}
---
kind: Prompt
space: research
name: triage
description: new words
version:
  commit_message: x
  provider: VENDOR_A
  messages: [{role: user, content: hi}]
  labels: [production]
"""


def rules(tmp_path: Path, text: str) -> tuple:
    (tmp_path / "tree.yaml").write_text(TREE)
    (tmp_path / "policy.yaml").write_text(text)
    ms = load_manifests([str(tmp_path / "tree.yaml"), str(tmp_path / "policy.yaml")])
    return ms, ms.policies


def op(action: str, kind: str, name: str, *changes: Change, space: str | None = None, n: int = 0) -> Operation:
    address = f"{kind}/{space}/{name}" if space else f"{kind}/{name}"
    return Operation(id=f"{address}#{n}", action=action, kind=kind, name=name, method="PATCH", path=f"/x/{name}",
                     changes=changes, space=space, address=address)


def policy(*rule_lines: str) -> str:
    return "kind: Policy\nname: p\nrules:\n" + "".join(rule_lines)


def test_the_condition_sees_live_fields_in_before_and_desired_in_after(tmp_path: Path) -> None:
    ms, compiled = rules(tmp_path, policy(
        "  - name: shrink\n    match: {kinds: [Dataset]}\n"
        "    condition: after.experiment_retention.keep_last < before.experiment_retention.keep_last\n"
        "    effect: warn\n"))
    shrinking = Plan((op("update", "Dataset", "golden", Change("experiment_retention.keep_last", 10, 3),
                         space="research"),))
    growing = Plan((op("update", "Dataset", "golden", Change("experiment_retention.keep_last", 1, 3),
                       space="research"),))
    created = Plan((op("create", "Dataset", "golden", space="research"),))
    assert [v.rule for v in evaluate(shrinking, compiled, ms)] == ["shrink"]
    assert evaluate(growing, compiled, ms) == ()
    assert evaluate(created, compiled, ms) == ()  # no before on a create: the condition is false there


def test_fields_match_a_change_at_or_below_the_glob(tmp_path: Path) -> None:
    ms, compiled = rules(tmp_path, policy(
        "  - name: labels\n    match: {kinds: [Prompt], fields: [version.labels]}\n    effect: require_approval\n"))
    labels = Plan((op("update", "Prompt", "triage", Change("version.labels", ["a"], ["b"]), space="research"),))
    words = Plan((op("update", "Prompt", "triage", Change("description", "a", "b"), space="research"),))
    assert [(v.rule, v.effect, v.address) for v in evaluate(labels, compiled, ms)] == [
        ("labels", "require_approval", "Prompt/research/triage")]
    assert evaluate(words, compiled, ms) == ()


def test_actions_kinds_and_address_globs_all_must_hold(tmp_path: Path) -> None:
    ms, compiled = rules(tmp_path, policy(
        "  - name: prod\n    match: {actions: [delete, replace], kinds: [Integration], addresses: ['Integration/*-prod']}\n"
        "    effect: deny\n"))
    assert evaluate(Plan((op("delete", "Integration", "vendor-a-prod"),)), compiled, ms)[0].effect == "deny"
    assert evaluate(Plan((op("delete", "Integration", "vendor-b-dev"),)), compiled, ms) == ()
    assert evaluate(Plan((op("update", "Integration", "vendor-a-prod"),)), compiled, ms) == ()


def test_a_plan_only_rule_fires_once_and_secrets_stay_sensitive(tmp_path: Path) -> None:
    ms, compiled = rules(tmp_path, policy(
        "  - name: many\n    condition: plan.summary.delete > 1\n    effect: deny\n",
        "  - name: key\n    match: {kinds: [Integration]}\n    condition: after.config.api_key == '(sensitive)'\n"
        "    effect: warn\n"))
    plan = Plan(tuple(op("delete", "Prompt", f"p{i}", space="research") for i in range(3))
                + (op("update", "Integration", "vendor-a-prod", Change("config.api_key", None, "(sensitive)")),))
    assert [(v.rule, v.address) for v in evaluate(plan, compiled, ms)] == [
        ("many", None), ("key", "Integration/vendor-a-prod")]


def test_apply_needs_each_fired_approval_and_never_passes_a_deny() -> None:
    need = Verdict("labels", "require_approval", "Prompt/s/p", "m", "p.yaml:3")
    deny = Verdict("no-deletes", "deny", "Integration/x", "m", "p.yaml:9")
    check_allowed(Plan((), policy=(need,)), ["labels"])
    with pytest.raises(PlanError, match="needs --approve labels"):
        check_allowed(Plan((), policy=(need,)), [])
    with pytest.raises(PlanError, match="denied by no-deletes"):
        check_allowed(Plan((), policy=(deny,)), ["no-deletes"])


def test_watch_holds_back_the_blocked_operations_and_what_depends_on_them() -> None:
    integration = op("create", "Integration", "x")
    evaluator = Operation(id="Evaluator/s/e#create", action="create", kind="Evaluator", name="e", method="POST",
                          path="/e", depends_on=(integration.id,), space="s", address="Evaluator/s/e")
    prompt = op("update", "Prompt", "p", space="s")
    plan = Plan((integration, evaluator, prompt),
                policy=(Verdict("r", "require_approval", "Integration/x", "m", "p.yaml:3"),))
    left, held = without_blocked(plan, [])
    assert [o.id for o in left.operations] == [prompt.id] and [v.rule for v in held] == ["r"]
    assert without_blocked(plan, ["r"])[0] == plan
    whole = Plan((prompt,), policy=(Verdict("many", "deny", None, "m", "p.yaml:3"),))
    assert without_blocked(whole, [])[0].operations == ()


@pytest.mark.parametrize(("rule", "where", "message"), [
    ("    condition: op.action ==\n    effect: warn\n", "policy.yaml:5:", "not valid CEL"),
    ("    condition: request.action == 'delete'\n    effect: warn\n", "policy.yaml:5:16",
     "unknown variable 'request'"),
    ("    condition: op.acton == 'delete'\n    effect: warn\n", "policy.yaml:5:16", "'op' has no field 'acton'"),
    ("    match: {kinds: [Prompt]}\n    condition: after.version.labelz == []\n    effect: warn\n", "policy.yaml:6:",
     "no field 'version.labelz' in the manifests of Prompt"),
    ("    condition: lower(op.kind) == 'x'\n    effect: warn\n", "policy.yaml:5:", "unknown function 'lower'"),
    ("    condition: plan.summary.delete > 1\n    effect: block\n", "policy.yaml:6:", "'block' is not one of"),
    ("    match: {kinds: [Dataset], fields: [version.*]}\n    effect: warn\n", "policy.yaml:5:",
     "'version.*' matches no manifest field of Dataset"),
    ("    effect: warn\n", "policy.yaml:4:", "a rule needs a match, a condition or both"),
    ("    match: {addresses: [vendor-a-prod]}\n    effect: warn\n", "policy.yaml:5:", "KIND/NAME"),
])
def test_a_bad_rule_is_refused_at_its_line(tmp_path: Path, rule: str, where: str, message: str) -> None:
    with pytest.raises(ManifestError) as caught:
        rules(tmp_path, policy("  - name: r\n" + rule))
    text = "\n".join(caught.value.problems)
    assert where in text and message in text, text


def test_a_rule_name_is_defined_once_across_policies(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="rule 'r' is already defined at"):
        rules(tmp_path, policy("  - name: r\n    match: {kinds: [Prompt]}\n    effect: warn\n") + "---\n"
              + policy("  - name: r\n    match: {kinds: [Dataset]}\n    effect: warn\n"))


def test_a_block_condition_is_checked_line_by_line(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as caught:
        rules(tmp_path, policy("  - name: r\n    condition: |\n      op.action == 'update' &&\n"
                               "        before.nmae == 'x'\n    effect: warn\n"))
    assert "policy.yaml:7:" in caught.value.problems[0] and "before.nmae" in caught.value.problems[0]


def test_macro_variables_are_known_inside_their_macro(tmp_path: Path) -> None:
    ms, compiled = rules(tmp_path, policy(
        "  - name: r\n    condition: op.changes.exists(c, c.path.startsWith('version'))\n    effect: warn\n"))
    plan = Plan((op("update", "Prompt", "triage", Change("version.labels", [], ["a"]), space="research"),))
    assert [v.rule for v in evaluate(plan, compiled, ms)] == ["r"]


def test_field_globs_follow_the_manifest_models() -> None:
    assert fields.glob_can_match("version.labels", ["Prompt"])
    assert fields.glob_can_match("template_config.llm_config.*", ["Evaluator"])
    assert fields.glob_can_match("config.request_presets.*.name", ["Integration"])
    assert fields.glob_can_match("examples.*.anything", ["Dataset"])  # free-form below examples
    assert not fields.glob_can_match("version.labels", ["Dataset"])
    assert fields.touches("version", "version.labels") and fields.touches("version.labels", "version.labels.0")
    assert not fields.touches("version.labels", "version.messages")


KEYED = TREE.replace("examples: [{q: a}]", "key: t\nexamples: [{t: '1', q: a}, {t: '2', q: b}, {t: '3', q: new}]")


def test_before_puts_each_example_change_back_in_the_examples(tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text(KEYED)
    (tmp_path / "policy.yaml").write_text(policy(
        "  - name: seen\n    match: {kinds: [Dataset]}\n    condition: >-\n      before.examples == [{'t': '1', 'q': 'old'},"
        " {'t': '2', 'q': 'b'}, {'t': '9', 'q': 'gone'}]\n    effect: warn\n"))
    ms = load_manifests([str(tmp_path / "tree.yaml"), str(tmp_path / "policy.yaml")])
    plan = Plan((op("update", "Dataset", "golden", Change("examples[t=1].q", "old", "a"),
                    Change("examples[t=3]", None, {"t": "3", "q": "new"}),
                    Change("examples[t=9]", {"t": "9", "q": "gone"}, None), space="research"),))
    assert [v.rule for v in evaluate(plan, ms.policies, ms)] == ["seen"]


def test_before_puts_examples_matched_by_content_back(tmp_path: Path) -> None:
    ms, compiled = rules(tmp_path, policy(
        "  - name: seen\n    match: {kinds: [Dataset]}\n    condition: >-\n      before.examples == [{'q': 'live'}]\n"
        "    effect: warn\n"))
    plan = Plan((op("update", "Dataset", "golden", Change("examples[+]", None, {"q": "a"}),
                    Change("examples[-]", {"q": "live"}, None), space="research"),))
    assert [v.rule for v in evaluate(plan, compiled, ms)] == ["seen"]


SHRINK = ("  - name: shrink\n    match: {kinds: [Dataset]}\n"
          "    condition: after.experiment_retention.keep_last < before.experiment_retention.keep_last\n"
          "    effect: warn\n")


def test_an_unstored_field_has_no_before_without_since_and_its_value_at_since_with_it(tmp_path: Path) -> None:
    ms, compiled = rules(tmp_path, policy(SHRINK))
    nothing = Plan(())
    examples = Plan((op("update", "Dataset", "golden", Change("examples[+]", None, {"q": "a"}), space="research"),))
    for plan in (nothing, examples):
        assert evaluate(plan, compiled, ms) == ()  # without --since: no before.experiment_retention
        assert evaluate(plan, compiled, ms, {}) == ()  # absent at REF: nothing to shrink from
        assert evaluate(plan, compiled, ms, {"Dataset/research/golden": {"experiment_retention": {"keep_last": 3}}}) == ()
        shrunk = evaluate(plan, compiled, ms, {"Dataset/research/golden": {"experiment_retention": {"keep_last": 9}}})
        assert [(v.rule, v.address) for v in shrunk] == [("shrink", "Dataset/research/golden")]


def test_a_resource_judged_for_an_unstored_field_alone_is_an_update_whose_changes_are_that_field(
        tmp_path: Path) -> None:
    ms, compiled = rules(tmp_path, policy(
        "  - name: seen\n    match: {actions: [update], kinds: [Dataset], fields: [experiment_retention.keep_last]}\n"
        "    condition: >-\n      op.changes == [{'path': 'experiment_retention.keep_last', 'before': 9, 'after': 3}]"
        " && op.name == 'golden' && op.space == 'research' && before.name == 'golden'\n"
        "    effect: warn\n"))
    earlier = {"Dataset/research/golden": {"experiment_retention": {"keep_last": 9}}}
    assert [v.address for v in evaluate(Plan(()), compiled, ms, earlier)] == ["Dataset/research/golden"]
    earlier_older = {"Dataset/research/golden": {"experiment_retention": {"keep_last": 3, "older_than_days": 5}}}
    assert evaluate(Plan(()), compiled, ms, earlier_older) == ()  # its changes are another field's
