"""``ignore_changes`` (docs/manifests.md, "Two writers"): on a resource and in the Ownership document, an ignored
difference is never updated nor drift, is sent on create, is counted (``2 ignored``) and listed with
``-v`` beside its rule's ``file:line``; identity fields are refused; a rule matching nothing warns;
``watch --apply`` leaves a label moved in the UI alone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from reconciler.emulator.core import Emulator
from tests.pull.helpers import Cli, ui
from tests.watch.helpers import Watch

TREE = """\
kind: Ownership
name: support
spaces: [research]
ignore_changes:                            # the same for many resources
  - match: ["Evaluator/research/*"]
    fields: [template_config.llm_config.invocation_parameters]
---
kind: Prompt
space: research
name: triage
ignore_changes: [version.labels]          # field paths this tree never updates nor reports
description: Triage a ticket
version:
  commit_message: first
  provider: VENDOR_A
  messages: [{role: user, content: "{ticket}"}]
  labels: [production]
---
kind: Integration
name: llm-a
type: LLM
config: {provider: VENDOR_A, api_key: {env: A_KEY}}
---
kind: Evaluator
space: research
name: judge
commit_message: first
template_config:
  name: judge
  template: "Is {{output}} right?"
  classification_choices: {right: 1, wrong: 0}
  llm_config: {integration: llm-a, model_name: m, invocation_parameters: {temperature: 0}}
"""


def moved_in_the_ui(tmp_path: Path) -> None:
    with ui(tmp_path) as api:
        api.new_prompt_version("research", "triage")  # the new latest version carries no label
        api.new_evaluator_version("research", "judge",
                                  lambda tc: tc["llm_config"].update(invocation_parameters={"temperature": 0.7}))


def test_ignored_differences_are_neither_updated_nor_drift_and_are_counted(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text(TREE.replace("support\nspaces", "support\nintegrations: [llm-*]\nspaces"))
    assert cli("apply", "tree.yaml", "--auto-approve").exit_code == 0
    moved_in_the_ui(tmp_path)
    plan = cli("plan", "tree.yaml", "--detailed-exitcode")
    assert plan.exit_code == 0, plan.output
    assert plan.output.splitlines()[-1] == "Plan: 0 to create, 0 to update, 0 to delete; 2 ignored."
    verbose = cli("plan", "tree.yaml", "-v").output
    assert "Prompt/research/triage: version.labels: [] (live) vs [\"production\"] (declared)  [tree.yaml:12]" \
        in verbose
    assert "Evaluator/research/judge: template_config.llm_config.invocation_parameters" in verbose
    assert "[tree.yaml:7]" in verbose
    as_json = json.loads(cli("plan", "tree.yaml", "--format", "json").stdout)
    assert as_json["summary"]["ignored"] == 2 and as_json["operations"] == []
    assert {i["path"] for i in as_json["ignored"]} == {"version.labels",
                                                       "template_config.llm_config.invocation_parameters"}
    assert "2 ignored" in cli("plan", "tree.yaml", "--format", "markdown").output
    assert cli("drift", "tree.yaml").exit_code == 0
    with ui(tmp_path) as api:  # nothing was sent back
        assert api.prompt("research", "triage")["version"]["labels"] == []
        assert api.evaluator("research", "judge")["version"]["template_config"]["llm_config"][
            "invocation_parameters"] == {"temperature": 0.7}
    # a field not ignored still is updated
    with ui(tmp_path) as api:
        p = api.prompt("research", "triage")
        api.c.patch(f"/v2/prompts/{p['id']}", json={"description": "changed"}).raise_for_status()
    changed = cli("plan", "tree.yaml")
    assert "Plan: 0 to create, 1 to update, 0 to delete; 2 ignored." in changed.output
    # pull writes nothing an ignore rule covers
    pulled = cli("pull", "tree.yaml", "--format", "json")
    assert [e["path"] for e in json.loads(pulled.stdout)["edits"]] == ["description"]


def test_an_ignored_field_is_sent_when_the_resource_is_created(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(TREE.split("---\n")[1].replace("[version.labels]", "[description, version.labels]"))
    plan = cli("plan", "p.yaml")
    assert "description" in plan.output and "ignored" not in plan.output
    assert cli("apply", "p.yaml", "--auto-approve").exit_code == 0
    with ui(tmp_path) as api:
        p = api.prompt("research", "triage")
        assert p["description"] == "Triage a ticket" and p["version"]["labels"] == ["production"]


@pytest.mark.parametrize(("rule", "where"), [
    ("ignore_changes: [name]\n", "p.yaml:4:18"),
    ("ignore_changes: [version.labels, space]\n", "p.yaml:4:34"),
])
def test_identity_fields_cannot_be_ignored(cli: Cli, tmp_path: Path, rule: str, where: str) -> None:
    doc = TREE.split("---\n")[1].replace("ignore_changes: [version.labels]          # field paths this tree never "
                                         "updates nor reports\n", rule)
    (tmp_path / "p.yaml").write_text(doc)
    result = cli("validate", "p.yaml")
    assert result.exit_code == 1
    assert where in result.output and "cannot be ignored" in result.output


def test_an_ownership_rule_on_an_identity_field_is_refused(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(TREE.replace("fields: [template_config.llm_config.invocation_parameters]",
                                                  "fields: [type]"))
    result = cli("validate", "t.yaml")
    assert result.exit_code == 1 and "t.yaml:6:" in result.output and "'type'" in result.output


def test_a_rule_that_matches_nothing_declared_is_a_warning(cli: Cli, tmp_path: Path) -> None:
    tree = TREE.replace("[version.labels]", "[version.label]").replace("Evaluator/research/*", "Evaluator/other/*")
    (tmp_path / "t.yaml").write_text(tree.replace("support\nspaces", "support\nintegrations: [llm-*]\nspaces"))
    result = cli("plan", "t.yaml")
    assert result.exit_code == 0
    assert "tree.yaml" not in result.output
    assert "Warning: t.yaml:12: ignore_changes 'version.label' matches no field Prompt/research/triage declares" \
        in result.output
    assert "Warning: t.yaml:6: ignore_changes match ['Evaluator/other/*'] matches no declared resource" in result.output


@pytest.fixture
def watches() -> Iterator[list[Watch]]:
    started: list[Watch] = []
    yield started
    for w in started:
        w.kill()


@pytest.mark.socket
def test_watch_apply_leaves_a_label_moved_in_the_ui_alone(server: tuple[str, Emulator], tmp_path: Path,
                                                          watches: list[Watch], cli: Cli) -> None:
    url = server[0]
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "p.yaml").write_text(TREE.split("---\n")[1])
    from click.testing import CliRunner

    from reconciler.cli.main import main
    env = {"RECONCILER_API_KEY": "admin-key"}
    assert CliRunner(env=env).invoke(main, ["apply", str(tree), "--auto-approve", "--base-url", url]).exit_code == 0
    with httpx.Client(base_url=url, headers={"Authorization": "Bearer admin-key"}, timeout=10) as c:
        from tests.pull.helpers import UI

        api = UI(c)
        first = api.prompt("research", "triage")["version"]["id"]
        second = api.new_prompt_version("research", "triage", labels=["production"])  # moved to a new version
        api.move_label(first, ["production"])  # and back to the first: the latest has none
        watcher = Watch(tree, url, tmp_path, "--apply")
        watches.append(watcher)
        watcher.wait_cycles(3)
        labels = {v["id"]: v["labels"] for v in c.get(f"/v2/prompts/{api.prompt('research', 'triage')['id']}/versions")
                  .json()["prompt_versions"]}
    assert labels[first] == ["production"] and labels[second] == []
    assert watcher.value("reconciler_resources", kind="Prompt", state="in_sync") == 1
    assert not [e for e in watcher.events("resource") if e.get("outcome") == "applied"]
    assert watcher.terminate() == 0


def test_ignore_rules_on_every_kind_and_glob_segments(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text("""\
kind: Integration
name: llm-a
type: LLM
ignore_changes: ["config.*"]
config: {provider: VENDOR_A, api_key: {env: A_KEY}, is_function_calling_enabled: true}
---
kind: Dataset
space: research
name: golden
ignore_changes: [examples]
examples: [{q: one}]
---
kind: Prompt
space: research
name: p
ignore_changes: [version.invocation_params.temperature]
version:
  commit_message: first
  provider: VENDOR_A
  messages: [{role: user, content: hi}]
  invocation_params: {temperature: 0.2, top_p: 1}
""")
    assert cli("apply", "t.yaml", "--auto-approve").exit_code == 0
    with ui(tmp_path) as api:
        api.patch_integration("llm-a", {"config": {"is_function_calling_enabled": False}})
        api.append_examples("research", "golden", [{"q": "two"}])
        api.new_prompt_version("research", "p", invocation_params={"temperature": 0.9, "top_p": 1})
    plan = cli("plan", "t.yaml", "--detailed-exitcode")
    assert plan.exit_code == 0, plan.output
    assert "; 3 ignored." in plan.output
    with ui(tmp_path) as api:  # a key the rule does not name is still managed
        api.new_prompt_version("research", "p", invocation_params={"temperature": 0.9, "top_p": 0.5})
    changed = cli("plan", "t.yaml", "--format", "json")
    ops = json.loads(changed.stdout)["operations"]
    assert [op["body"]["invocation_params"] for op in ops] == [{"temperature": 0.9, "top_p": 1}]
