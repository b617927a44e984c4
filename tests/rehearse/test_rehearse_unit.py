"""The rehearsal as a library call: it reads no secret (the replica takes placeholders, so a
pull-request job needs no production secret), it names what a replica cannot know, and an empty
plan is not rehearsed."""

from __future__ import annotations

import shutil
from dataclasses import replace
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
    assert result.ok and (result.calls, result.accepted, result.refusals, result.converged) == (0, 0, (), True)
    assert result.headline() == "Rehearsal: nothing to rehearse (the plan is empty)."


def test_without_the_plans_manifests_convergence_is_not_checked_and_each_secret_is_counted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(ROOT / "manifests", tmp_path / "m")
    monkeypatch.delenv("VENDOR_A_KEY", raising=False)
    monkeypatch.delenv("AGENT_TOKEN", raising=False)
    manifests = load([str(tmp_path / "m")])
    with in_process_service() as client:
        live, plan = plan_against(manifests, client, PlanOptions())
    assert sum(len(op.secrets) for op in plan) == 2

    result = rehearse(plan, live, None)

    assert (result.converged, result.remaining, result.calls, result.accepted) == (None, (), len(plan.operations),
                                                                                 len(plan.operations))
    assert result.unknown[0] == ("2 secret values the plan sends are a placeholder (never read): the replica takes "
                                 "any value")
    one = next(op for op in plan if len(op.secrets) == 1)
    alone = rehearse(replace(plan, operations=(one,)), live, None)
    assert alone.unknown[0] == "1 secret value the plan sends is a placeholder (never read): the replica takes any value"
    bare = next(op for op in plan if not op.secrets and not op.depends_on)
    assert not any("placeholder" in u for u in rehearse(replace(plan, operations=(bare,)), live, None).unknown)
