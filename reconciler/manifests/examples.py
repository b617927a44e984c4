"""Dataset examples: reading ``examples_file`` (JSONL or JSON, relative to the manifest) and the
checks on examples wherever they come from (the dataset ``key``, fields the API refuses).

After this step a Dataset's spec holds ``examples`` (a list of objects) and no ``examples_file``;
``sources["examples"]`` points at the ``examples_file`` line of the manifest and, for a file,
``sources["examples.N"]`` at the line of example N in that file.
"""

from __future__ import annotations

import bisect
import json
import math
import os
from collections.abc import Iterable, Iterator
from typing import Any

from reconciler.manifests import yamlload
from reconciler.manifests.messages import Ctx, Path
from reconciler.manifests.yamlload import Problem, _too_big, not_utf8, read_file
from reconciler.model import Source

READ_ONLY_EXAMPLE_FIELDS = ("id", "created_at", "updated_at")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise ValueError(f"duplicate key '{k}'")
            seen.add(k)
    return obj


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise ValueError(f"the number {literal[:40]} is out of range (no double holds it; the API refuses it)")
    return value


#: What a value nested deeper than the JSON decoder goes (Python's recursion limit, about 900
#: levels) is told: a problem at its line, never a RecursionError.
TOO_DEEP = "JSON nested too deeply (the limit is about 900 levels of arrays and objects)"

#: Stands in for an example line that did not parse (already reported), so indices stay the
#: positions of the examples in the file.
BROKEN = object()

_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_finite)
_WS = " \t\r\n"


def read_examples_file(path: str, shown: str, problems: list[Problem]) -> tuple[list[Any], list[int]] | None:
    """The examples of a file and the 1-based line each starts on (None when unreadable)."""
    ext = os.path.splitext(path)[1].lower()
    if ext in (".jsonl", ".ndjson"):
        staged = yamlload.staged_text(path)
        if staged is not None:  # the text pull is about to write, read as the file will be
            return _jsonl_blocks([(1, staged.removeprefix("\ufeff").splitlines())], shown, problems)
        unreadable: list[bool] = []
        found = _jsonl_blocks(_file_blocks(path, shown, problems, unreadable), shown, problems)
        return None if unreadable or found is None else found
    text = read_file(path, shown, problems, yamlload.MAX_EXAMPLES_FILE_BYTES)
    if text is None:
        return None
    if ext == ".json":
        return _json_array(text, shown, problems)
    problems.append(Problem(shown, 1, 1, "examples_file",
                            "must be a .jsonl file (one object a line) or a .json file (an array of objects)"))
    return None


#: The most examples one file may hold: a budget of memory, as the node budget is for YAML. Bytes
#: alone do not bound it: 20 MB of ``{}`` lines are 6.7 million objects (811 MB to hold); a million
#: real examples, the largest dataset measured (docs/performance.md), fit twice.
MAX_EXAMPLES = 2_000_000


def _too_many(shown: str, line: int) -> Problem:
    return Problem(shown, line, 1, "examples_file", f"holds more than {MAX_EXAMPLES:,} examples (the memory budget "
                   "of one examples file); split the dataset")


#: Lines decoded by one call into the C scanner: large enough to be fast, small enough that a file
#: of a million examples is never copied whole into one string.
JSONL_CHUNK = 5000


#: Bytes read from an examples file at a time.
READ_BLOCK = 1 << 20
_BOM = b"\xef\xbb\xbf"


def _file_blocks(path: str, shown: str, problems: list[Problem],
                 unreadable: list[bool]) -> Iterator[tuple[int, list[str]]]:
    """``text.splitlines()`` of the file's text a block at a time, each with the number of its
    first line (the file is never one string in memory, nor its bytes). When it cannot be read, the
    problem ``read_file`` would report (too big, unreadable, not UTF-8 at a byte offset) is added,
    ``unreadable`` is marked and the blocks stop."""
    n = newlines = offset = 0
    rest = b""
    try:
        size = os.stat(path).st_size
        if size > yamlload.MAX_EXAMPLES_FILE_BYTES:
            problems.append(Problem(shown, 1, 1, "file", _too_big(size, yamlload.MAX_EXAMPLES_FILE_BYTES)))
            unreadable.append(True)
            return
        with open(path, "rb") as fh:
            while True:
                data = fh.read(READ_BLOCK)
                buf = rest + data
                cut = buf.rfind(b"\n") + 1 if data else len(buf)  # blocks end just after a newline
                if data and cut == 0:
                    rest = buf
                    continue
                block, rest = buf[:cut], buf[cut:]
                skip = len(_BOM) if offset == 0 and block.startswith(_BOM) else 0
                try:
                    text = block[skip:].decode("utf-8")
                except UnicodeDecodeError as exc:
                    problems.append(not_utf8(shown, block, skip + exc.start, newlines + 1, offset))
                    unreadable.append(True)
                    return
                lines = text.splitlines()
                if lines:
                    yield n + 1, lines
                n += len(lines)
                newlines += block.count(b"\n")
                offset += len(block)
                if not data:
                    return
    except OSError as exc:
        problems.append(Problem(shown, 1, 1, "file", f"cannot read: {exc.strerror or exc}"))
        unreadable.append(True)


def _jsonl_blocks(blocks: Iterable[tuple[int, list[str]]], shown: str,
                  problems: list[Problem]) -> tuple[list[Any], list[int]] | None:
    """The examples of JSONL lines given a block at a time (each block's lines with the number of
    its first), and the line of each. Blank lines are skipped; the others are decoded
    ``JSONL_CHUNK`` at a time. A block without a blank line (the common case) is taken whole."""
    examples: list[Any] = []
    numbers: list[int] = []
    pending: list[str] = []  # lines not decoded yet, and their numbers
    pending_numbers: list[int] = []
    for first, block in blocks:
        if all(map(str.strip, block)):
            pending += block
            pending_numbers += range(first, first + len(block))
        else:
            for i, line in enumerate(block):
                if line.strip():
                    pending.append(line)
                    pending_numbers.append(first + i)
        if len(numbers) + len(pending) > MAX_EXAMPLES:  # refused before it is decoded
            problems.append(_too_many(shown, pending_numbers[MAX_EXAMPLES - len(numbers)]))
            return None
        while len(pending) >= JSONL_CHUNK:
            _jsonl_chunk(pending[:JSONL_CHUNK], pending_numbers[:JSONL_CHUNK], examples, numbers, shown, problems)
            del pending[:JSONL_CHUNK], pending_numbers[:JSONL_CHUNK]
    _jsonl_chunk(pending, pending_numbers, examples, numbers, shown, problems)
    return examples, numbers


def _jsonl_chunk(chunk: list[str], chunk_numbers: list[int], examples: list[Any], numbers: list[int], shown: str,
                 problems: list[Problem]) -> None:
    if not chunk:
        return
    try:  # fast path: the chunk as one array, one call into the C scanner
        whole = _DECODER.decode("[" + ",".join(chunk) + "]")
    except (ValueError, RecursionError):
        whole = None  # some line is broken: decode line by line to say which
    if isinstance(whole, list) and len(whole) == len(chunk):
        examples.extend(whole)
        numbers.extend(chunk_numbers)
        return
    decode = _DECODER.decode
    for n, line in zip(chunk_numbers, chunk, strict=True):
        numbers.append(n)
        try:
            examples.append(decode(line))
        except json.JSONDecodeError as exc:
            problems.append(Problem(shown, n, exc.colno, f"examples[{len(examples)}]", f"invalid JSON: {exc.msg}"))
            examples.append(BROKEN)
        except (RecursionError, ValueError) as exc:  # too deep; a duplicate key, a number JSON does not have
            message = TOO_DEEP if isinstance(exc, RecursionError) else str(exc)
            problems.append(Problem(shown, n, 1, f"examples[{len(examples)}]", message))
            examples.append(BROKEN)


def _json_array(text: str, shown: str, problems: list[Problem]) -> tuple[list[Any], list[int]] | None:
    """Decode ``[obj, obj, ...]`` element by element to learn where each example starts."""
    newlines = [i for i, c in enumerate(text) if c == "\n"]

    def where(pos: int) -> tuple[int, int]:
        line = bisect.bisect_left(newlines, pos)
        return line + 1, pos - (newlines[line - 1] + 1 if line else 0) + 1

    def skip(i: int) -> int:
        while i < len(text) and text[i] in _WS:
            i += 1
        return i

    def fail(pos: int, message: str) -> None:
        problems.append(Problem(shown, *where(pos), "examples_file", message))

    i = skip(0)
    if i >= len(text) or text[i] != "[":
        fail(i, "a .json examples file must hold an array of objects")
        return None
    examples: list[Any] = []
    lines: list[int] = []
    i = skip(i + 1)
    if i < len(text) and text[i] == "]":
        return examples, lines
    while True:
        try:
            value, end = _DECODER.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            fail(exc.pos, f"invalid JSON: {exc.msg}")
            return None
        except (ValueError, RecursionError) as exc:
            fail(i, f"examples[{len(examples)}]: {TOO_DEEP if isinstance(exc, RecursionError) else exc}")
            return None
        if len(examples) == MAX_EXAMPLES:
            problems.append(_too_many(shown, where(i)[0]))
            return None
        examples.append(value)
        lines.append(where(i)[0])
        i = skip(end)
        if i < len(text) and text[i] == ",":
            i = skip(i + 1)
            continue
        if i < len(text) and text[i] == "]":
            if skip(i + 1) < len(text):
                fail(skip(i + 1), "unexpected text after the array")
                return None
            return examples, lines
        fail(i, "expected ',' or ']' in the examples array")
        return None


def dataset_examples(out: dict[str, Any], path: Path, ctx: Ctx) -> None:
    """Load ``examples_file`` into ``examples`` and check the examples (the Dataset rule that reads files, run after the model)."""
    inline, from_file = "examples" in out, "examples_file" in out
    if inline and from_file:
        ctx.problem((*path, "examples_file"), "give examples or examples_file, not both", key=True)
        return
    if not inline and not from_file:
        ctx.problem(path, "missing examples: give examples_file (JSONL or JSON) or examples (a list of objects); "
                    "the API refuses to create an empty dataset", key=True)
        return
    lines: list[int] | None = None
    shown = ctx.file
    if from_file:
        written = out["examples_file"]
        if not isinstance(written, str) or not written:
            return
        # written by a Patch: relative to the Patch's file, and cited at its line
        patched = ctx.extra_sources.get(".".join(map(str, (*path, "examples_file"))))
        home = patched.file if patched is not None and patched.file != ctx.file else ctx.file
        shown = os.path.join(os.path.dirname(home), written) if home != "<stdin>" else written
        real = ctx.resolve_path(written) if home == ctx.file else \
            os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(home)), os.path.expanduser(written)))
        if (why := ctx.outside_tree(real)) is not None:
            ctx.problem((*path, "examples_file"), f"{shown} {why}")
            return
        if not os.path.isfile(real):
            ctx.problem((*path, "examples_file"), f"no such file: {shown}")
            return
        loaded = read_examples_file(real, shown, ctx.problems)
        if loaded is None:
            return
        from_disk, lines = loaded
        if not from_disk:
            ctx.problem((*path, "examples_file"), "holds no examples; the API refuses to create an empty dataset")
        del out["examples_file"]
        out["examples"] = from_disk
        line, col = (patched.line, patched.column) if home != ctx.file and patched is not None \
            else ctx.mark((*path, "examples_file"), key=True)
        ctx.extra_sources["examples"] = Source(home, line, col)
        ctx.example_lines = (shown, lines)  # "examples.N" sources, made on demand
    examples = out.get("examples")
    if not isinstance(examples, list):
        return

    grouped: dict[tuple[str | None, str], list[int]] = {}  # one problem, every example that has it

    def report(i: int, field: str | None, message: str) -> None:
        grouped.setdefault((field, message), []).append(i)

    def flush() -> None:
        for (field, message), indices in grouped.items():
            i = indices[0]
            where: Path = (*path, "examples", i) + ((field,) if field else ())
            if len(indices) > 1:
                others = [f"[{j}]" + (f" (line {lines[j]})" if lines is not None else "") for j in indices[1:6]]
                more = f" and {len(indices) - 6} more" if len(indices) > 6 else ""
                message = f"{message}; so do examples{', '.join(others)}{more} ({len(indices)} in all)"
            if lines is None:
                ctx.problem(where, message, key=field is not None)
            else:
                ctx.problem_at(shown, lines[i], 1, where, message)

    key = out.get("key")
    key = key if isinstance(key, str) and key else None
    seen: dict[Any, int] = {}
    read_only_a, read_only_b, read_only_c = READ_ONLY_EXAMPLE_FIELDS
    # run on every example (a million in a large dataset): the common case is checked inline
    for i, ex in enumerate(examples):
        if type(ex) is not dict:
            if ex is BROKEN:
                continue
            if not isinstance(ex, dict):
                if lines is not None:
                    report(i, None, f"expected a JSON object, got {type(ex).__name__}")
                continue
        if read_only_a in ex or read_only_b in ex or read_only_c in ex:
            for f in READ_ONLY_EXAMPLE_FIELDS:
                if f in ex:
                    report(i, f, f"examples must not carry '{f}' (the service assigns it; the API rejects it)")
        if key is None:
            continue
        if key not in ex:
            report(i, None, f"has no '{key}' field (the dataset key)")
            continue
        value = ex[key]
        # a key value's identity: a string is itself (the common case); another scalar is its type
        # and value (1, 1.0, True and "1" are four values); anything else its canonical JSON
        t = type(value)
        ident: Any = value if t is str else (t, value) if t in _SCALAR_TYPES \
            else ("json", json.dumps(value, sort_keys=True))
        first = seen.setdefault(ident, i)
        if first != i:
            earlier = f"examples[{first}]" + (f" (line {lines[first]})" if lines is not None else "")
            report(i, key, f"repeats the '{key}' value of {earlier}; key values must be unique")
    flush()


#: Key values compared by type and value (subclasses of these, like enums, by their canonical JSON).
_SCALAR_TYPES = frozenset({int, float, bool})
