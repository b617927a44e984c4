"""A value set by a variable (the engine alone, on live values given): the variable's line is written once,
when every value it sets wants the same new value and no other environment loads its file; else each value is
routed to this environment's overlay, or listed with why when it has none."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.pull.engine import Edit, NotWritten, Tree
from tests.pull.helpers import pulled

NO_OVERLAY = "; this environment has no overlay (a folder with its Patches or var file) to write it in: not written"


def prompt(name: str, description: str) -> str:
    return (f"---\nkind: Prompt\nspace: research\nname: {name}\ndescription: {description}\n"
            "version: {commit_message: first, provider: VENDOR_A, messages: [{role: user, content: hi}]}\n")


def stage(root: Path, *docs: str, variables: str = "d: words\ne: old\n") -> Tree:
    (root / "tree.yaml").write_text("".join(docs))
    (root / "vars.yaml").write_text(variables)
    return Tree(("tree.yaml",), (), ("vars.yaml",))


@pytest.fixture(autouse=True)
def here(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("users", [5, 6])
def test_a_variable_other_values_use_is_not_written_for_one_and_at_most_four_are_named(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, users: int) -> None:
    tree = stage(tmp_path, *(prompt(f"p{n}", "{var: d}") for n in range(users)))
    result = pulled(monkeypatch, tree, {"Prompt/research/p0": {"description": "live words"}})
    named = ", ".join(f"Prompt/research/p{n} description" for n in range(1, 5))
    more = " and more" if users > 5 else ""
    assert result.edits == [] and result.files == {}
    assert result.not_written == [NotWritten("Prompt/research/p0", "description",
                                             f"set by vars.yaml:1, which also sets {named}{more}{NO_OVERLAY}")]


def test_a_variable_two_values_want_set_differently_is_not_written(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tree = stage(tmp_path, prompt("p0", "{var: d}"), prompt("p1", "{var: d}"))
    result = pulled(monkeypatch, tree, {"Prompt/research/p0": {"description": "one"},
                                        "Prompt/research/p1": {"description": "two"}})
    why = "set by vars.yaml:1, for which live has different values (Prompt/research/p0, Prompt/research/p1)"
    assert result.edits == [] and result.files == {}
    assert result.not_written == [NotWritten(f"Prompt/research/p{n}", "description", why + NO_OVERLAY)
                                  for n in range(2)]


def test_a_variable_every_value_wants_the_same_is_written_once(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tree = stage(tmp_path, prompt("p0", "{var: d}"), prompt("p1", "{var: d}"))
    result = pulled(monkeypatch, tree, {"Prompt/research/p0": {"description": "same"},
                                        "Prompt/research/p1": {"description": "same"}})
    assert result.not_written == []
    assert result.edits == [Edit("Prompt/research/p0", "description", "vars.yaml", 1, "update", "words", "same")]
    assert result.files == {"vars.yaml": ("d: words\ne: old\n", "d: same\ne: old\n")}


def test_a_variable_of_a_file_other_environments_load_is_not_written(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tree = stage(tmp_path, prompt("p0", "{var: d}"))
    (tmp_path / "other.yaml").write_text(prompt("q", "{var: d}"))
    other = Tree(("other.yaml",), (), ("vars.yaml",), "other")
    result = pulled(monkeypatch, tree, {"Prompt/research/p0": {"description": "live words"}}, others=[other])
    assert result.edits == [] and result.files == {}
    assert result.not_written == [NotWritten("Prompt/research/p0", "description",
                                             "set by vars.yaml:1, which other environments load" + NO_OVERLAY)]


def test_a_variable_that_cannot_hold_its_live_value_is_listed_and_the_next_ones_are_still_written(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tree = stage(tmp_path, prompt("p0", '"About ${var.e}"'), prompt("p1", "{var: d}"), prompt("p2", "{var: f}"),
                 variables="d: words\ne: old\nf: more\n")
    result = pulled(monkeypatch, tree, {"Prompt/research/p0": {"description": "About two\u2028lines"},
                                        "Prompt/research/p1": {"description": "new words"},
                                        "Prompt/research/p2": {"description": "even more"}})
    assert [(n.address, n.path) for n in result.not_written] == [("Prompt/research/p0", "description")]
    assert result.not_written[0].reason.startswith("live holds a line separator (U+2028, U+2029 or U+0085)")
    assert result.edits == [Edit("Prompt/research/p1", "description", "vars.yaml", 1, "update", "words", "new words"),
                            Edit("Prompt/research/p2", "description", "vars.yaml", 3, "update", "more", "even more")]
    assert result.files["vars.yaml"][1] == "d: new words\ne: old\nf: even more\n"


def test_a_variable_inside_a_string_is_written_with_the_rest_of_the_string_left_out(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tree = stage(tmp_path, prompt("p0", '"About ${var.e}"'))
    result = pulled(monkeypatch, tree, {"Prompt/research/p0": {"description": "About new"}})
    assert result.not_written == []
    assert result.edits == [Edit("Prompt/research/p0", "description", "vars.yaml", 2, "update", "About old", "new")]
    assert result.files == {"vars.yaml": ("d: words\ne: old\n", "d: words\ne: new\n")}
