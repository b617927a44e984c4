"""``ignore_changes`` in the engine alone (live values given): a rule inside a free-form object keeps the
declared value of the keys it names and lets the rest be pulled; a rule elsewhere changes nothing; the live
values are read, never changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.fieldkinds import ABSENT
from reconciler.plan.liveview import FieldEdit
from reconciler.pull.engine import Edit, Tree
from tests.pull.helpers import pulled

PARAMS = {"temperature": 0.2, "max_tokens": 5, "stop": {"a": 1, "b": 1}}


def stage(tmp_path: Path, ignore: str) -> Tree:
    (tmp_path / "tree.yaml").write_text(
        f"kind: Prompt\nspace: research\nname: p\nignore_changes: [{ignore}]\nversion:\n  commit_message: first\n"
        "  provider: VENDOR_A\n  messages: [{role: user, content: hi}]\n  invocation_params:\n"
        "    temperature: 0.2\n    max_tokens: 5\n    stop: {a: 1, b: 1}\n")
    return Tree(("tree.yaml",))


@pytest.fixture(autouse=True)
def here(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)


def test_a_rule_inside_a_free_form_object_keeps_the_keys_it_names_and_the_rest_is_pulled(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tree = stage(tmp_path, "version.invocation_params.temperature")
    live = {"temperature": 0.9, "max_tokens": 10, "stop": {"a": 1, "b": 1}}
    result = pulled(monkeypatch, tree, {"Prompt/research/p": {"version.invocation_params": live}})
    assert result.edits == [Edit("Prompt/research/p", "version.invocation_params.max_tokens", "tree.yaml", 11,
                                 "update", 5, 10)]
    assert result.not_written == []


def test_a_rule_on_a_key_neither_side_has_changes_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tree = stage(tmp_path, "version.invocation_params.top_p")
    live = {"temperature": 0.2, "max_tokens": 10, "stop": {"a": 1, "b": 1}}
    result = pulled(monkeypatch, tree, {"Prompt/research/p": {"version.invocation_params": live}})
    assert [(e.path, e.before, e.after) for e in result.edits] == [("version.invocation_params.max_tokens", 5, 10)]


@pytest.mark.parametrize("new", [{"temperature": 0.2, "max_tokens": 10, "stop": {"a": 1, "b": 1}}, ABSENT])
def test_a_rule_on_another_field_changes_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, new: object) -> None:
    tree = stage(tmp_path, "version.labels")
    result = pulled(monkeypatch, tree, {"Prompt/research/p": {"version.invocation_params": new}})
    expected = ("version.invocation_params.max_tokens", 5, 10) if new is not ABSENT else \
        ("version.invocation_params", PARAMS, None)
    assert [(e.path, e.before, e.after) for e in result.edits] == [expected]


def test_the_live_values_are_left_as_they_were(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tree = stage(tmp_path, "version.invocation_params.stop.a")
    new = {"temperature": 0.2, "max_tokens": 5, "stop": {"a": 2, "b": 2}}
    edit = FieldEdit("version.invocation_params", PARAMS, new)
    result = pulled(monkeypatch, tree, {"Prompt/research/p": [edit]})
    assert new == {"temperature": 0.2, "max_tokens": 5, "stop": {"a": 2, "b": 2}}
    assert [(e.path, e.after) for e in result.edits] == [("version.invocation_params.stop.b", 2)]
