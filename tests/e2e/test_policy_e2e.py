"""Guardrails (README.md, "Guardrails") as a user meets them: Policy documents and --policy, the
verdicts in text, markdown and JSON, exit codes, apply refusing before any write, approvals, saved
plans, watch holding back what is denied, the metric, --target globs and --exclude, and
``reconciler schema --plan``. The CLI runs in-process against the emulator over a real socket."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main
from tests.watch.helpers import parse_metrics

Cli = Callable[..., Result]
ROOT = Path(__file__).resolve().parents[2]

#: The policy of the product's guardrails example, as written.
PRODUCT_POLICY = """\
kind: Policy
name: production-safety
rules:
  - name: no-integration-deletes
    match: {actions: [delete, replace], kinds: [Integration]}
    effect: deny
    message: Integrations are deleted by hand, after review.
  - name: production-label
    match: {kinds: [Prompt], fields: [version.labels]}
    effect: require_approval
  - name: retention-never-shrinks
    match: {kinds: [Dataset]}
    condition: after.experiment_retention.keep_last < before.experiment_retention.keep_last
    effect: warn
  - name: few-deletes
    condition: plan.summary.delete > 5
    effect: deny
"""


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


def writes(counts: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in counts.items() if not k.startswith("GET ")}


@pytest.fixture
def run(server: tuple[str, Any], monkeypatch: pytest.MonkeyPatch, cli: Cli) -> Cli:
    """``cli`` that also points ``watch`` at the emulator."""
    def invoke(*args: str) -> Result:
        command = list(args)
        if command[0] == "watch":
            command += ["--base-url", server[0]]
            return CliRunner().invoke(main, command, catch_exceptions=False)
        return cli(*command)

    return invoke


@pytest.fixture
def guarded(tree: Path, run: Cli) -> Path:
    """The quickstart tree applied, then given the product's policy."""
    assert run("apply", str(tree), "--auto-approve").exit_code == 0
    (tree / "policy.yaml").write_text(PRODUCT_POLICY)
    return tree


def move_label(tree: Path) -> None:
    edit(tree / "research/prompts.yaml", "labels: [production]", "labels: [production, staging]")


def drop_integration(tree: Path) -> None:
    text = (tree / "integrations/llm.yaml").read_text()
    (tree / "integrations/llm.yaml").write_text(text.split("---")[0])  # self-hosted-nim removed


def test_the_product_policy_asks_approval_to_move_the_production_label(guarded: Path, run: Cli) -> None:
    move_label(guarded)
    result = run("plan", str(guarded))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    verdict = next(i for i, line in enumerate(lines) if "production-label" in line)
    summary = next(i for i, line in enumerate(lines) if line.startswith("Plan:"))
    assert verdict < summary  # shown before the summary line
    assert "NEEDS APPROVAL" in lines[verdict] and "Prompt/research/summarize-ticket" in lines[verdict]
    assert "policy.yaml:8" in lines[verdict]

    plan = json.loads(run("plan", str(guarded), "--format", "json").stdout)
    assert plan["policy"] == [{"rule": "production-label", "effect": "require_approval",
                               "address": "Prompt/research/summarize-ticket",
                               "message": "requires approval by policy production-safety",
                               "source": f"{guarded}/policy.yaml:8"}]

    markdown = run("plan", str(guarded), "--format", "markdown").stdout
    assert markdown.index("production-label") < markdown.index("<details>")  # at the top


def test_apply_refuses_an_unapproved_rule_before_any_write_and_applies_once_approved(
        guarded: Path, run: Cli, stats: Any, reset_stats: Callable[[], None]) -> None:
    move_label(guarded)
    reset_stats()
    refused = run("apply", str(guarded), "--auto-approve")
    assert refused.exit_code == 1
    assert "needs --approve production-label" in refused.stderr
    assert writes(stats()) == {}
    approved = run("apply", str(guarded), "--auto-approve", "--approve", "production-label")
    assert approved.exit_code == 0, approved.output
    assert writes(stats()) == {"PUT /v2/prompt-versions/{version_id}/labels": 1}


def test_an_approval_naming_no_rule_is_refused_before_any_request(
        guarded: Path, run: Cli, stats: Any, reset_stats: Callable[[], None]) -> None:
    reset_stats()
    result = run("apply", str(guarded), "--auto-approve", "--approve", "production-lable")
    assert result.exit_code == 1 and "did you mean production-label" in result.stderr
    assert sum(stats().values()) == 0


def test_a_denied_plan_is_printed_with_its_verdict_and_exits_1_and_apply_writes_nothing(
        guarded: Path, run: Cli, stats: Any, reset_stats: Callable[[], None], tmp_path: Path) -> None:
    drop_integration(guarded)
    planned = run("plan", str(guarded), "--prune", "--out", str(tmp_path / "p.json"))
    assert planned.exit_code == 1
    assert "- Integration/self-hosted-nim" in planned.stdout  # the plan is printed
    assert "Policy DENIED: no-integration-deletes on Integration/self-hosted-nim: Integrations are deleted by " \
           "hand, after review." in planned.stdout
    assert "deny this plan" in planned.stderr and not (tmp_path / "p.json").exists()
    reset_stats()
    applied = run("apply", str(guarded), "--prune", "--auto-approve", "--approve", "production-label")
    assert applied.exit_code == 1 and "denied by no-integration-deletes" in applied.stderr
    assert writes(stats()) == {}


def test_a_rule_on_the_plan_alone_fires_once_for_the_plan(guarded: Path, run: Cli) -> None:
    edit(guarded / "policy.yaml", "plan.summary.delete > 5", "plan.summary.delete > 0")
    drop_integration(guarded)
    edit(guarded / "policy.yaml", "actions: [delete, replace], kinds: [Integration]", "actions: [replace]")
    plan = json.loads(run("plan", str(guarded), "--prune", "--format", "json").stdout)
    assert [(v["rule"], v["address"]) for v in plan["policy"]] == [("few-deletes", None)]


def test_a_condition_on_before_and_after_sees_the_manifest_fields(guarded: Path, run: Cli) -> None:
    edit(guarded / "policy.yaml", "condition: after.experiment_retention.keep_last < "
         "before.experiment_retention.keep_last",
         "condition: after.description != before.description && op.action == 'update' && "
         "op.changes.exists(c, c.path == 'description') && after.space == 'research'")
    edit(guarded / "policy.yaml", "kinds: [Dataset]", "kinds: [Prompt]")
    edit(guarded / "research/prompts.yaml", "description: Summarize a support ticket", "description: Summaries")
    plan = json.loads(run("plan", str(guarded), "--format", "json").stdout)
    assert [(v["rule"], v["effect"]) for v in plan["policy"]] == [("retention-never-shrinks", "warn")]


def test_a_saved_plan_records_the_fired_rules_and_apply_planfile_evaluates_them_again(
        guarded: Path, run: Cli, tmp_path: Path, stats: Any, reset_stats: Callable[[], None]) -> None:
    central = tmp_path / "central"
    central.mkdir()
    (central / "rules.yaml").write_text("kind: Policy\nname: central\nrules:\n  - name: prompts-reviewed\n"
                                        "    match: {kinds: [Prompt]}\n    effect: warn\n")
    move_label(guarded)
    saved = tmp_path / "plan.json"
    assert run("plan", str(guarded), "--policy", str(central), "--out", str(saved)).exit_code == 0
    recorded = json.loads(saved.read_text())
    assert {v["rule"] for v in recorded["policy"]} == {"production-label", "prompts-reviewed"}
    assert recorded["options"]["policies"] == [str(central)]
    reset_stats()
    refused = run("apply", str(saved))
    assert refused.exit_code == 1 and "needs --approve production-label" in refused.stderr
    assert writes(stats()) == {}
    edit(central / "rules.yaml", "effect: warn", "effect: deny")  # the plan is bound to the rules it was made with
    again = run("apply", str(saved), "--approve", "production-label")
    assert again.exit_code == 1 and "rules.yaml: differs from the file the plan was made from" in again.stderr
    assert writes(stats()) == {}
    edit(central / "rules.yaml", "effect: deny", "effect: warn")
    strict = tmp_path / "strict.yaml"  # a rule given to apply itself is evaluated on what the plan does
    strict.write_text((central / "rules.yaml").read_text().replace("effect: warn", "effect: deny")
                      .replace("name: central", "name: strict").replace("prompts-reviewed", "strictly-reviewed"))
    again = run("apply", str(saved), "--approve", "production-label", "--policy", str(strict))
    assert again.exit_code == 1 and "denied by strictly-reviewed" in again.stderr
    assert writes(stats()) == {}
    done = run("apply", str(saved), "--approve", "production-label")
    assert done.exit_code == 0, done.output
    assert writes(stats()) == {"PUT /v2/prompt-versions/{version_id}/labels": 1}


BAD = [
    ("condition: plan.summary.delete > 5", "condition: plan.summary.delete >> 5", 16,
     "not valid CEL"),
    ("condition: plan.summary.delete > 5", "condition: plans.summary.delete > 5", 16,
     "unknown variable 'plans'"),
    ("condition: plan.summary.delete > 5", "condition: plan.summary.deletes > 5", 16,
     "'plan' has no field 'summary.deletes'"),
    ("before.experiment_retention.keep_last", "before.experiment_retention.keep_lst", 13,
     "no field 'experiment_retention.keep_lst' in the manifests of Dataset"),
    ("effect: warn", "effect: block", 14, "'block' is not one of deny, require_approval, warn"),
    ("fields: [version.labels]", "fields: [version.lables]", 9, "'version.lables' matches no manifest field of Prompt"),
]


@pytest.mark.parametrize(("old", "new", "line", "message"), BAD)
def test_a_bad_policy_is_refused_at_its_line_before_any_request(
        tree: Path, run: Cli, stats: Any, reset_stats: Callable[[], None], old: str, new: str, line: int,
        message: str) -> None:
    (tree / "policy.yaml").write_text(PRODUCT_POLICY.replace(old, new))
    reset_stats()
    for command in (["plan", str(tree)], ["apply", str(tree), "--auto-approve"]):
        result = run(*command)
        assert result.exit_code == 1
        assert f"policy.yaml:{line}:" in result.stderr and message in result.stderr, result.stderr
    assert sum(stats().values()) == 0
    assert run("validate", str(tree)).exit_code == 1


def test_policy_paths_hold_policy_documents_only(tree: Path, run: Cli, tmp_path: Path) -> None:
    central = tmp_path / "central.yaml"
    central.write_text(PRODUCT_POLICY + "---\nkind: Prompt\nname: sneaky\n")
    result = run("plan", str(tree), "--policy", str(central))
    assert result.exit_code == 1
    assert f"{central}:18:1" in result.stderr and "--policy takes Policy documents only" in result.stderr


def test_watch_applies_what_is_allowed_and_reports_what_a_policy_holds_back(
        guarded: Path, run: Cli, server: tuple[str, Any]) -> None:
    move_label(guarded)
    edit(guarded / "research/evaluators.yaml", "include_explanations: true", "include_explanations: false")
    result = run("watch", str(guarded), "--once", "--apply")
    assert "Not applied (needs --approve production-label)" in result.output
    assert result.exit_code == 2  # the held change is drift left
    plan = json.loads(run("plan", str(guarded), "--format", "json").stdout)
    assert [op["address"] for op in plan["operations"]] == ["Prompt/research/summarize-ticket"]  # the rest healed
    healed = run("watch", str(guarded), "--once", "--apply", "--approve", "production-label")
    assert healed.exit_code == 0, healed.output


def test_verdicts_are_counted_by_effect(guarded: Path, run: Cli, tmp_path: Path) -> None:
    move_label(guarded)
    prom = tmp_path / "m.prom"
    assert run("plan", str(guarded), "--metrics-file", str(prom)).exit_code == 0
    found = parse_metrics(prom.read_text())
    assert found[("reconciler_policy_verdicts_total", frozenset({("effect", "require_approval")}))] == 1
    assert found[("reconciler_policy_verdicts_total", frozenset({("effect", "deny")}))] == 0


def test_a_plan_touching_several_resources_starts_with_the_kinds_by_action(tree: Path, run: Cli) -> None:
    text = run("plan", str(tree)).stdout.splitlines()
    assert text[:2] == ["Changes by kind:", "  kind                  delete  replace   create   update"]
    assert "  Integration                0        0        3        0" in text
    markdown = run("plan", str(tree), "--format", "markdown").stdout
    assert "| kind | delete | replace | create | update |" in markdown
    assert markdown.index("| kind |") < markdown.index("<details>")


def test_target_and_exclude_take_address_globs(tree: Path, run: Cli) -> None:
    plan = json.loads(run("plan", str(tree), "--target", "Integration/*-prod", "--target", "Prompt/research/*",
                          "--format", "json").stdout)
    assert sorted({op["address"] for op in plan["operations"]}) == [
        "Integration/vendor-a-prod", "Prompt/research/summarize-ticket"]
    plan = json.loads(run("plan", str(tree), "--exclude", "Prompt/*", "--exclude", "ResourceRestriction/*",
                          "--format", "json").stdout)
    kinds = {op["kind"] for op in plan["operations"]}
    assert "Prompt" not in kinds and "ResourceRestriction" not in kinds and "Evaluator" in kinds


def test_a_kept_resource_that_needs_an_excluded_one_created_first_fails_naming_both(tree: Path, run: Cli) -> None:
    result = run("plan", str(tree), "--exclude", "Integration/vendor-a-*")
    assert result.exit_code == 1
    assert "Evaluator/research/faithfulness needs Integration/vendor-a-prod created first" in result.stderr
    assert run("plan", str(tree), "--exclude", "Integration/vendor-a-*", "--exclude", "Evaluator/*").exit_code == 0


def test_excluded_resources_are_neither_planned_nor_pruned(tree: Path, run: Cli, server: tuple[str, Any]) -> None:
    assert run("apply", str(tree), "--auto-approve").exit_code == 0
    drop_integration(tree)
    pruned = json.loads(run("plan", str(tree), "--prune", "--format", "json").stdout)
    assert [op["address"] for op in pruned["operations"]] == ["Integration/self-hosted-nim"]
    kept = json.loads(run("plan", str(tree), "--prune", "--exclude", "Integration/self-*", "--format", "json").stdout)
    assert kept["operations"] == [] and kept["unmanaged"] == []
    drift = run("drift", str(tree), "--prune", "--exclude", "Integration/self-*")
    assert drift.exit_code == 0, drift.output


def test_schema_plan_is_the_json_schema_every_plan_follows(tree: Path, run: Cli, tmp_path: Path) -> None:
    printed = run("schema", "--plan")
    assert printed.exit_code == 0
    schema = json.loads(printed.stdout)
    (tree / "policy.yaml").write_text(PRODUCT_POLICY.replace("kinds: [Prompt], fields: [version.labels]",
                                                             "kinds: [Prompt]"))
    plan = json.loads(run("plan", str(tree), "--format", "json").stdout)
    assert plan["policy"]  # the verdicts are part of what is checked
    jsonschema.Draft202012Validator(schema).validate(plan)
    assert schema["properties"]["format_version"]["pattern"].startswith("^(0|[1-9]")
    broken = dict(plan, format_version="1.0")
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(broken))


@pytest.mark.skipif(shutil.which("conftest") is None, reason="conftest (OPA) is not installed")
def test_the_conftest_recipe_denies_an_integration_delete(guarded: Path, run: Cli, tmp_path: Path) -> None:
    (guarded / "policy.yaml").unlink()
    drop_integration(guarded)
    plan = tmp_path / "plan.json"
    plan.write_text(run("plan", str(guarded), "--prune", "--format", "json").stdout)
    result = subprocess.run(["conftest", "test", "--policy", str(ROOT / "examples/policy/policy"), str(plan)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1 and "Integration/self-hosted-nim" in result.stdout


def rego(rule: str, plan: dict[str, Any]) -> list[str]:
    """What a rule set of the recipe's Rego says about ``plan`` (OPA's language, run by regopy)."""
    from regopy import Interpreter

    interpreter = Interpreter()
    interpreter.add_module("plan", (ROOT / "examples/policy/policy/plan.rego").read_text())
    interpreter.set_input(plan)
    answer = json.loads(str(interpreter.query(f"x := data.main.{rule}")))
    return sorted(answer["bindings"]["x"])


def test_the_recipes_rego_rules_judge_the_json_plan(guarded: Path, run: Cli) -> None:
    pytest.importorskip("regopy")
    (guarded / "policy.yaml").unlink()
    move_label(guarded)
    labels = json.loads(run("plan", str(guarded), "--format", "json").stdout)
    assert rego("deny", labels) == []
    assert rego("warn", labels) == ['Prompt/research/summarize-ticket: labels ["production"] -> '
                                    '["production", "staging"]']
    drop_integration(guarded)
    deletes = json.loads(run("plan", str(guarded), "--prune", "--format", "json").stdout)
    assert rego("deny", deletes) == ["Integration/self-hosted-nim: integrations are deleted by hand, after review "
                                     "(delete)"]


def test_the_conftest_recipe_is_there_and_reads_the_plan_json() -> None:
    rego = (ROOT / "examples/policy/policy/plan.rego").read_text()
    script = (ROOT / "examples/policy/conftest.sh").read_text()
    assert "input.operations" in rego and "package main" in rego
    assert "plan manifests --format json" in script and "conftest test" in script
    assert httpx is not None


def test_validate_checks_the_policies_of_policy_paths_too(tree: Path, run: Cli, tmp_path: Path) -> None:
    central = tmp_path / "central.yaml"
    central.write_text(PRODUCT_POLICY.replace("effect: warn", "effect: warm"))
    result = run("validate", str(tree), "--policy", str(central))
    assert result.exit_code == 1 and f"{central}:14:" in result.stderr
    central.write_text(PRODUCT_POLICY)
    assert run("validate", str(tree), "--policy", str(central)).exit_code == 0


def test_the_central_rules_of_the_recipe_are_valid_policy(tree: Path, run: Cli) -> None:
    result = run("validate", str(tree), "--policy", str(ROOT / "examples/policy/central.yaml"))
    assert result.exit_code == 0, result.output


# ------------------------------------------------- fields globs: every form a change of a field takes

GOLDEN = "research/data/golden-tickets.jsonl"
EXAMPLE_EDITS = {  # what the plan shows -> the edit of the tree that makes it
    "examples[ticket_id=T-1099]": lambda tree: (tree / GOLDEN).write_text(
        (tree / GOLDEN).read_text() + '{"ticket_id": "T-1099", "ticket": "New one", "expected": "bug"}\n'),
    "examples[ticket_id=T-1001].expected": lambda tree: edit(
        tree / GOLDEN, '"expected": "billing"}', '"expected": "refund"}'),
    "examples[ticket_id=T-1002]": lambda tree: (tree / GOLDEN).write_text(
        "".join(line for line in (tree / GOLDEN).read_text().splitlines(keepends=True) if "T-1002" not in line)),
    "examples[+]": lambda tree: (edit(tree / "research/datasets.yaml", "key: ticket_id\n", ""), (tree / GOLDEN).write_text(
        (tree / GOLDEN).read_text() + '{"ticket_id": "T-1099", "ticket": "New one", "expected": "bug"}\n')),
}


@pytest.mark.parametrize("shown", list(EXAMPLE_EDITS))
def test_a_rule_on_a_datasets_examples_holds_every_change_of_its_examples(
        guarded: Path, run: Cli, stats: Any, reset_stats: Callable[[], None], shown: str) -> None:
    with (guarded / "policy.yaml").open("a") as f:
        f.write("  - name: golden-examples\n    match: {kinds: [Dataset], fields: [examples]}\n"
                "    effect: require_approval\n")
    EXAMPLE_EDITS[shown](guarded)
    plan = json.loads(run("plan", str(guarded), "--format", "json").stdout)
    paths = [c["path"] for op in plan["operations"] for c in op["changes"]]
    assert shown in paths, paths  # the form this case is about is the one the plan shows
    assert [(v["rule"], v["address"]) for v in plan["policy"]] == [("golden-examples", "Dataset/research/golden-tickets")]
    reset_stats()
    refused = run("apply", str(guarded), "--auto-approve")
    assert refused.exit_code == 1 and "needs --approve golden-examples" in refused.stderr
    assert writes(stats()) == {}
    approved = run("apply", str(guarded), "--auto-approve", "--approve", "golden-examples")
    assert approved.exit_code == 0, approved.output
    assert writes(stats())


def test_a_rule_on_named_list_items_holds_a_change_inside_one(guarded: Path, run: Cli) -> None:
    with (guarded / "policy.yaml").open("a") as f:
        f.write("  - name: presets\n    match: {kinds: [Integration], fields: [config.request_presets]}\n"
                "    effect: warn\n  - name: other-preset-field\n"
                "    match: {kinds: [Integration], fields: [config.input_schema]}\n    effect: warn\n")
    edit(guarded / "integrations/agents.yaml", "config: {temperature: 0.7}", "config: {temperature: 0.9}")
    plan = json.loads(run("plan", str(guarded), "--format", "json").stdout)
    paths = [c["path"] for op in plan["operations"] for c in op["changes"]]
    assert paths == ["config.request_presets.warm.config.temperature"], paths
    assert [(v["rule"], v["address"]) for v in plan["policy"]] == [("presets", "Integration/support-agent")]


# ------------------------------------------- fields the API does not store: before is the tree at --since


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@example.com", "PATH": "/usr/bin:/bin"})
    return done.stdout.strip()


@pytest.fixture
def committed(guarded: Path) -> Path:
    """The guarded tree (applied, with the product's policy) committed to a git repository."""
    git(guarded, "init", "-q")
    git(guarded, "add", ".")
    git(guarded, "commit", "-qm", "tree")
    return guarded


def test_retention_never_shrinks_fires_with_since_on_a_dataset_the_plan_does_not_call(
        committed: Path, run: Cli, tmp_path: Path) -> None:
    edit(committed / "research/datasets.yaml", "keep_last: 10", "keep_last: 3")
    plan = json.loads(run("plan", str(committed), "--since", "HEAD", "--format", "json").stdout)
    assert plan["operations"] == []  # retention is not stored live: no call is needed
    assert [(v["rule"], v["effect"], v["address"]) for v in plan["policy"]] == [
        ("retention-never-shrinks", "warn", "Dataset/research/golden-tickets")]
    text = run("plan", str(committed), "--since", "HEAD")
    assert text.exit_code == 0 and "retention-never-shrinks" in text.stdout, text.output
    saved = tmp_path / "plan.json"
    assert run("plan", str(committed), "--since", "HEAD", "--out", str(saved)).exit_code == 0
    assert [v["rule"] for v in json.loads(saved.read_text())["policy"]] == ["retention-never-shrinks"]
    applied = run("apply", str(saved))  # apply PLANFILE judges again, with the plan's --since
    assert applied.exit_code == 0 and "retention-never-shrinks" in applied.output, applied.output


def test_without_since_an_unstored_field_has_no_before_and_a_growing_one_does_not_fire(
        committed: Path, run: Cli) -> None:
    edit(committed / "research/datasets.yaml", "keep_last: 10", "keep_last: 3")
    blind = json.loads(run("plan", str(committed), "--format", "json").stdout)
    assert "policy" not in blind  # before.experiment_retention is absent: the condition is false
    edit(committed / "research/datasets.yaml", "keep_last: 3", "keep_last: 20")
    growing = json.loads(run("plan", str(committed), "--since", "HEAD", "--format", "json").stdout)
    assert "policy" not in growing
    git(committed, "commit", "-qam", "keep 20")
    edit(committed / "research/datasets.yaml", "keep_last: 20", "keep_last: 19")
    shrinking = json.loads(run("plan", str(committed), "--since", "HEAD", "--format", "json").stdout)
    assert [v["rule"] for v in shrinking["policy"]] == ["retention-never-shrinks"]
    unchanged = json.loads(run("plan", str(committed), "--since", "HEAD~1", "--format", "json").stdout)
    assert "policy" not in unchanged  # 19 against the 10 of the first commit: it grew


def test_a_fields_rule_on_retention_fires_on_its_change_since_ref_and_sees_it_in_op_changes(
        committed: Path, run: Cli) -> None:
    with (committed / "policy.yaml").open("a") as f:
        f.write("  - name: retention-reviewed\n    match: {kinds: [Dataset], fields: [experiment_retention]}\n"
                "    condition: op.changes.exists(c, c.path == 'experiment_retention.older_than_days' && c.after == 60)\n"
                "    effect: require_approval\n")
    edit(committed / "research/datasets.yaml", "older_than_days: 30", "older_than_days: 60")
    plan = json.loads(run("plan", str(committed), "--since", "HEAD", "--format", "json").stdout)
    assert [(v["rule"], v["address"]) for v in plan["policy"]] == [
        ("retention-reviewed", "Dataset/research/golden-tickets")]
    refused = run("apply", str(committed), "--since", "HEAD", "--auto-approve")
    assert refused.exit_code == 1 and "needs --approve retention-reviewed" in refused.stderr
