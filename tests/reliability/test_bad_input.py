"""Bad input is refused before the first request: YAML bombs (aliases), huge files, deep nesting,
bytes that are not UTF-8, duplicate keys, wrong types and unknown fields (and their cousins: unsafe
tags, non-JSON numbers, control characters, literal secrets) each make ``plan`` and ``apply`` exit 1
with a message naming the file, line and field, and the service sees no request at all."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.generators import API_KEY_ENV
from tests.reliability.harness import Served, run_cli, serve

VALID_HEAD = "kind: Integration\nname: llm-a\ntype: LLM\n"
VALID_CONFIG = "config: {provider: VENDOR_A, api_key: {env: KEY_A}}\n"
ENV = {API_KEY_ENV: "admin-key", "KEY_A": "value-a"}
#: FILE:LINE:COL: PATH: message
PROBLEM_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<path>\S.*?): (?P<message>.+)$")
HUGE = 50 * 1024 * 1024 + 1
HUGE_EXAMPLES = 1024 * 1024 * 1024 + 1  # an examples file may hold a million examples: its cap is 1 GiB


def billion_laughs() -> str:
    rows = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        rows.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return VALID_HEAD + VALID_CONFIG + "\n".join(rows) + "\n"


def sparse(path: Path, head: bytes, size: int) -> None:
    """A file of ``size`` bytes that costs nothing to write (the tail is a hole)."""
    with path.open("wb") as fh:
        fh.write(head)
        fh.truncate(size)


@dataclass(frozen=True)
class Case:
    name: str
    write: Callable[[Path], Path]  # writes the manifest(s) under a directory; returns the path to give
    expect: str  # a phrase of the message (or of the field path) of one problem
    line: int | None = None  # the line that problem names


def text(body: str | bytes, name: str = "bad.yaml") -> Callable[[Path], Path]:
    def write(d: Path) -> Path:
        path = d / name
        path.write_bytes(body.encode("utf-8") if isinstance(body, str) else body)
        return path

    return write


def huge_manifest(d: Path) -> Path:
    sparse(d / "huge.yaml", (VALID_HEAD + VALID_CONFIG + "description: |\n").encode(), HUGE)
    return d / "huge.yaml"


def huge_examples(d: Path) -> Path:
    sparse(d / "examples.jsonl", b'{"q": "a"}\n', HUGE_EXAMPLES)
    (d / "ds.yaml").write_text("kind: Dataset\nname: ds\nspace: default\nexamples_file: examples.jsonl\n")
    return d / "ds.yaml"


def latin1_examples(d: Path) -> Path:
    (d / "examples.jsonl").write_bytes('{"q": "caf\xe9"}\n'.encode("latin-1"))
    (d / "ds.yaml").write_text("kind: Dataset\nname: ds\nspace: default\nexamples_file: examples.jsonl\n")
    return d / "ds.yaml"


CASES = [
    Case("billion laughs", text(billion_laughs()), "aliases are not supported", 6),
    Case("an alias reusing a config", text(
        "kind: Integration\nname: a\ntype: LLM\nconfig: &c {provider: VENDOR_A, api_key: {env: KEY_A}}\n---\n"
        "kind: Integration\nname: b\ntype: LLM\nconfig: *c\n"), "aliases are not supported", 9),
    Case("a manifest over 50 MiB", huge_manifest, "limit per file", 1),
    Case("an examples file over 1 GiB", huge_examples, "limit per file", 1),
    Case("flow nesting 2,000 deep", text(VALID_HEAD + VALID_CONFIG + "description: " + "[" * 2000 + "]" * 2000),
         "nested deeper than 100 levels", 5),
    Case("block nesting 150 deep", text(VALID_HEAD + "config:\n" + "".join(
        "  " * (i + 1) + f"k{i}:\n" for i in range(150)) + "  " * 151 + "v\n"), "nested deeper than 100 levels"),
    Case("latin-1 bytes", text((VALID_HEAD + "description: caf\xe9\n" + VALID_CONFIG).encode("latin-1")),
         "not valid UTF-8", 4),
    Case("UTF-16", text((VALID_HEAD + VALID_CONFIG).encode("utf-16")), "not valid UTF-8", 1),
    Case("latin-1 bytes in an examples file", latin1_examples, "not valid UTF-8", 1),
    Case("a duplicate key", text(VALID_HEAD + "name: llm-b\n" + VALID_CONFIG), "duplicate key 'name'", 4),
    Case("a duplicate nested key", text(
        VALID_HEAD + "config:\n  provider: VENDOR_A\n  api_key: {env: KEY_A}\n  provider: VENDOR_B\n"),
        "duplicate key 'provider'", 7),
    Case("a number for a name", text("kind: Integration\nname: 123\ntype: LLM\n" + VALID_CONFIG), "string", 2),
    Case("a string for a mapping", text(VALID_HEAD + "config: VENDOR_A\n"), "config", 4),
    Case("a mapping for a list", text(VALID_HEAD + "scopings: {a: 1}\n" + VALID_CONFIG), "scopings", 4),
    Case("a string for a boolean", text(
        VALID_HEAD + "config: {provider: VENDOR_A, api_key: {env: KEY_A}, is_function_calling_enabled: maybe}\n"),
        "boolean", 4),
    Case("a list for examples", text("kind: Dataset\nname: ds\nspace: default\nexamples: [1, 2]\n"),
         "examples[0]", 4),
    Case("an unknown top-level field", text(VALID_HEAD + "colour: blue\n" + VALID_CONFIG), "unknown field 'colour'", 4),
    Case("an unknown config field", text(
        VALID_HEAD + "config: {provider: VENDOR_A, api_key: {env: KEY_A}, temprature: 1}\n"),
        "unknown field 'temprature'", 4),
    Case("an unknown kind", text("kind: Integrashun\nname: x\n"), "Integrashun", 1),
    Case("a python tag", text("kind: !!python/object/apply:os.system ['true']\nname: x\n"), "unsupported YAML tag", 1),
    Case("infinity", text("kind: Dataset\nname: ds\nspace: default\nexamples: [{score: .inf}]\n"),
         "not JSON numbers", 4),
    Case("a literal secret", text(VALID_HEAD + "config: {provider: VENDOR_A, api_key: sk-live-123456}\n"),
         "must be a reference", 4),
    Case("a YAML syntax error", text(VALID_HEAD + "config: {provider: VENDOR_A\n"), "syntax error"),
    Case("a list instead of a document", text("- kind: Integration\n"), "must be a mapping", 1),
]


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    with serve() as s:
        yield s


@pytest.mark.parametrize("command", ["plan", "apply"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_a_clear_error_with_exit_1_and_no_request(
        case: Case, command: str, served: Served, tmp_path: Path) -> None:
    path = case.write(tmp_path)
    served.reset_stats()
    args = [command, str(path), "--base-url", served.url] + (["--auto-approve"] if command == "apply" else [])
    result = run_cli(args, ENV, catch=True)
    assert result.exit_code == 1, result.output
    assert result.exc_info is None or result.exc_info[0] is SystemExit, result.exc_info
    problems = [m for m in map(PROBLEM_LINE.match, result.stderr.splitlines()) if m]
    assert problems, result.stderr
    named = [m for m in problems if case.expect in m.group("message") or case.expect in m.group("path")]
    assert named, result.stderr
    assert all(Path(m.group("file")).name in {p.name for p in tmp_path.iterdir()} for m in problems)
    if case.line is not None:
        assert int(named[0].group("line")) == case.line, result.stderr
    assert served.stats() == {}  # not a single request
    assert len(result.stderr) < 10_000  # a clear error, not a dump


def test_a_bomb_on_standard_input_is_refused_without_a_request(served: Served) -> None:
    served.reset_stats()
    result = run_cli(["plan", "-", "--base-url", served.url], ENV, catch=True, stdin=billion_laughs())
    assert result.exit_code == 1 and "aliases are not supported" in result.stderr
    assert served.stats() == {}


# ---------------------------------------------------------------- defects this suite found (fixed)


class _CountingLoader:
    """Stands in for ``yamlload._Loader`` and counts the events the loader pulls."""

    pulled = 0
    real: type[Any] = type(None)

    def __init__(self, text: str) -> None:
        self._inner = _CountingLoader.real(text)

    def get_event(self) -> object:
        _CountingLoader.pulled += 1
        return self._inner.get_event()

    def dispose(self) -> None:
        self._inner.dispose()


def test_refusing_a_too_deep_document_does_not_parse_the_rest_of_its_nesting(monkeypatch: pytest.MonkeyPatch) -> None:
    from reconciler.manifests import yamlload

    monkeypatch.setattr(_CountingLoader, "pulled", 0)
    monkeypatch.setattr(_CountingLoader, "real", vars(yamlload)["_Loader"])
    monkeypatch.setattr(yamlload, "_Loader", _CountingLoader)
    problems: list[yamlload.Problem] = []
    yamlload.parse_documents("description: " + "[" * 20_000 + "]" * 20_000 + "\n", "deep.yaml", problems)
    assert [p.message for p in problems] == ["nested deeper than 100 levels"]
    assert _CountingLoader.pulled < 10 * yamlload.MAX_DEPTH  # not the 40,000 events of the whole nest


def test_a_control_character_is_one_problem_line_at_its_position(served: Served, tmp_path: Path) -> None:
    path = text(VALID_HEAD + "description: a\x00b\n" + VALID_CONFIG)(tmp_path)
    result = run_cli(["plan", str(path), "--base-url", served.url], ENV, catch=True)
    assert result.exit_code == 1
    lines = [line for line in result.stderr.splitlines()[1:] if line.strip()]
    matches = [PROBLEM_LINE.match(line) for line in lines]
    assert all(matches), lines
    assert [(m.group("line"), m.group("col")) for m in matches if m] == [("4", "15")]


def test_a_huge_value_is_not_echoed_whole_in_an_error(served: Served, tmp_path: Path) -> None:
    path = text("kind: Prompt\nspace: default\nname: " + "x" * 1_000_000 + "\n")(tmp_path)
    result = run_cli(["plan", str(path), "--base-url", served.url], ENV, catch=True)
    assert result.exit_code == 1 and "missing required field 'version'" in result.stderr
    assert len(result.stderr) < 10_000
