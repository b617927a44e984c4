"""A large JSONL examples file is decoded a chunk at a time, without changing a line number or a
message: the chunked reader must give exactly what decoding the whole file at once gave."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconciler.manifests import examples
from reconciler.manifests.examples import BROKEN, _jsonl, _numbered_lines
from reconciler.manifests.yamlload import Problem


@given(st.text(alphabet="ab \n\r\u2028\x0c", max_size=60), st.integers(min_value=1, max_value=8))
def test_lines_are_numbered_as_splitlines_numbers_them(text: str, block: int) -> None:
    assert list(_numbered_lines(text, block)) == list(enumerate(text.splitlines(), 1))


def test_a_broken_line_past_the_first_chunk_is_reported_at_its_own_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(examples, "JSONL_CHUNK", 3)
    rows = [json.dumps({"k": i}) for i in range(10)]
    rows[7] = '{"k": 7,'  # line 9 of the file below (a blank line comes first)
    problems: list[Problem] = []
    got, lines = _jsonl("\n" + "\n".join(rows) + "\n", "data.jsonl", problems)
    assert len(got) == 10 and got[7] is BROKEN and got[8] == {"k": 8}
    assert lines == list(range(2, 12))
    assert [(p.line, p.path) for p in problems] == [(9, "examples[7]")]
