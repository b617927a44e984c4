"""Variables at edges the overlay tests left open (found by mutation testing, docs/testing.md): what
a tree loads to, or the exact problems it is refused with."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.errors import ManifestError
from tests.manifests.test_overlay_edges import PROMPT, description, load, refused

UNDEFINED = ("0.yaml:4:14: description: undefined variable 'nope'; the defined ones are: none (give --var "
             "NAME=VALUE, --var-file FILE or RECONCILER_VAR_NAME)")


def test_only_environment_variables_with_the_prefix_are_variables(tmp_path: Path) -> None:
    # 'UNRELATED_VARIA' is as long as the prefix, and what follows it is a valid name.
    with pytest.raises(ManifestError) as caught:
        load(tmp_path, PROMPT.format(description="'${var.nope}'"),
             environ={"UNRELATED_VARIABLE_X": "1", "RECONCILER_VAR_9": "2"})
    assert [p.replace(str(tmp_path) + "/", "") for p in caught.value.problems] == [UNDEFINED]


def test_a_flag_value_may_hold_an_equals_sign(tmp_path: Path) -> None:
    ms = load(tmp_path, PROMPT.format(description="'${var.q}'"), var=("q=a=b",))
    assert description(ms) == "a=b"


def test_an_unreadable_variables_file_is_named_and_the_next_file_is_still_checked(tmp_path: Path) -> None:
    (tmp_path / "names.yaml").write_text("1bad: 1\n2bad: 2\nok: 3\n")
    problems = refused(tmp_path, PROMPT.format(description="d"),
                       var_files=(str(tmp_path / "missing.yaml"), str(tmp_path / "names.yaml")))
    assert problems == [
        "missing.yaml:1:1: file: cannot read: No such file or directory",
        "names.yaml:1:1: 1bad: a variable name is letters, digits and _ (not starting with a digit)",
        "names.yaml:2:1: 2bad: a variable name is letters, digits and _ (not starting with a digit)"]


def test_a_whole_document_that_is_a_variable_is_refused_at_its_first_line(tmp_path: Path) -> None:
    problems = refused(tmp_path, "var: nope\n")
    assert problems and problems[0].startswith("0.yaml:1:")


def test_a_document_that_is_a_list_with_a_reference_is_refused_not_a_crash(tmp_path: Path) -> None:
    problems = refused(tmp_path, "- '${var.x}'\n", var=("x=1",))
    assert problems and all(p.startswith("0.yaml:1:") for p in problems)


def test_a_variable_in_a_secret_position_names_the_field(tmp_path: Path) -> None:
    text = ("kind: Integration\nname: i\ntype: LLM\n"
            "config: {provider: VENDOR_A, api_key: '${var.k}', is_function_calling_enabled: true}\n")
    problems = refused(tmp_path, text, var=("k=v",))
    assert "0.yaml:4:39: config.api_key: a variable is never a secret: write {env: NAME} or {file: PATH} here" \
        in problems


# ---------------------------------------------------------------------- patches

LLM_I = "kind: Integration\nname: i\ntype: LLM\nconfig: {provider: VENDOR_A, api_key: {env: K}, " \
        "is_function_calling_enabled: true}\n"


def test_patches_without_a_target_loaded_before_are_each_refused_and_an_unspaced_one_says_no_space(
        tmp_path: Path) -> None:
    problems = refused(tmp_path, "kind: Patch\ntarget: Integration/gone\npatch: {config: {is_function_calling_enabled: "
                       "false}}\n---\nkind: Patch\ntarget: Integration/also-gone\npatch: {name: x}\n", LLM_I)
    assert problems == [
        "0.yaml:2:1: target: no Integration named 'gone' is loaded before this patch (paths load in order: the "
        "base first, then the overlays)",
        "0.yaml:6:1: target: no Integration named 'also-gone' is loaded before this patch (paths load in order: "
        "the base first, then the overlays)"]


def test_a_patch_may_not_rename_or_rekind_what_it_patches_and_each_such_patch_is_refused(tmp_path: Path) -> None:
    problems = refused(tmp_path, LLM_I + "---\nkind: Patch\ntarget: Integration/i\npatch: {name: j}\n"
                       "---\nkind: Patch\ntarget: Integration/i\npatch: {kind: Prompt, name: k}\n")
    assert problems == [
        "0.yaml:8:9: patch.name: a Patch cannot change 'name' (it names what it patches)",
        "0.yaml:12:9: patch.kind: a Patch cannot change 'kind' (it names what it patches)"]


def test_a_variables_file_with_a_syntax_error_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("kind: Patch\n: bad\n  x\n")
    problems = refused(tmp_path, PROMPT.format(description="d"), var_files=(str(tmp_path / "bad.yaml"),))
    assert problems[0] == "bad.yaml:1:1: --var-file: a variables file is one YAML mapping of NAME: value"
    assert problems[1].startswith("bad.yaml:2:1: document 1: YAML syntax error")


def test_a_whole_document_never_comes_from_a_variable(tmp_path: Path) -> None:
    (tmp_path / "v.yaml").write_text(
        "whole:\n  kind: Prompt\n  space: research\n  name: p\n  description: from-a-file\n"
        "  version: {commit_message: c, provider: VENDOR_A, messages: [{role: user, content: hi}]}\n")
    assert refused(tmp_path, "var: whole\n", var_files=(str(tmp_path / "v.yaml"),)) == [
        "0.yaml:1:1: document 1: a variable is never a document's kind: write the kind itself, and its fields"]


def test_a_reference_in_a_list_document_is_named_at_its_item_and_line(tmp_path: Path) -> None:
    assert refused(tmp_path, "- a\n- '${var.nope}'\n") == [
        "0.yaml:1:1: document 1: a manifest document must be a mapping with kind and name, got a list",
        "0.yaml:2:3: 1: " + UNDEFINED.split(": ", 2)[2]]


@pytest.mark.parametrize("defined", [(), ("a", "b")], ids=["undefined", "mappings"])
def test_names_that_failed_to_substitute_are_not_also_one_name_declared_twice(
        tmp_path: Path, defined: tuple[str, ...]) -> None:
    # Each name keeps the text it was written with: two documents are not both named ''.
    (tmp_path / "v.yaml").write_text("".join(f"{name}: {{k: v}}\n" for name in defined) or "other: 1\n")
    first, second = (PROMPT.format(description="d").replace("name: p", f"name: 'x${{var.{n}}}'") for n in "ab")
    problems = refused(tmp_path, first, second, var_files=(str(tmp_path / "v.yaml"),))
    assert len(problems) == 2
    assert [p.split(": ")[0] for p in problems] == ["0.yaml:3:7", "1.yaml:3:7"]
    assert not any("declared twice" in p for p in problems)


def test_a_patch_changes_the_document_of_its_space_not_the_same_name_in_another_space(tmp_path: Path) -> None:
    research = PROMPT.format(description="research-base")
    other = PROMPT.format(description="other-base").replace("space: research", "space: other")
    patch = "kind: Patch\ntarget: Prompt/p\nspace: research\npatch: {description: patched}\n"
    ms = load(tmp_path, research, other, patch)
    assert {p.space: p.spec.get("description") for p in ms.of_kind("Prompt")} == {
        "research": "patched", "other": "other-base"}
