"""The engine alone, on live values given (``helpers.pulled``: no emulator): where each live value is
written, or why it is listed instead. Fast: each test stages a small tree in tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reconciler.plan.liveview import ABSENT, FieldEdit
from reconciler.pull.engine import Edit, NotWritten, Tree
from tests.pull.helpers import pulled

PROMPT = """\
kind: Prompt
space: research
name: triage
version:
  commit_message: first
  provider: VENDOR_A
  messages: [{role: user, content: "{ticket}"}]
  invocation_params:
    max_tokens: 5
"""
TRIAGE = "Prompt/research/triage"
OWN_PATCH = """\
kind: Patch
target: Prompt/triage
space: research
patch:
  description: staged
"""


@pytest.fixture
def here(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def two_environments(root: Path) -> tuple[Tree, Tree]:
    """base/ shared by staging and prod, each with its own Patch of the prompt."""
    for d in ("base", "staging", "prod"):
        (root / d).mkdir()
        if d != "base":
            (root / d / "patches.yaml").write_text(OWN_PATCH)
    (root / "base/tree.yaml").write_text(PROMPT)
    return Tree(("base", "staging")), Tree(("base", "prod"))


def test_a_key_live_added_under_a_declared_block_mapping_is_inserted_there(
        monkeypatch: pytest.MonkeyPatch, here: Path) -> None:
    (here / "tree.yaml").write_text(PROMPT)
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {TRIAGE: {"version.invocation_params.temperature": 0.5,
                                                                 "version.model": "model-large"}})
    assert result.edits == [
        Edit(TRIAGE, "version.invocation_params.temperature", "tree.yaml", 9, "add", None, 0.5),
        Edit(TRIAGE, "version.model", "tree.yaml", 5, "add", None, "model-large")]
    assert result.not_written == [] and result.errors == []
    assert result.files["tree.yaml"][1] == PROMPT + "    temperature: 0.5\n  model: model-large\n"


def test_a_key_live_added_under_a_shared_mapping_goes_into_the_environments_patch(
        monkeypatch: pytest.MonkeyPatch, here: Path) -> None:
    staging, prod = two_environments(here)
    result = pulled(monkeypatch, staging, {TRIAGE: {"version.invocation_params.temperature": 0.5}}, others=[prod])
    assert result.edits == [Edit(TRIAGE, "version.invocation_params.temperature", "staging/patches.yaml", 4, "patch",
                                 ABSENT, 0.5)]
    assert list(result.files) == ["staging/patches.yaml"]
    assert result.files["staging/patches.yaml"][1] == OWN_PATCH + \
        "  version:\n    invocation_params:\n      temperature: 0.5\n"


def test_a_key_live_added_under_a_shared_mapping_is_listed_without_an_overlay(
        monkeypatch: pytest.MonkeyPatch, here: Path) -> None:
    _, prod = two_environments(here)
    result = pulled(monkeypatch, Tree(("base",)), {TRIAGE: {"version.model": "model-large"}}, others=[prod])
    assert result.edits == [] and result.files == {}
    assert result.not_written == [NotWritten(
        TRIAGE, "version.model", "declared in base/tree.yaml, which other environments load; this environment has "
        "no overlay (a folder with its Patches or var file) to write it in: not written")]


def test_a_key_live_added_holding_a_line_separator_is_listed_not_inserted(
        monkeypatch: pytest.MonkeyPatch, here: Path) -> None:
    (here / "tree.yaml").write_text(PROMPT)
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {TRIAGE: {"version.model": "model\u2028large"}})
    assert result.edits == [] and result.files == {}
    assert result.not_written == [NotWritten(
        TRIAGE, "version.model", "live holds a line separator (U+2028, U+2029 or U+0085), which YAML reads as a "
        "line break: the tree cannot hold it; not written")]


@pytest.mark.parametrize("path", ["description", "version.messages.0.name", "version.template.format"])
def test_a_key_live_added_with_no_block_mapping_declared_above_it_is_listed(
        monkeypatch: pytest.MonkeyPatch, here: Path, path: str) -> None:
    """Nothing declared to hold it (no parent; a flow mapping's item; a parent not declared)."""
    (here / "tree.yaml").write_text(PROMPT)
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {TRIAGE: [FieldEdit(path, ABSENT, "x")]})
    assert result.edits == [] and result.files == {}
    assert result.not_written == [NotWritten(TRIAGE, path, "not found in the manifests: not written")]


def test_a_key_neither_declared_nor_live_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch, here: Path) -> None:
    (here / "tree.yaml").write_text(PROMPT)
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {TRIAGE: [FieldEdit("version.model", "gone", ABSENT)]})
    assert result.edits == [] and result.files == {}
    assert result.not_written == [NotWritten(TRIAGE, "version.model", "still differs live after the edits pull can "
                                             "make: not written")]
