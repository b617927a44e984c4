"""Overlays, in process: which other environments a tree laid out as base and overlays implies
(``sibling_environments``), which files they load too, and where this environment's Patches go."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from reconciler.pull.engine import Edit, NotWritten, Tree, _under, sibling_environments
from tests.pull.helpers import MISSING, pulled

PROMPT = """\
kind: Prompt
space: research
name: triage
description: first words
version: {commit_message: first, provider: VENDOR_A, messages: [{role: user, content: hi}]}
"""
TRIAGE = "Prompt/research/triage"
PATCH = "kind: Patch\ntarget: Prompt/triage\nspace: research\npatch: {version: {model: m}}\n"


@pytest.fixture(autouse=True)
def here(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)


def write(files: dict[str, str]) -> None:
    for name, text in files.items():
        os.makedirs(os.path.dirname(name) or ".", exist_ok=True)
        Path(name).write_text(text)


def test_the_other_environments_are_sibling_folders_with_their_own_patches_or_the_same_var_files() -> None:
    write({"base/tree.yaml": PROMPT, "overlays/canary/patches.yaml": PATCH, "overlays/prod/patches.yaml": PATCH,
           "overlays/.hidden/patches.yaml": PATCH,  # a hidden folder: no environment
           "overlays/notes/README.md": "no manifest here\n",  # a folder without manifests: none either
           "overlays/stray.yaml": PATCH})  # a file beside the folders: none either
    found = sibling_environments(Tree(("base", "overlays/canary")))
    assert found == [Tree(("base", "overlays/prod"), name="prod")]


def test_a_sibling_is_given_the_var_files_of_the_same_names_and_keeps_those_outside_the_overlay() -> None:
    write({"base/tree.yaml": PROMPT, "common.yaml": "x: 1\n", "overlays/a/vars.yaml": "y: 1\n",
           "overlays/b/vars.yaml": "y: 2\n", "overlays/c/other.yaml": "y: 3\n"})
    tree = Tree(("base", "overlays/a"), ("z=1",), ("common.yaml", "overlays/a/vars.yaml"))
    assert sibling_environments(tree) == [
        Tree(("base", "overlays/b"), ("z=1",), ("common.yaml", "overlays/b/vars.yaml"), "b")]


def test_files_any_other_environment_loads_are_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    write({"tree.yaml": PROMPT, "first.yaml": PROMPT.replace("research", "other")})
    first, second = Tree(("first.yaml", "tree.yaml"), name="first"), Tree(("first.yaml",), name="second")
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {TRIAGE: {"description": "live"}}, others=[first, second])
    assert result.files == {} and result.edits == []
    assert [n.path for n in result.not_written] == ["description"]


def test_a_new_patch_goes_into_the_overlay_folder_of_the_var_file(monkeypatch: pytest.MonkeyPatch) -> None:
    write({"base/tree.yaml": PROMPT, "overlays/a/vars.yaml": "y: 1\n", "overlays/a/more.yaml": "# own documents\n",
           "overlays/b/vars.yaml": "y: 2\n"})
    tree = Tree(("base", "overlays/a"), (), ("overlays/a/vars.yaml",))
    result = pulled(monkeypatch, tree, {TRIAGE: {"description": "live"}}, others=sibling_environments(tree))
    assert result.not_written == []
    assert result.edits == [Edit(TRIAGE, "description", "overlays/a/more.yaml", 3, "patch", "first words", "live")]
    assert result.files["overlays/a/more.yaml"][1] == \
        "# own documents\n---\nkind: Patch\ntarget: Prompt/triage\nspace: research\npatch:\n  description: live\n"


def test_a_new_patch_goes_into_the_last_own_file_that_holds_patches_never_into_a_shared_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    other = PATCH.replace("Prompt/triage", "Prompt/other")
    write({"base/tree.yaml": PROMPT + "---\n" + PROMPT.replace("name: triage", "name: other"),
           "overlays/a/patches.yaml": other, "overlays/a/zz.yaml": "# own documents\n",
           "overlays/b/patches.yaml": other, "common.yaml": other})
    tree = Tree(("base", "overlays/a", "common.yaml"))  # common.yaml: Patches every environment loads
    result = pulled(monkeypatch, tree, {TRIAGE: {"description": "live"}},
                    others=[Tree(("base", "overlays/b", "common.yaml"))])
    assert result.not_written == [] and list(result.files) == ["overlays/a/patches.yaml"]
    assert [(e.file, e.action) for e in result.edits] == [("overlays/a/patches.yaml", "patch")]


def test_without_an_overlay_a_shared_value_is_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    write({"base/tree.yaml": PROMPT, "overlays/b/vars.yaml": "y: 2\n"})
    result = pulled(monkeypatch, Tree(("base",)), {TRIAGE: {"description": "live"}},
                    others=[Tree(("base", "overlays/b"), (), ("overlays/b/vars.yaml",), "b")])
    assert result.files == {}
    assert result.not_written == [NotWritten(TRIAGE, "description", "declared in base/tree.yaml, which other "
                                             "environments load; this environment has no overlay (a folder with its "
                                             "Patches or var file) to write it in: not written")]


TWO = PROMPT + "---\n" + PROMPT.replace("name: triage", "name: other")
OTHER = "Prompt/research/other"
SHARED = "which other environments load; this environment has no overlay (a folder with its Patches or var " \
    "file) to write it in: not written"


def test_each_resources_shared_values_are_listed_without_an_overlay(monkeypatch: pytest.MonkeyPatch) -> None:
    write({"base/tree.yaml": TWO})
    result = pulled(monkeypatch, Tree(("base",)), {TRIAGE: {"description": "one"}, OTHER: {"description": "two"}},
                    others=[Tree(("base", "overlays/b"), name="b")])
    assert result.not_written == [NotWritten(a, "description", f"declared in base/tree.yaml, {SHARED}")
                                  for a in (TRIAGE, OTHER)]


def test_a_resource_with_no_value_the_tree_can_hold_adds_no_patch_and_the_next_one_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    write({"base/tree.yaml": TWO, "overlays/a/vars.yaml": "y: 1\n", "overlays/a/patches.yaml": "# patches\n"})
    tree = Tree(("base", "overlays/a"), (), ("overlays/a/vars.yaml",))
    result = pulled(monkeypatch, tree, {TRIAGE: {"description": "two\u2028lines"}, OTHER: {"description": "two"}},
                    others=[Tree(("base", "overlays/b"), name="b")])
    assert [(n.address, n.path) for n in result.not_written] == [(TRIAGE, "description")]
    assert result.files["overlays/a/patches.yaml"][1] == \
        "# patches\n---\nkind: Patch\ntarget: Prompt/other\nspace: research\npatch:\n  description: two\n"
    assert result.edits == [Edit(OTHER, "description", "overlays/a/patches.yaml", 3, "patch", "first words", "two")]


def test_a_patch_of_the_resource_in_a_shared_file_is_not_merged_into(monkeypatch: pytest.MonkeyPatch) -> None:
    write({"base/tree.yaml": PROMPT, "common.yaml": PATCH, "overlays/a/vars.yaml": "y: 1\n",
           "overlays/a/patches.yaml": "# patches\n"})
    tree = Tree(("base", "common.yaml", "overlays/a"), (), ("overlays/a/vars.yaml",))
    result = pulled(monkeypatch, tree, {TRIAGE: {"description": "live"}},
                    others=[Tree(("base", "common.yaml"), name="b")])
    assert list(result.files) == ["overlays/a/patches.yaml"] and result.not_written == []
    assert result.files["overlays/a/patches.yaml"][1] == \
        "# patches\n---\nkind: Patch\ntarget: Prompt/triage\nspace: research\npatch:\n  description: live\n"


OTHER_SPACE = PROMPT.replace("space: research", "space: other")


def test_a_resource_deleted_live_loses_its_own_patches_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not an empty document, not a Patch of the same name in another space."""
    write({"tree.yaml": PROMPT + "---\n" + OTHER_SPACE + "---\n---\n",
           "patches.yaml": PATCH + "---\n" + PATCH.replace("research", "other")})
    result = pulled(monkeypatch, Tree(("tree.yaml", "patches.yaml")), {TRIAGE: MISSING}, remove_absent=True)
    assert [(e.file, e.line, e.action, e.before) for e in result.edits] == [
        ("tree.yaml", 1, "remove document", TRIAGE), ("patches.yaml", 1, "remove document", f"Patch of {TRIAGE}")]
    assert result.files["tree.yaml"][1] == "---\n" + OTHER_SPACE + "---\n---\n"
    assert result.files["patches.yaml"][1] == "---\n" + PATCH.replace("research", "other")
    assert result.conflicts == [] and result.errors == []


def test_a_resource_deleted_live_is_removed_when_standard_input_is_read_too(
        monkeypatch: pytest.MonkeyPatch) -> None:
    write({"tree.yaml": PROMPT})
    monkeypatch.setattr("sys.stdin", io.StringIO(OTHER_SPACE))
    result = pulled(monkeypatch, Tree(("tree.yaml", "-")), {TRIAGE: MISSING}, remove_absent=True)
    assert [(e.file, e.action) for e in result.edits] == [("tree.yaml", "remove document")]
    assert result.files == {"tree.yaml": (PROMPT, "")}


def test_another_environment_that_does_not_load_shares_no_file(monkeypatch: pytest.MonkeyPatch) -> None:
    write({"tree.yaml": PROMPT})
    assert Tree(("nowhere",)).files() == set()
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {TRIAGE: {"description": "live"}},
                    others=[Tree(("nowhere",), name="gone")])
    assert [(e.file, e.after) for e in result.edits] == [("tree.yaml", "live")]


def test_a_path_is_under_a_folder_only_inside_it(tmp_path: Path) -> None:
    assert _under("/x/env", "/x/env") and _under("/x/env/a.yaml", "/x/env")
    assert not _under("/x/env/a.yaml", "/x/env ") and not _under("/x/envoy/a.yaml", "/x/env")
