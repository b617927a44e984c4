"""The pull recipe (examples/pull-ui-edits.yml) and the action's ``command: pull``: a scheduled job
that runs ``pull --write`` through the action and opens a pull request with the diff."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from reconciler.cli.main import main
from tests.pull.helpers import ENV, ui

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def action_step(name: str) -> dict[str, Any]:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    return dict(next(s for s in action["runs"]["steps"] if s.get("name") == name))


def run_step(name: str, cwd: Path, **env: str) -> tuple[int, dict[str, str]]:
    outputs = cwd / "github-output"
    outputs.write_text("")
    full = {**os.environ, **ENV, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "RUNNER_TEMP": str(cwd),
            "GITHUB_OUTPUT": str(outputs), "GITHUB_STEP_SUMMARY": str(cwd / "summary.md"), **env}
    full.pop("RECONCILER_BASE_URL", None)
    done = subprocess.run(["bash", "-e", "-c", action_step(name)["run"]], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=120)
    return done.returncode, dict(line.split("=", 1) for line in outputs.read_text().splitlines() if "=" in line)


def test_the_recipe_is_a_scheduled_job_that_pulls_and_opens_a_pull_request() -> None:
    workflow = yaml.safe_load((ROOT / "examples/pull-ui-edits.yml").read_text())
    assert workflow[True]["schedule"]  # "on:" reads as a boolean key in YAML 1.1
    job = workflow["jobs"]["pull"]
    assert job["timeout-minutes"] <= 30
    steps = job["steps"]
    pull = next(s for s in steps if s.get("uses") == "./")
    assert pull["with"] == {"paths": "manifests", "command": "pull"}
    external = [s["uses"] for s in steps if s.get("uses", "./") != "./"]
    assert external and all(re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", u) for u in external)
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["persist-credentials"] is False
    opened = next(s for s in steps if s.get("uses", "").startswith("peter-evans/create-pull-request@"))
    assert opened["if"] == "steps.pull.outputs.changes == 'true'"


def test_the_action_accepts_command_pull_and_writes_the_edits(tmp_path: Path, monkeypatch: Any) -> None:
    if not (BIN / "reconciler").exists():
        import pytest

        pytest.skip("the reconciler console script is not installed next to this Python")
    shutil.copytree(ROOT / "manifests", tmp_path / "manifests")
    db = tmp_path / "live.db"
    for k, v in {**ENV, "VENDOR_A_KEY": "k", "AGENT_TOKEN": "t"}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("RECONCILER_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(main, ["apply", "manifests", "--auto-approve", "--emulator", str(db)]).exit_code == 0
    code, out = run_step("Choose plan or apply", tmp_path, MODE="auto", COMMAND="pull", EVENT="schedule")
    assert (code, out["mode"]) == (0, "pull")
    env = {"PATHS": "manifests", "EXTRA": f"--emulator {db}", "VENDOR_A_KEY": "k", "AGENT_TOKEN": "t"}
    assert run_step("Pull", tmp_path, **env) == (0, {"exit-code": "0", "changes": "false"})
    before = {p: p.read_bytes() for p in (tmp_path / "manifests").rglob("*") if p.is_file()}
    with ui(tmp_path) as api:
        prompt = api.c.get("/v2/prompts", params={"limit": 100}).json()["prompts"][0]
        api.c.patch(f"/v2/prompts/{prompt['id']}", json={"description": "edited in the UI"}).raise_for_status()
    assert run_step("Pull", tmp_path, **env) == (0, {"exit-code": "2", "changes": "true"})
    changed = [p for p, data in before.items() if p.read_bytes() != data]
    assert len(changed) == 1 and b"edited in the UI" in changed[0].read_bytes()
    assert "description: update" in (tmp_path / "summary.md").read_text()
