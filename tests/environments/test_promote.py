"""promote FROM TO on the example tree, each environment on a loopback emulator of its own: the
edits land in TO's own files only, the next plan of TO shows exactly the promotion, and what each
environment sets through its variables is kept and listed. Bad input is refused before anything."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from tests.environments.conftest import stats


@pytest.fixture
def accounts(example_accounts: dict[str, str]) -> dict[str, str]:
    return example_accounts


@pytest.fixture
def tree(example_tree: Path) -> Path:
    return example_tree


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.yaml"))}


def requests(accounts: dict[str, str]) -> int:
    return sum(sum(stats(url).values()) for url in accounts.values())


def test_promote_writes_only_into_the_targets_overlay_and_the_next_plan_shows_exactly_the_promotion(
        tree: Path, cli: Callable[..., Result], accounts: dict[str, str]) -> None:
    assert cli("apply", "--all", "--auto-approve").exit_code == 0
    before = files_of(tree)
    staging_plan = cli("plan", "--env", "staging", "--format", "json").stdout

    shown = cli("promote", "staging", "production")
    assert shown.exit_code == 2, shown.output
    assert files_of(tree) == before  # without --write, a diff only
    assert "+++ b/overlays/production/patches.yaml" in shown.stdout
    assert 'Promoted: Prompt/production/summarize-ticket: version.model: "model-large" -> "model-small" ' \
           "(overlays/staging/patches.yaml:7)" in shown.stdout
    assert "Kept: Prompt/production/summarize-ticket: version.invocation_params.temperature: 0.2 (production's " \
           "variable, overlays/production/vars.yaml:3; staging has 0.7)" in shown.stderr
    assert "Kept: Integration/vendor-a-main: config.is_function_calling_enabled: false (production's own value, " \
           "overlays/production/patches.yaml:12, over the shared base/integrations.yaml:19; staging has true)" \
        in shown.stderr  # production's Patch over the base: set on purpose
    assert "Promote staging -> production: 1 change as edits of 1 file; 4 kept (--write writes them)." in shown.stdout

    written = cli("promote", "staging", "production", "--write")

    assert written.exit_code == 2, written.output
    after = files_of(tree)
    assert [f for f in after if after[f] != before[f]] == ["overlays/production/patches.yaml"]
    # into production's own Patch of the prompt, beside what it sets on purpose
    assert "patch:\n  restricted: true\n  version:\n    model: model-small\n---" in \
        (tree / "overlays/production/patches.yaml").read_text()
    plan = json.loads(cli("plan", "--env", "production", "--format", "json").stdout)
    production = plan["environments"]["production"]
    assert [(op["action"], op["kind"], op["name"]) for op in production["operations"]] == \
        [("update", "Prompt", "summarize-ticket")]
    changes = [(c["path"], c["before"], c["after"]) for c in production["operations"][0]["changes"]]
    # the one promoted value; a new version carries its commit message (the planner shows it with any version)
    assert [c for c in changes if c[0] != "version.commit_message"] == [("version.model", "model-large", "model-small")]
    assert cli("plan", "--env", "staging", "--format", "json").stdout == staging_plan
    again = cli("promote", "staging", "production")
    assert again.exit_code == 0 and "nothing to promote; 4 kept." in again.stdout
    assert cli("apply", "--env", "production", "--auto-approve").exit_code == 0
    assert cli("plan", "--env", "production", "--detailed-exitcode").exit_code == 0


def test_promote_target_limits_the_resources_and_json_lists_what_was_kept(
        tree: Path, cli: Callable[..., Result]) -> None:
    untouched = files_of(tree)
    prompt = cli("promote", "staging", "production", "--target", "Prompt/summarize-ticket")  # in any space
    assert prompt.exit_code == 2 and "version.model" in prompt.stdout, prompt.output
    other = cli("promote", "staging", "production", "--target", "Integration/*", "--format", "json")
    assert other.exit_code == 0, other.output
    report = json.loads(other.stdout)
    assert report["changes"] == [] and report["files"] == [] and not report["written"]
    assert [(k["address"], k["path"]) for k in report["kept"]] == \
        [("Integration/vendor-a-main", "config.is_function_calling_enabled")]
    assert files_of(tree) == untouched


def test_a_resource_only_from_declares_is_copied_into_the_targets_overlay_with_its_variables(
        tree: Path, cli: Callable[..., Result]) -> None:
    (tree / "overlays/staging/evaluators.yaml").write_text(
        "kind: Evaluator\nspace: {var: space}\nname: tone\ncommit_message: tried in staging\n"
        "template_config:\n  name: tone\n  template: \"Is {{output}} polite?\"\n"
        "  classification_choices: {polite: 1, rude: 0}\n"
        "  llm_config: {integration: vendor-a-main, model_name: model-large}\n")

    result = cli("promote", "staging", "production", "--target", "Evaluator/*/tone", "--write")

    assert result.exit_code == 2, result.output
    assert "Promoted: Evaluator/production/tone: (document): (not set) -> \"(declared)\"" in result.stdout
    assert "space:\n  var: space\nname: tone" in (tree / "overlays/production/patches.yaml").read_text()
    assert cli("validate", "--env", "production").exit_code == 0


def refused(accounts: dict[str, str], cli: Callable[..., Result], *args: str) -> str:
    sent = requests(accounts)
    result = cli(*args)
    assert result.exit_code == 1, result.output
    assert requests(accounts) == sent
    return result.output


@pytest.mark.parametrize(("args", "message"), [
    (("promote", "staging", "prod"), "promote: no environment 'prod'; did you mean 'production'? (environments: "
                                     "staging, production)"),
    (("promote", "stagin", "production"), "did you mean 'staging'?"),
    (("promote", "production", "production"), "promote production production: FROM and TO are one environment"),
])
def test_bad_environments_are_refused_before_anything(tree: Path, cli: Callable[..., Result],
                                                      accounts: dict[str, str], args: tuple[str, ...],
                                                      message: str) -> None:
    assert message in refused(accounts, cli, *args)


def test_a_target_without_an_overlay_of_its_own_is_refused(tree: Path, cli: Callable[..., Result],
                                                          accounts: dict[str, str], **_: Any) -> None:
    config = tree / "reconciler.yaml"
    config.write_text(config.read_text().replace("paths: [base, overlays/production]", "paths: [base]"))
    untouched = files_of(tree)
    output = refused(accounts, cli, "promote", "staging", "production", "--write")
    assert "environment production has no overlay to promote into: every manifest it loads (base) is loaded by " \
           "another environment too" in output
    assert files_of(tree) == untouched


def test_a_secret_reference_is_promoted_as_a_reference_and_no_value_is_read(
        tree: Path, cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VENDOR_B_KEY", "canary-vendor-b-7d1e")
    staging = tree / "overlays/staging/patches.yaml"
    staging.write_text(staging.read_text() + "---\nkind: Patch\ntarget: Integration/vendor-a-main\n"
                       "patch:\n  config: {api_key: {env: VENDOR_B_KEY}}\n")

    result = cli("promote", "staging", "production", "--target", "Integration/*", "--write")

    assert result.exit_code == 2, result.output
    assert 'config.api_key: "(sensitive, env:VENDOR_A_KEY)" -> "(sensitive, env:VENDOR_B_KEY)" ' \
           "(overlays/staging/patches.yaml:12)" in result.stdout
    assert "canary-vendor-b-7d1e" not in result.output
    text = (tree / "overlays/production/patches.yaml").read_text()
    # into production's Patch of the integration, its flow mapping written again with the key merged in
    assert text.endswith("patch:\n  config: {is_function_calling_enabled: false, api_key: {env: VENDOR_B_KEY}}\n")
    assert "canary" not in text
    assert cli("promote", "staging", "production", "--target", "Integration/*").exit_code == 0


def test_a_resource_in_froms_own_space_of_a_shared_account_is_listed_not_copied(
        tree: Path, cli: Callable[..., Result], accounts: dict[str, str]) -> None:
    config = tree / "reconciler.yaml"  # both environments in one account
    config.write_text(config.read_text().replace(accounts["production"], accounts["staging"]))
    (tree / "overlays/staging/evaluators.yaml").write_text(
        "kind: Evaluator\nspace: staging\nname: tone\ncommit_message: tried in staging\n"
        "template_config:\n  name: tone\n  template: \"Is {{output}} polite?\"\n"
        "  classification_choices: {polite: 1, rude: 0}\n"
        "  llm_config: {integration: vendor-a-main, model_name: model-large}\n")
    untouched = files_of(tree)

    result = cli("promote", "staging", "production", "--target", "Evaluator/*/tone", "--write")

    assert result.exit_code == 2, result.output
    assert "Not promoted: Evaluator/staging/tone: declared by staging only, in its space staging (written as is)" \
        in result.stderr
    assert files_of(tree) == untouched
