"""YAML reading for manifests: plain JSON-like values plus where each value was written.

Why not ``yaml.safe_load``: it forgets positions, silently keeps the last of two duplicate keys,
expands aliases (a "billion laughs" document expands to gigabytes) and recurses without a depth
limit. This module drives libyaml's event parser (``CSafeLoader``, C speed) and builds the values
itself with an explicit stack, so it can:

- record a ``Mark`` (key line/column, value line/column, 1-based) for every mapping entry and
  sequence item, under its dotted path (``config.request_presets.0.name``; ``""`` = the document);
- report duplicate keys (naming both lines), refuse aliases outright (no expansion budget to tune),
  cap nesting depth, refuse unsupported tags;
- read files with a size cap and a strict UTF-8 check that names the byte offset.

Scalars follow PyYAML's safe (YAML 1.1) rules, except that mapping keys are always the text
written (``1: x`` and ``yes: x`` give the keys ``"1"`` and ``"yes"``: JSON keys are strings) and
timestamps stay strings (JSON has no date type).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from reconciler.model import Source

try:  # libyaml is there in every supported install; the pure-Python parser is a slow fallback
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

#: Per-file size cap of a manifest: a bigger file is refused before parsing.
MAX_FILE_BYTES = 50 * 1024 * 1024
#: Per-file size cap of an examples file (a million examples of 200 bytes is 200 MB).
MAX_EXAMPLES_FILE_BYTES = 1024 * 1024 * 1024
#: Nesting cap (mappings and sequences), deep enough for any real JSON Schema.
MAX_DEPTH = 100
#: What one load may build, all files together: a key or scalar counts 1, a mapping or list 2
#: (about 260 and 480 bytes each once loaded, marks included). This bounds memory; the byte cap
#: does not (2 MB of ``{}`` is 700,000 mappings: about 650 MB to validate before this cap). At
#: the cap a load needs about 300 MB; the 5,000-resource tree the benchmarks validate uses a fifth
#: of it. Large datasets belong in an examples_file (JSON, read in blocks, not counted here).
#: The project file's name (``reconciler/project.py``): a directory's walk never loads it as a manifest.
PROJECT_FILE = "reconciler.yaml"
MAX_NODES = 1_000_000


@dataclass(slots=True)
class NodeBudget:
    """The values a load may still build (``MAX_NODES``), shared by every file it reads."""

    left: int = MAX_NODES
    spent: bool = False  # told once: the files after the one that spent it are not parsed

#: (key line, key column, value line, value column), all 1-based. Sequence items: key == value.
Mark = tuple[int, int, int, int]

_TAG = "tag:yaml.org,2002:"
_NULL, _BOOL, _INT, _FLOAT, _STR = _TAG + "null", _TAG + "bool", _TAG + "int", _TAG + "float", _TAG + "str"
_TIMESTAMP, _MERGE, _VALUE = _TAG + "timestamp", _TAG + "merge", _TAG + "value"
_MAP_TAGS = (None, "!", _TAG + "map")
_SEQ_TAGS = (None, "!", _TAG + "seq")
_STRINGY_TAGS = (_STR, _TIMESTAMP, _MERGE, _VALUE)
_BOOLS = {"yes": True, "true": True, "on": True, "no": False, "false": False, "off": False}

# The standard implicit resolvers only (another package may have added its own to Resolver).
_KNOWN = (_NULL, _BOOL, _INT, _FLOAT, _TIMESTAMP, _MERGE, _VALUE)
_RESOLVERS: dict[str, list[tuple[str, Any]]] = {
    first: [(tag, rx) for tag, rx in entries if tag in _KNOWN]
    for first, entries in Resolver.yaml_implicit_resolvers.items()
}
_CONSTRUCTOR = SafeConstructor()


@dataclass(frozen=True, order=True)
class Problem:
    """One validation problem, printed as ``FILE:LINE:COL: PATH: message``."""

    file: str
    line: int
    column: int
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.path}: {self.message}"


@dataclass
class YamlDocument:
    """One document of a file: its value, the marks of its entries, where it starts."""

    file: str
    index: int  # 1-based position in the file
    value: Any
    line: int
    column: int
    marks: dict[str, Mark] = field(default_factory=dict)
    #: paths whose value was refused while parsing (an alias, a bad tag): already reported, so the
    #: validator stays quiet about them instead of adding "expected a list, got null"
    refused: set[str] = field(default_factory=set)
    #: values written elsewhere (by a Patch, or from a variable): their sources, by dotted path
    extra_sources: dict[str, Source] = field(default_factory=dict)
    #: whether a ``{var: ...}`` mapping or a ``${`` string may be in it (the parser clears it when
    #: it saw neither, so variables need not walk the document)
    may_use_variables: bool = True

    def label(self) -> str:
        return f"document {self.index}"


class _AbortDocument(Exception):
    """The rest of this document cannot be built (complex key): skip to its end."""


class _AbortFile(Exception):
    """The rest of the file cannot be read cheaply (nesting too deep: skipping it would make the
    parser walk the whole nest, whose cost grows with the square of its depth): stop here."""


def read_text(raw: bytes, file: str, problems: list[Problem], limit: int | None = None) -> str | None:
    """Decode UTF-8 (a BOM is tolerated) or report where the first bad byte is."""
    limit = MAX_FILE_BYTES if limit is None else limit
    if len(raw) > limit:
        problems.append(Problem(file, 1, 1, "file", _too_big(len(raw), limit)))
        return None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problems.append(not_utf8(file, raw, exc.start))
        return None


def not_utf8(file: str, data: bytes, at: int, first_line: int = 1, offset: int = 0) -> Problem:
    """The problem of ``data[at]``, the first byte that is not UTF-8 (``data`` starts at line
    ``first_line`` and byte ``offset`` of the file)."""
    line = first_line + data.count(b"\n", 0, at)
    column = at - (data.rfind(b"\n", 0, at) + 1) + 1
    return Problem(file, line, column, "file", f"not valid UTF-8 at byte offset {offset + at} "
                   f"(byte 0x{data[at]:02x}); save the file as UTF-8")


#: Texts that stand in for files (by real path) while ``staged`` is active: ``pull`` loads the tree
#: it is about to write, as it will read, before it replaces any file.
_STAGED: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar("staged", default=None)


@contextlib.contextmanager
def staged(texts: Mapping[str, str]) -> Iterator[None]:
    """Within the block, reading one of ``texts``' files (real paths) gives its text instead."""
    token = _STAGED.set(texts)
    try:
        yield
    finally:
        _STAGED.reset(token)


def staged_text(path: str) -> str | None:
    """The text staged for ``path`` (None: read the file)."""
    texts = _STAGED.get()
    if not texts:
        return None
    import os

    return texts.get(os.path.realpath(path))


def read_file(path: str, file: str, problems: list[Problem], limit: int | None = None) -> str | None:
    """Read a file with the size cap (``MAX_FILE_BYTES`` unless given) checked before reading it whole."""
    import os

    limit = MAX_FILE_BYTES if limit is None else limit
    if (text := staged_text(path)) is not None:
        return read_text(text.encode("utf-8"), file, problems, limit)
    try:
        size = os.stat(path).st_size
        if size > limit:
            problems.append(Problem(file, 1, 1, "file", _too_big(size, limit)))
            return None
        with open(path, "rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        problems.append(Problem(file, 1, 1, "file", f"cannot read: {exc.strerror or exc}"))
        return None
    return read_text(raw, file, problems, limit)


def _too_big(size: int, limit: int) -> str:
    return f"file is {size:,} bytes, over the {limit:,}-byte limit per file; split it"


def parse_documents(text: str, file: str, problems: list[Problem],
                    budget: NodeBudget | None = None) -> list[YamlDocument]:
    """Every document of a YAML stream (empty documents are skipped). Problems are appended;
    a syntax error ends the file (the documents before it are kept). ``budget`` (default: a new
    one) bounds the values built."""
    budget = NodeBudget() if budget is None else budget
    if budget.spent:
        return []
    loader = _Loader(text)
    docs: list[YamlDocument] = []
    get: Callable[[], Any] = loader.get_event
    index = 0
    try:
        while True:
            ev = get()
            t = type(ev)
            if t is yaml.DocumentStartEvent:
                index += 1
                mark = ev.start_mark
                doc = YamlDocument(file, index, None, mark.line + 1, mark.column + 1)
                try:
                    doc.value = _build(get, doc, problems, budget)
                except _AbortDocument:
                    while type(get()) is not yaml.DocumentEndEvent:  # skip to the document's end
                        pass
                    continue
                except _AbortFile:
                    break
                if doc.value is not None:
                    docs.append(doc)
            elif t is yaml.StreamEndEvent:
                break
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        what = " ".join(x for x in (exc.context, exc.problem) if x)
        if mark is not None and _tab_at(text, mark.line, mark.column):
            what = ("a tab character indents this line; YAML indents with spaces only (replace the tab "
                    "with spaces)")
        problems.append(Problem(file, line, col, f"document {max(index, 1)}", f"YAML syntax error: {what}"))
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (a control character)
        line = text.count("\n", 0, exc.position) + 1
        col = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        problems.append(Problem(file, line, col, "file",
                                f"character U+{exc.character:04X} is not allowed in YAML"
                                if isinstance(exc.character, int) else f"character {exc.character!r} is not allowed in YAML"))
    except yaml.YAMLError as exc:  # pragma: no cover - libyaml reports marks for everything else it rejects
        problems.append(Problem(file, 1, 1, "file", "YAML error: " + " ".join(str(exc).split())))
    finally:
        loader.dispose()
    return docs


def _build(get: Callable[[], Any], doc: YamlDocument, problems: list[Problem], budget: NodeBudget) -> Any:
    """Build one document's value from events, up to and including its DocumentEndEvent.

    Run on every event of every manifest, so the container being filled is held in local
    variables (``cur``, ``is_map``, ``pfx``: its path and a dot, ``key_lines``: the line each key
    was first written on, ``index``; ``key``, ``kl``, ``kc``: the key waiting for its value and
    where it was written) and ``stack`` keeps those of the containers around it."""
    marks = doc.marks
    file = doc.file
    refused = doc.refused
    stack: list[tuple[Any, bool, str, dict[str, int], int]] = []
    root: Any = None
    aliases = 0
    cur: Any = None  # the open container (None: at the top of the document)
    is_map = False
    pfx = ""  # the path of cur's entries up to their own key or index
    key_lines: dict[str, int] = {}
    index = 0
    key: Any = None
    kl = kc = 0
    may_use_variables = False
    ScalarEvent, MappingStartEvent, SequenceStartEvent = yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent
    MappingEndEvent, SequenceEndEvent, AliasEvent = yaml.MappingEndEvent, yaml.SequenceEndEvent, yaml.AliasEvent
    DocumentEndEvent = yaml.DocumentEndEvent

    while True:
        ev = get()
        t = type(ev)
        if t is MappingEndEvent or t is SequenceEndEvent:
            if stack:
                cur, is_map, pfx, key_lines, index = stack.pop()
            else:
                cur, is_map = None, False
            key = None
            continue
        if t is DocumentEndEvent:
            doc.may_use_variables = may_use_variables
            return root
        m = ev.start_mark
        vl, vc = m.line + 1, m.column + 1
        budget.left -= 2 if t is MappingStartEvent or t is SequenceStartEvent else 1
        if budget.left < 0:
            budget.spent = True
            problems.append(Problem(file, vl, vc, doc.label(),
                                    f"the manifests hold too many YAML values: over {MAX_NODES:,} (a key or scalar "
                                    "counts 1, a mapping or list 2), the limit that bounds the memory a load needs; "
                                    "move large example sets to an examples_file"))
            raise _AbortFile

        # A mapping waiting for its next key: this event is the key.
        if is_map and key is None:
            if t is not ScalarEvent:
                problems.append(Problem(file, vl, vc, _display(pfx[:-1]) or doc.label(),
                                        "mapping keys must be plain strings (complex keys are not supported)"))
                raise _AbortDocument
            key = ev.value
            if key == "var":
                may_use_variables = True
            first = key_lines.get(key)
            if first is not None:
                problems.append(Problem(file, vl, vc, _display(pfx + key),
                                        f"duplicate key '{key}' (first written at line {first}, again at line {vl})"))
            else:
                key_lines[key] = vl
            kl, kc = vl, vc
            continue

        # Where this value goes: its dotted path.
        if cur is None:
            path = ""
        elif is_map:
            path = pfx + key
        else:
            path = pfx + str(index)

        if t is ScalarEvent:
            tag = ev.tag
            if "${" in ev.value:
                may_use_variables = True
            if not ev.implicit[0] and (tag is None or tag == "!"):  # quoted or block: a string as written
                value: Any = ev.value
            else:
                reported = len(problems)
                value = _scalar(ev, file, vl, vc, path or doc.label(), problems)
                if len(problems) != reported:
                    refused.add(path)
        elif t is MappingStartEvent or t is SequenceStartEvent:
            value = {} if t is MappingStartEvent else []
            if ev.tag not in (_MAP_TAGS if t is MappingStartEvent else _SEQ_TAGS):
                problems.append(Problem(file, vl, vc, _display(path) or doc.label(), f"unsupported YAML tag {ev.tag}"))
                refused.add(path)
        elif t is AliasEvent:
            value = None
            aliases += 1
            if aliases == 1:  # one report per document: a "billion laughs" file has thousands
                problems.append(Problem(file, vl, vc, _display(path) or doc.label(),
                                        f"YAML aliases are not supported (*{ev.anchor}): write the value out "
                                        "(aliases can expand a small file into a huge document)"))
            refused.add(path)
        else:  # pragma: no cover - no other event occurs inside a document
            raise _AbortDocument

        # Attach the value and record where it was written.
        if cur is None:
            root = value
            marks[""] = (vl, vc, vl, vc)
        elif is_map:
            cur[key] = value
            marks[path] = (kl, kc, vl, vc)
            key = None
        else:
            cur.append(value)
            index += 1
            marks[path] = (vl, vc, vl, vc)

        if t is MappingStartEvent or t is SequenceStartEvent:
            if len(stack) + (cur is not None) >= MAX_DEPTH:
                shown = ".".join(path.split(".")[:4])
                problems.append(Problem(file, vl, vc, (_display(shown) + "...") if path else doc.label(),
                                        f"nested deeper than {MAX_DEPTH} levels"))
                raise _AbortFile
            if cur is not None:
                stack.append((cur, is_map, pfx, key_lines, index))
            cur, is_map, pfx, index = value, t is MappingStartEvent, path + "." if path else "", 0
            key_lines = {}


def _display(dotted: str) -> str:
    """``config.request_presets.1.name`` -> ``config.request_presets[1].name``."""
    if not dotted:
        return ""
    out: list[str] = []
    for part in dotted.split("."):
        if part.isdigit() and out:
            out.append(f"[{part}]")
        else:
            out.append(("." if out else "") + part)
    return "".join(out)


display_path = _display


def _scalar(ev: Any, file: str, line: int, col: int, path: str, problems: list[Problem]) -> Any:
    value: str = ev.value
    tag = ev.tag
    if tag is None or tag == "!":  # plain (a quoted or block scalar is a string: never sent here)
        tag = _STR
        for candidate, rx in _RESOLVERS.get(value[:1], ()):
            if rx.match(value):
                tag = candidate
                break
    if tag in _STRINGY_TAGS:
        return value
    if tag == _NULL:
        return None
    try:
        if tag == _BOOL:
            return _BOOLS[value.lower()]
        if tag == _INT:
            return _CONSTRUCTOR.construct_yaml_int(ScalarNode(tag, value))
        if tag == _FLOAT:
            number = _CONSTRUCTOR.construct_yaml_float(ScalarNode(tag, value))
            if not math.isfinite(number):
                problems.append(Problem(file, line, col, _display(path), "infinity and NaN are not JSON numbers"))
            return number
    except (KeyError, ValueError):
        problems.append(Problem(file, line, col, _display(path), f"not a valid {tag.rpartition(':')[2]}"))
        return value
    problems.append(Problem(file, line, col, _display(path), f"unsupported YAML tag {tag}"))
    return value


def _tab_at(text: str, line: int, column: int) -> bool:
    """Whether the error's position (0-based) is on a tab in the line's indent: PyYAML says "found
    character that cannot start any token", which does not name the tab. (An error just after the
    indent is the text's own: a line of a flow list indented by a tab then ``@b`` is refused for its
    ``@``, and would be with any indent.)"""
    lines = text.splitlines()
    if not 0 <= line < len(lines):
        return False
    indent = lines[line][: len(lines[line]) - len(lines[line].lstrip(" \t"))]
    return "\t" in indent and column < len(indent)
