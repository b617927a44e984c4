"""The rehearsal as a library call: it reads no secret (the replica takes placeholders, so a
pull-request job needs no production secret), it names what a replica cannot know, and an empty
plan is not rehearsed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reconciler.emulator.integrations import PLACEHOLDER
from reconciler.model import SecretRef
from reconciler.plan.model import PlanOptions
from reconciler.rehearse import rehearse, with_placeholders
from reconciler.workflow import load, plan_against, run_apply
from tests.reliability.test_convergence_property import in_process_service

ROOT = Path(__file__).resolve().parents[2]


def test_a_rehearsal_reads_no_secret_and_sends_placeholders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(ROOT / "manifests", tmp_path / "m")
    monkeypatch.delenv("VENDOR_A_KEY", raising=False)
    monkeypatch.delenv("AGENT_TOKEN", raising=False)

    def no_secret(self: SecretRef) -> str:
        raise AssertionError(f"a rehearsal read the secret {self.describe()}")

    manifests = load([str(tmp_path / "m")])
    with in_process_service() as client:
        live, plan = plan_against(manifests, client, PlanOptions())
        monkeypatch.setattr(SecretRef, "resolve", no_secret)
        assert any(op.secrets for op in plan)
        placeholders = with_placeholders(plan)
        assert not any(op.secrets for op in placeholders)
        assert PLACEHOLDER in str([op.body for op in placeholders])
        result = rehearse(plan, live, manifests)
    assert result.ok, result.lines()
    assert result.accepted == result.calls == len(plan.operations)
    assert result.converged is True
    assert any("placeholder" in line for line in result.unknown)


def test_an_empty_plan_is_not_rehearsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(ROOT / "manifests", tmp_path / "m")
    monkeypatch.setenv("VENDOR_A_KEY", "canary-a")
    monkeypatch.setenv("AGENT_TOKEN", "canary-b")
    manifests = load([str(tmp_path / "m")])
    with in_process_service() as client:
        live, plan = plan_against(manifests, client, PlanOptions())
        assert run_apply(plan, client, parallelism=2, fail_fast=False).ok
        live, again = plan_against(manifests, client, PlanOptions())
    result = rehearse(again, live, manifests)
    assert result.ok and result.calls == 0
    assert result.headline() == "Rehearsal: nothing to rehearse (the plan is empty)."
