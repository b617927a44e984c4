"""Each live edit is written where the value is declared (docs/manifests.md, "Two writers"): the manifest's
line, a var file's line, a Patch's line, an examples file's line; a value from --var or the
environment is named, not written; write-only fields are never written; omitted fields stay
omitted; a declared resource deleted live is listed, and with --remove-absent loses its document (and its
Patches)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.pull.helpers import Cli, ui

BASE = """\
kind: Prompt
space: research
name: summarize
description: "Summaries for ${var.env}"
version:
  commit_message: first
  provider: VENDOR_A
  model: {var: model}
  messages:
    - {role: user, content: "Summarize {ticket}"}
  labels: [production]
---
kind: Integration
name: llm-a
type: LLM
config:
  provider: VENDOR_A
  api_key: {env: A_KEY}
  is_function_calling_enabled: true
---
kind: Integration
name: agent
type: AGENT
description: {var: agent_description}
config:
  endpoint: https://agent.example.com/run
  headers: {X-Token: {env: AGENT_TOKEN}}
  input_schema: {type: object, properties: {q: {type: string}}}
---
kind: Dataset
space: research
name: golden
key: tid
examples_file: golden.jsonl
---
kind: Dataset
space: research
name: inline
examples:
  - {q: one}
  - {q: two}
---
kind: Evaluator
space: research
name: judge
commit_message: first
template_config:
  name: judge
  template: "Is {{output}} right?"
  classification_choices: {right: 1, wrong: 0}
  llm_config: {integration: llm-a, model_name: m}
"""

OVERLAY = """\
kind: Patch
target: Integration/llm-a
patch:
  config: {is_function_calling_enabled: true}   # production keeps it on
---
kind: Patch
target: Evaluator/judge
space: research
patch:
  description: the judge
"""

VARS = """\
# production variables
env: prod
model: model-large   # the model of every prompt
"""

EXAMPLES = '{"tid": 1, "q": "a"}\n{"tid": 2, "q": "b"}\n{"tid": 3, "q": "c"}\n'


def make_tree(tmp_path: Path) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "overlay").mkdir()
    (tmp_path / "base" / "all.yaml").write_text(BASE)
    (tmp_path / "base" / "golden.jsonl").write_text(EXAMPLES)
    (tmp_path / "overlay" / "patches.yaml").write_text(OVERLAY)
    (tmp_path / "vars.yaml").write_text(VARS)


TREE = ("base", "overlay", "--var-file", "vars.yaml", "--var", "agent_description=replays")


def test_each_edit_goes_where_its_value_is_declared(cli: Cli, tmp_path: Path) -> None:
    make_tree(tmp_path)
    assert cli("apply", *TREE, "--auto-approve").exit_code == 0
    with ui(tmp_path) as api:
        p = api.prompt("research", "summarize")
        api.c.patch(f"/v2/prompts/{p['id']}", json={"description": "Summaries for staging"}).raise_for_status()
        api.new_prompt_version("research", "summarize", labels=["production"], model="model-xl")
        api.patch_integration("llm-a", {"config": {"is_function_calling_enabled": False}})
        api.patch_integration("agent", {"description": "replays support calls"}, "AGENT")
        api.patch_integration("llm-a", {"config": {"api_key": None}})
        e = api.evaluator("research", "judge")
        api.c.patch(f"/v2/evaluators/{e['id']}", json={"description": "the strict judge"}).raise_for_status()
        live = {x["tid"]: x for x in api.examples("research", "golden")}
        api.update_examples("research", "golden", [{"id": live[1]["id"], "tid": 1, "q": "A!"}])
        api.delete_examples("research", "golden", [live[2]["id"]])
        api.append_examples("research", "golden", [{"tid": 4, "q": "d"}])
        inline = {x["q"]: x for x in api.examples("research", "inline")}
        api.delete_examples("research", "inline", [inline["one"]["id"]])
        api.append_examples("research", "inline", [{"q": "three"}])

    result = cli("pull", *TREE, "--write", "--format", "json")
    assert result.exit_code == 2, result.output
    out = json.loads(result.stdout)
    base = (tmp_path / "base" / "all.yaml").read_text()
    vars_text = (tmp_path / "vars.yaml").read_text()
    overlay = (tmp_path / "overlay" / "patches.yaml").read_text()

    # a ${var.env} inside a string: the variable's line in the var file; a {var: model}: its line too
    assert vars_text == VARS.replace("env: prod", "env: staging").replace("model: model-large ", "model: model-xl ")
    assert '"Summaries for ${var.env}"' in base and "model: {var: model}" in base
    # a value a Patch sets: the Patch's line (the base's line stays)
    assert overlay == OVERLAY.replace("{is_function_calling_enabled: true}", "{is_function_calling_enabled: false}") \
        .replace("description: the judge", "description: the strict judge")
    assert "  is_function_calling_enabled: true\n" in base
    # --var: named, not written; write-only header values: named, never written
    reasons = {(n["address"], n["path"]): n["reason"] for n in out["not_written"]}
    assert "--var agent_description" in reasons[("Integration/agent", "description")]
    assert "config.api_key is write-only" in reasons[("Integration/llm-a", "")]
    assert "canary" not in result.output and "api_key: {env: A_KEY}" in base
    # examples file: the changed line replaced, the deleted one removed, the new one appended
    assert (tmp_path / "base" / "golden.jsonl").read_text() == \
        '{"tid": 1, "q": "A!"}\n{"tid": 3, "q": "c"}\n{"tid": 4, "q": "d"}\n'
    # inline examples: the item's line removed, the new one appended in the list's style
    assert "examples:\n  - {q: two}\n  - {q: three}\n" in base
    # nothing else changed, omitted fields stay omitted
    assert base.replace("  - {q: two}\n  - {q: three}\n", "  - {q: one}\n  - {q: two}\n").replace(
        "commit_message: edited in the UI", "commit_message: first", 1) == BASE  # the version's message follows live
    assert cli("plan", *TREE, "--detailed-exitcode").exit_code == 2  # only what could not be written differs
    assert "description" in cli("plan", *TREE).output


def test_a_label_moved_in_the_ui_follows_the_live_version(cli: Cli, tmp_path: Path) -> None:
    tree = tmp_path / "p.yaml"
    tree.write_text("kind: Prompt\nspace: research\nname: faq\nversion:\n  commit_message: first\n"
                    "  provider: VENDOR_A\n  messages: [{role: user, content: hi}]\n  labels: [production, staging]\n")
    assert cli("apply", "p.yaml", "--auto-approve").exit_code == 0
    with ui(tmp_path) as api:
        first = api.prompt("research", "faq")["version"]["id"]
        api.new_prompt_version("research", "faq", messages=[{"role": "user", "content": "hello"}])
        api.move_label(first, ["production"])  # production stays on the old version; staging too
    assert cli("pull", "p.yaml", "--write").exit_code == 2
    text = tree.read_text()
    assert "messages: [{role: user, content: hello}]" in text and "labels: []" in text
    assert cli("plan", "p.yaml", "--detailed-exitcode").exit_code == 0


def test_a_resource_deleted_live_loses_its_document_and_its_patches(cli: Cli, tmp_path: Path) -> None:
    make_tree(tmp_path)
    assert cli("apply", *TREE, "--auto-approve").exit_code == 0
    with ui(tmp_path) as api:
        api.delete("evaluators", "judge", space_id=api.space_id("research"))
    listed = cli("pull", *TREE, "--write")  # by default: listed (apply creates it), nothing removed
    assert listed.exit_code == 2 and "Evaluator/research/judge: declared, not live: apply creates it" in listed.output
    assert "name: judge" in (tmp_path / "base" / "all.yaml").read_text()
    result = cli("pull", *TREE, "--write", "--remove-absent")
    assert result.exit_code == 2, result.output
    base = (tmp_path / "base" / "all.yaml").read_text()
    assert "name: judge" not in base and base == BASE[:BASE.index("---\nkind: Evaluator")]
    overlay = (tmp_path / "overlay" / "patches.yaml").read_text()
    assert "Evaluator/judge" not in overlay and "Integration/llm-a" in overlay
    assert cli("plan", *TREE, "--detailed-exitcode").exit_code == 0


def test_exit_codes_and_json(cli: Cli, tmp_path: Path) -> None:
    make_tree(tmp_path)
    assert cli("apply", *TREE, "--auto-approve").exit_code == 0
    quiet = cli("pull", *TREE, "--format", "json")
    assert quiet.exit_code == 0 and json.loads(quiet.stdout)["edits"] == []
    with ui(tmp_path) as api:
        api.patch_integration("llm-a", {"config": {"is_function_calling_enabled": False}})
    shown = cli("pull", *TREE, "--format", "json")
    out = json.loads(shown.stdout)
    assert shown.exit_code == 2 and out["written"] is False
    assert out["edits"] == [{"address": "Integration/llm-a", "path": "config.is_function_calling_enabled",
                             "file": "overlay/patches.yaml", "line": 4, "action": "update", "before": True,
                             "after": False}]
    assert "+  config: {is_function_calling_enabled: false}" in out["diff"]
    bad = cli("pull", "nowhere.yaml")
    assert bad.exit_code == 1
