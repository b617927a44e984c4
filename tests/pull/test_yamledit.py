"""Minimal edits of hand-written YAML (``pull.yamledit``), in process: each edit changes the value it
names and no other byte of the file; an edit that cannot be made so is refused, never written."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from reconciler.pull.yamledit import (
    Doc,
    EditError,
    Node,
    YamlFile,
    block,
    block_scalar,
    flow_text,
    scalar,
)


def parsed(text: str, path: str = "t.yaml") -> YamlFile:
    return YamlFile(path, text.encode())


def edited(text: str, edit: Any, doc: int = 0) -> str:
    f = parsed(text)
    edit(f, f.docs[doc], f.docs[doc].root)
    return f.render()


STYLES = "kind: A\nv: &x !!str hello\nw: *x\nl: |\n  one\n  two\nm: >-\n  folded\ns: 'q'\nd: \"dq\"\nf: [1, 2]\n"


def test_every_node_knows_its_span_style_and_where_its_key_is() -> None:
    f = parsed(STYLES)
    root = f.docs[0].root
    assert root is not None and root.kind == "map" and root.style == "block" and root.keys[:3] == ["kind", "v", "w"]
    seen = {k: root.child(k) for k in root.keys}
    shown = {k: (n.kind, n.style, n.text, STYLES[n.start:n.end], n.line, n.col, n.key_line, n.key_col)
             for k, n in seen.items() if n is not None}
    assert shown == {
        "kind": ("scalar", None, "A", "A", 1, 7, 1, 1),
        "v": ("scalar", None, "hello", "hello", 2, 4, 2, 1),  # past its anchor and tag: where the value is
        "w": ("alias", None, "", "*x", 3, 4, 3, 1),
        "l": ("scalar", "|", "one\ntwo\n", "|\n  one\n  two\n", 4, 4, 4, 1),
        "m": ("scalar", ">", "folded", ">-\n  folded\n", 7, 4, 7, 1),
        "s": ("scalar", "'", "q", "'q'", 9, 4, 9, 1),
        "d": ("scalar", '"', "dq", '"dq"', 10, 4, 10, 1),
        "f": ("seq", "flow", "", "[1, 2]", 11, 4, 11, 1),
    }
    flow = seen["f"]
    assert flow is not None and [c.text for c in flow.children] == ["1", "2"] and flow.children[0].parent is flow
    assert root.child(0) is None and flow.child("x") is None and flow.child(2) is None and flow.child(-1) is None
    assert flow.child(1) is flow.children[1]


MULTI = "a: 1\n---\nkind: B\nlist:\n  - name: x\n    v: 1\n  - name: y\n    v: 2\n---\nc: 3\n"


def test_documents_are_found_by_line_and_nodes_by_position_and_path() -> None:
    f = parsed(MULTI)
    assert [(d.index, d.root.line if d.root else None) for d in f.docs] == [(1, 1), (2, 3), (3, 10)]
    assert [f.doc_of_line(n).index for n in range(1, 12)] == [1, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3]  # type: ignore[union-attr]
    assert f.doc_of_line(0) is None
    assert f.doc_at(3, 1) is f.docs[1] and f.doc_at(3, 2) is None and f.doc_at(4, 1) is None
    found = f.find(7, 5, ["nothing", "list.1.name"])
    assert found is not None and found[0] is f.docs[1] and found[1] == "list.1.name" and found[2].text == "y"
    assert f.find(7, 6, ["list.1.name"]) is None  # the key is at column 5
    assert f.find(5, 5, ["patch.list.0.name", "list.0.name"])[1] == "list.0.name"  # type: ignore[index]
    doc = f.docs[1]
    assert doc.root is not None
    node = doc.root.at("list.1.v")
    assert node is not None and node.text == "2" and f.doc_path(node) == "list.1.v"
    assert doc.root.at("list.x") is None and doc.root.at("list.1.v.deeper") is None and doc.root.at("") is doc.root


def test_a_value_replaced_keeps_its_style_and_every_other_byte() -> None:
    text = "# head\nkind: A   # kind\ns: 'one'   # single\nd: \"two\"\np: three\nn: 4\n"
    out = edited(text, lambda f, d, r: [f.replace(d, r.child("s"), "it's"), f.replace(d, r.child("d"), "x\ty"),
                                        f.replace(d, r.child("p"), "yes"), f.replace(d, r.child("n"), 4.5)])
    assert out == "# head\nkind: A   # kind\ns: 'it''s'   # single\nd: \"x\\ty\"\np: 'yes'\nn: 4.5\n"


def test_a_block_scalar_replaced_keeps_its_indicator_indent_and_what_follows() -> None:
    text = "a: |\n    one\n    two\nb: >-\n  folded\n  text\nc: end\n"
    out = edited(text, lambda f, d, r: [f.replace(d, r.child("a"), "uno\ndos\n"),
                                        f.replace(d, r.child("b"), "plegado")])
    assert out == "a: |\n    uno\n    dos\nb: >-\n  plegado\nc: end\n"
    assert yaml.safe_load(out) == {"a": "uno\ndos\n", "b": "plegado", "c": "end"}
    # a value a block scalar cannot hold (a tab, a leading space) is written double-quoted, on the block's lines
    out = edited(text, lambda f, d, r: [f.replace(d, r.child("a"), "col1\tcol2\n"),
                                        f.replace(d, r.child("b"), "  indented")])
    assert out == 'a: "col1\\tcol2\\n"\nb: "  indented"\nc: end\n'


def test_a_collection_replaced_in_block_style_is_indented_where_it_starts() -> None:
    text = "top:\n  m:\n    a: 1\n  l:\n    - x\n  s: 1\n"
    out = edited(text, lambda f, d, r: [f.replace(d, r.at("top.m"), {"b": {"c": 2}}),
                                        f.replace(d, r.at("top.l"), ["y", {"k": "v"}])])
    assert out == "top:\n  m:\n    b:\n      c: 2\n  l:\n    - y\n    - k: v\n  s: 1\n"
    out = edited(text, lambda f, d, r: [f.replace(d, r.at("top.s"), {"n": [1, 2]}),
                                        f.replace(d, r.at("top.m"), {})])
    assert out == "top:\n  m:\n    {}\n  l:\n    - x\n  s: {n: [1, 2]}\n"
    assert yaml.safe_load(out) == {"top": {"m": {}, "l": ["x"], "s": {"n": [1, 2]}}}


def test_a_one_line_value_replaced_by_lines_becomes_a_block_scalar_indented_below_its_key() -> None:
    assert edited("m:\n  a: one\nb: 1\n", lambda f, d, r: f.replace(d, r.at("m.a"), "x\ny\n")) == \
        "m:\n  a: |\n    x\n    y\nb: 1\n"
    assert edited("k: 1\nm:\n  a: one\n", lambda f, d, r: f.replace(d, r.at("m.a"), "x\ny\n")) == \
        "k: 1\nm:\n  a: |\n    x\n    y\n"  # the indent of its own line
    assert edited("- m:\r\n    a: one\r\n", lambda f, d, r: f.replace(d, r.at("0.m.a"), "x\ny")) == \
        "- m:\r\n    a: |-\r\n      x\r\n      y\r\n"
    assert edited("m:\n  a: one\n", lambda f, d, r: f.replace(d, r.at("m.a"), "p, q")) == "m:\n  a: p, q\n"


def test_a_scalar_inside_a_flow_collection_is_written_as_flow_allows() -> None:
    text = "f: {a: x, b: [y, z]}\n"
    out = edited(text, lambda f, d, r: [f.replace(d, r.at("f.a"), "p, q"), f.replace(d, r.at("f.b.1"), "w")])
    assert out == "f: {a: 'p, q', b: [y, w]}\n"
    out = edited(text, lambda f, d, r: f.replace(d, r.at("f.a"), "two\nlines"))
    assert out == 'f: {a: "two\\nlines", b: [y, z]}\n'


def removed(text: str, path: str) -> str:
    return edited(text, lambda f, d, r: f.delete_entry(d, r.at(path)))


def test_an_entry_removed_takes_its_lines_and_the_last_one_leaves_an_empty_collection() -> None:
    assert edited(MULTI, lambda f, d, r: f.delete_entry(d, r.at("list.0.name")), 1) == \
        "a: 1\n---\nkind: B\nlist:\n  - v: 1\n  - name: y\n    v: 2\n---\nc: 3\n"  # "- " kept for the next key
    assert edited(MULTI, lambda f, d, r: f.delete_entry(d, r.at("list.0.v")), 1) == \
        "a: 1\n---\nkind: B\nlist:\n  - name: x\n  - name: y\n    v: 2\n---\nc: 3\n"
    assert edited(MULTI, lambda f, d, r: f.delete_entry(d, r.at("list.1")), 1) == \
        "a: 1\n---\nkind: B\nlist:\n  - name: x\n    v: 1\n---\nc: 3\n"
    text = "m:\n  only: 1\nl:\n  - one\nn: 2\n"
    assert edited(text, lambda f, d, r: [f.delete_entry(d, r.at("m.only")), f.delete_entry(d, r.at("l.0"))]) == \
        "m:\n  {}\nl:\n  []\nn: 2\n"
    assert removed("a: |\n  x\nb: 1\nc: 2\n", "a") == "b: 1\nc: 2\n"  # a block scalar ends with its line break
    assert removed("\na: 1\nb: 2\n", "a") == "\nb: 2\n"
    crlf = "a: 1\r\nb: 2\r\nc: 3\r\n"
    assert edited(crlf, lambda f, d, r: f.delete_entry(d, r.child("b"))) == "a: 1\r\nc: 3\r\n"
    assert edited("a: 1\nb: 2", lambda f, d, r: f.delete_entry(d, r.child("b"))) == "a: 1\n"


@pytest.mark.parametrize(("text", "path", "after"), [
    ("f: {a: 1, b: 2, c: 3}  # c\n", "f.a", "f: {b: 2, c: 3}  # c\n"),
    ("f: {a: 1, b: 2, c: 3}  # c\n", "f.b", "f: {a: 1, c: 3}  # c\n"),
    ("f: {a: 1, b: 2, c: 3}  # c\n", "f.c", "f: {a: 1, b: 2}  # c\n"),
    ("f: {a: 1}\ng: 2\n", "f.a", "f: {}\ng: 2\n"),
    ("l:\n  - {a: 1, b: [x, y]}\n  - c: 3\n", "l.0.b", "l:\n  - {a: 1}\n  - c: 3\n"),
    ("f: {a: 1,\n    b: 2}\n", "f.a", "f: {b: 2}\n"),
])
def test_an_entry_of_a_flow_mapping_is_removed_with_its_comma(text: str, path: str, after: str) -> None:
    assert removed(text, path) == after


def test_a_flow_mapping_keeps_an_edit_beside_a_removal() -> None:
    out = edited("v: {a: 1, b: two, c: 3}\n", lambda f, d, r: [f.delete_entry(d, r.at("v.c")),
                                                               f.replace(d, r.at("v.b"), "deux"),
                                                               f.delete_entry(d, r.at("v.a"))])
    assert out == "v: {b: deux}\n"


@pytest.mark.parametrize(("text", "path", "message"), [
    ("f: [1, 2]\n", "f.0", "^flow sequences are rewritten whole$"),
    ("a: 1\n", "", "^flow sequences are rewritten whole$"),  # the root has no parent
])
def test_an_item_of_a_flow_sequence_is_never_removed_alone(text: str, path: str, message: str) -> None:
    f = parsed(text)
    doc = f.docs[0]
    assert doc.root is not None
    node = doc.root.at(path)
    assert node is not None
    with pytest.raises(EditError, match=message):
        f.delete_entry(doc, node)


def test_an_item_entry_and_an_anchored_sibling_are_removed_by_their_lines() -> None:
    assert removed("- x: 1\n  y: 2\n- z\n", "0.y") == "- x: 1\n- z\n"
    assert removed("m:\n  k: &a 1\n  j: 2\n", "m.j") == "m:\n  k: &a 1\n"
    assert removed("k:\n- a\n- b\n", "k.1") == "k:\n- a\n"


def test_an_entry_after_another_on_its_line_cannot_be_removed() -> None:
    with pytest.raises(EditError, match=r"t\.yaml:1: cannot remove an entry that shares its line"):
        removed("- - a\n  - b\n", "0.0")


def test_entries_and_items_are_inserted_after_the_last_or_before_one() -> None:
    text = "m:\n  a: 1\nl:\n  - x\n  - y\nz: 0\n"
    out = edited(text, lambda f, d, r: [f.insert(d, r.child("m"), "b", {"c": [1]}),
                                        f.insert(d, r.child("l"), None, "w", r.at("l.1")),
                                        f.insert(d, r.child("l"), None, {"k": 1})])
    assert out == "m:\n  a: 1\n  b:\n    c:\n      - 1\nl:\n  - x\n  - w\n  - y\n  - k: 1\nz: 0\n"
    flowed = "l:\n  - {a: 1}\n"
    assert edited(flowed, lambda f, d, r: f.insert(d, r.child("l"), None, {"b": 2})) == "l:\n  - {a: 1}\n  - {b: 2}\n"
    assert edited("l:\n- a\n", lambda f, d, r: f.insert(d, r.child("l"), None, "b")) == "l:\n- a\n- b\n"
    assert edited("a: 1\r\nb: 2\r\n", lambda f, d, r: f.insert(d, r, "c, d", 3)) == "a: 1\r\nb: 2\r\nc, d: 3\r\n"
    assert edited("a: 1", lambda f, d, r: f.insert(d, r, "b", "two")) == "a: 1\nb: two"
    assert edited("a: 1\n\n\n", lambda f, d, r: f.insert(d, r, "b", 2)) == "a: 1\nb: 2\n\n\n"
    assert edited("l:\n  - a\n", lambda f, d, r: [f.insert(d, r.child("l"), None, "x\ny\n"),
                                                  f.insert(d, r.child("l"), None, {"k": 1, "m": [1, 2]})]) == \
        "l:\n  - a\n  - |\n    x\n    y\n  - k: 1\n    m:\n      - 1\n      - 2\n"
    assert edited("m:\n  a: 1\n", lambda f, d, r: f.insert(d, r.child("m"), "x\ny", {"two": "lines\n"})) == \
        'm:\n  a: 1\n  "x\\ny":\n    two: |\n      lines\n'  # a key with a line break is double-quoted


@pytest.mark.parametrize("text", ["f: {a: 1}\n", "e: {}\n", "e: []\n"])
def test_nothing_is_inserted_into_a_flow_or_empty_collection(text: str) -> None:
    f = parsed(text)
    doc = f.docs[0]
    assert doc.root is not None
    node = doc.root.children[0]
    with pytest.raises(EditError, match="^flow collections are rewritten whole$"):
        f.insert(doc, node, "k", 1)


def test_documents_are_removed_whole_and_appended_after_a_separator() -> None:
    f = parsed(MULTI)
    f.remove_document(f.docs[1])
    assert f.edited and f.render() == "a: 1\n---\nc: 3\n"
    f = parsed(MULTI)
    f.remove_document(f.docs[2])
    assert f.render() == "a: 1\n---\nkind: B\nlist:\n  - name: x\n    v: 1\n  - name: y\n    v: 2\n"
    f = parsed("\n---\na: 1\n---\nb: 2\n")
    f.remove_document(f.docs[0])
    assert f.render() == "\n---\nb: 2\n"  # from its own line: the blank line before it stays
    f = parsed("a: 1")
    assert not f.edited
    f.append_document({"kind": "Patch", "patch": {"x": [1, 2]}})
    assert f.render() == "a: 1\n---\nkind: Patch\npatch:\n  x:\n    - 1\n    - 2\n"
    f = parsed("a: 1\r\n")
    f.append_document({"b": 2})
    assert f.render() == "a: 1\r\n---\r\nb: 2\r\n"
    f = parsed("")
    f.append_document({"b": 2})
    assert f.render() == "---\nb: 2\n"


def test_a_byte_order_mark_is_kept_and_not_counted_in_the_text() -> None:
    f = YamlFile("b.yaml", "\ufeffa: 1\n".encode())
    assert f.bom and f.text == "a: 1\n"
    doc = f.docs[0]
    assert doc.root is not None
    f.replace(doc, doc.root.children[0], 2)
    assert f.render() == "\ufeffa: 2\n"
    assert not YamlFile("c.yaml", b"a: 1\n").bom


def test_edits_that_overlap_or_would_not_read_back_are_refused() -> None:
    f = parsed("\nm:\n  a: 1\n  b: 2\n")  # lines counted from the first, blank or not
    doc = f.docs[0]
    assert doc.root is not None
    f.replace(doc, doc.root.child("m"), {"c": 3})  # type: ignore[arg-type]
    f.replace(doc, doc.root.at("m.a"), 5)  # type: ignore[arg-type]
    with pytest.raises(EditError, match=r"^t\.yaml: two edits overlap near line 3$"):
        f.render()
    f = parsed("a: 1\nb: 2\n")
    doc = f.docs[0]
    assert doc.root is not None
    f._splice(0, 4, "a: [")  # noqa: SLF001 - a broken splice, as a bug would make it
    with pytest.raises(EditError, match="would not parse"):
        f.render()
    f = parsed("a: 1\nb: 2\n")
    doc = f.docs[0]
    assert doc.root is not None
    f.replace(doc, doc.root.child("a"), 3)  # type: ignore[arg-type]
    f._splice(5, 9, "b: 7")  # noqa: SLF001 - another value changed too: the check of "a" passes, nothing else is checked
    assert f.render() == "a: 3\nb: 7\n"
    f = parsed("a: 1\nb: 2\n")
    doc = f.docs[0]
    assert doc.root is not None
    f.replace(doc, doc.root.child("a"), 3)  # type: ignore[arg-type]
    f._splice(0, 3, "a: 9 #")  # noqa: SLF001 - another splice on its line: it no longer reads back
    with pytest.raises(EditError, match=r"t\.yaml: a would not read back as written; nothing written"):
        f.render()
    f = parsed("a: 1\n")
    f._splice(5, 5, "---\nb: 1\n")  # noqa: SLF001 - a document added without append_document
    with pytest.raises(EditError, match="would change the documents of the file"):
        f.render()


def test_a_removed_key_reads_back_as_gone_and_a_removed_document_is_not_checked() -> None:
    f = parsed("a: 1\nb: 2\n---\nc: 3\n")
    first, second = f.docs
    assert first.root is not None and second.root is not None
    f.delete_entry(first, first.root.child("b"))  # type: ignore[arg-type]
    f.remove_document(second)
    assert f.render() == "a: 1\n"
    f = parsed("a: 1\nb: 2\n")
    doc = f.docs[0]
    assert doc.root is not None
    f.delete_entry(doc, doc.root.child("b"))  # type: ignore[arg-type]
    f._splice(0, 0, "b: 5\n")  # noqa: SLF001 - the key comes back elsewhere
    with pytest.raises(EditError, match="b would not read back"):
        f.render()


@pytest.mark.parametrize(("value", "style", "flow", "text"), [
    (None, None, False, "null"),
    (True, None, False, "true"),
    (3, '"', False, "3"),
    (1.5, None, False, "1.5"),
    (1e20, None, False, "1.0e+20"),  # a float keeps its dot so it reads back as one
    (1e-07, None, False, "1.0e-07"),
    ("plain", None, False, "plain"),
    ("plain", '"', False, '"plain"'),
    ("plain", "'", False, "'plain'"),
    ("it's", "'", False, "'it''s'"),
    ("two\nlines", "'", False, '"two\\nlines"'),
    ("yes", None, False, "'yes'"),  # a plain yes reads as a boolean
    ("12", None, False, "'12'"),
    ("a: b", None, False, "'a: b'"),
    (" padded", None, False, "' padded'"),
    ("", None, False, "''"),
    ("a, b", None, True, "'a, b'"),
    ("a, b", None, False, "a, b"),
    ("two\nlines\n", None, False, "|\n  two\n  lines\n"),
    ("two\nlines", "|", False, "|-\n  two\n  lines\n"),
    ("two\nlines", ">", False, ">-\n  two\n\n  lines\n"),
    ("two\nlines", None, True, '"two\\nlines"'),
    ("\tx\ny", "|", False, '"\\tx\\ny"'),
    ("é", '"', False, '"é"'),
])
def test_a_scalar_takes_the_style_asked_for_when_it_reads_back_else_a_plainer_one(
        value: Any, style: str | None, flow: bool, text: str) -> None:
    assert scalar(value, style, 2, "\n", flow) == text
    loaded = yaml.safe_load(f"k: [{text}]" if flow else f"k: {text}")["k"]
    assert (loaded[0] if flow else loaded) == value


@pytest.mark.parametrize(("value", "style", "text"), [
    ("a\nb\n", "|", "|\n    a\n    b\n"),
    ("a\nb", "|", "|-\n    a\n    b\n"),
    ("a\n\nb", "|", "|-\n    a\n\n    b\n"),
    ("a\nb\n", ">", ">\n    a\n\n    b\n"),
    ("a\n\nb", ">", "|-\n    a\n\n    b\n"),  # an empty line folds otherwise: literal
    ("a\n b", ">", "|-\n    a\n     b\n"),
    ("a \nb", ">", None),  # trailing spaces: no block form
    ("a \nb", "|", None),
    ("", "|", None),
    (" a", "|", None),
    ("\ta", "|", None),
    ("a\tb", "|", None),
    ("a\r\nb", "|", None),
    ("a\n\n", "|", None),
    ("Xa\nbX", "|", "|-\n    Xa\n    bX\n"),
    ("Xa\nbX", ">", ">-\n    Xa\n\n    bX\n"),
    ("a\xa0\nb", ">", ">-\n    a\xa0\n\n    b\n"),  # a no-break space is text, not YAML's white space
    ("a\xa0\nb", "|", "|-\n    a\xa0\n    b\n"),
])
def test_a_block_scalar_is_made_only_when_it_reads_back(value: str, style: str, text: str | None) -> None:
    assert block_scalar(value, style, 4, "\n") == text
    if text is not None:
        assert yaml.safe_load("k: " + text) == {"k": value}


def test_block_scalars_take_the_files_line_ends() -> None:
    assert block_scalar("a\nb\n", "|", 2, "\r\n") == "|\r\n  a\r\n  b\r\n"
    assert block_scalar("a\nb", ">", 2, "\r\n") == ">-\r\n  a\r\n\r\n  b\r\n"


def test_collections_in_flow_and_block_style() -> None:
    assert flow_text({"a": [1, "b c", {"d": None}], "e": "x, y", "": "k"}) == "{a: [1, b c, {d: null}], e: 'x, y', '': k}"
    assert flow_text([]) == "[]" and flow_text({}) == "{}" and flow_text("true") == "'true'"
    assert flow_text({"a, b": "c, d", "x\ny": 1}) == "{'a, b': 'c, d', \"x\\ny\": 1}"  # a key is flow text too
    text = block({"a": {"b": 1}, "c": [1, {"d": 2, "f": [3]}], "e": [], "": "x", "yes": "two\nlines\n"}, 0, "\n")
    assert text == "a:\n  b: 1\nc:\n  - 1\n  - d: 2\n    f:\n      - 3\ne: []\n\"\": x\n'yes': |\n  two\n  lines"
    assert yaml.safe_load(text + "\n") == {"a": {"b": 1}, "c": [1, {"d": 2, "f": [3]}], "e": [], "": "x", "yes": "two\nlines\n"}
    assert block([{"a": 1}, [2]], 2, "\r\n") == "- a: 1\r\n  - - 2"


@pytest.mark.parametrize(("text", "value"), [
    ("a: &x", ""),  # an anchor with nothing after it, at the very end
    ("a: &x \n", ""),
    ("a: &x Xvalue\n", "Xvalue"),
    ("a: &nameX value\n", "value"),
    ("a: !!str &x  value\n", "value"),
])
def test_a_value_starts_past_its_anchor_and_tag(text: str, value: str) -> None:
    f = parsed(text)
    root = f.docs[0].root
    assert root is not None
    node = root.children[0]
    assert f.text[node.start:max(node.start, node.end)] == value


def test_a_value_behind_an_anchor_is_replaced_and_the_anchor_kept() -> None:
    assert edited("a: &x Xvalue\nb: 1\n", lambda f, d, r: f.replace(d, r.child("a"), "new")) == "a: &x new\nb: 1\n"
    assert edited("a: &nameX value\n", lambda f, d, r: f.replace(d, r.child("a"), "new")) == "a: &nameX new\n"


def test_a_new_item_takes_the_indent_of_the_first_items_dash() -> None:
    text = "l:\n  - &my-a x\n  - y\n"
    assert edited(text, lambda f, d, r: f.insert(d, r.child("l"), None, "z")) == "l:\n  - &my-a x\n  - y\n  - z\n"


@pytest.mark.parametrize(("text", "path", "value", "after"), [
    ("a: |\n    one\nb: 1\n", "a", "uno\ndos\n", "a: |\n    uno\n    dos\nb: 1\n"),  # one line: its indent kept
    ("a: |\nb: 1\n", "a", "x\ny\n", "a: |\n  x\n  y\nb: 1\n"),  # no content: two past the key's indent
    ("m:\n  a: |\n  b: 1\n", "m.a", "x\ny\n", "m:\n  a: |\n    x\n    y\n  b: 1\n"),
    ("a: |\n  one\nb: 1\n", "a", "fiX\n", "a: |\n  fiX\nb: 1\n"),
    ("a: |\n  oneX\nb: 1\n", "a", "two\n", "a: |\n  two\nb: 1\n"),
    ("a: |-\n  one\xa0\nb: 1\n", "a", "two", "a: |-\n  two\nb: 1\n"),
    ("a: |\n  one\nb: 1\n", "a", "é\tx\n", 'a: "é\\tx\\n"\nb: 1\n'),
    ("a: |\n  one\nb: 1\n", "a", "a\xa0\n", "a: |\n  a\xa0\nb: 1\n"),
])
def test_a_block_scalar_replaced_keeps_its_indent_and_the_lines_after_it(text: str, path: str, value: str,
                                                                          after: str) -> None:
    assert edited(text, lambda f, d, r: f.replace(d, r.at(path), value)) == after


@pytest.mark.parametrize("tail", ["---\n", "---\n# the end\n", "--- ~\n", "---\n---\nb: 2\n"])
def test_a_file_with_an_empty_document_is_edited(tail: str) -> None:
    """An empty document (a ``---`` with nothing after it, or null) is no document the edit changes."""
    assert edited("a: 1\n" + tail, lambda f, d, r: f.replace(d, r.child("a"), 2)) == "a: 2\n" + tail


def test_an_item_changed_after_items_removed_or_inserted_before_it_reads_back_where_it_moved() -> None:
    text = "l:\n  - a\n  - b\n  - x: 1\n"

    def removed_then_changed(f: YamlFile, d: Doc, r: Node) -> None:
        items = r.child("l")
        assert items is not None
        f.delete_entry(d, items.children[0])
        f.replace(d, items.children[2].children[0], 2)

    def inserted_then_changed(f: YamlFile, d: Doc, r: Node) -> None:
        items = r.child("l")
        assert items is not None
        f.insert(d, items, None, "new", items.children[0])
        f.insert(d, items, None, "last")
        f.replace(d, items.children[2].children[0], 2)

    assert edited(text, removed_then_changed) == "l:\n  - b\n  - x: 2\n"
    assert edited(text, inserted_then_changed) == "l:\n  - new\n  - a\n  - b\n  - x: 2\n  - last\n"


def test_a_block_scalar_keeps_its_style_for_a_one_line_value_and_a_multi_line_one_loses_no_character() -> None:
    assert edited("a: |\n  x\n  y\nb: 1\n", lambda f, d, r: f.replace(d, r.child("a"), "z")) == "a: |-\n  z\nb: 1\n"
    assert edited("a: >\n  x\nb: 1\n", lambda f, d, r: f.replace(d, r.child("a"), "z")) == "a: >-\n  z\nb: 1\n"
    assert edited("a: >\n  x y\nb: 1\n", lambda f, d, r: f.replace(d, r.child("a"), "p q\nr")) == \
        "a: >-\n  p q\n\n  r\nb: 1\n"
    assert edited("a: x\nb: 1\n", lambda f, d, r: f.replace(d, r.child("a"), "p q\nrX")) == "a: |-\n  p q\n  rX\nb: 1\n"


def test_a_multi_line_value_is_indented_below_its_own_key() -> None:
    assert edited("x: 1\ny:\n  a: z\n", lambda f, d, r: f.replace(d, r.at("y.a"), "one\ntwo")) == \
        "x: 1\ny:\n  a: |-\n    one\n    two\n"
    assert edited("\n  a: z\n", lambda f, d, r: f.replace(d, r.child("a"), "one\ntwo")) == "\n  a: |-\n    one\n    two\n"


def test_an_empty_collection_and_a_tagged_value_are_replaced_in_place() -> None:
    assert edited("a: {}\nb: 1\n", lambda f, d, r: f.replace(d, r.child("a"), {"x": 1})) == "a: {x: 1}\nb: 1\n"
    assert edited("a: []\nb: 1\n", lambda f, d, r: f.replace(d, r.child("a"), [1])) == "a: [1]\nb: 1\n"
    assert edited("a: !!str x\n", lambda f, d, r: f.replace(d, r.child("a"), "y")) == "a: !!str y\n"


def test_a_key_that_reads_as_a_number_is_removed() -> None:
    assert removed("m:\n  0: a\n  1: b\n", "m.0") == "m:\n  1: b\n"


@pytest.mark.parametrize(("value", "text"), [("\x07x", '"\\u0007x"'), ("a #b", "'a #b'")])
def test_a_string_a_plain_scalar_would_not_read_back_as_is_quoted(value: str, text: str) -> None:
    assert scalar(value, None, 2, "\n", False) == text


def test_a_node_is_found_on_its_line_whatever_comes_before_the_first_document() -> None:
    f = parsed("\na: 1\n---\nb: 2\n")
    found = f.find(2, 1, ["a"])
    assert found is not None and found[0] is f.docs[0] and found[2].text == "1"
    assert parsed("# a comment\na: 1\n").find(1, 1, ["a"]) is None  # no document holds line 1


def test_a_file_that_would_not_parse_names_itself_in_the_error() -> None:
    f = parsed("m:\n  k: 1\n")
    doc = f.docs[0]
    assert doc.root is not None
    m = doc.root.child("m")
    assert m is not None
    f.delete_entry(doc, m.children[0])
    f.insert(doc, m, "j", 2)  # after the last entry, gone: the emptied mapping reads {}
    with pytest.raises(EditError, match=r"^t\.yaml: the edited file would not parse \(t\.yaml:"):
        f.render()


@pytest.mark.parametrize(("value", "text"), [
    (5, "5"), (None, "null"), ([], "[]"), ({}, "{}"), ({"k": 1}, "{k: 1}"), ([1, 2], "[1, 2]")])
def test_a_block_scalar_given_a_value_that_is_no_string_is_written_on_its_line(value: object, text: str) -> None:
    assert edited("a: |\n  x\nb: 1\n", lambda f, d, r: f.replace(d, r.child("a"), value)) == f"a: {text}\nb: 1\n"
    assert edited("a: >-\r\n  x\r\n\r\nb: 1\r\n", lambda f, d, r: f.replace(d, r.child("a"), value)) == \
        f"a: {text}\r\n\r\nb: 1\r\n"


def test_an_entry_added_where_the_last_one_was_removed_follows_the_last_one_kept() -> None:
    def swapped(f: YamlFile, d: Doc, r: Node) -> None:
        m = r.child("m")
        assert m is not None
        f.delete_entry(d, m.children[-1])
        f.insert(d, m, "e", 5)

    assert edited("m:\n  a: 1\n  b:\n    x: 1\n  c: |\n    t\nz: 0\n", swapped) == "m:\n  a: 1\n  b:\n    x: 1\n  e: 5\nz: 0\n"
    assert edited("l:\n  - a\n  - b\n", lambda f, d, r: (f.delete_entry(d, r.at("l.1")), f.insert(d, r.at("l"), None, "c"))) \
        == "l:\n  - a\n  - c\n"
