"""The recipes under examples/ work as the README says (against the in-process emulator)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ENV = {"VENDOR_A_KEY": "k", "AGENT_TOKEN": "t"}


def reconciler_bin() -> str:
    found = Path(sys.executable).with_name("reconciler")
    if not found.exists():
        pytest.skip("the reconciler console script is not installed next to this Python")
    return str(found)


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **ENV, "RECONCILER": reconciler_bin(), **(env or {})}
    full.pop("RECONCILER_BASE_URL", None)
    return subprocess.run(args, cwd=cwd, env=full, capture_output=True, text=True, timeout=120)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the repo's manifests and examples (the scripts cd to their parent directory)."""
    shutil.copytree(ROOT / "manifests", tmp_path / "manifests")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    return tmp_path


def test_drift_cron_reports_in_sync_then_drift(project: Path) -> None:
    db = str(project / "state.db")
    applied = run(reconciler_bin(), "apply", "manifests", "--emulator", db, "--auto-approve", cwd=project)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    # drift never reads the manifests' secrets: the cron job needs only the API key and an endpoint
    no_secrets = {**os.environ, "RECONCILER": reconciler_bin()}
    for name in (*ENV, "RECONCILER_BASE_URL", "RECONCILER_API_KEY"):
        no_secrets.pop(name, None)
    in_sync = subprocess.run(["./examples/drift-cron.sh", "--emulator", db], cwd=project, env=no_secrets,
                             capture_output=True, text=True, timeout=120)
    assert in_sync.returncode == 0 and "in sync" in in_sync.stdout, in_sync.stdout + in_sync.stderr
    failed = run("./examples/drift-cron.sh", "--base-url", "http://127.0.0.1:9", cwd=project)
    assert failed.returncode == 1 and not list(project.glob("drift-*.md"))  # no empty report left behind
    prompts = project / "manifests/research/prompts.yaml"
    prompts.write_text(prompts.read_text().replace("Summarize a support ticket", "Changed in git"))
    drifted = run("./examples/drift-cron.sh", "--emulator", db, cwd=project)
    assert drifted.returncode == 2 and "DRIFT" in drifted.stdout
    report = next(project.glob("drift-*.md"))
    assert "Changed in git" in report.read_text()


def test_adopt_exports_and_plans_empty(project: Path) -> None:
    db = str(project / "state.db")
    assert run(reconciler_bin(), "apply", "manifests", "--emulator", db, "--auto-approve", cwd=project).returncode == 0
    adopted = run("./examples/adopt.sh", "adopted", "--emulator", db, cwd=project)
    assert adopted.returncode == 0, adopted.stdout + adopted.stderr
    assert "Adopted: the plan of the exported manifests is empty." in adopted.stdout


def test_github_actions_recipe_runs_the_documented_commands() -> None:
    workflow = yaml.safe_load((ROOT / "examples/github-actions.yml").read_text())
    used = [s["with"] for job in workflow["jobs"].values() for s in job["steps"] if s.get("uses") == "./"]
    assert {(w["paths"], w["mode"]) for w in used} == {("manifests", "plan"), ("manifests", "apply")}
    action = yaml.safe_load((ROOT / "action.yml").read_text())  # the composite action the recipe uses
    steps = [s.get("run", "") for s in action["runs"]["steps"]]
    assert any("reconciler plan $PATHS $EXTRA --format markdown --detailed-exitcode" in s for s in steps)
    assert any("reconciler apply $PATHS $EXTRA --auto-approve" in s for s in steps)
