"""``pull --since REF``: a field changed both in the tree since REF and live is a conflict (shown
with base, tree and live; exit 1) while the other edits are written; ``--unmanaged-to DIR`` writes
what the ownership holds but no manifest declares, in export's layout, so the plan with it is empty."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.pull.helpers import Cli, ui

TREE = """\
kind: Ownership
name: research-team
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
description: first words
version:
  commit_message: first
  provider: VENDOR_A
  messages: [{role: user, content: "{ticket}"}]
"""


def git(tmp_path: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=tmp_path, check=True,
                   capture_output=True)


def test_a_field_changed_in_the_tree_and_live_is_a_conflict_and_the_rest_is_written(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    manifest = tmp_path / "tree" / "all.yaml"
    manifest.write_text(TREE)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "tree")
    git(tmp_path, "commit", "-qm", "base")
    assert cli("apply", "tree", "--auto-approve").exit_code == 0
    manifest.write_text(TREE.replace("description: first words", "description: tree words"))  # not applied yet
    with ui(tmp_path) as api:
        p = api.prompt("research", "triage")
        api.c.patch(f"/v2/prompts/{p['id']}", json={"description": "live words"}).raise_for_status()
        api.patch_integration("llm-a", {"config": {"is_function_calling_enabled": False}})

    result = cli("pull", "tree", "--since", "HEAD", "--write")
    assert result.exit_code == 1
    assert "Conflict: Prompt/research/triage: description (tree/all.yaml:14)" in result.output
    assert 'base "first words", tree "tree words", live "live words"; neither written' in result.output
    text = manifest.read_text()
    assert "description: tree words" in text  # neither side written
    assert "is_function_calling_enabled: false" in text  # the other edit is made

    as_json = cli("pull", "tree", "--since", "HEAD", "--format", "json")
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["conflicts"] == [{
        "address": "Prompt/research/triage", "path": "description", "base": "first words", "tree": "tree words",
        "live": "live words", "source": "tree/all.yaml:14"}]


def test_a_tree_change_not_yet_applied_is_not_pulled_back_with_since(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    manifest = tmp_path / "tree" / "all.yaml"
    manifest.write_text(TREE)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "tree")
    git(tmp_path, "commit", "-qm", "base")
    assert cli("apply", "tree", "--auto-approve").exit_code == 0
    changed = TREE.replace("description: first words", "description: tree words")
    manifest.write_text(changed)
    result = cli("pull", "tree", "--since", "HEAD", "--write")
    assert (result.exit_code, result.output) == (0, "")
    assert manifest.read_text() == changed


def test_unmanaged_resources_are_written_in_exports_layout_and_the_plan_with_them_is_empty(
        cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "all.yaml").write_text(TREE)
    assert cli("apply", "tree", "--auto-approve").exit_code == 0
    with ui(tmp_path) as api:
        api.c.post("/v2/prompts", json={"space_id": api.space_id("research"), "name": "made-in-ui", "version": {
            "commit_message": "ui", "provider": "VENDOR_A",
            "messages": [{"role": "user", "content": "hi"}]}}).raise_for_status()
        api.c.post("/v2/integrations", json={"type": "LLM", "name": "llm-ui", "config": {
            "provider": "VENDOR_A", "api_key": "canary-ui-key"}}).raise_for_status()
        api.c.post("/v2/integrations", json={"type": "LLM", "name": "other-team", "config": {
            "provider": "VENDOR_A", "api_key": "canary-other"}}).raise_for_status()
    assert "2 unmanaged" in cli("plan", "tree").output
    result = cli("pull", "tree", "--unmanaged-to", "adopted")
    assert result.exit_code == 2, result.output  # files were written: the recipe's "changes" output opens a PR
    assert (tmp_path / "adopted" / "research" / "prompts.yaml").is_file()
    written = (tmp_path / "adopted" / "integrations.yaml").read_text()
    assert "llm-ui" in written and "other-team" not in written and "canary" not in written
    plan = cli("plan", "tree", "adopted", "--detailed-exitcode")
    assert plan.exit_code == 0, plan.output
