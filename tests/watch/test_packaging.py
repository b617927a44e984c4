"""The packaging around the command: the Docker image, the Kubernetes example, the composite GitHub
Action and the pre-commit hook. Each is checked for what it must be, and run where it can be here."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from reconciler import __version__
from reconciler.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((Path(__file__).parent / "data" / "github-action.schema.json").read_text())
BIN = Path(sys.executable).parent


def action() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "action.yml").read_text())
    return loaded


def step(name: str) -> dict[str, Any]:
    return next(s for s in action()["runs"]["steps"] if s.get("name") == name)


# ---------------------------------------------------------------------- the GitHub Action


def test_action_yml_is_valid_against_the_action_metadata_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator(SCHEMA).validate(action())


@pytest.mark.parametrize("breakage", ["output without value", "run without shell", "unknown key", "bad input name"])
def test_the_schema_rejects_a_broken_action(breakage: str) -> None:
    broken = action()
    if breakage == "output without value":
        del broken["outputs"]["changes"]["value"]
    elif breakage == "run without shell":
        del step_of(broken, "Validate")["shell"]
    elif breakage == "unknown key":
        broken["runs"]["entrypoint"] = "x"
    else:
        broken["inputs"]["bad name"] = {"description": "x"}
    assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(broken))


def step_of(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in doc["runs"]["steps"] if s.get("name") == name)


def test_action_expressions_refer_to_inputs_and_steps_that_exist() -> None:
    text = (ROOT / "action.yml").read_text()
    ids = {s["id"] for s in action()["runs"]["steps"] if "id" in s}
    assert set(re.findall(r"steps\.([\w-]+)\.outputs", text)) <= ids
    assert set(re.findall(r"inputs\.([\w-]+)", text)) <= set(action()["inputs"])


def run_step(name: str, tmp: Path, cwd: Path = ROOT, **env: str) -> dict[str, str]:
    """Run one `run:` step of the action with bash, as the runner would (in ``cwd``); returns its outputs."""
    outputs, summary = tmp / "output", tmp / "summary"
    outputs.write_text("")
    full = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "RUNNER_TEMP": str(tmp),
            "GITHUB_OUTPUT": str(outputs), "GITHUB_STEP_SUMMARY": str(summary), "VENDOR_A_KEY": "k",
            "AGENT_TOKEN": "t", **env}
    full.pop("RECONCILER_BASE_URL", None)
    result = subprocess.run(["bash", "-e", "-c", step(name)["run"]], cwd=cwd, env=full, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return dict(line.split("=", 1) for line in outputs.read_text().splitlines())


def test_the_action_plans_on_a_pull_request_and_applies_on_a_push(tmp_path: Path) -> None:
    if not (BIN / "reconciler").exists():
        pytest.skip("the reconciler console script is not installed next to this Python")
    assert run_step("Choose plan or apply", tmp_path, MODE="auto", EVENT="pull_request") == {"mode": "plan",
                                                                                             "since": ""}
    assert run_step("Choose plan or apply", tmp_path, MODE="auto", EVENT="push", SINCE="abc123") == {
        "mode": "apply", "since": "abc123"}
    assert run_step("Choose the tree", tmp_path, PATHS="manifests") == {"args": "manifests"}
    db = tmp_path / "state.db"
    extra = f"--emulator {db}"
    assert run_step("Plan", tmp_path, PATHS="manifests", EXTRA=extra) == {"exit-code": "2", "changes": "true"}
    comment = (tmp_path / "reconciler-plan.md").read_text()  # what the comment step posts
    assert "Integration/vendor-a-prod" in comment and comment in (tmp_path / "summary").read_text()
    comment_step = step("Comment the plan")
    assert comment_step["with"]["path"] == "${{ runner.temp }}/reconciler-plan.md"
    run_step("Apply", tmp_path, PATHS="manifests", EXTRA=extra)
    assert run_step("Plan", tmp_path, PATHS="manifests", EXTRA=extra) == {"exit-code": "0", "changes": "false"}


def test_the_action_runs_on_the_environments_of_the_project_file(tmp_path: Path) -> None:
    if not (BIN / "reconciler").exists():
        pytest.skip("the reconciler console script is not installed next to this Python")

    def tree(**env: str) -> str:
        return run_step("Choose the tree", tmp_path, PATHS="manifests", **env)["args"]

    assert tree(ENVIRONMENTS="all") == "--all"
    assert tree(ENVIRONMENTS="staging production", PROJECT="envs/reconciler.yaml") == \
        "--env staging --env production --project envs/reconciler.yaml"
    shutil.copytree(ROOT / "examples/environments", tmp_path / "environments")
    here = tmp_path / "environments"
    spaces = {"RECONCILER_EMULATOR_SPACES": "staging,production"}
    run_step("Validate", tmp_path, here, PATHS="--all")
    assert run_step("Plan", tmp_path, here, PATHS="--all", **spaces) == {"exit-code": "2", "changes": "true"}
    comment = (tmp_path / "reconciler-plan.md").read_text()
    assert "## Environment `staging`" in comment and "## Environment `production`" in comment
    run_step("Apply", tmp_path, here, PATHS="--all", **spaces)
    assert run_step("Plan", tmp_path, here, PATHS="--all", **spaces) == {"exit-code": "0", "changes": "false"}


def test_the_workflow_example_uses_the_action_with_its_inputs() -> None:
    workflow = yaml.safe_load((ROOT / "examples/github-actions.yml").read_text())
    uses = [s for job in workflow["jobs"].values() for s in job["steps"] if s.get("uses") == "./"]
    assert {s["with"]["mode"] for s in uses} == {"plan", "apply"}
    assert all(set(s["with"]) <= set(action()["inputs"]) for s in uses)
    assert workflow["jobs"]["plan"]["permissions"]["pull-requests"] == "write"  # to comment


# ---------------------------------------------------------------------- pre-commit


def test_the_pre_commit_hook_runs_reconciler_validate_on_the_tree(tmp_path: Path) -> None:
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert {"id", "name", "entry", "language"} <= set(hook) and hook["language"] == "python"
    assert hook["entry"] == "reconciler validate" and hook["pass_filenames"] is False
    assert re.search(hook["files"], "manifests/research/prompts.yaml")
    assert re.search(hook["files"], "manifests/research/data/golden-tickets.jsonl")
    command = [str(BIN / "reconciler"), *shlex.split(hook["entry"])[1:], *hook["args"]]
    shutil.copytree(ROOT / "manifests", tmp_path / "manifests")
    assert subprocess.run(command, cwd=tmp_path, capture_output=True, timeout=60).returncode == 0
    (tmp_path / "manifests" / "broken.yaml").write_text("kind: Prompt\nname: x\n")
    failed = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert failed.returncode == 1 and "broken.yaml" in failed.stderr + failed.stdout


# ---------------------------------------------------------------------- Kubernetes


def test_kubernetes_example_runs_watch_per_tree_and_is_scraped_through_its_service() -> None:
    deployments = list(yaml.safe_load_all((ROOT / "examples/kubernetes/deployment.yaml").read_text()))
    services = {s["metadata"]["name"]: s for s in yaml.safe_load_all((ROOT / "examples/kubernetes/service.yaml")
                                                                     .read_text())}
    trees = set()
    for d in deployments:
        assert d["kind"] == "Deployment" and d["spec"]["replicas"] == 1 and d["spec"]["strategy"]["type"] == "Recreate"
        pod = d["spec"]["template"]
        assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
        (container,) = pod["spec"]["containers"]
        args = container["args"]
        assert args[0] == "watch"
        ctx = main.commands["watch"].make_context("watch", list(args[1:]))  # the CLI accepts them as written
        trees.add(ctx.params["paths"])
        host, port = ctx.params["metrics_addr"]
        (declared,) = container["ports"]
        assert declared["containerPort"] == port and host == "0.0.0.0"
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
        service = services[d["metadata"]["name"]]
        assert service["spec"]["selector"] == pod["metadata"]["labels"]
        assert service["spec"]["ports"][0]["targetPort"] == declared["name"]
    assert len(trees) == len(deployments) >= 2  # one watcher per tree


# ---------------------------------------------------------------------- Docker


def test_dockerfile_is_multi_stage_slim_non_root_with_reconciler_as_entrypoint() -> None:
    text = (ROOT / "Dockerfile").read_text()
    stages = re.findall(r"^FROM\s+(\S+)", text, flags=re.M)
    assert len(stages) >= 2 and "slim" in re.search(r"ARG PYTHON_IMAGE=(\S+)", text)[1]  # type: ignore[index]
    user = re.findall(r"^USER\s+(\S+)", text, flags=re.M)
    assert user and user[-1].split(":")[0] not in ("0", "root")
    assert re.search(r'^ENTRYPOINT \["reconciler"\]', text, flags=re.M)
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".venv" in ignored and ".git" in ignored


def _docker_unavailable() -> str | None:
    if shutil.which("docker") is None:
        return "no docker client on PATH"
    info = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=60)
    if info.returncode != 0:
        return "no docker daemon reachable (docker info: " + (info.stderr.strip().splitlines() or ["?"])[-1] + ")"
    return None


def test_the_docker_image_builds_and_runs_reconciler_version() -> None:
    why = _docker_unavailable()
    if why:
        pytest.skip(why)
    tag = f"reconciler-test:{uuid.uuid4().hex[:12]}"
    try:
        built = subprocess.run(["docker", "build", "-t", tag, str(ROOT)], capture_output=True, text=True, timeout=1200)
        assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
        version = subprocess.run(["docker", "run", "--rm", tag, "--version"], capture_output=True, text=True,
                                 timeout=120)
        assert version.returncode == 0 and f"reconciler, version {__version__}" in version.stdout
        uid = subprocess.run(["docker", "run", "--rm", "--entrypoint", "id", tag, "-u"], capture_output=True,
                             text=True, timeout=120)
        assert uid.stdout.strip() not in ("", "0")
    finally:
        subprocess.run(["docker", "image", "rm", "-f", tag], capture_output=True, timeout=120)

