"""``make mutation`` keeps mutmut's results between runs and machines (``tests/mutation_results.json``):
a run starts from them, checks what is not killed yet, and stores them again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tests.mutation_report as report

LIMIT = "reconciler/client/limit.py"
MODULE = "reconciler.client.limit"
META = {
    "exit_code_by_key": {
        f"{MODULE}.xǁAdaptiveLimitǁ_learn__mutmut_1": 1,
        f"{MODULE}.xǁAdaptiveLimitǁ_learn__mutmut_2": 0,
        f"{MODULE}.xǁAdaptiveLimitǁ_learn__mutmut_3": None,
        f"{MODULE}.xǁAdaptiveLimitǁacquire__mutmut_1": None,
        f"{MODULE}.xǁAdaptiveLimitǁacquire__mutmut_2": None,
        f"{MODULE}.xǁAdaptiveLimitǁrelease__mutmut_1": 36,
    },
    "hash_by_function_name": {"xǁAdaptiveLimitǁ_learn": "aa", "xǁAdaptiveLimitǁacquire": "bb",
                              "xǁAdaptiveLimitǁrelease": "cc", "xǁAdaptiveLimitǁ__init__": "dd"},
}


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(report, "ROOT", tmp_path)
    monkeypatch.setattr(report, "RESULTS", tmp_path / "results.json")
    return tmp_path


def test_a_module_s_results_read_back_as_mutmut_wrote_them() -> None:
    functions = report.functions_of(LIMIT, META)
    assert functions["xǁAdaptiveLimitǁ_learn"] == ("aa", [1, 0, None])
    assert functions["xǁAdaptiveLimitǁ__init__"] == ("dd", [])  # a function with no mutant keeps its hash
    meta = report.meta_of(LIMIT, functions)
    assert meta["exit_code_by_key"] == META["exit_code_by_key"]
    assert meta["hash_by_function_name"] == META["hash_by_function_name"]
    text = report.results_text({LIMIT: functions})
    assert report.stored_results(text) == {LIMIT: functions}
    assert text.count("\n") == len(functions) + 4  # one line per function: a change reads as one


def test_a_run_starts_from_the_stored_results_and_stores_them_again(root: Path) -> None:
    report.RESULTS.write_text(report.results_text({LIMIT: report.functions_of(LIMIT, META)}))
    assert report.restore() == [LIMIT]
    meta = root / "mutants" / (LIMIT + ".meta")
    assert json.loads(meta.read_text())["exit_code_by_key"] == META["exit_code_by_key"]
    assert report.restore() == []  # mutants/ holds results now: they are newer, kept

    ran = json.loads(meta.read_text())
    ran["exit_code_by_key"][f"{MODULE}.xǁAdaptiveLimitǁ_learn__mutmut_3"] = 1
    meta.write_text(json.dumps(ran))
    report.keep()
    assert report.stored_results()[LIMIT]["xǁAdaptiveLimitǁ_learn"] == ("aa", [1, 0, 1])
    assert report.load_results()[LIMIT].killed == [f"{MODULE}.xǁAdaptiveLimitǁ_learn__mutmut_1",
                                                   f"{MODULE}.xǁAdaptiveLimitǁ_learn__mutmut_3",
                                                   f"{MODULE}.xǁAdaptiveLimitǁrelease__mutmut_1"]


def test_the_report_reads_the_stored_results_when_mutants_holds_none(root: Path) -> None:
    report.RESULTS.write_text(report.results_text({LIMIT: report.functions_of(LIMIT, META)}))
    result = report.load_results()[LIMIT]
    assert (len(result.killed), len(result.survived), len(result.unchecked)) == (2, 1, 3)


LIMIT_SOURCE = """
class AdaptiveLimit:
    def __init__(self):
        self.limit = 1

    def _learn(self, rtt):
        return rtt

    def acquire(self):
        return 2

    def release(self):
        return 3
"""


def stored_as_now(root: Path, source: str = LIMIT_SOURCE) -> None:
    """mutants/ holds META's results, of the functions as ``source`` has them (the module's text)."""
    (root / LIMIT).parent.mkdir(parents=True, exist_ok=True)
    (root / LIMIT).write_text(source)
    meta = root / "mutants" / (LIMIT + ".meta")
    meta.parent.mkdir(parents=True, exist_ok=True)
    meta.write_text(json.dumps({**META, "hash_by_function_name": report.function_hashes(source)}))


def test_a_run_checks_what_is_not_killed_yet_a_whole_function_by_its_glob(root: Path) -> None:
    stored_as_now(root)
    assert report.pending([LIMIT]) == [
        f"{MODULE}.xǁAdaptiveLimitǁ_learn__mutmut_2",  # survived: a test added since may kill it
        f"{MODULE}.xǁAdaptiveLimitǁ_learn__mutmut_3",  # never run
        f"{MODULE}.xǁAdaptiveLimitǁacquire__mutmut_*",  # none of it killed
    ]
    telemetry = "reconciler/telemetry.py"
    assert report.pending([telemetry]) == report.globs([telemetry])  # no results: all of it


def test_a_function_edited_since_its_results_is_run_whole(root: Path) -> None:
    stored_as_now(root)
    (root / LIMIT).write_text(LIMIT_SOURCE.replace("return rtt", "return rtt * 2"))  # _learn edited
    assert report.pending([LIMIT]) == [
        f"{MODULE}.xǁAdaptiveLimitǁ_learn__mutmut_*",  # mutmut makes its mutants again: all of them
        f"{MODULE}.xǁAdaptiveLimitǁacquire__mutmut_*",
    ]


def test_a_survivor_recorded_equivalent_is_not_run_again(root: Path) -> None:
    stored_as_now(root)
    assert f"{MODULE}.xǁAdaptiveLimitǁ_learn__mutmut_2" not in report.pending(
        [LIMIT], skip={f"{MODULE}.xǁAdaptiveLimitǁ_learn__mutmut_2"})


SOURCE = '''
class AdaptiveLimit:
    def _learn(self):
        return 1

    def acquire(self):
        return 2


def release():
    return 3
'''


def test_runs_elsewhere_merge_a_mutant_killed_in_either_is_killed_and_an_edited_function_keeps_its_run() -> None:
    now = report.function_hashes(SOURCE)
    assert set(now) == {"xǁAdaptiveLimitǁ_learn", "xǁAdaptiveLimitǁacquire", "x_release"}
    learn, acquire = now["xǁAdaptiveLimitǁ_learn"], now["xǁAdaptiveLimitǁacquire"]
    ours = {LIMIT: {"xǁAdaptiveLimitǁ_learn": (learn, [1, 0, None, 0]),
                    "xǁAdaptiveLimitǁacquire": ("old", [1, 1]),
                    "x_release": ("old", [None])}}
    theirs = {LIMIT: {"xǁAdaptiveLimitǁ_learn": (learn, [None, 1, 0, 0]),
                      "xǁAdaptiveLimitǁacquire": (acquire, [0, None, None]),
                      "x_gone": ("zz", [1])}}
    merged = report.merge(ours, theirs, lambda path: SOURCE)[LIMIT]
    assert merged["xǁAdaptiveLimitǁ_learn"] == (learn, [1, 1, 0, 0])
    assert merged["xǁAdaptiveLimitǁacquire"] == (acquire, [0, None, None])  # only theirs ran it as it is now
    assert merged["x_release"] == ("old", [None])  # neither: ours, cleared by mutmut's next run
    assert merged["x_gone"] == ("zz", [1])


def test_a_function_hashes_as_mutmut_hashes_it() -> None:
    """mutmut's hashes of the functions not edited since the stored run are ours (a formula that
    differed would match none)."""
    matched = 0
    for path, functions in report.stored_results().items():
        now = report.function_hashes((report.ROOT / path).read_text(encoding="utf-8"))
        matched += sum(now.get(f) == h for f, (h, _) in functions.items())
    assert matched > 100


def test_a_narrowed_run_collects_only_the_tests_under_its_paths() -> None:
    env = {**os.environ, "MUTATION_TESTS": "tests/test_kinds.py"}
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "tests/test_kinds.py", "tests/test_mutation_equivalents.py"],
                         cwd=report.ROOT, env=env, capture_output=True, text=True, check=True).stdout
    assert "tests/test_kinds.py" in out  # quiet twice (addopts): a line per file of what runs
    assert "test_mutation_equivalents" not in out
