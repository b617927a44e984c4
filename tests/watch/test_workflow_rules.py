"""The GitHub Action and the workflow example follow the rules actionlint and zizmor check: every
third-party action pinned by a full commit SHA, checkout without persisted credentials, no
``secrets[...]`` lookup (it hands the runner every secret), a timeout on every job, strict shell."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
FILES = [ROOT / "action.yml", ROOT / "examples/github-actions.yml"]


def steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    if "runs" in doc:
        return list(doc["runs"]["steps"])
    return [s for job in doc["jobs"].values() for s in job["steps"]]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_action_is_pinned_by_a_commit_sha(path: Path) -> None:
    uses = [s["uses"] for s in steps(yaml.safe_load(path.read_text())) if "uses" in s]
    assert uses
    for ref in uses:
        if ref.startswith("./"):
            continue
        assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", ref), ref
    for line in path.read_text().splitlines():  # the version a SHA stands for, for the reader (and Dependabot)
        if re.search(r"uses: [\w.-]+/[\w./-]+@[0-9a-f]{40}", line):
            assert re.search(r"# v\d+\.\d+\.\d+$", line), line


def test_checkout_keeps_no_credentials_and_jobs_have_timeouts_and_no_secret_lookup() -> None:
    text = (ROOT / "examples/github-actions.yml").read_text()
    workflow = yaml.safe_load(text)
    assert "secrets[" not in text
    for name, job in workflow["jobs"].items():
        assert isinstance(job.get("timeout-minutes"), int), name
        for step in job["steps"]:
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False, name
    assert workflow["permissions"] == {}


def test_every_shell_step_is_strict() -> None:
    for step in steps(yaml.safe_load((ROOT / "action.yml").read_text())):
        if "run" in step:
            assert step["run"].lstrip().startswith("set -euo pipefail") or "\nset -euo pipefail" in step["run"], \
                step.get("name")


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
def test_the_action_scripts_pass_shellcheck(tmp_path: Path) -> None:
    for i, step in enumerate(s for s in steps(yaml.safe_load((ROOT / "action.yml").read_text())) if "run" in s):
        script = tmp_path / f"step{i}.sh"
        script.write_text("#!/usr/bin/env bash\n" + re.sub(r"\$\{\{[^}]*\}\}", "x", step["run"]))
        done = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (step.get("name"), done.stdout)


@pytest.mark.skipif(shutil.which("actionlint") is None, reason="actionlint is not installed")
def test_the_workflow_passes_actionlint() -> None:
    done = subprocess.run(["actionlint", str(ROOT / "examples/github-actions.yml")], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stdout


def zizmor() -> str | None:
    """zizmor from the dev extra (next to this interpreter), or on PATH."""
    beside = Path(sys.executable).parent / "zizmor"
    return str(beside) if beside.exists() else shutil.which("zizmor")


@pytest.mark.skipif(zizmor() is None, reason="zizmor is not installed")
def test_the_action_and_every_workflow_example_have_no_medium_or_high_zizmor_finding() -> None:
    files = [ROOT / "action.yml", *sorted((ROOT / "examples").glob("*.yml"))]
    done = subprocess.run([str(zizmor()), "--offline", "--min-severity", "medium", *map(str, files)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
