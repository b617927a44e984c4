"""examples/environments/reconciler.yaml runs as its comments say: plan --all, apply --all, drift --all
from the tree's directory, each environment an embedded emulator (no socket, no network)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from reconciler.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_the_example_tree_plans_applies_and_stays_in_sync_with_all(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(ROOT / "examples/environments", tmp_path / "environments")
    monkeypatch.chdir(tmp_path / "environments" / "overlays")  # the project file is found upwards
    env = {"VENDOR_A_KEY": "example-vendor-key", "RECONCILER_EMULATOR_SPACES": "staging,production",
           "RECONCILER_API_KEY": None, "RECONCILER_BASE_URL": None}

    def run(*args: str) -> tuple[int, str]:
        result = CliRunner(env=env).invoke(main, list(args), catch_exceptions=False)
        return result.exit_code, result.output

    assert run("validate", "--all")[0] == 0
    code, planned = run("plan", "--all", "--detailed-exitcode")
    assert code == 2, planned
    assert "staging           3       0       0        0          0" in planned
    code, applied = run("apply", "--all", "--auto-approve")
    assert code == 0, applied
    assert applied.endswith("Environments:\n  staging: converged\n  production: converged\n")
    assert run("drift", "--all") == (0, "staging: in sync\nproduction: in sync\n")
