"""The engine alone, on live values given (``helpers.pulled``: no emulator): where each live value is
written, or why it is listed instead. Fast: each test stages a small tree in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.fieldkinds import ABSENT
from reconciler.plan.liveview import FieldEdit
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


SHARED = PROMPT.replace("  provider: VENDOR_A\n", "  provider: VENDOR_A\n  model: model-large\n")
NO_OVERLAY = "which other environments load; this environment has no overlay (a folder with its Patches or var " \
    "file) to write it in: not written"
PARAMS = {"max_tokens": 5}


def test_shared_values_without_an_overlay_are_listed_with_where_they_are_declared(
        monkeypatch: pytest.MonkeyPatch, here: Path) -> None:
    _, prod = two_environments(here)
    (here / "base/tree.yaml").write_text(SHARED)
    live = {"version.model": ABSENT, "version.provider": "VENDOR_B",
            "version.invocation_params": {**PARAMS, "temperature": 0.5}}
    result = pulled(monkeypatch, Tree(("base",)), {TRIAGE: live}, others=[prod])
    assert result.edits == [] and result.files == {}
    assert result.not_written == [
        NotWritten(TRIAGE, path, f"declared in base/tree.yaml, {NO_OVERLAY}")
        for path in ("version.model", "version.provider", "version.invocation_params.temperature")]


def test_shared_values_go_into_the_environments_patch_a_removed_one_as_null(
        monkeypatch: pytest.MonkeyPatch, here: Path) -> None:
    staging, prod = two_environments(here)
    (here / "base/tree.yaml").write_text(SHARED)
    live = {"version.model": ABSENT, "version.provider": "VENDOR_B",
            "version.invocation_params": {**PARAMS, "temperature": 0.5}}
    result = pulled(monkeypatch, staging, {TRIAGE: live}, others=[prod])
    assert result.not_written == [] and list(result.files) == ["staging/patches.yaml"]
    assert result.files["staging/patches.yaml"][1] == OWN_PATCH + \
        "  version:\n    model: null\n    provider: VENDOR_B\n    invocation_params:\n      temperature: 0.5\n"
    assert [(e.path, e.action, e.before, e.after) for e in result.edits] == [
        ("version.model", "patch", "model-large", ABSENT), ("version.provider", "patch", "VENDOR_A", "VENDOR_B"),
        ("version.invocation_params.temperature", "patch", ABSENT, 0.5)]


def test_a_key_live_added_to_a_declared_mapping_holding_a_line_separator_is_listed(
        monkeypatch: pytest.MonkeyPatch, here: Path) -> None:
    (here / "tree.yaml").write_text(PROMPT)
    live = [FieldEdit("version.invocation_params", PARAMS, {**PARAMS, "stop": "a\u2029b"})]
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {TRIAGE: live})
    assert result.edits == [] and result.files == {}
    assert [(n.address, n.path) for n in result.not_written] == [(TRIAGE, "version.invocation_params.stop")]
    assert result.not_written[0].reason.startswith("live holds a line separator")


def test_a_block_mapping_whose_every_key_changed_live_is_written_whole(
        monkeypatch: pytest.MonkeyPatch, here: Path) -> None:
    """Nothing declared stays to anchor the new keys under (the mapping emptied reads {})."""
    (here / "tree.yaml").write_text(PROMPT)
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {TRIAGE: {"version.invocation_params": {"temperature": 0.5}}})
    assert result.conflicts == [] and result.not_written == []
    assert result.edits == [Edit(TRIAGE, "version.invocation_params", "tree.yaml", 8, "update", PARAMS,
                                 {"temperature": 0.5})]
    assert result.files["tree.yaml"][1] == PROMPT.replace("max_tokens: 5", "temperature: 0.5")


def test_a_value_live_returns_with_its_keys_in_another_order_is_not_rewritten(
        monkeypatch: pytest.MonkeyPatch, here: Path) -> None:
    (here / "tree.yaml").write_text(PROMPT.replace("    max_tokens: 5\n", "    max_tokens: 5\n    stop: {a: 1, b: 2}\n"))
    live = {"version.invocation_params": {"max_tokens": 6, "stop": {"b": 2, "a": 1}}}
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {TRIAGE: live})
    assert [(e.path, e.after) for e in result.edits] == [("version.invocation_params.max_tokens", 6)]


@pytest.mark.parametrize("value", [{"two\u2028lines": 1}, {"stop": ["two\u2029lines"]}])
def test_a_mapping_holding_a_line_separator_in_a_key_or_a_list_item_is_listed(
        monkeypatch: pytest.MonkeyPatch, here: Path, value: dict[str, object]) -> None:
    (here / "tree.yaml").write_text(PROMPT)
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {TRIAGE: {"version.invocation_params": value}})
    assert result.edits == [] and result.files == {}
    assert [(n.path, n.reason.split(" (")[0]) for n in result.not_written] == [
        ("version.invocation_params", "live holds a line separator")]


def block_list(items: list[str]) -> str:
    return PROMPT + "    stop:\n" + "".join(f"      - {item}\n" for item in items)


def test_block_list_items_changed_apart_are_each_written_in_place(monkeypatch: pytest.MonkeyPatch, here: Path) -> None:
    (here / "tree.yaml").write_text(block_list(["a", "b", "c"]))
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {TRIAGE: {"version.invocation_params.stop": ["A", "b", "C"]}})
    assert [(e.path, e.action, e.after) for e in result.edits] == [
        ("version.invocation_params.stop.0", "update", "A"), ("version.invocation_params.stop.2", "update", "C")]
    assert result.files["tree.yaml"][1] == block_list(["A", "b", "C"])


def test_an_item_inserted_into_a_long_list_of_like_items_is_one_line_added(
        monkeypatch: pytest.MonkeyPatch, here: Path) -> None:
    """No item is taken for junk however often it repeats (difflib's autojunk, on lists of 200 and more)."""
    items = ["x"] * 100 + ["a"] + ["x"] * 100
    (here / "tree.yaml").write_text(block_list(items))
    live = items[:101] + ["new"] + items[101:]
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {TRIAGE: {"version.invocation_params.stop": live}})
    assert [(e.path, e.action, e.after) for e in result.edits] == [("version.invocation_params.stop.101", "add", "new")]
    assert result.files["tree.yaml"][1] == block_list(live)


def test_keys_removed_live_from_a_shared_value_are_null_in_the_patch_at_every_depth(
        monkeypatch: pytest.MonkeyPatch, here: Path) -> None:
    staging, prod = two_environments(here)
    stop = "    stop: {a: 1, b: {c: 2, d: 3}, e: {f: 1}, g: 4}\n"
    (here / "base/tree.yaml").write_text(PROMPT.replace("    max_tokens: 5\n", "    max_tokens: 5\n" + stop))
    live = {"version.invocation_params": {"max_tokens": 5, "stop": {"b": {"c": 2}, "e": "flat", "g": {"h": 5}}}}
    result = pulled(monkeypatch, staging, {TRIAGE: live}, others=[prod])
    assert result.not_written == [] and list(result.files) == ["staging/patches.yaml"]
    assert result.files["staging/patches.yaml"][1] == OWN_PATCH + (
        "  version:\n    invocation_params:\n      stop:\n        a: null\n        b:\n          d: null\n"
        "          c: 2\n        e: flat\n        g:\n          h: 5\n")


def test_an_item_removed_live_and_a_later_one_changed_are_both_written(
        monkeypatch: pytest.MonkeyPatch, here: Path) -> None:
    (here / "tree.yaml").write_text(block_list(["a", "b", "{x: 1}"]))
    live = {TRIAGE: {"version.invocation_params.stop": ["b", {"x": 2}]}}
    result = pulled(monkeypatch, Tree(("tree.yaml",)), live)
    assert result.conflicts == [] and result.not_written == []
    assert [(e.path, e.action) for e in result.edits] == [("version.invocation_params.stop.0", "remove"),
                                                          ("version.invocation_params.stop.2.x", "update")]
    assert result.files["tree.yaml"][1] == block_list(["b", "{x: 2}"])


def test_the_last_key_removed_live_and_another_added_take_their_own_lines(
        monkeypatch: pytest.MonkeyPatch, here: Path) -> None:
    (here / "tree.yaml").write_text(PROMPT.replace("    max_tokens: 5\n", "    max_tokens: 5\n    stop: x\n"))
    live = {TRIAGE: {"version.invocation_params": {"max_tokens": 5, "top_p": 0.9}}}
    result = pulled(monkeypatch, Tree(("tree.yaml",)), live)
    assert result.conflicts == [] and result.not_written == []
    assert [(e.path, e.action) for e in result.edits] == [("version.invocation_params.stop", "remove"),
                                                          ("version.invocation_params.top_p", "add")]
    assert result.files["tree.yaml"][1] == PROMPT + "    top_p: 0.9\n"
