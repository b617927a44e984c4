"""A dataset's examples written back into its JSONL examples file, in process on live examples given: each
example replaced on its own line (its line end kept, one given to a last line that had none), a file two
datasets read edited once with both edits, and examples with no line to write them on listed."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from reconciler.plan.liveview import ExamplesEdit
from reconciler.pull.engine import Edit, NotWritten, Tree
from tests.pull.helpers import pulled


def dataset(name: str, file: str) -> str:
    return f"kind: Dataset\nspace: research\nname: {name}\nexamples_file: {file}\n"


@pytest.fixture(autouse=True)
def here(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)


def test_an_example_replaced_on_the_last_line_is_given_a_line_end(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text(dataset("d", "d.jsonl"))
    (tmp_path / "d.jsonl").write_text('{"q": "a"}\n{"q": "b"}')
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {},
                    examples={"Dataset/research/d": ExamplesEdit(replace={1: {"q": "B"}})})
    assert result.files == {"d.jsonl": ('{"q": "a"}\n{"q": "b"}', '{"q": "a"}\n{"q": "B"}\n')}
    assert result.edits == [Edit("Dataset/research/d", "examples.1", "d.jsonl", 2, "update", {"q": "b"}, {"q": "B"})]


def test_an_examples_file_two_datasets_read_is_edited_once_with_both_edits(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text(dataset("d", "d.jsonl") + "---\n" + dataset("e", "d.jsonl"))
    (tmp_path / "d.jsonl").write_text('{"q": "a"}\n{"q": "b"}\n')
    result = pulled(monkeypatch, Tree(("tree.yaml",)), {},
                    examples={"Dataset/research/d": ExamplesEdit(replace={0: {"q": "A"}}),
                              "Dataset/research/e": ExamplesEdit(replace={1: {"q": "B"}})})
    assert result.files == {"d.jsonl": ('{"q": "a"}\n{"q": "b"}\n', '{"q": "A"}\n{"q": "B"}\n')}
    assert [(e.address, e.path) for e in result.edits] == [("Dataset/research/d", "examples.0"),
                                                           ("Dataset/research/e", "examples.1")]


def test_examples_declared_in_standard_input_are_listed_not_found(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("kind: Dataset\nspace: research\nname: d\nexamples: [{q: a}]\n"))
    result = pulled(monkeypatch, Tree(("-",)), {}, examples={"Dataset/research/d": ExamplesEdit(append=[{"q": "b"}])})
    assert result.files == {} and result.edits == []
    assert result.not_written == [NotWritten("Dataset/research/d", "examples", "examples not found: not written")]
