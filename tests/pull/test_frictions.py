"""The frictions of a week of pull across environments, each through the command line over the emulator's socket: words that
name the options a command has, a rule typo refused by validate, the ignored key shown (not its parent),
one line for an empty plan, an honest end to a targeted apply, and errors that say what to do."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main
from reconciler.emulator.core import Emulator
from tests.pull.helpers import UI

ROOT = Path(__file__).resolve().parents[2]
SECRETS = {"RECONCILER_API_KEY": "admin-key", "VENDOR_A_KEY": "canary-vendor-a-71fe", "A_KEY": "canary-a-71aa"}

TREE = """\
kind: Ownership
name: research
spaces: [research]
integrations: ["llm-*"]
---
kind: Integration
name: llm-a
type: LLM
config: {provider: VENDOR_A, api_key: {env: A_KEY}, is_function_calling_enabled: true}
---
kind: Prompt
space: research
name: triage
ignore_changes: [version.invocation_params.temperature]
description: first words
version:
  commit_message: first
  provider: VENDOR_A
  messages: [{role: user, content: "{ticket}"}]
  invocation_params: {temperature: 0.2, max_tokens: 100}
"""


@pytest.fixture
def url(emulator_factory: Callable[..., tuple[str, Emulator]]) -> str:
    return emulator_factory()[0]


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, url: str) -> Callable[..., Result]:
    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("RECONCILER_BASE_URL", raising=False)
    for k in [k for k in os.environ if k.startswith("RECONCILER_VAR_")]:
        monkeypatch.delenv(k)
    monkeypatch.chdir(tmp_path)

    def invoke(*args: str) -> Result:
        connection = () if args[0] == "validate" else ("--base-url", url)
        return CliRunner().invoke(main, [*args, *connection], catch_exceptions=False)

    return invoke


@pytest.fixture
def api(url: str) -> Iterator[UI]:
    with httpx.Client(base_url=url, headers={"Authorization": "Bearer admin-key"}, timeout=10) as c:
        yield UI(c)


def test_pull_unmanaged_to_names_its_own_option(run: Callable[..., Result], tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text(TREE)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x.yaml").write_text("kept\n")
    result = run("pull", "tree.yaml", "--unmanaged-to", "full")
    assert result.exit_code == 1
    assert "--unmanaged-to full: the directory is not empty" in result.output
    assert "--out" not in result.output and "--force" not in result.output
    assert (tmp_path / "full" / "x.yaml").read_text() == "kept\n"


def test_validate_refuses_an_ignore_rule_that_matches_nothing(run: Callable[..., Result], tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text(TREE.replace("version.invocation_params.temperature",
                                                     "version.invocation_param.temperature"))
    result = run("validate", "tree.yaml")
    assert result.exit_code == 1
    assert "tree.yaml:14: ignore_changes 'version.invocation_param.temperature' matches no field " \
           "Prompt/research/triage declares" in result.output
    (tmp_path / "tree.yaml").write_text(TREE.replace("integrations: [\"llm-*\"]\n", "integrations: [\"llm-*\"]\n"
                                                     "ignore_changes:\n  - match: [\"Evaluator/research/*\"]\n"
                                                     "    fields: [description]\n"))
    unmatched = run("validate", "tree.yaml")
    assert unmatched.exit_code == 1 and "matches no declared resource" in unmatched.output
    (tmp_path / "tree.yaml").write_text(TREE)
    assert run("validate", "tree.yaml").exit_code == 0


def test_an_ignored_sub_key_is_shown_alone_and_an_empty_plan_says_it_once(
        run: Callable[..., Result], api: UI, tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text(TREE)
    assert run("apply", "tree.yaml", "--auto-approve").exit_code == 0
    api.new_prompt_version("research", "triage", invocation_params={"temperature": 0.9, "max_tokens": 100})
    plan = run("plan", "tree.yaml")
    assert plan.exit_code == 0
    assert "No changes." not in plan.output
    assert plan.output.splitlines()[-1] == "Plan: 0 to create, 0 to update, 0 to delete; 1 ignored."
    verbose = run("plan", "tree.yaml", "-v").output
    assert "~ Prompt/research/triage: version.invocation_params.temperature: 0.9 (live) vs 0.2 (declared)" in verbose
    assert "max_tokens" not in verbose
    in_sync = run("plan", "tree.yaml").output
    assert in_sync.count("Plan:") == 1


def test_a_targeted_apply_does_not_claim_the_whole_tree_matches(
        run: Callable[..., Result], api: UI, tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text(TREE)
    assert run("apply", "tree.yaml", "--auto-approve").exit_code == 0
    api.patch_integration("llm-a", {"config": {"is_function_calling_enabled": False}})
    p = api.prompt("research", "triage")
    api.c.patch(f"/v2/prompts/{p['id']}", json={"description": "changed"}).raise_for_status()
    applied = run("apply", "tree.yaml", "--auto-approve", "--target", "Prompt/research/triage")
    assert applied.exit_code == 0, applied.output
    assert "live state matches the manifests" not in applied.output
    assert "the targeted resources match the manifests" in applied.output
    assert run("plan", "tree.yaml", "--detailed-exitcode").exit_code == 2  # the integration still differs


def test_a_renamed_integration_error_names_the_live_one_and_pull(
        run: Callable[..., Result], api: UI, tmp_path: Path) -> None:
    tree = TREE.replace("llm-a", "a-old").replace("llm-*", "a-*") + """\
---
kind: Evaluator
space: research
name: judge
commit_message: first
template_config:
  name: judge
  template: "Is {{output}} right?"
  classification_choices: {right: 1, wrong: 0}
  llm_config: {integration: a-old, model_name: m}
"""
    (tmp_path / "tree.yaml").write_text(tree)
    applied = run("apply", "tree.yaml", "--auto-approve")
    assert applied.exit_code == 0, applied.output
    i = api.integration("a-old")
    api.c.patch(f"/v2/integrations/{i['id']}", json={"type": "LLM", "name": "a-new"}).raise_for_status()
    mine = tree.split("---\nkind: Integration")[0] + "---\nkind: Prompt" + tree.split("---\nkind: Prompt")[1]
    (tmp_path / "tree.yaml").write_text(mine)  # the other team owns the integration now
    plan = run("plan", "tree.yaml")
    assert plan.exit_code == 1
    assert "no LLM integration named 'a-old' in the manifests or live; live, Evaluator/research/judge uses " \
           "'a-new' (renamed?)" in plan.output
    assert "reconciler pull" in plan.output


def test_the_readme_overlay_example_runs_and_an_unknown_space_lists_the_spaces(
        run: Callable[..., Result], tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"`reconciler plan (base overlays/\S+ --var-file \S+)`", readme)
    assert command is not None
    shutil.copytree(ROOT / "examples/environments", tmp_path, dirs_exist_ok=True)
    args = command.group(1).split()
    assert all((tmp_path / a).exists() for a in args if "/" in a)  # overlays/production, not overlays/prod
    result = run("plan", *args)
    assert result.exit_code == 1
    assert "no space named (or with the id) 'production' exists; the spaces are: default, research" in result.output
    assert "reconciler emulator --space NAME" in result.output
