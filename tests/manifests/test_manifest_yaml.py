"""Hostile or odd YAML: bombs, huge files, deep nesting, bad encodings, duplicate keys, YAML 1.1 traps."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from reconciler.errors import ManifestError
from reconciler.manifests import load_manifests, yamlload

BILLION_LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))


def problems_of(path: Path) -> list[str]:
    with pytest.raises(ManifestError) as info:
        load_manifests([str(path)])
    return info.value.problems


def test_a_billion_laughs_document_is_refused_with_one_alias_problem(tmp_path: Path) -> None:
    f = tmp_path / "bomb.yaml"
    f.write_text("kind: ResourceRestriction\nname: x\nresource_type: PROJECT\nresource_id: y\n" + BILLION_LAUGHS,
                 encoding="utf-8")
    problems = problems_of(f)
    assert any("YAML aliases are not supported (*a)" in p for p in problems)
    assert sum("aliases" in p for p in problems) == 1


def test_a_file_over_the_size_cap_is_refused_before_parsing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlload, "MAX_FILE_BYTES", 100)
    f = tmp_path / "big.yaml"
    f.write_text("# " + "x" * 200 + "\n", encoding="utf-8")
    assert problems_of(f) == [f"{f}:1:1: file: file is 203 bytes, over the 100-byte limit per file; split it"]


def test_nesting_beyond_the_depth_cap_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "deep.yaml"
    f.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    (problem,) = problems_of(f)
    assert problem.endswith(f"nested deeper than {yamlload.MAX_DEPTH} levels")


def test_non_utf8_bytes_are_reported_with_their_byte_offset(tmp_path: Path) -> None:
    f = tmp_path / "latin1.yaml"
    f.write_bytes("kind: Integration\nname: d\xe9j\xe0\n".encode("latin-1"))
    assert problems_of(f) == [
        f"{f}:2:8: file: not valid UTF-8 at byte offset 25 (byte 0xe9); save the file as UTF-8"]


def test_a_bad_byte_after_a_blank_first_line_is_placed_at_its_own_line_and_column(tmp_path: Path) -> None:
    f = tmp_path / "blank-first.yaml"
    f.write_bytes(b"\nname: d\xe9\n")
    assert problems_of(f) == [
        f"{f}:2:8: file: not valid UTF-8 at byte offset 8 (byte 0xe9); save the file as UTF-8"]


def test_a_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    f = tmp_path / "bom.yaml"
    f.write_bytes(b"\xef\xbb\xbfkind: ResourceRestriction\nname: x\nresource_type: PROJECT\nresource_id: y\n")
    assert load_manifests([str(f)]).resources[0].name == "x"


def test_duplicate_keys_name_both_lines(tmp_path: Path) -> None:
    f = tmp_path / "dup.yaml"
    f.write_text("kind: ResourceRestriction\nname: x\nresource_type: PROJECT\nresource_id: y\n"
                 "resource_type: DASHBOARD\n", encoding="utf-8")
    assert problems_of(f) == [
        f"{f}:5:1: resource_type: duplicate key 'resource_type' (first written at line 3, again at line 5)"]


def test_a_duplicate_key_names_the_line_of_its_own_first_occurrence_whatever_else_has_its_path() -> None:
    """Under an empty key at the top, ``x`` has the dotted path of the top's own ``x``: the first line
    of a repeated key is its mapping's, not that of another value written at the same path."""
    problems: list[yamlload.Problem] = []
    (doc,) = yamlload.parse_documents('x: 1\n"": {x: 5, x: 6}\nx: 2\n', "d.yaml", problems)
    assert [p.message for p in problems] == [
        "duplicate key 'x' (first written at line 2, again at line 2)",
        "duplicate key 'x' (first written at line 1, again at line 3)"]
    assert doc.value == {"x": 2, "": {"x": 6}}


def test_mapping_keys_are_the_text_written_and_timestamps_stay_strings(tmp_path: Path) -> None:
    f = tmp_path / "d.yaml"
    f.write_text("kind: Dataset\nspace: s\nname: d\nexamples:\n  - {yes: no, 1: 2024-05-01, null: ~}\n",
                 encoding="utf-8")
    (r,) = load_manifests([str(f)])
    assert r.spec["examples"] == [{"yes": False, "1": "2024-05-01", "null": None}]


def test_a_syntax_error_keeps_the_documents_before_it_and_says_where(tmp_path: Path) -> None:
    f = tmp_path / "broken.yaml"
    f.write_text("kind: ResourceRestriction\nname: x\nresource_type: PROJEKT\nresource_id: y\n---\n"
                 "kind: [unclosed\n", encoding="utf-8")
    problems = problems_of(f)
    assert problems[0].startswith(f"{f}:3:16: resource_type: 'PROJEKT' is not one of")
    assert problems[1].startswith(f"{f}:7:1: document 2: YAML syntax error:")


def test_complex_keys_are_refused(tmp_path: Path) -> None:
    f = tmp_path / "k.yaml"
    f.write_text("? [a, b]\n: c\n", encoding="utf-8")
    assert problems_of(f) == [
        f"{f}:1:3: document 1: mapping keys must be plain strings (complex keys are not supported)"]


def test_a_document_that_is_a_scalar_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("just text\n", encoding="utf-8")
    assert problems_of(f) == [
        f"{f}:1:1: document 1: a manifest document must be a mapping with kind and name, got a string"]


def test_loading_makes_no_network_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("network used")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    here = Path(__file__).parent
    load_manifests([str(here / "good")])
    with pytest.raises(ManifestError, match="host 127.0.0.1 is a loopback address"):
        load_manifests([str(here / "corpus" / "bad" / "18-agent-endpoint-loopback.yaml")])


@pytest.mark.parametrize(("written", "message"), [
    (".inf", "infinity and NaN are not JSON numbers"),
    ("!!int x1", "not a valid int"),
    ("!!bool maybe", "not a valid bool"),
    ("!!float abc", "not a valid float"),
    ("!!binary aGk=", "unsupported YAML tag tag:yaml.org,2002:binary"),
    ("!custom 1", "unsupported YAML tag !custom"),
])
def test_a_scalar_json_cannot_hold_is_refused_at_its_line_and_path(written: str, message: str) -> None:
    problems: list[yamlload.Problem] = []
    yamlload.parse_documents(f"kind: Dataset\nx:\n  - 1\n  - {written}\n", "d.yaml", problems)
    assert [str(p) for p in problems] == [f"d.yaml:4:5: x[1]: {message}"]


def test_a_plain_scalar_with_the_non_specific_tag_is_resolved_as_if_untagged() -> None:
    problems: list[yamlload.Problem] = []
    (doc,) = yamlload.parse_documents("a: ! 12\nb: ! true\nc: '12'\n", "d.yaml", problems)
    assert doc.value == {"a": 12, "b": True, "c": "12"} and problems == []


def test_a_staged_text_is_read_in_place_of_its_file_with_the_same_limit(tmp_path: Path) -> None:
    f = tmp_path / "m.yaml"
    f.write_text("kind: on-disk\n", encoding="utf-8")
    (tmp_path / "link.yaml").symlink_to(f)
    problems: list[yamlload.Problem] = []
    with yamlload.staged({str(f): "kind: staged é\n"}):
        assert yamlload.read_file(str(tmp_path / "link.yaml"), "shown.yaml", problems) == "kind: staged é\n"
        assert yamlload.read_file(str(f), "shown.yaml", problems, limit=15) is None  # 15 characters, 16 bytes
    assert yamlload.read_file(str(f), "shown.yaml", problems) == "kind: on-disk\n"
    assert [str(p) for p in problems] == [
        "shown.yaml:1:1: file: file is 16 bytes, over the 15-byte limit per file; split it"]


def test_a_file_at_the_limit_is_read_and_one_byte_over_it_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "m.yaml"
    f.write_bytes(b"# " + b"x" * 8)
    problems: list[yamlload.Problem] = []
    assert yamlload.read_file(str(f), "m.yaml", problems, limit=10) == "# " + "x" * 8
    assert yamlload.read_file(str(f), "m.yaml", problems, limit=9) is None
    assert [str(p) for p in problems] == ["m.yaml:1:1: file: file is 10 bytes, over the 9-byte limit per file; split it"]


def test_a_pipe_longer_than_the_limit_is_refused_not_cut_short(tmp_path: Path) -> None:
    """A pipe (``<(...)`` on a command line) has no size to check first: what is read past the
    limit refuses it."""
    fifo = tmp_path / "m.yaml"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_bytes, args=(b"#" * 30,))
    writer.start()
    problems: list[yamlload.Problem] = []
    assert yamlload.read_file(str(fifo), "m.yaml", problems, limit=10) is None
    writer.join()
    (problem,) = problems
    assert problem.message.endswith("over the 10-byte limit per file; split it")


def test_the_node_budget_counts_a_key_or_scalar_one_and_a_mapping_or_list_two() -> None:
    """``a: [1]`` is a mapping, a key, a list and a scalar: 6. A budget of 6 builds it; one of 5
    refuses it at the scalar, names where, and the files after it are not parsed."""
    problems: list[yamlload.Problem] = []
    exact = yamlload.NodeBudget(left=6)
    assert [d.value for d in yamlload.parse_documents("a: [1]\n", "d.yaml", problems, exact)] == [{"a": [1]}]
    assert (exact.left, exact.spent, problems) == (0, False, [])
    short = yamlload.NodeBudget(left=5)
    assert yamlload.parse_documents("a: [1]\n", "d.yaml", problems, short) == []
    assert short.spent and [str(p) for p in problems] == [
        f"d.yaml:1:5: document 1: the manifests hold too many YAML values: over {yamlload.MAX_NODES:,} (a key or "
        "scalar counts 1, a mapping or list 2), the limit that bounds the memory a load needs; move large example "
        "sets to an examples_file"]
    assert yamlload.parse_documents("b: 2\n", "e.yaml", problems, short) == [] and len(problems) == 1


@pytest.mark.parametrize(("text", "problem"), [
    ("[" * yamlload.MAX_DEPTH + "]" * yamlload.MAX_DEPTH + "\n", None),
    ("x: " + "[" * (yamlload.MAX_DEPTH - 1) + "]" * (yamlload.MAX_DEPTH - 1) + "\n", None),
    ("[" * (yamlload.MAX_DEPTH + 1) + "]" * (yamlload.MAX_DEPTH + 1) + "\n",
     f"d.yaml:1:{yamlload.MAX_DEPTH + 1}: 0[0][0][0]...: nested deeper than {yamlload.MAX_DEPTH} levels"),
    ("a:\n  b: " + "[" * 150 + "]" * 150 + "\n", f"d.yaml:2:104: a.b[0][0]...: nested deeper than {yamlload.MAX_DEPTH} levels"),
], ids=["lists-at-the-cap", "a-mapping-and-lists-at-the-cap", "one-list-over", "deep-under-a-key"])
def test_nesting_is_refused_past_the_cap_where_it_passes_it_with_the_path_to_it(text: str, problem: str | None) -> None:
    problems: list[yamlload.Problem] = []
    docs = yamlload.parse_documents(text, "d.yaml", problems)
    assert [str(p) for p in problems] == ([problem] if problem else [])
    assert len(docs) == (0 if problem else 1)


@pytest.mark.parametrize(("text", "values", "problem"), [
    ("a: 1\n---\n? [a]\n: b\n---\nc: 2\n", [{"a": 1}, {"c": 2}],
     "d.yaml:3:3: document 2: mapping keys must be plain strings (complex keys are not supported)"),
    ("a: 1\n--- x\n--- [\n", [{"a": 1}, "x"],
     "d.yaml:4:1: document 3: YAML syntax error: while parsing a flow node did not find expected node content"),
    ("ab:\n  ? [x]\n  : y\n", [], "d.yaml:2:5: ab: mapping keys must be plain strings (complex keys are not supported)"),
    ("kind: x\nname: 1\nb: a\x07b\n", [], "d.yaml:3:5: file: character U+0007 is not allowed in YAML"),
    ("a\x1b: 1\n", [], "d.yaml:1:2: file: character U+001B is not allowed in YAML"),
    ("\n\x07\n", [], "d.yaml:2:1: file: character U+0007 is not allowed in YAML"),
], ids=["complex-key-in-the-second", "syntax-error-in-the-third", "complex-key-under-a-key", "control-character",
        "control-character-first-line", "control-character-after-a-blank-line"])
def test_what_the_parser_cannot_read_is_reported_where_it_is_and_the_documents_around_it_kept(
        text: str, values: list[object], problem: str) -> None:
    problems: list[yamlload.Problem] = []
    assert [d.value for d in yamlload.parse_documents(text, "d.yaml", problems)] == values
    assert [str(p) for p in problems] == [problem]


@pytest.mark.parametrize(("text", "problem", "refused"), [
    ("x:\n  - 1\n  - !custom [1]\n", "d.yaml:3:5: x[1]: unsupported YAML tag !custom", {"x.1"}),
    ("x: !!set {a: 1}\n", "d.yaml:1:4: x: unsupported YAML tag tag:yaml.org,2002:set", {"x"}),
    ("--- !custom\na: 1\n", "d.yaml:1:5: document 1: unsupported YAML tag !custom", {""}),
    ("x:\n  - !!int y\n", "d.yaml:2:5: x[0]: not a valid int", {"x.0"}),
    ("--- !!int x\n", "d.yaml:1:5: document 1: not a valid int", {""}),
    ("x: !!seq {a: 1}\n", "d.yaml:1:4: x: unsupported YAML tag tag:yaml.org,2002:seq", {"x"}),
    ("x: !!map [1]\n", "d.yaml:1:4: x: unsupported YAML tag tag:yaml.org,2002:map", {"x"}),
    ("a: &x 1\nb: *x\n", "d.yaml:2:4: b: YAML aliases are not supported (*x): write the value out (aliases can expand "
                         "a small file into a huge document)", {"b"}),
], ids=["tagged-list", "tagged-mapping", "tagged-document", "bad-scalar", "bad-scalar-document", "list-tag-on-a-mapping",
        "mapping-tag-on-a-list", "alias"])
def test_a_refused_tag_is_reported_at_its_path_and_the_path_kept_as_refused(
        text: str, problem: str, refused: set[str]) -> None:
    """The validator stays quiet about a value already refused here (no "expected a list" after it)."""
    problems: list[yamlload.Problem] = []
    (doc,) = yamlload.parse_documents(text, "d.yaml", problems)
    assert [str(p) for p in problems] == [problem] and doc.refused == refused


def test_a_refused_alias_stands_for_nothing_in_the_value() -> None:
    problems: list[yamlload.Problem] = []
    (doc,) = yamlload.parse_documents("a: &x 1\nb: *x\n", "d.yaml", problems)
    assert doc.value == {"a": 1, "b": None} and len(problems) == 1
