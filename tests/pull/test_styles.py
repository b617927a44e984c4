"""``pull --write`` keeps every byte of a hand-written file but the values live changed: files in
varied styles (comments everywhere, flow and block mappings, quoted and plain scalars, literal and
folded blocks, an anchor, Windows line ends) compared before and after, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pull.helpers import Cli, ui

STYLED = """\
# Support prompts: owned by the support team.
# Every comment here must survive a pull.

kind: Prompt            # a prompt
space: research
name: triage
description: 'Triage a ticket'   # single-quoted
version:
  commit_message: "first version"   # double-quoted
  provider: VENDOR_A
  model: model-large    # plain
  messages:
    # the system message, a literal block
    - role: system
      content: |
        You triage support tickets.
        Reply with one word.

    - role: user   # the user's turn
      content: >-
        Ticket: {ticket}
  invocation_params: &params {temperature: 0.2, max_tokens: 200}   # an anchor, left alone
  labels:
    - production    # the label the tree asks for
---
# the judge, all in flow style
kind: Evaluator
space: research
name: judge
commit_message: first
template_config: {name: judge, template: "Is {{output}} right?", classification_choices: {right: 1, wrong: 0},
  llm_config: {integration: llm-a, model_name: m}}   # trailing comment
---
kind: Integration
name: llm-a
type: LLM
config:
  provider: VENDOR_A
  api_key: {env: A_KEY}     # a secret reference: never touched
  is_function_calling_enabled: true     # on
"""

CHANGED = [
    ("description: 'Triage a ticket'", "description: 'Triage any ticket'"),
    ('commit_message: "first version"', 'commit_message: "edited in the UI"'),
    ("model: model-large ", "model: model-xl "),
    ("Reply with one word.", "Reply with two words."),
    ("Ticket: {ticket}", "Ticket #{ticket}"),
    ("{temperature: 0.2, max_tokens: 200}", "{temperature: 0.4, max_tokens: 200}"),
    ('template: "Is {{output}} right?"', 'template: "Is {{output}} correct?"'),
    ("commit_message: first\n", "commit_message: tuned in the UI\n"),
    ("is_function_calling_enabled: true ", "is_function_calling_enabled: false "),
]


def hand_edits(tmp_path: Path) -> None:
    with ui(tmp_path) as api:
        p = api.prompt("research", "triage")
        messages = p["version"]["messages"]
        messages[0]["content"] = "You triage support tickets.\nReply with two words.\n"
        messages[1]["content"] = "Ticket #{ticket}"
        api.new_prompt_version("research", "triage", labels=["production"], messages=messages, model="model-xl",
                               invocation_params={"temperature": 0.4, "max_tokens": 200})
        api.c.patch(f"/v2/prompts/{p['id']}", json={"description": "Triage any ticket"}).raise_for_status()
        api.new_evaluator_version("research", "judge", lambda tc: tc.update(template="Is {{output}} correct?"))
        api.patch_integration("llm-a", {"config": {"is_function_calling_enabled": False}})


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_pull_write_changes_only_the_changed_values_byte_for_byte(cli: Cli, tmp_path: Path, newline: str) -> None:
    manifest = tmp_path / "tree" / "support.yaml"
    manifest.parent.mkdir()
    before = STYLED.replace("\n", newline).encode()
    manifest.write_bytes(before)
    assert cli("apply", "tree", "--auto-approve").exit_code == 0
    hand_edits(tmp_path)

    shown = cli("pull", "tree")
    assert shown.exit_code == 2, shown.output
    assert manifest.read_bytes() == before  # a diff only
    assert "-description: 'Triage a ticket'" in shown.output and "+description: 'Triage any ticket'" in shown.output

    written = cli("pull", "tree", "--write")
    assert written.exit_code == 2, written.output
    expected = STYLED
    for old, new in CHANGED:
        assert expected.count(old) == 1, old
        expected = expected.replace(old, new)
    assert manifest.read_bytes() == expected.replace("\n", newline).encode()

    assert cli("plan", "tree", "--detailed-exitcode").exit_code == 0
    again = cli("pull", "tree", "--write")
    assert (again.exit_code, again.output) == (0, "")
    assert manifest.read_bytes() == expected.replace("\n", newline).encode()


def test_pull_on_a_tree_in_sync_prints_nothing_and_touches_no_file(cli: Cli, tmp_path: Path) -> None:
    manifest = tmp_path / "tree" / "support.yaml"
    manifest.parent.mkdir()
    manifest.write_text(STYLED)
    assert cli("apply", "tree", "--auto-approve").exit_code == 0
    stamp = manifest.stat().st_mtime_ns
    for args in (("pull", "tree"), ("pull", "tree", "--write")):
        result = cli(*args)
        assert (result.exit_code, result.output) == (0, "")
    assert manifest.read_text() == STYLED and manifest.stat().st_mtime_ns == stamp


def test_a_byte_order_mark_is_kept(cli: Cli, tmp_path: Path) -> None:
    manifest = tmp_path / "tree" / "support.yaml"
    manifest.parent.mkdir()
    manifest.write_bytes(b"\xef\xbb\xbf" + STYLED.encode())
    assert cli("apply", "tree", "--auto-approve").exit_code == 0
    with ui(tmp_path) as api:
        api.patch_integration("llm-a", {"config": {"is_function_calling_enabled": False}})
    assert cli("pull", "tree", "--write").exit_code == 2
    data = manifest.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and b"is_function_calling_enabled: false     # on" in data


