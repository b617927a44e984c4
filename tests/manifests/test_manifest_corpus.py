"""The bad-manifest corpus: each ``corpus/bad/NN-name.yaml`` fails with exactly the problems
written in ``NN-name.expected`` (one ``FILE:LINE:COL: PATH: message`` a line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.errors import ManifestError
from reconciler.manifests import load_manifests

BAD = Path(__file__).parent / "corpus" / "bad"
CASES = sorted(p.name for p in BAD.glob("*.yaml"))
#: literal secrets written in corpus files: no message may repeat them
CANARIES = ("sk-live-0123456789abcdef", "tok-0123456789")


def test_the_corpus_holds_at_least_forty_bad_manifests() -> None:
    assert len(CASES) >= 40
    assert all((BAD / name.replace(".yaml", ".expected")).is_file() for name in CASES)


@pytest.mark.parametrize("name", CASES)
def test_bad_manifest_fails_with_the_expected_problems(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(BAD)
    expected = (BAD / name.replace(".yaml", ".expected")).read_text(encoding="utf-8").splitlines()
    with pytest.raises(ManifestError) as info:
        load_manifests([name])
    assert info.value.problems == expected
    for canary in CANARIES:
        assert canary not in str(info.value)


def test_every_problem_line_names_file_line_column_and_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(BAD)
    for name in CASES:
        for line in (BAD / name.replace(".yaml", ".expected")).read_text(encoding="utf-8").splitlines():
            file, row, col, rest = line.split(":", 3)
            assert file and int(row) >= 1 and int(col) >= 1
            path, _, message = rest.strip().partition(": ")
            assert path and message, line


def test_all_problems_of_a_run_are_reported_together(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(BAD)
    names = ["06-literal-api-key.yaml", "39-message-role-invalid.yaml", "50-restriction-type-case.yaml"]
    with pytest.raises(ManifestError) as info:
        load_manifests(names)
    assert [p.split(":")[0] for p in info.value.problems] == names
