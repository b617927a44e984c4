"""One run of the engine, in process on live values given: restrictions a reader key cannot see are left
out, each edited file is rendered (one that cannot be is a conflict, the others still are), a byte order
mark is kept apart from the text."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.errors import ConfigError
from reconciler.fieldkinds import ABSENT
from reconciler.plan.liveview import ExamplesEdit, FieldEdit
from reconciler.pull import engine
from reconciler.pull.engine import Conflict, Edit, PullResult, Tree
from reconciler.pull.yamledit import EditError, YamlFile
from tests.pull.helpers import pulled

VERSION = "version: {commit_message: first, provider: VENDOR_A, messages: [{role: user, content: hi}]}\n"
RESTRICTION = "kind: ResourceRestriction\nname: ops-board\nresource_type: DASHBOARD\nresource_id: ops-board-7\n"


def prompt(name: str, extra: str = "") -> str:
    return f"kind: Prompt\nspace: research\nname: {name}\ndescription: first words\n{extra}{VERSION}"


@pytest.fixture(autouse=True)
def here(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)


def test_restrictions_a_key_cannot_see_are_left_out_with_one_warning_and_the_rest_is_pulled(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text("---\n".join([RESTRICTION, prompt("locked", "restricted: true\n"),
                                                      prompt("open")]))
    monkeypatch.setattr(engine, "restrictions_unseen", lambda resources, live: True)
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {"Prompt/research/locked": {"restricted": False},
                                                        "Prompt/research/open": {"description": "live words"}})
    assert result.warnings == [
        "restrictions were not compared: the API key sees no resource restriction (a read-only key manages none), "
        "so these are left out: ResourceRestriction/ops-board, Prompt/research/locked (restricted)"]
    assert result.edits == [Edit("Prompt/research/open", "description", "tree.yaml", 16, "update", "first words",
                                 "live words")]
    assert result.not_written == [] and list(result.files) == ["tree.yaml"]


def test_a_file_whose_edits_cannot_be_rendered_is_a_conflict_and_the_next_file_is_still_rendered(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(prompt("a"))
    (tmp_path / "b.yaml").write_text(prompt("b"))
    render = YamlFile.render

    def refused(self: YamlFile) -> str:
        if self.path == "a.yaml":
            raise EditError("a.yaml: two edits overlap near line 4")
        return render(self)

    monkeypatch.setattr(YamlFile, "render", refused)
    result = pulled(monkeypatch, Tree(("a.yaml", "b.yaml")), {"Prompt/research/a": {"description": "live"},
                                                              "Prompt/research/b": {"description": "live"}})
    assert result.conflicts == [Conflict("a.yaml", "", None, None, None, "a.yaml: two edits overlap near line 4")]
    assert str(result.conflicts[0]) == "a.yaml: a.yaml: two edits overlap near line 4"
    assert result.files == {"b.yaml": (prompt("b"), prompt("b").replace("first words", "live"))}
    assert result.exit_code() == 1


def test_a_byte_order_mark_is_kept_apart_from_the_texts_and_written_back(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text("\ufeff" + prompt("p"))
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {"Prompt/research/p": {"description": "live"}})
    assert result.files == {"tree.yaml": (prompt("p"), prompt("p").replace("first words", "live"))}
    assert result.boms == {"tree.yaml": True}
    result.write()
    assert (tmp_path / "tree.yaml").read_text() == "\ufeff" + prompt("p").replace("first words", "live")


def test_writing_refuses_a_link_or_a_text_it_cannot_encode_and_says_pull_did(tmp_path: Path) -> None:
    real, link, plain = tmp_path / "real.yaml", tmp_path / "link.yaml", tmp_path / "plain.yaml"
    real.write_text("x: 1\n")
    link.symlink_to(real)
    plain.write_text("x: 1\n")
    with pytest.raises(ConfigError) as refused:
        PullResult(files={str(plain): ("x: 1\n", "x: 2\n"), str(link): ("x: 1\n", "x: 2\n")}).write()
    assert str(refused.value) == (f"pull: {link}: is a symbolic link; refusing to write through it (remove the "
                                  "link, or give the real path)")
    assert real.read_text() == plain.read_text() == "x: 1\n"  # every target checked before the first is replaced
    with pytest.raises(ConfigError) as failed:
        PullResult(files={str(plain): ("x: 1\n", "x: \ud800\n")}).write()  # a lone surrogate, as JSON may give
    assert str(failed.value).startswith(f"pull: {plain}: cannot write (")
    assert plain.read_text() == "x: 1\n"


def test_write_only_differences_are_listed_by_what_follows_the_address(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text(prompt("p"))
    notes = {"Prompt/research/p": ["Prompt/research/p: config.api_key: write-only, never read", "a note: alone"]}
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {}, notes=notes)
    assert [(n.address, n.path, n.reason) for n in result.not_written] == [
        ("Prompt/research/p", "", "config.api_key: write-only, never read"), ("Prompt/research/p", "", "alone")]
    notes = {"Prompt/research/p": ["no separator here"]}
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {}, notes=notes)
    assert [n.reason for n in result.not_written] == ["no separator here"]


def test_a_commit_message_alone_is_left_and_the_fields_after_it_are_still_pulled(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text(prompt("p"))
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {"Prompt/research/p": {"version.commit_message": "second",
                                                                                "description": "live"}})
    assert [(e.path, e.after) for e in result.edits] == [("description", "live")]
    assert result.not_written == []


def test_with_since_examples_the_tree_changed_and_live_did_not_are_left_unlisted(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    dataset = "kind: Dataset\nspace: research\nname: d\nexamples: [{{q: {}}}]\n"
    (tmp_path / "ref.yaml").write_text(dataset.format("a"))
    (tmp_path / "tree.yaml").write_text(dataset.format("b"))
    base = {r.identity: r for r in Tree(("ref.yaml",)).load().resources}
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {}, base=base,
                    examples={"Dataset/research/d": ExamplesEdit(replace={0: {"q": "a"}})})
    assert result.files == {} and result.conflicts == [] and result.not_written == []
    assert result.exit_code() == 0


def since(tmp_path: Path, ref: str, tree: str) -> dict[tuple[str, ...], object]:
    """The tree at REF (``ref``) as ``--since`` gives it, beside the tree as it is now (``tree``)."""
    (tmp_path / "ref.yaml").write_text(ref)
    (tmp_path / "tree.yaml").write_text(tree)
    return {r.identity: r for r in Tree(("ref.yaml",)).load().resources}


def test_with_since_a_field_of_a_resource_added_since_ref_and_changed_live_is_a_conflict(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    base = since(tmp_path, prompt("other"), prompt("p"))
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {"Prompt/research/p": {"description": "live"}}, base=base)
    assert result.conflicts == [Conflict("Prompt/research/p", "description", ABSENT, "first words", "live",
                                         "tree.yaml:4")]
    assert result.files == {} and result.exit_code() == 1


def test_with_since_a_field_the_tree_removed_and_live_changed_is_a_conflict_at_its_document(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    base = since(tmp_path, prompt("p", "restricted: true\n"), prompt("p"))
    live = {"Prompt/research/p": [FieldEdit("restricted", ABSENT, False)]}
    result = pulled(monkeypatch, Tree(("tree.yaml",)), live, base=base)
    assert [str(c) for c in result.conflicts] == [
        "Prompt/research/p: restricted (tree.yaml:1): changed in the tree and live: base true, tree (not set), "
        "live false; "
        "neither written"]


def test_with_since_live_equal_to_ref_whatever_its_key_order_is_no_conflict(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    params = "  invocation_params: {{max_tokens: {}, temperature: 0.2}}\n"
    version = "version:\n  commit_message: first\n  provider: VENDOR_A\n  messages: [{role: user, content: hi}]\n"
    ref, tree = (f"kind: Prompt\nspace: research\nname: p\n{version}{params.format(n)}" for n in (5, 6))
    base = since(tmp_path, ref, tree)
    live = [FieldEdit("version.invocation_params", {"max_tokens": 6, "temperature": 0.2},
                      {"temperature": 0.2, "max_tokens": 5})]
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {"Prompt/research/p": live}, base=base)
    assert result.conflicts == [] and result.files == {}


def test_labels_moved_live_are_no_new_version_so_its_commit_message_is_left(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text(prompt("p").replace("content: hi}]}", "content: hi}], labels: [a]}"))
    live = {"version.labels": ["b"], "version.commit_message": "second"}
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {"Prompt/research/p": live})
    assert [(e.path, e.after) for e in result.edits] == [("version.labels.0", "b")]
    assert result.not_written == []
