"""A large JSONL examples file is decoded a chunk at a time, without changing a line number or a
message: the chunked reader must give exactly what decoding the whole file at once gave."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconciler.manifests import examples, yamlload
from reconciler.manifests.examples import BROKEN, _file_blocks, read_examples_file
from reconciler.manifests.yamlload import Problem, read_text


@given(st.text(alphabet="ab \n\r\u2028\x0c", max_size=60), st.integers(min_value=1, max_value=8))
def test_lines_are_numbered_as_splitlines_numbers_them(text: str, block: int) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as work, pytest.MonkeyPatch.context() as patch:
        patch.setattr(examples, "READ_BLOCK", block)
        path = Path(work) / "x.jsonl"
        path.write_bytes(text.encode("utf-8"))
        problems: list[Problem] = []
        numbered = [(first + i, line) for first, lines in _file_blocks(str(path), "x.jsonl", problems, [])
                    for i, line in enumerate(lines)]
    assert problems == [] and numbered == list(enumerate(text.splitlines(), 1))


def test_a_broken_line_past_the_first_chunk_is_reported_at_its_own_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(examples, "JSONL_CHUNK", 3)
    rows = [json.dumps({"k": i}) for i in range(10)]
    rows[7] = '{"k": 7,'  # line 9 of the file below (a blank line comes first)
    problems: list[Problem] = []
    (tmp_path / "data.jsonl").write_text("\n" + "\n".join(rows) + "\n", encoding="utf-8")
    found = read_examples_file(str(tmp_path / "data.jsonl"), "data.jsonl", problems)
    assert found is not None
    got, lines = found
    assert len(got) == 10 and got[7] is BROKEN and got[8] == {"k": 8}
    assert lines == list(range(2, 12))
    assert [(p.line, p.path) for p in problems] == [(9, "examples[7]")]


def test_a_jsonl_file_read_in_blocks_reports_what_reading_it_whole_reports(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(examples, "READ_BLOCK", 5)
    good = tmp_path / "good.jsonl"
    good.write_bytes(b"\xef\xbb\xbf" + b'{"k": 1}\r\n\n{"k": "\xc3\xa9"}\n{"k": 3}')  # BOM, CRLF, no final newline
    problems: list[Problem] = []
    assert read_examples_file(str(good), "good.jsonl", problems) == ([{"k": 1}, {"k": "é"}, {"k": 3}], [1, 3, 4])
    assert problems == []
    bad = tmp_path / "bad.jsonl"
    raw = b'{"k": 1}\n{"k": 2}\n{"k": "d\xe9j\xe0"}\n'
    bad.write_bytes(raw)
    whole: list[Problem] = []
    read_text(raw, "bad.jsonl", whole)
    assert read_examples_file(str(bad), "bad.jsonl", problems) is None
    assert problems == whole and whole[0].line == 3


def test_an_examples_file_has_its_own_size_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlload, "MAX_EXAMPLES_FILE_BYTES", 10)
    f = tmp_path / "big.jsonl"
    f.write_text('{"k": 1}\n{"k": 2}\n', encoding="utf-8")
    problems: list[Problem] = []
    assert read_examples_file(str(f), "big.jsonl", problems) is None
    assert [p.message for p in problems] == ["file is 18 bytes, over the 10-byte limit per file; split it"]
