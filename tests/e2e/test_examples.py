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


def _steps(job: str) -> list[str]:
    workflow = yaml.safe_load((ROOT / "examples/github-actions.yml").read_text())
    return [s["run"] for s in workflow["jobs"][job]["steps"] if "reconciler" in s.get("run", "")]


def _shell(step: str, project: Path, db: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A workflow step run as the runner would, with the expressions of its context filled in and the
    endpoint pointed at the embedded emulator."""
    script = (step.replace("${{ github.base_ref }}", "main").replace("${{ github.event.before }}", "HEAD~1")
              .replace("origin/main", "main").replace("reconciler ", f"{reconciler_bin()} ")
              .replace(" --auto-approve", f" --auto-approve --emulator {db}")
              .replace(" --format markdown", f" --emulator {db} --format markdown"))
    return subprocess.run(["bash", "-ec", script], cwd=project, env=env, capture_output=True, text=True, timeout=120)


def test_github_actions_recipe_plans_a_pull_request_without_secrets_and_applies_on_merge(project: Path) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    db = str(project / "state.db")
    assert subprocess.run([*git, "init", "-q", "-b", "main"], cwd=project).returncode == 0
    subprocess.run([*git, "add", "manifests"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=project, check=True)
    assert run(reconciler_bin(), "apply", "manifests", "--emulator", db, "--auto-approve",
               cwd=project).returncode == 0
    # a pull request: a description changes, and the agent gains a header (write-only: invisible live)
    subprocess.run([*git, "checkout", "-qb", "change"], cwd=project, check=True)
    agents, prompts = project / "manifests/integrations/agents.yaml", project / "manifests/research/prompts.yaml"
    prompts.write_text(prompts.read_text().replace("Summarize a support ticket", "Summaries, reviewed"))
    subprocess.run([*git, "commit", "-qam", "description"], cwd=project, check=True)
    no_secrets = {k: v for k, v in os.environ.items() if k not in (*ENV, "RECONCILER_BASE_URL")}
    [validate, plan] = _steps("plan")
    assert _shell(validate, project, db, no_secrets).returncode == 0
    planned = _shell(plan, project, db, no_secrets)
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert "Summaries, reviewed" in (project / "plan.md").read_text()

    agents.write_text(agents.read_text().replace("headers: {X-Agent-Token: {env: AGENT_TOKEN}}",
                                                 "headers: {X-Agent-Token: {env: AGENT_TOKEN}, X-Trace: {env: AGENT_TOKEN}}"))
    subprocess.run([*git, "commit", "-qam", "header"], cwd=project, check=True)
    assert _shell(plan, project, db, {**no_secrets, **ENV}).returncode == 0
    assert "declaration changed since" in (project / "plan.md").read_text()
    # merged: the apply job sends what changed since the commit before the push
    subprocess.run([*git, "checkout", "-q", "main"], cwd=project, check=True)
    subprocess.run([*git, "merge", "-q", "--squash", "change"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "merge"], cwd=project, check=True)
    [apply] = _steps("apply")
    applied = _shell(apply, project, db, {**os.environ, **ENV})
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "Apply complete" in applied.stdout and "config.headers" in applied.stdout
