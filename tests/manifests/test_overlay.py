"""Variables and ``kind: Patch`` at their edges, seen in what the tree loads to (the values a plan
will use and the line each came from) and in the exact message of what it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.errors import ManifestError
from reconciler.manifests.loader import load_manifests
from reconciler.model import ManifestSet

PROMPT = """kind: Prompt
space: research
name: p
description: {description}
version: {{commit_message: c, provider: VENDOR_A, messages: [{{role: user, content: hi}}]}}
"""
LLM = """kind: Integration
name: {name}
type: LLM
config: {{provider: VENDOR_A, api_key: {{env: K}}, is_function_calling_enabled: true}}
"""


def tree(tmp_path: Path, *files: str) -> list[str]:
    paths = []
    for i, text in enumerate(files):
        path = tmp_path / f"{i}.yaml"
        path.write_text(text)
        paths.append(str(path))
    return paths


def load(tmp_path: Path, *files: str, var: tuple[str, ...] = (), var_files: tuple[str, ...] = (),
         environ: dict[str, str] | None = None) -> ManifestSet:
    return load_manifests(tree(tmp_path, *files), var_assignments=var, var_files=var_files, environ=environ or {})


def refused(tmp_path: Path, *files: str, var: tuple[str, ...] = (), var_files: tuple[str, ...] = ()) -> list[str]:
    with pytest.raises(ManifestError) as caught:
        load(tmp_path, *files, var=var, var_files=var_files)
    return [p.replace(str(tmp_path) + "/", "") for p in caught.value.problems]


def description(ms: ManifestSet) -> object:
    (p,) = ms.of_kind("Prompt")
    return p.spec.get("description")


# ---------------------------------------------------------------------- variables


def test_a_flag_beats_a_file_which_beats_the_environment_and_a_later_file_beats_an_earlier(tmp_path: Path) -> None:
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "a.yaml").write_text("x: file-a\ny: file-a\n")
    (tmp_path / "v" / "b.yaml").write_text("y: file-b\n")
    ms = load(tmp_path, PROMPT.format(description="'${var.x} ${var.y} ${var.z} ${var.w}'"), var=("z=flag",),
              var_files=(str(tmp_path / "v/a.yaml"), str(tmp_path / "v/b.yaml")),
              environ={"RECONCILER_VAR_x": "env", "RECONCILER_VAR_w": "env", "RECONCILER_VAR_z": "env",
                       "OTHER_w": "no"})
    assert description(ms) == "file-a file-b flag env"


def test_a_value_from_a_variable_remembers_the_line_that_set_it(tmp_path: Path) -> None:
    (tmp_path / "vars.yaml").write_text("# prod\nsuffix: prod\nwho: ops\n")
    ms = load(tmp_path, PROMPT.format(description="'team-${var.who}-${var.suffix}-${var.who}'"),
              var_files=(str(tmp_path / "vars.yaml"),))
    (p,) = ms.of_kind("Prompt")
    assert p.spec["description"] == "team-ops-prod-ops"
    source = p.source("description")
    assert source is not None and (source.line, source.via) == (4, f"{tmp_path}/vars.yaml:3, {tmp_path}/vars.yaml:2")


def test_a_whole_value_keeps_the_variable_type_and_a_flag_is_a_string(tmp_path: Path) -> None:
    (tmp_path / "vars.yaml").write_text("n: 3\nflag: true\nlist: [1, 2]\n")
    text = PROMPT.format(description="d").replace(
        "messages:", "invocation_params: {n: {var: n}, f: {var: flag}, l: {var: list}, s: {var: s}}, messages:")
    ms = load(tmp_path, text, var=("s=7",), var_files=(str(tmp_path / "vars.yaml"),))
    (p,) = ms.of_kind("Prompt")
    assert p.spec["version"]["invocation_params"] == {"n": 3, "f": True, "l": [1, 2], "s": "7"}
    assert p.source("version.invocation_params.s").via == "--var s"  # type: ignore[union-attr]


def test_inside_a_string_booleans_and_null_read_as_yaml_writes_them(tmp_path: Path) -> None:
    (tmp_path / "vars.yaml").write_text("t: true\nf: false\nnothing: null\nn: 2\n")
    ms = load(tmp_path, PROMPT.format(description="'${var.t}/${var.f}/${var.nothing}/${var.n}'"),
              var_files=(str(tmp_path / "vars.yaml"),))
    assert description(ms) == "true/false//2"


def test_a_doubled_dollar_writes_a_literal_reference(tmp_path: Path) -> None:
    ms = load(tmp_path, PROMPT.format(description="'$${var.x} and ${var.x}'"), var=("x=1",))
    assert description(ms) == "${var.x} and 1"


def test_variables_in_lists_are_resolved(tmp_path: Path) -> None:
    text = PROMPT.format(description="d").replace(
        "messages: [{role: user, content: hi}]", "messages: [{role: user, content: hi}, {role: user, content: '${var.q}'}]")
    (p,) = load(tmp_path, text, var=("q=why",)).of_kind("Prompt")
    assert p.spec["version"]["messages"][1] == {"role": "user", "content": "why"}


def test_an_undefined_variable_lists_the_defined_ones_or_how_to_define_one(tmp_path: Path) -> None:
    assert refused(tmp_path, PROMPT.format(description="'${var.nope}'"), var=("b=1", "a=2")) == [
        "0.yaml:4:14: description: undefined variable 'nope'; the defined ones are: a, b"]
    assert refused(tmp_path, PROMPT.format(description="{var: nope}")) == [
        "0.yaml:4:14: description: undefined variable 'nope'; the defined ones are: none (give --var NAME=VALUE, "
        "--var-file FILE or RECONCILER_VAR_NAME)"]


def test_a_mapping_or_list_variable_inside_a_string_is_refused(tmp_path: Path) -> None:
    (tmp_path / "vars.yaml").write_text("m: {a: 1}\nl: [1]\n")
    problems = refused(tmp_path, PROMPT.format(description="'${var.m} ${var.l}'"),
                       var_files=(str(tmp_path / "vars.yaml"),))
    assert problems == [
        "0.yaml:4:14: description: variable 'm' is a mapping; a whole value takes it as {var: m}, not inside a string",
        "0.yaml:4:14: description: variable 'l' is a list; a whole value takes it as {var: l}, not inside a string"]


def test_a_var_whose_name_is_not_a_string_is_refused(tmp_path: Path) -> None:
    assert refused(tmp_path, PROMPT.format(description="{var: 3}")) == [
        "0.yaml:4:14: description: {var: NAME} takes a variable name"]


@pytest.mark.parametrize("where", ["api_key: {var: k}", "headers: {X-Key: {var: k}}", "auth: {api_key: {var: k}}"])
def test_a_variable_in_a_secret_position_is_refused(tmp_path: Path, where: str) -> None:
    text = LLM.format(name="i").replace("api_key: {env: K}", where)
    problems = refused(tmp_path, text, var=("k=v",))
    assert any("a variable is never a secret: write {env: NAME} or {file: PATH} here" in p for p in problems)


@pytest.mark.parametrize("document", ["kind: {var: k}\nname: x\n", "kind: Pro${var.k}\nname: x\n", "{var: d}\n"])
def test_a_variable_is_never_a_documents_kind(tmp_path: Path, document: str) -> None:
    """The schema and every reader take a document's kind as written: a variable there is refused."""
    (tmp_path / "vars.yaml").write_text("k: Prompt\nd: {kind: Integration, name: z}\n")
    problems = refused(tmp_path, document, var_files=(str(tmp_path / "vars.yaml"),))
    assert len(problems) == 1 and "a variable is never a document's kind: write the kind itself" in problems[0]


def test_a_variable_beside_a_secret_is_not_a_secret_position(tmp_path: Path) -> None:
    text = ("kind: Integration\nname: i\ntype: LLM\nconfig: {provider: CUSTOM, api_key: {env: K}, "
            "base_url: '${var.u}', is_default_models_enabled: true}\n")
    (i,) = load(tmp_path, text, var=("u=https://llm.example.com/v1",)).of_kind("Integration")
    assert i.spec["config"]["base_url"] == "https://llm.example.com/v1"


def test_a_malformed_var_flag_and_a_bad_variables_file_are_refused(tmp_path: Path) -> None:
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    (tmp_path / "names.yaml").write_text("ok: 1\n9bad: 2\n")
    problems = refused(tmp_path, PROMPT.format(description="d"), var=("novalue", "1x=2"),
                       var_files=(str(tmp_path / "list.yaml"), str(tmp_path / "names.yaml")))
    assert problems == [
        "--var:1:1: --var: expected NAME=VALUE (NAME: letters, digits and _)",
        "--var:1:1: --var: expected NAME=VALUE (NAME: letters, digits and _)",
        "list.yaml:1:1: --var-file: a variables file is one YAML mapping of NAME: value",
        "names.yaml:2:1: 9bad: a variable name is letters, digits and _ (not starting with a digit)"]


def test_an_environment_variable_with_a_bad_name_is_ignored(tmp_path: Path) -> None:
    ms = load(tmp_path, PROMPT.format(description="'${var.ok}'"),
              environ={"RECONCILER_VAR_ok": "yes", "RECONCILER_VAR_1no": "x", "RECONCILER_VAR_": "y"})
    assert description(ms) == "yes"


def test_an_unused_flag_is_a_warning_but_a_used_one_or_a_file_value_is_not(tmp_path: Path) -> None:
    (tmp_path / "vars.yaml").write_text("spare: 1\n")
    ms = load(tmp_path, PROMPT.format(description="'${var.used}'"), var=("used=1", "extra=2"),
              var_files=(str(tmp_path / "vars.yaml"),))
    assert ms.warnings == ("--var extra is not used by any manifest",)


# ---------------------------------------------------------------------- patches


def test_a_patch_merges_into_the_last_document_of_that_name_and_its_values_point_at_the_patch(
        tmp_path: Path) -> None:
    patch = "kind: Patch\ntarget: Integration/i\npatch:\n  config:\n    is_function_calling_enabled: false\n"
    ms = load(tmp_path, LLM.format(name="i") + "---\n" + LLM.format(name="j"), patch)
    i, j = ms.of_kind("Integration")
    assert i.spec["config"]["is_function_calling_enabled"] is False
    assert j.spec["config"]["is_function_calling_enabled"] is True
    source = i.source("config.is_function_calling_enabled")
    assert source is not None and (source.file.endswith("1.yaml"), source.line) == (True, 5)
    assert i.source("config.provider").file.endswith("0.yaml")  # type: ignore[union-attr]


def test_null_in_a_patch_removes_the_key_so_it_becomes_unmanaged(tmp_path: Path) -> None:
    patch = "kind: Patch\ntarget: Prompt/p\nspace: research\npatch: {description: null, restricted: true}\n"
    (p,) = load(tmp_path, PROMPT.format(description="d"), patch).of_kind("Prompt")
    assert "description" not in p.spec and p.spec["restricted"] is True


def test_a_patch_replaces_a_list_and_a_scalar_with_a_mapping_whole(tmp_path: Path) -> None:
    patch = ("kind: Patch\ntarget: Prompt/p\nspace: research\npatch:\n  version:\n"
             "    messages: [{role: system, content: be brief}]\n    invocation_params: {t: 1}\n")
    (p,) = load(tmp_path, PROMPT.format(description="d"), patch).of_kind("Prompt")
    assert p.spec["version"]["messages"] == [{"role": "system", "content": "be brief"}]
    assert p.spec["version"]["invocation_params"] == {"t": 1}
    assert p.spec["version"]["commit_message"] == "c"
    assert p.source("version.messages.0.content").line == 6  # type: ignore[union-attr]


def test_a_patch_in_one_space_leaves_the_document_of_that_name_in_another(tmp_path: Path) -> None:
    other = PROMPT.replace("space: research", "space: default")
    patch = "kind: Patch\ntarget: Prompt/p\nspace: default\npatch: {description: patched}\n"
    ms = load(tmp_path, PROMPT.format(description="base") + "---\n" + other.format(description="base"), patch)
    assert {(p.space, p.spec["description"]) for p in ms.of_kind("Prompt")} == {
        ("research", "base"), ("default", "patched")}


def test_a_patch_with_a_variable_inside_resolves_it_and_remembers_both_lines(tmp_path: Path) -> None:
    patch = "kind: Patch\ntarget: Prompt/p\nspace: research\npatch:\n  description: '${var.d}'\n"
    (p,) = load(tmp_path, PROMPT.format(description="base"), patch, var=("d=from-var",)).of_kind("Prompt")
    assert p.spec["description"] == "from-var"
    source = p.source("description")
    assert source is not None and source.file.endswith("1.yaml") and source.via == "--var d"


def test_a_patch_before_its_target_is_refused_saying_the_order(tmp_path: Path) -> None:
    patch = "kind: Patch\ntarget: Prompt/p\nspace: research\npatch: {description: x}\n"
    assert refused(tmp_path, patch, PROMPT.format(description="d")) == [
        "0.yaml:2:1: target: no Prompt named 'p' in space research is loaded before this patch (paths load in "
        "order: the base first, then the overlays)"]


def test_a_malformed_patch_says_each_thing_wrong_with_it(tmp_path: Path) -> None:
    problems = refused(tmp_path, LLM.format(name="i") + "---\n"
                       "kind: Patch\ntarget: Integration/i\nspace: research\npatch: [x]\nextra: 1\n"
                       "---\nkind: Patch\ntarget: Prompt/p\npatch: {description: x}\n"
                       "---\nkind: Patch\ntarget: nothing\n")
    assert problems == [
        "0.yaml:8:1: space: 'space' does not apply to a Integration",
        "0.yaml:9:1: patch: a Patch needs 'patch:', a mapping (JSON Merge Patch)",
        "0.yaml:10:1: extra: unknown field 'extra' in a Patch (it has target, space and patch)",
        "0.yaml:13:1: target: a Patch of a Prompt needs 'space:' (a Prompt is named by space and name)",
        "0.yaml:17:1: target: a Patch needs 'target: KIND/NAME' (the document it changes)"]


def test_a_patch_may_restate_the_kind_and_name_it_targets(tmp_path: Path) -> None:
    patch = "kind: Patch\ntarget: Prompt/p\nspace: research\npatch: {kind: Prompt, name: p, description: x}\n"
    (p,) = load(tmp_path, PROMPT.format(description="d"), patch).of_kind("Prompt")
    assert p.spec["description"] == "x"


def test_null_for_a_key_the_target_does_not_have_changes_nothing(tmp_path: Path) -> None:
    patch = "kind: Patch\ntarget: Prompt/p\nspace: research\npatch: {restricted: null}\n"
    (p,) = load(tmp_path, PROMPT.format(description="d"), patch).of_kind("Prompt")
    assert "restricted" not in p.spec and p.spec["description"] == "d"


def test_a_patch_without_a_target_is_refused_at_the_document(tmp_path: Path) -> None:
    problems = refused(tmp_path, PROMPT.format(description="d") + "---\n# overlay\nkind: Patch\npatch: {a: 1}\n")
    assert problems == ["0.yaml:8:1: Patch (document 2): a Patch needs 'target: KIND/NAME' (the document it changes)"]


def test_a_list_a_patch_writes_points_each_of_its_values_at_the_patch_line(tmp_path: Path) -> None:
    patch = ("kind: Patch\ntarget: Prompt/p\nspace: research\npatch:\n  version:\n    messages:\n"
             "      - role: user\n        content: '${var.q}'\n")
    (p,) = load(tmp_path, PROMPT.format(description="d"), patch, var=("q=why",)).of_kind("Prompt")
    content = p.source("version.messages.0.content")
    assert content is not None and (content.file.endswith("1.yaml"), content.line, content.via) == (True, 8, "--var q")
    role = p.source("version.messages.0.role")
    assert role is not None and (role.line, role.via) == (7, None)


def test_a_bad_value_a_patch_writes_is_refused_at_the_patch_line_and_column(tmp_path: Path) -> None:
    patch = "kind: Patch\ntarget: Integration/i\npatch:\n  config:\n    is_function_calling_enabled: maybe\n"
    problems = refused(tmp_path, LLM.format(name="i"), patch)
    assert len(problems) == 1 and problems[0].startswith("1.yaml:5:5: config.is_function_calling_enabled:")


def test_a_patch_with_an_unknown_field_is_not_applied_at_all(tmp_path: Path) -> None:
    patch = "kind: Patch\ntarget: Prompt/nothing\nspace: research\npatch: {description: x}\nextra: 1\n"
    assert refused(tmp_path, PROMPT.format(description="d"), patch) == [
        "1.yaml:5:1: extra: unknown field 'extra' in a Patch (it has target, space and patch)"]


def test_a_target_is_split_at_its_first_slash(tmp_path: Path) -> None:
    patch = "kind: Patch\ntarget: Prompt/research/p\nspace: research\npatch: {description: x}\n"
    assert refused(tmp_path, PROMPT.format(description="d"), patch) == [
        "1.yaml:2:1: target: no Prompt named 'research/p' in space research is loaded before this patch (paths load "
        "in order: the base first, then the overlays)"]


def test_a_value_a_patch_leaves_out_is_reported_at_the_patch_not_at_the_base(tmp_path: Path) -> None:
    patch = ("kind: Patch\ntarget: Prompt/p\nspace: research\npatch:\n  version:\n    messages:\n"
             "      - role: user\n")
    problems = refused(tmp_path, PROMPT.format(description="d"), patch)
    assert len(problems) == 1 and problems[0].startswith("1.yaml:7:"), problems


def test_a_key_a_patch_removes_takes_its_nested_lines_with_it(tmp_path: Path) -> None:
    base = PROMPT.format(description="d").replace("messages:", "invocation_params: {t: 1}, messages:")
    patch = ("kind: Patch\ntarget: Prompt/p\nspace: research\npatch:\n  version:\n    invocation_params: null\n"
             "---\nkind: Patch\ntarget: Prompt/p\nspace: research\npatch:\n  version:\n    invocation_params:\n"
             "      t: wrong-type-is-fine\n")
    (p,) = load(tmp_path, base, patch).of_kind("Prompt")
    source = p.source("version.invocation_params.t")
    assert source is not None and (source.file.endswith("1.yaml"), source.line) == (True, 14)


def test_a_patch_giving_a_space_to_an_unspaced_kind_is_not_applied_at_all(tmp_path: Path) -> None:
    patch = "kind: Patch\ntarget: Integration/nothing\nspace: research\npatch: {description: x}\n"
    assert refused(tmp_path, LLM.format(name="i"), patch) == [
        "1.yaml:3:1: space: 'space' does not apply to a Integration"]


def test_a_patch_without_patch_is_refused_at_the_document(tmp_path: Path) -> None:
    assert refused(tmp_path, LLM.format(name="i"), "# overlay\nkind: Patch\ntarget: Integration/i\n") == [
        "1.yaml:2:1: Patch (document 1): a Patch needs 'patch:', a mapping (JSON Merge Patch)"]


# --------------------------------------------------------------------------------------------------
# Variables at edges the overlay tests left open (found by mutation testing, docs/testing.md): what
# a tree loads to, or the exact problems it is refused with.


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
