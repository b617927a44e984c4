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


def _action_step(name: str) -> str:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    script: str = next(s["run"] for s in action["runs"]["steps"] if s.get("name") == name)
    return script


def _step(name: str, project: Path, env: dict[str, str], **step_env: str) -> tuple[
        subprocess.CompletedProcess[str], dict[str, str]]:
    """A step of the composite action (action.yml) run as the runner would: its ``env:`` given here,
    the runner's files in the project, this venv's reconciler on PATH. Returns it and its outputs."""
    outputs = project / "github-output"
    outputs.write_text("")
    full = {**env, "PATH": f"{Path(reconciler_bin()).parent}{os.pathsep}{os.environ['PATH']}",
            "RUNNER_TEMP": str(project), "GITHUB_OUTPUT": str(outputs),
            "GITHUB_STEP_SUMMARY": str(project / "summary.md"), **step_env}
    result = subprocess.run(["bash", "-e", "-c", _action_step(name)], cwd=project, env=full, capture_output=True,
                            text=True, timeout=120)
    return result, dict(line.split("=", 1) for line in outputs.read_text().splitlines() if "=" in line)


def test_github_actions_recipe_uses_the_action_with_since_auto() -> None:
    workflow = yaml.safe_load((ROOT / "examples/github-actions.yml").read_text())
    used = {job: next(s["with"] for s in spec["steps"] if s.get("uses") == "./")
            for job, spec in workflow["jobs"].items()}
    assert used["plan"] == {"paths": "manifests", "mode": "plan", "since": "auto"}
    assert used["apply"] == {"paths": "manifests", "mode": "apply", "since": "auto"}
    environments = used["plan-environments"]  # each overlay planned with its var file, one comment each
    assert environments["paths"] == "examples/environments/base examples/environments/overlays/${{ matrix.env }}"
    assert environments["extra-args"] == "--var-file examples/environments/overlays/${{ matrix.env }}/vars.yaml"
    assert environments["comment-header"] == "${{ matrix.env }}"
    assert set(workflow["jobs"]["plan"]["env"]) == {"RECONCILER_API_KEY"}  # no manifest secret to plan
    assert all(s.get("with", {}).get("fetch-depth") == 0 for job in workflow["jobs"].values()
               for s in job["steps"] if s.get("uses", "").startswith("actions/checkout"))


def test_github_actions_recipe_plans_a_pull_request_without_secrets_and_applies_on_merge(project: Path) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]

    def sh(*args: str) -> str:
        return subprocess.run([*git, *args], cwd=project, check=True, capture_output=True, text=True).stdout.strip()

    db = str(project / "state.db")
    emulator = f"--emulator {db}"
    assert subprocess.run([*git, "init", "-q", "-b", "main"], cwd=project).returncode == 0
    sh("add", "manifests")
    sh("commit", "-qm", "base")
    sh("remote", "add", "origin", str(project))  # what actions/checkout leaves: origin/<base branch>
    sh("fetch", "-q", "origin")
    base = sh("rev-parse", "HEAD")
    assert run(reconciler_bin(), "apply", "manifests", "--emulator", db, "--auto-approve",
               cwd=project).returncode == 0
    # a pull request: a description changes, and the agent gains a header (write-only: invisible live)
    sh("checkout", "-qb", "change")
    agents, prompts = project / "manifests/integrations/agents.yaml", project / "manifests/research/prompts.yaml"
    prompts.write_text(prompts.read_text().replace("Summarize a support ticket", "Summaries, reviewed"))
    sh("commit", "-qam", "description")
    no_secrets = {k: v for k, v in os.environ.items() if k not in (*ENV, "RECONCILER_BASE_URL")}
    chosen, mode = _step("Choose plan or apply", project, no_secrets, MODE="auto", EVENT="pull_request",
                         SINCE="auto", BASE_REF="main", BEFORE="")
    assert chosen.returncode == 0 and mode == {"mode": "plan", "since": base}, chosen.stderr
    assert _step("Validate", project, no_secrets, PATHS="manifests")[0].returncode == 0
    planned, out = _step("Plan", project, no_secrets, PATHS="manifests", EXTRA=emulator, SINCE=mode["since"])
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert out == {"exit-code": "2", "changes": "true"}
    assert "Summaries, reviewed" in (project / "reconciler-plan.md").read_text()  # the comment's body

    agents.write_text(agents.read_text().replace("headers: {X-Agent-Token: {env: AGENT_TOKEN}}",
                                                 "headers: {X-Agent-Token: {env: AGENT_TOKEN}, X-Trace: {env: AGENT_TOKEN}}"))
    sh("commit", "-qam", "header")
    planned, _ = _step("Plan", project, {**no_secrets, **ENV}, PATHS="manifests", EXTRA=emulator, SINCE=mode["since"])
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert "declaration changed since" in (project / "reconciler-plan.md").read_text()
    # merged: the apply job sends what changed since the commit before the push
    sh("checkout", "-q", "main")
    before = sh("rev-parse", "HEAD")
    sh("merge", "-q", "--squash", "change")
    sh("commit", "-qm", "merge")
    chosen, mode = _step("Choose plan or apply", project, no_secrets, MODE="auto", EVENT="push", SINCE="auto",
                         BASE_REF="", BEFORE=before)
    assert mode == {"mode": "apply", "since": before}
    applied, _ = _step("Apply", project, {**os.environ, **ENV}, PATHS="manifests", EXTRA=emulator,
                       SINCE=mode["since"])
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "Apply complete" in applied.stdout and "config.headers" in applied.stdout
