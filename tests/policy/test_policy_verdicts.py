"""The verdicts a plan carries and what they allow (README.md, "Guardrails"): the words of each effect,
every rule on every resource (one that does not match does not stop the next), the checks ``apply``
and ``--approve`` make, and the verdicts attached to a plan, with the tree at ``--since REF`` read
only when a rule on resources can use it."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from reconciler.errors import ConfigError, PlanError
from reconciler.manifests import load_manifests
from reconciler.model import ManifestSet
from reconciler.plan.model import Change, Operation, Plan, PlanOptions, Verdict
from reconciler.policy.evaluate import (
    blocking,
    check_allowed,
    check_approvals_known,
    check_not_denied,
    evaluate,
    unapproved,
    with_verdicts,
)

TREE = """\
kind: Dataset
space: research
name: golden
examples: [{q: a}]
experiment_retention: {keep_last: 3}
---
kind: Prompt
space: research
name: triage
description: words
version: {commit_message: x, provider: VENDOR_A, messages: [{role: user, content: hi}]}
"""
RULES = """\
kind: Policy
name: central
rules:
  - name: on-datasets
    match: {kinds: [Dataset]}
    effect: deny
  - name: on-prompts
    match: {kinds: [Prompt]}
    effect: require_approval
  - name: never
    match: {kinds: [Prompt]}
    condition: op.action == 'delete'
    effect: deny
  - name: busy-prompts
    match: {kinds: [Prompt]}
    condition: plan.summary.update > 0
    effect: warn
    message: a busy plan
  - name: said-twice
    match: {kinds: [Prompt]}
    condition: op.action == 'update'
    effect: warn
"""


def load(tmp_path: Path, rules: str = RULES) -> ManifestSet:
    (tmp_path / "tree.yaml").write_text(TREE)
    (tmp_path / "policy.yaml").write_text(rules)
    return load_manifests([str(tmp_path / "tree.yaml"), str(tmp_path / "policy.yaml")])


PROMPT = Operation(id="p#u", action="update", kind="Prompt", name="triage", method="PATCH", path="/p",
                   changes=(Change("description", "old", "words"),), space="research",
                   address="Prompt/research/triage")


def test_each_rule_is_tried_on_each_resource_and_says_its_effect(tmp_path: Path) -> None:
    ms = load(tmp_path)
    verdicts = evaluate(Plan((PROMPT,)), ms.policies, ms)
    assert [(v.rule, v.effect, v.address, v.message, v.source) for v in verdicts] == [
        ("on-prompts", "require_approval", "Prompt/research/triage", "requires approval by policy central",
         f"{tmp_path}/policy.yaml:7"),
        ("busy-prompts", "warn", "Prompt/research/triage", "a busy plan", f"{tmp_path}/policy.yaml:14"),
        ("said-twice", "warn", "Prompt/research/triage", "warning by policy central", f"{tmp_path}/policy.yaml:19")]
    dataset = replace(PROMPT, id="d#u", kind="Dataset", name="golden", address="Dataset/research/golden")
    [denied] = evaluate(Plan((dataset,)), ms.policies, ms)
    assert (denied.rule, denied.message) == ("on-datasets", "denied by policy central")


def test_a_kind_the_rule_does_not_name_is_not_judged(tmp_path: Path) -> None:
    ms = load(tmp_path, RULES.split("  - name: on-prompts")[0])
    assert evaluate(Plan((PROMPT,)), ms.policies, ms) == ()


def test_what_apply_refuses_is_said_rule_by_rule() -> None:
    deny = Verdict("no", "deny", "Integration/x", "never", "p.yaml:3")
    ask = Verdict("ask", "require_approval", None, "look", "p.yaml:9")
    warn = Verdict("hm", "warn", "Prompt/s/p", "hm", "p.yaml:12")
    assert unapproved([deny, ask, warn], []) == [ask] and unapproved([ask], ["ask"]) == []
    assert blocking([warn, ask, deny], ["other"]) == [deny, ask]
    with pytest.raises(PlanError) as caught:
        check_allowed(Plan((), policy=(deny, ask, warn)), [])
    assert caught.value.message == ("refusing to apply: the policies do not allow this plan:\n"
                                    "  denied by no (p.yaml:3) on Integration/x: never\n"
                                    "  needs --approve ask: ask (p.yaml:9) on the plan: look")
    check_allowed(Plan((), policy=(ask, warn)), ["ask"])
    with pytest.raises(PlanError) as denied:
        check_not_denied(Plan((), policy=(deny, Verdict("no2", "deny", None, "nope", "p.yaml:20"), warn)))
    assert denied.value.message == ("the policies deny this plan:\n  no (p.yaml:3) on Integration/x: never\n"
                                    "  no2 (p.yaml:20) on the plan: nope")
    check_not_denied(Plan((), policy=(ask, warn)))


def test_an_approval_naming_no_rule_is_refused_with_the_closest_name_or_the_list(tmp_path: Path) -> None:
    rules = load(tmp_path).policies
    check_approvals_known(["on-prompts", "said-twice"], rules)
    with pytest.raises(PlanError) as close:
        check_approvals_known(["on-prompts", "on-promts"], rules)
    assert close.value.message == "--approve on-promts: no policy rule of that name; did you mean on-prompts?"
    with pytest.raises(PlanError) as far:
        check_approvals_known(["zzz"], rules)
    assert far.value.message == ("--approve zzz: no policy rule of that name (the rules: busy-prompts, never, "
                                 "on-datasets, on-prompts, said-twice)")
    with pytest.raises(PlanError) as none:
        check_approvals_known(["zzz"], [])
    assert none.value.message == "--approve zzz: no policy rule of that name (no policy is loaded)"


def test_a_plan_gets_the_verdicts_of_its_manifests_or_of_the_rules_given(tmp_path: Path) -> None:
    ms = load(tmp_path)
    plan = Plan((PROMPT,))
    assert [v.rule for v in with_verdicts(plan, ms).policy] == ["on-prompts", "busy-prompts", "said-twice"]
    assert [v.rule for v in with_verdicts(plan, ms, ms.policies[4:]).policy] == ["said-twice"]
    bare = ManifestSet(ms.resources)
    assert with_verdicts(plan, bare) is plan and with_verdicts(plan, None) is plan
    stale = replace(plan, policy=(Verdict("gone", "deny", None, "m", "p.yaml:1"),))
    assert with_verdicts(stale, bare).policy == ()  # a recorded verdict whose rule is gone goes with it


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, capture_output=True, check=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@example.com", "PATH": "/usr/bin:/bin"})


def test_with_since_the_unstored_fields_come_from_the_tree_at_ref(tmp_path: Path) -> None:
    shrink = ("kind: Policy\nname: p\nrules:\n  - name: shrink\n    match: {kinds: [Dataset]}\n"
              "    condition: after.experiment_retention.keep_last < before.experiment_retention.keep_last\n"
              "    effect: warn\n")
    load(tmp_path, shrink)
    (tmp_path / "tree.yaml").write_text(TREE.replace("keep_last: 3", "keep_last: 9"))
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "t")
    (tmp_path / "tree.yaml").write_text(TREE)
    ms = load_manifests([str(tmp_path / "tree.yaml"), str(tmp_path / "policy.yaml")])
    since = Plan((), options=PlanOptions(since="HEAD"))
    assert [(v.rule, v.address) for v in with_verdicts(since, ms).policy] == [("shrink", "Dataset/research/golden")]
    assert with_verdicts(Plan(()), ms).policy == ()
    with pytest.raises(ConfigError, match="--since nope: not a revision"):
        with_verdicts(Plan((), options=PlanOptions(since="nope")), ms)
    only_plan = ("kind: Policy\nname: w\nrules:\n  - name: w\n    condition: plan.summary.delete > 0\n"
                 "    effect: warn\n")
    (tmp_path / "policy.yaml").write_text(only_plan)
    plan_wide = load_manifests([str(tmp_path / "tree.yaml"), str(tmp_path / "policy.yaml")])
    assert with_verdicts(Plan((), options=PlanOptions(since="nope")), plan_wide).policy == ()  # git not asked


@pytest.mark.parametrize("given", ["var", "var-file"])
def test_the_tree_at_since_is_read_with_the_plans_variables(tmp_path: Path, given: str) -> None:
    shrink = ("kind: Policy\nname: p\nrules:\n  - name: shrink\n    match: {kinds: [Dataset]}\n"
              "    condition: after.experiment_retention.keep_last < before.experiment_retention.keep_last\n"
              "    effect: warn\n")
    (tmp_path / "policy.yaml").write_text(shrink)
    at_ref = TREE.replace("keep_last: 3", "keep_last: 9").replace("description: words", "description: {var: words}")
    (tmp_path / "tree.yaml").write_text(at_ref)  # the tree at REF needs the variable to load
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "t")
    (tmp_path / "tree.yaml").write_text(TREE)
    variables, var_files = ("words=words",), ()
    if given == "var-file":
        (tmp_path.parent / f"{tmp_path.name}-vars.yaml").write_text("words: words\n")
        variables, var_files = (), (str(tmp_path.parent / f"{tmp_path.name}-vars.yaml"),)
    ms = load_manifests([str(tmp_path / "tree.yaml"), str(tmp_path / "policy.yaml")], var_assignments=variables,
                        var_files=var_files)
    since = Plan((), options=PlanOptions(since="HEAD", variables=variables, var_files=var_files))
    assert [v.rule for v in with_verdicts(since, ms).policy] == ["shrink"]
