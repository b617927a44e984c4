"""One message per problem, and each says what to do: a tab in YAML is named as a tab, a shell-style
``${VAR}`` where a secret goes suggests ``{env: VAR}``, a misspelt required field is one problem
(not also "missing"), and a problem shared by many examples is reported once."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.errors import ManifestError
from reconciler.manifests import load_manifests


def problems(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "m.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ManifestError) as info:
        load_manifests([str(path)])
    return [p.split(": ", 1)[1] for p in info.value.problems]


@pytest.mark.parametrize("text", ["kind: Integration\nname: x\ntype: LLM\nconfig:\n\tprovider: VENDOR_A\n",
                                  "\tkind: Integration\nname: x\n"], ids=["nested", "first-line"])
def test_a_tab_in_the_indent_is_called_a_tab(tmp_path: Path, text: str) -> None:
    found = problems(tmp_path, text)
    assert found == ["document 1: YAML syntax error: a tab character indents this line; YAML indents with spaces "
                     "only (replace the tab with spaces)"]


@pytest.mark.parametrize(("text", "error"), [
    ("kind: Integration\nname: x\n- y\n", "3:1: document 1: YAML syntax error: while parsing a block mapping"),
    ("kind: Integration\nname: x\t: y\n", "2:9: document 1: YAML syntax error: mapping values are not allowed"),
    ("kind: Integration\nname: [x\n", "3:1: document 1: YAML syntax error: while parsing a flow sequence"),
    ("kind: Integration\nname: [x,\n\t@y]\n", "3:2: document 1: YAML syntax error: while scanning for the next token"),
], ids=["line-start", "tab-inside-a-line", "past-the-last-line", "just-after-a-tab-indent"])
def test_an_error_a_tab_does_not_cause_is_not_called_a_tab(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ManifestError) as info:
        load_manifests([str(path)])
    (found,) = info.value.problems
    assert found.startswith(f"{path}:{error}") and "a tab character" not in found


@pytest.mark.parametrize("literal", ["${VENDOR_KEY}", "$VENDOR_KEY"])
def test_a_shell_variable_where_a_secret_goes_suggests_an_env_reference(tmp_path: Path, literal: str) -> None:
    found = problems(tmp_path, "kind: Integration\nname: x\ntype: LLM\nconfig:\n  provider: VENDOR_A\n"
                               f"  api_key: '{literal}'\n")
    assert found == [f"config.api_key: '{literal}' is not expanded: reconciler reads no shell variables in values; "
                     "write {env: VENDOR_KEY} to read the secret from the environment variable VENDOR_KEY"]


def test_a_shell_variable_in_a_header_suggests_an_env_reference(tmp_path: Path) -> None:
    found = problems(tmp_path, "kind: Integration\nname: x\ntype: LLM\nconfig:\n  provider: CUSTOM\n"
                               "  base_url: https://x.example\n  api_key: {env: K}\n  headers: {X-T: '${TOKEN}'}\n")
    assert any("write {env: TOKEN}" in p for p in found), found


def test_a_manifest_variable_is_not_mistaken_for_a_shell_variable(tmp_path: Path) -> None:
    found = problems(tmp_path, "kind: Integration\nname: x\ntype: LLM\nconfig:\n  provider: VENDOR_A\n"
                               "  api_key: '${var.key}'\n")
    assert len(found) == 1 and "not expanded" not in found[0]


def test_a_misspelt_required_field_is_one_problem(tmp_path: Path) -> None:
    found = problems(tmp_path, "kind: Prompt\nspace: research\nname: p\nversion:\n  commit_message: c\n"
                               "  provider: VENDOR_A\n  mesages: []\n")
    assert found == ["version.mesages: unknown field 'mesages'; did you mean 'messages'?"]


def test_a_problem_every_example_shares_is_reported_once(tmp_path: Path) -> None:
    found = problems(tmp_path, "kind: Dataset\nspace: research\nname: d\nkey: ticket\nexamples:\n"
                               + "".join(f"  - {{q: {i}}}\n" for i in range(9)))
    assert found == ["examples[0]: has no 'ticket' field (the dataset key); so do examples[1], [2], [3], [4], [5] "
                     "and 3 more (9 in all)"]


def test_a_type_error_does_not_hide_a_provider_error(tmp_path: Path) -> None:
    found = problems(tmp_path, "kind: Integration\nname: x\ntype: LLM\nconfig:\n  provider: VENDOR_A\n"
                               "  api_key: {env: K}\n  is_function_calling_enabled: 'yes'\n"
                               "  base_url: https://x.example\n")
    assert len(found) == 2
    assert "expected a boolean" in found[0] and "'base_url' does not apply to provider VENDOR_A" in found[1]
