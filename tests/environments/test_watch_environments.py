"""watch --all: every environment of reconciler.yaml reconciled in one process (three environments
over two accounts, each account an emulator on a loopback socket; staging and production two spaces
of one), each cycle's lines and metrics labelled by its environment, the exit codes of watch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from click.testing import Result

from tests.conftest import free_port
from tests.environments.conftest import KEYS, prompts_in, stats
from tests.watch.helpers import PATIENCE, parse_metrics, receiving_notices


def test_watch_all_once_plans_every_environment_and_exits_2_on_drift_then_0_in_sync(
        project: dict[str, Any], cli: Callable[..., Result]) -> None:
    drifted = cli("watch", "--all", "--once")
    assert drifted.exit_code == 2, drifted.output
    assert [line for line in drifted.stdout.splitlines() if line.startswith("=== environment")] == \
        ["=== environment staging", "=== environment production", "=== environment research"]
    for env in ("staging", "production", "research"):
        assert f"{env}: cycle 1: Plan: 1 to create, 0 to update, 0 to delete; 1 drifted" in drifted.stderr
    assert cli("apply", "--all", "--auto-approve").exit_code == 0
    assert cli("watch", "--all", "--once").exit_code == 0


def test_watch_all_once_apply_heals_every_environment_on_its_own_account(
        project: dict[str, Any], cli: Callable[..., Result]) -> None:
    healed = cli("watch", "--all", "--once", "--apply")
    assert healed.exit_code == 0, healed.output
    for env, home in project["homes"].items():
        assert prompts_in(project["accounts"][home], project["spaces"][env]) == ["summarize-ticket"]
    assert cli("drift", "--all").exit_code == 0


def test_watch_env_runs_only_the_environments_named(project: dict[str, Any], cli: Callable[..., Result]) -> None:
    result = cli("watch", "--env", "research", "--once", "--apply")
    assert result.exit_code == 0, result.output
    assert "research: cycle 1:" in result.stderr and "staging" not in result.stderr
    assert prompts_in(project["accounts"]["main"], project["spaces"]["staging"]) == []


def test_watch_all_once_exits_1_when_one_environment_fails_and_still_runs_the_others(
        project: dict[str, Any], cli: Callable[..., Result], monkeypatch: Any) -> None:
    monkeypatch.setenv("LAB_API_KEY", "not-the-key-of-lab")
    result = cli("watch", "--all", "--once", "--apply")
    assert result.exit_code == 1, result.output
    assert "research: cycle 1: failed (1 in a row)" in result.stderr
    assert "not-the-key-of-lab" not in result.output
    assert prompts_in(project["accounts"]["main"], project["spaces"]["production"]) == ["summarize-ticket"]


def requests_to(project: dict[str, Any]) -> int:
    return sum(sum(stats(url).values()) for url in project["accounts"].values())


def test_watch_all_refuses_an_unset_key_or_a_tree_that_does_not_load_before_any_request(
        project: dict[str, Any], cli: Callable[..., Result], monkeypatch: Any) -> None:
    sent = requests_to(project)
    monkeypatch.delenv("LAB_API_KEY")
    unset = cli("watch", "--all", "--once")
    assert unset.exit_code == 1 and "environment research: its key variable LAB_API_KEY is not set" in unset.output
    monkeypatch.setenv("LAB_API_KEY", KEYS["LAB_API_KEY"])
    (project["root"] / "vars" / "research.yaml").write_text("env: research\n")  # its space variable gone
    broken = cli("watch", "--all", "--once")
    assert broken.exit_code == 1, broken.output
    assert "[research] " in broken.output and "undefined variable 'space'" in broken.output
    assert requests_to(project) == sent


def test_watch_all_refuses_paths_and_endpoint_flags(project: dict[str, Any], cli: Callable[..., Result]) -> None:
    assert "give no PATH" in cli("watch", "--all", "base").output
    assert "--base-url: with --env and --all" in cli("watch", "--all", "--base-url", project["accounts"]["lab"]).output


def test_watch_all_serves_each_environments_metrics_with_its_label_and_stops_on_sigterm(
        project: dict[str, Any]) -> None:
    port = free_port()
    env = {**os.environ, **KEYS}
    env.pop("RECONCILER_BASE_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "reconciler", "watch", "--all", "--apply", "--interval", "500ms",
                             "--metrics-addr", f"127.0.0.1:{port}"], cwd=project["root"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + PATIENCE
        ok: dict[str, float] = {}
        while time.monotonic() < deadline and not (len(ok) == 3 and min(ok.values()) >= 2):
            try:
                samples = parse_metrics(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text)
            except httpx.TransportError:
                samples = {}
            ok = {dict(labels)["environment"]: value for (name, labels), value in samples.items()
                  if name == "reconciler_cycles_total" and ("outcome", "ok") in labels}
            time.sleep(0.2)
        assert sorted(ok) == ["production", "research", "staging"] and min(ok.values()) >= 2, ok
        in_sync = {dict(labels)["environment"] for (name, labels), value in samples.items()
                   if name == "reconciler_resources" and ("state", "in_sync") in labels and value == 1}
        assert in_sync == {"staging", "production", "research"}
        assert httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10).status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=PATIENCE)
    assert proc.returncode == 0, err
    for name in ("staging", "production", "research"):
        assert f"{name}: SIGTERM: stopped after" in err


def test_watch_all_git_pull_pulls_once_a_round_so_every_environment_reads_one_commit(
        project: dict[str, Any], cli: Callable[..., Result], monkeypatch: Any) -> None:
    import json
    import shutil

    if shutil.which("git") is None:
        pytest.skip("git is not installed")

    def git(*args: str, cwd: Any) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main",
                        *args], cwd=cwd, check=True, capture_output=True, timeout=60)

    origin = project["root"]
    git("init", cwd=origin)
    git("add", ".", cwd=origin)
    git("commit", "-m", "first", cwd=origin)
    clone = origin / "clone"
    git("clone", str(origin), str(clone), cwd=origin)
    monkeypatch.chdir(clone)
    assert cli("apply", "--all", "--auto-approve").exit_code == 0
    prompts = origin / "base" / "prompts.yaml"
    prompts.write_text(prompts.read_text().replace("Summaries for", "Pulled for"))
    git("commit", "-am", "second", cwd=origin)

    result = cli("watch", "--all", "--once", "--git-pull", "--log-format", "json")

    assert result.exit_code == 2, result.output  # every environment read the new commit: drift in each
    events = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert [e["outcome"] for e in events if e["event"] == "git_pull"] == ["ok"]
    assert sorted(e["environment"] for e in events if e["event"] == "cycle" and e["drifted"] == 1) == \
        ["production", "research", "staging"]


def test_watch_all_notices_name_their_environment(project: dict[str, Any], cli: Callable[..., Result]) -> None:
    with receiving_notices() as (url, received):
        result = cli("watch", "--all", "--once", "--notify", url)
    assert result.exit_code == 2, result.output
    drift = sorted((n["environment"], n["text"].split(":")[0]) for n in received if n["event"] == "drift")
    assert drift == [("production", "production"), ("research", "research"), ("staging", "staging")]
    assert "secret-token" not in result.output
