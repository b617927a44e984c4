"""Minimal edits of hand-written YAML: byte splices driven by the parser's exact marks.

``YamlFile`` parses a file with libyaml's event parser (the one ``manifests.yamlload`` uses) and
keeps, for every node, where it starts and ends in the text, its style (plain, quoted, literal or
folded block, flow or block collection) and where its key was written. An edit replaces one node's
text, removes one entry or item (its lines), or inserts new ones after the last: every other
character of the file stays as it was (comments, key order, quoting, blank lines, indentation,
anchors, ``\\r\\n`` line ends, a byte order mark). New text takes the style of the node it replaces
where the value allows it. ``render()`` re-parses the result and checks that each edited value reads
back as intended, so an edit that would change anything else is refused, never written.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from reconciler.manifests.yamlload import Problem, parse_documents

try:
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

BOM = "\ufeff"


class EditError(Exception):
    """An edit that cannot be made without touching something else."""


@dataclass(eq=False)
class Node:
    kind: str  # "scalar" | "map" | "seq" | "alias"
    start: int
    end: int
    line: int  # 1-based, of the node's first character
    col: int
    style: str | None = None  # scalar: None plain, "'", '"', "|", ">"; collections: "flow" | "block"
    text: str = ""  # a scalar's value as written (after unescaping)
    keys: list[str] = field(default_factory=list)  # a mapping's keys, in order
    children: list[Node] = field(default_factory=list)  # mapping values (same order as keys) or items
    key_start: int = -1  # where its key starts (a mapping value), else its own start
    key_line: int = 0
    key_col: int = 0
    parent: Node | None = None

    def child(self, key: str | int) -> Node | None:
        if self.kind == "map" and isinstance(key, str) and key in self.keys:
            return self.children[self.keys.index(key)]
        if self.kind == "seq" and isinstance(key, int) and 0 <= key < len(self.children):
            return self.children[key]
        return None

    def at(self, path: str) -> Node | None:
        node: Node | None = self
        for part in path.split(".") if path else []:
            if node is None:
                return None
            node = node.child(int(part)) if node.kind == "seq" and part.isdigit() else node.child(part)
        return node


@dataclass(eq=False)
class Doc:
    index: int  # 1-based
    start: int
    root: Node | None


class YamlFile:
    """One file: its text, its documents' nodes, and the splices waiting to be written."""

    def __init__(self, path: str, raw: bytes) -> None:
        self.path = path
        text = raw.decode("utf-8")
        self.bom = text.startswith(BOM)
        self.text = text[1:] if self.bom else text
        self.newline = "\r\n" if "\r\n" in self.text else "\n"
        self.docs = _parse(self.text)
        self._splices: list[tuple[int, int, int, str]] = []  # (start, order made, end, new text)
        self._checks: list[tuple[int, str, Any]] = []  # (document index, path, value expected after)
        # items removed from (-1) or inserted into (+1) a sequence: (document index, its path, at which index)
        self._moves: list[tuple[int, str, int, int]] = []
        self._deleted: set[int] = set()  # the id of each node delete_entry removed
        self.removed_docs: set[int] = set()
        self.appended: list[dict[str, Any]] = []  # documents added at the end
        self._doc_lines: list[int] | None = None  # each document's first line (doc_of_line)

    # ------------------------------------------------------------------ finding nodes

    def doc_at(self, line: int, col: int) -> Doc | None:
        for d in self.docs:
            if d.root is not None and d.root.line == line and d.root.col == col:
                return d
        return None

    def doc_of_line(self, line: int) -> Doc | None:
        """The last document starting at or before ``line`` (its start lines counted once a file:
        a pull of a large tree asks once an edit)."""
        if self._doc_lines is None:
            self._doc_lines, at, line_no = [], 0, 1
            for d in self.docs:  # documents come in file order: count the newlines between them only
                line_no += self.text.count("\n", at, d.start)
                at = d.start
                self._doc_lines.append(line_no)
        n = bisect.bisect_right(self._doc_lines, line)
        return self.docs[n - 1] if n else None

    def find(self, line: int, col: int, paths: list[str]) -> tuple[Doc, str, Node] | None:
        """The node written at (line, col) (its key's position, or its own for an item) under one of
        ``paths`` in the document holding that line."""
        d = self.doc_of_line(line)
        if d is None or d.root is None:
            return None
        for p in paths:
            node = d.root.at(p)
            if node is not None and (node.key_line, node.key_col) == (line, col):
                return d, p, node
        return None

    @staticmethod
    def doc_path(node: Node) -> str:
        """The dotted path of ``node`` in its document (keys, and list indexes)."""
        parts: list[str] = []
        while node.parent is not None:
            parent = node.parent
            i = next(n for n, c in enumerate(parent.children) if c is node)
            parts.append(parent.keys[i] if parent.kind == "map" else str(i))
            node = parent
        return ".".join(reversed(parts))

    # ------------------------------------------------------------------ edits

    def _splice(self, start: int, end: int, text: str) -> None:
        self._splices.append((start, len(self._splices), end, text))

    def replace(self, doc: Doc, node: Node, value: Any) -> None:
        """Write ``value`` in place of ``node``'s text, in its style where the value allows it."""
        if node.kind in ("map", "seq") and node.style == "block" and isinstance(value, dict | list) and value:
            text = block(value, node.start - (self.text.rfind("\n", 0, node.start) + 1), self.newline)
            self._splice(node.start, node.end, text)
        elif node.kind == "scalar" and node.style in ("|", ">") and isinstance(value, str):
            self._splice(node.start, node.end, self._block_scalar(node, value))
        else:
            flow = _in_flow(node)
            indent = _indent_of(self.text, node.start) + 2
            # a block scalar given a value that is no string: written as plain as it reads back, its line break kept
            block_node = node.kind == "scalar" and node.style in ("|", ">")
            text = scalar(value, None if block_node else node.style, indent, self.newline, flow) \
                if not isinstance(value, dict | list) or not value else flow_text(value)
            if block_node:
                original = self.text[node.start:node.end]
                text += original[len(original.rstrip(" \t\r\n")):]
            if text.startswith(("|", ">")) and self.text.startswith(("\n", "\r\n"), node.end):
                text = text.rstrip("\r\n")  # a block scalar in place of a one-line one: its line break is there
            self._splice(node.start, node.end, text)
        self._checks.append((doc.index, self.doc_path(node), value))

    def _block_scalar(self, node: Node, value: str) -> str:
        original = self.text[node.start:node.end]
        stripped = original.rstrip(" \t\r\n")
        tail = original[len(stripped):]
        lines = original.split("\n")
        content = next((ln for ln in lines[1:] if ln.strip()), None)
        indent = (len(content) - len(content.lstrip(" "))) if content is not None else _indent_of(self.text, node.start) + 2
        text = block_scalar(value, str(node.style), indent, self.newline)
        if text is None:  # double-quoted on the block's first line; the line break after the block kept
            return json.dumps(value, ensure_ascii=False) + tail
        if tail:
            text = text.rstrip("\r\n") + tail
        return text

    def delete_entry(self, doc: Doc, node: Node) -> None:
        """Remove a mapping's entry or a block sequence's item: a block one's lines, a flow mapping's
        ``key: value`` and the comma that separates it (a flow sequence is rewritten whole by the caller);
        the last one left makes the collection empty (``{}``/``[]``)."""
        parent = node.parent
        if parent is None or (parent.style == "flow" and parent.kind != "map"):
            raise EditError("flow sequences are rewritten whole")
        self._deleted.add(id(node))
        if parent.kind == "map":  # an item's index moves when one before it goes: only keys are checked
            self._checks.append((doc.index, self.doc_path(node), _GONE))
        else:  # the items after it move up one: the checks below them read there
            at = next(n for n, c in enumerate(parent.children) if c is node)
            self._moves.append((doc.index, self.doc_path(parent), at, -1))
        if len(parent.children) == 1:
            self._splice(parent.start, parent.end, "{}" if parent.kind == "map" else "[]")
            return
        if parent.style == "flow":  # up to the next key, or from the end of the one before (the last)
            i = next(n for n, c in enumerate(parent.children) if c is node)
            if i + 1 < len(parent.children):
                self._splice(node.key_start, parent.children[i + 1].key_start, "")
            else:
                self._splice(parent.children[i - 1].end, node.end, "")
            return
        first = node.key_start
        line_start = self.text.rfind("\n", 0, first) + 1
        before = self.text[line_start:first].strip(" ")
        if before == "-" and parent.kind == "map" and parent.children[0] is node:  # "- key: v": keep "- "
            self._splice(first, parent.children[1].key_start, "")
        elif before in ("", "-"):
            self._splice(line_start, _line_end(self.text, node.end), "")
        else:
            raise EditError(f"{self.path}:{node.key_line}: cannot remove an entry that shares its line")

    def insert(self, doc: Doc, parent: Node, key: str | None, value: Any, before: Node | None = None) -> None:
        """Add a mapping entry (``key``) or a sequence item after the last (or before ``before``)."""
        if parent.style == "flow" or not parent.children:
            raise EditError("flow collections are rewritten whole")
        first = parent.children[0]  # new lines are indented as the first entry (an item: its dash)
        indent = _dash_col(self.text, first) if parent.kind == "seq" else first.key_col - 1
        nl = self.newline
        # after the last entry still there: one removed takes its lines, which nothing may be added to
        last = next((c for c in reversed(parent.children) if id(c) not in self._deleted), parent.children[-1])
        sibling = before or last
        if key is not None:
            body = entry(key, value, indent, nl)
        elif sibling.style == "flow" and isinstance(value, dict | list):  # items written like their siblings
            body = "- " + flow_text(value)
        else:
            body = "- " + item(value, indent + 2, nl)
        if key is None:  # the items from ``before`` on move down one
            index = next((n for n, c in enumerate(parent.children) if c is before), len(parent.children))
            self._moves.append((doc.index, self.doc_path(parent), index, 1))
        if before is not None:
            at = self.text.rfind("\n", 0, before.key_start) + 1
            self._splice(at, at, " " * indent + body + nl)
        else:
            at = _line_end(self.text, last.end)
            if at > 0 and self.text[at - 1] == "\n":
                at -= 2 if self.text[at - 2:at] == "\r\n" else 1
            self._splice(at, at, nl + " " * indent + body)

    def remove_document(self, doc: Doc) -> None:
        """Remove a document: from its first line (its ``---`` when it has one) to the next one's."""
        nxt = next((d for d in self.docs if d.index > doc.index), None)
        start = self.text.rfind("\n", 0, doc.start) + 1
        end = self.text.rfind("\n", 0, nxt.start) + 1 if nxt is not None else len(self.text)
        self._splice(start, max(start, end), "")
        self.removed_docs.add(doc.index)

    def append_document(self, value: dict[str, Any]) -> None:
        """Add a document (a block mapping) at the end of the file, after a ``---``."""
        nl = self.newline
        lead = "" if not self.text or self.text.endswith("\n") else nl
        self._splice(len(self.text), len(self.text), lead + "---" + nl + block(value, 0, nl) + nl)
        self.appended.append(value)

    @property
    def edited(self) -> bool:
        return bool(self._splices)

    def render(self) -> str:
        """The text after every splice, checked: it parses, and every edited value reads back."""
        text = self.text
        last_start = len(text) + 1
        for start, _, end, new in sorted(self._splices, reverse=True):  # the last first; ties in the order made
            if end > last_start:
                raise EditError(f"{self.path}: two edits overlap near line {_line_of(self.text, start)}")
            text = text[:start] + new + text[end:]
            last_start = start
        self._verify(text)
        return (BOM if self.bom else "") + text

    def _verify(self, text: str) -> None:
        problems: list[Problem] = []
        docs = parse_documents(text, self.path, problems)
        if problems:
            raise EditError(f"{self.path}: the edited file would not parse ({problems[0]}); nothing written")
        kept = [d for d in self.docs if d.index not in self.removed_docs and not _empty(d)]
        if len(docs) != len(kept) + len(self.appended) \
                or [d.value for d in docs[len(kept):]] != self.appended:
            raise EditError(f"{self.path}: the edit would change the documents of the file; nothing written")
        index = {d.index: n for n, d in enumerate(kept)}
        for doc_index, path, want in self._checks:
            if doc_index not in index:
                continue
            got = _get(docs[index[doc_index]].value, self._moved(doc_index, path))
            if (got is not _GONE or want is not _GONE) and got != want:
                raise EditError(f"{self.path}: {path or 'document'} would not read back as written; nothing written")

    def _moved(self, doc_index: int, path: str) -> str:
        """``path`` (its indices as the file had them) where it reads after the items removed and inserted."""
        parts = path.split(".") if path else []
        out = list(parts)
        for i, part in enumerate(parts):
            if not part.isdigit():
                continue
            seq, n = ".".join(parts[:i]), int(part)
            out[i] = str(n + sum(step for d, p, at, step in self._moves
                                 if d == doc_index and p == seq and (at < n if step < 0 else at <= n)))
        return ".".join(out)


_GONE: Any = object()  # what a path removed (or never there) reads as
_NULLS = ("", "~", "null", "Null", "NULL")


def _empty(doc: Doc) -> bool:
    """A document that reads as null (``---`` with nothing after it): parse_documents skips it."""
    root = doc.root
    return root is None or (root.kind == "scalar" and root.style is None and root.text in _NULLS)


def _get(value: Any, path: str) -> Any:
    for part in path.split(".") if path else []:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _GONE
    return value


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _line_end(text: str, index: int) -> int:
    """The index just after the line break ending the line that holds ``index - 1`` (or the text's end)."""
    if index > 0 and text[index - 1] == "\n":
        return index
    nl = text.find("\n", index)
    return len(text) if nl < 0 else nl + 1


def _indent_of(text: str, index: int) -> int:
    line_start = text.rfind("\n", 0, index) + 1
    line = text[line_start:index]
    return len(line) - len(line.lstrip(" "))


def _dash_col(text: str, first_item: Node) -> int:
    line_start = text.rfind("\n", 0, first_item.start) + 1
    return text.find("-", line_start, first_item.start) - line_start


def _in_flow(node: Node) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.style == "flow":
            return True
        parent = parent.parent
    return False


# ------------------------------------------------------------------ parsing with spans


def _parse(text: str) -> list[Doc]:
    loader = _Loader(text)
    get: Callable[[], Any] = loader.get_event
    docs: list[Doc] = []
    try:
        stack: list[Node] = []
        pending_key: tuple[str, int, int, int] | None = None
        while True:
            ev = get()
            t = type(ev)
            if t is yaml.StreamEndEvent:
                break
            if t is yaml.DocumentStartEvent:
                docs.append(Doc(len(docs) + 1, ev.start_mark.index, None))
                continue
            if t in (yaml.StreamStartEvent, yaml.DocumentEndEvent):
                continue
            if t in (yaml.MappingEndEvent, yaml.SequenceEndEvent):
                node = stack.pop()
                if node.style == "flow":
                    node.end = ev.end_mark.index
                elif node.children:
                    node.end = node.children[-1].end
                    first = node.children[0]
                    node.start = first.key_start if node.kind == "map" else text.rfind("-", 0, first.start)
                pending_key = None
                continue
            parent = stack[-1] if stack else None
            m = ev.start_mark
            if parent is not None and parent.kind == "map" and pending_key is None:
                pending_key = (str(ev.value) if t is yaml.ScalarEvent else "?", m.index, m.line + 1,
                               m.column + 1)
                continue
            if t is yaml.ScalarEvent:
                node = Node("scalar", m.index, ev.end_mark.index, m.line + 1, m.column + 1,
                            style=ev.style or None, text=ev.value)
            elif t in (yaml.MappingStartEvent, yaml.SequenceStartEvent):
                node = Node("map" if t is yaml.MappingStartEvent else "seq", m.index, ev.end_mark.index,
                            m.line + 1, m.column + 1, style="flow" if ev.flow_style else "block")
            else:
                node = Node("alias", m.index, ev.end_mark.index, m.line + 1, m.column + 1)
            if getattr(ev, "anchor", None) or text.startswith("!", m.index):  # "&a" and "!tag" stay as written
                node.start = _skip_properties(text, m.index)
            node.key_start, node.key_line, node.key_col = node.start, node.line, node.col
            if parent is None:  # the document's root
                docs[-1].root = node
            else:
                node.parent = parent
                if parent.kind == "map" and pending_key is not None:
                    parent.keys.append(pending_key[0])
                    node.key_start, node.key_line, node.key_col = pending_key[1], pending_key[2], pending_key[3]
                    pending_key = None
                parent.children.append(node)
            if node.kind in ("map", "seq"):
                stack.append(node)
    finally:
        loader.dispose()
    return docs


def _skip_properties(text: str, index: int) -> int:
    """Past a node's anchor and tag (``&a !!str value``): where its value is written."""
    while index < len(text) and text[index] in "&!":
        while index < len(text) and text[index] not in " \t\r\n":
            index += 1
        while index < len(text) and text[index] in " \t\r\n":
            index += 1
    return index


# ------------------------------------------------------------------ rendering values


def _reads_as(text: str, value: Any, flow: bool) -> bool:
    problems: list[Problem] = []
    source = f"k: [{text}]\n" if flow else f"k: {text}\n"
    try:
        docs = parse_documents(source, "-", problems)
    except Exception:  # pragma: no cover - the parser reports problems, it does not raise
        return False
    if problems or len(docs) != 1 or not isinstance(docs[0].value, dict):
        return False
    got = docs[0].value.get("k")
    got = got[0] if flow and isinstance(got, list) and len(got) == 1 else (got if not flow else _GONE)
    return type(got) is type(value) and got == value


def _number(value: int | float | None) -> str:
    text = json.dumps(value)  # JSON's null, true, false and numbers are YAML's too
    if isinstance(value, float) and "." not in text and "e" in text:  # 1e+20 needs its dot to read as a float
        mantissa, _, exponent = text.partition("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def scalar(value: Any, style: str | None, indent: int, newline: str, flow: bool) -> str:
    """A scalar's text in the style given when the value reads back the same in it; else the
    next plainest style that does."""
    if value is None or isinstance(value, bool | int | float):
        return _number(value)
    text = str(value)

    def double() -> str:  # a JSON string is a YAML double-quoted scalar
        return json.dumps(text, ensure_ascii=False)

    def single() -> str | None:
        return "'" + text.replace("'", "''") + "'" if "\n" not in text else None

    def plain() -> str | None:
        return text if "\n" not in text and text == text.strip() and text else None

    def literal() -> str | None:
        return None if flow else block_scalar(text, style if style in ("|", ">") else "|", indent, newline)

    by_style: dict[str | None, list[Callable[[], str | None]]] = {
        '"': [double], "'": [single, double], "|": [literal, double], ">": [literal, double]}
    plainest = [plain, single, literal, double] if "\n" in text else [plain, single, double]
    for make in by_style.get(style, plainest):  # a plain scalar, or a collection written over
        out = make()
        if out is not None and (make is literal or _reads_as(out, value, flow)):
            return out
    return double()


def block_scalar(value: str, style: str, indent: int, newline: str) -> str | None:
    """A literal (``|``) or folded (``>``) block scalar whose content is indented by ``indent``;
    None when the value needs a form this writer does not make (leading spaces, trailing blank lines)."""
    if not value or value.endswith("\n\n") or value[0] in " \t" or "\t" in value or "\r" in value:
        return None
    chomp = "" if value.endswith("\n") else "-"
    body = value[:-1] if value.endswith("\n") else value
    lines = body.split("\n")
    pad = " " * indent
    if style == ">":
        if any(not ln or ln[0] in " \t" or ln != ln.rstrip(" ") for ln in lines):
            style = "|"
        else:
            return ">" + chomp + newline + (newline + newline).join(pad + ln for ln in lines) + newline
    if any(ln != ln.rstrip(" ") for ln in lines):
        return None
    return "|" + chomp + newline + newline.join((pad + ln) if ln else "" for ln in lines) + newline


def _key(key: str) -> str:
    """A mapping key: as plain as it reads back; one holding a line break double-quoted (a block
    scalar cannot be a key)."""
    return scalar(key, '"' if "\n" in key else None, 0, "\n", False) if key else '""'


def flow_text(value: Any) -> str:
    """A value in flow style: ``{a: 1, b: [x, y]}``, scalars as plain as they read back."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{scalar(str(k), None, 0, chr(10), True)}: {flow_text(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(flow_text(v) for v in value) + "]"
    return scalar(value, None, 0, "\n", True)


def block(value: Any, indent: int, nl: str) -> str:
    """A block collection starting where the cursor is (column ``indent``); continuation lines indented."""
    pad = nl + " " * indent
    if isinstance(value, dict):
        return pad.join(entry(str(k), v, indent, nl) for k, v in value.items())
    return pad.join("- " + item(v, indent + 2, nl) for v in value)


def entry(key: str, value: Any, indent: int, nl: str) -> str:
    if isinstance(value, dict | list) and value:
        return f"{_key(key)}:{nl}{' ' * (indent + 2)}{block(value, indent + 2, nl)}"
    return f"{_key(key)}: {_leaf(value, indent + 2, nl)}"


def item(value: Any, indent: int, nl: str) -> str:
    if isinstance(value, dict | list) and value:
        return block(value, indent, nl)
    return _leaf(value, indent, nl)


def _leaf(value: Any, indent: int, nl: str) -> str:
    if isinstance(value, dict | list):
        return flow_text(value)
    text = scalar(value, None, indent, nl, False)
    return text.rstrip("\r\n") if text.startswith(("|", ">")) else text
