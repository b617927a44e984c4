"""Two ``apply`` runs of the same manifests at once (two processes, as two CI jobs would be) end
with exactly one of each resource and a clean plan. Both read the empty service before either
writes (a little latency on every request makes sure of that), so every create races and one of
each pair meets 409: that run adopts what the other made."""

from __future__ import annotations

from pathlib import Path

from tests.reliability.scenarios import concurrent_applies


def test_two_concurrent_applies_end_with_one_of_each_resource_and_a_clean_plan(tmp_path: Path) -> None:
    run = concurrent_applies(77, 120, tmp_path, latency_ms=100)  # reads outlast a busy machine's start-up skew
    assert run.problems() == []
    assert run.conflicts > 0  # they did race
    assert all("Apply complete: live state matches the manifests." in out for out in run.outputs)
