"""Two ``apply`` runs of the same manifests at once (two processes, as two CI jobs would be) end
with exactly one of each resource and a clean plan. Both read the empty service before either
writes (a little latency on every request makes sure of that), so every create races and one of
each pair meets 409: that run adopts what the other made.

On a busy machine one process may start so late that the other has written everything before it
reads: then nothing raced, which proves nothing about the race. Such a run must still end clean; the
scenario is run again (at most three times) until the two did race."""

from __future__ import annotations

from pathlib import Path

from tests.reliability.scenarios import concurrent_applies


def test_two_concurrent_applies_end_with_one_of_each_resource_and_a_clean_plan(tmp_path: Path) -> None:
    for attempt in range(3):
        run = concurrent_applies(77 + attempt, 120, tmp_path / str(attempt), latency_ms=100)
        assert run.problems() == []
        assert all("Apply complete: live state matches the manifests." in out for out in run.outputs)
        if run.conflicts > 0:  # they did race
            break
    assert run.conflicts > 0, "in three attempts the two applies never raced (one ran after the other)"
