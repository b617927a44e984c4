"""``--metrics-file`` (plan, apply, drift) and ``--log-format json`` (every command), run in-process
with click's runner against the emulator over a real socket; metrics files are read back with
prometheus_client's parser."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main
from tests.watch.helpers import ENV, copy_tree, parse_metrics

Cli = Callable[..., Result]


@pytest.fixture
def cli(server: tuple[str, Any], monkeypatch: pytest.MonkeyPatch) -> Cli:
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    for name in ("RECONCILER_BASE_URL", "RECONCILER_LOG_FORMAT"):
        monkeypatch.delenv(name, raising=False)

    def run(*args: str, key: str | None = None) -> Result:
        command = list(args)
        if command[0] in ("plan", "apply", "drift", "export", "watch"):
            command += ["--base-url", server[0]]
        env = {"RECONCILER_API_KEY": key} if key else None  # a wrong key: a run that fails at once (401)
        return CliRunner(env=env).invoke(main, command, catch_exceptions=False)

    return run


def metric(path: Path, name: str, **labels: str) -> float:
    found = parse_metrics(path.read_text())
    return found.get((name, frozenset(labels.items())), 0.0)


def events(result: Result) -> list[dict[str, Any]]:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    return [json.loads(line) for line in lines]  # every line is one JSON event


def test_plan_apply_and_drift_write_their_metrics_for_the_textfile_collector(
        cli: Cli, tmp_path: Path, server: tuple[str, Any]) -> None:
    tree = copy_tree(tmp_path / "manifests")
    prom = tmp_path / "textfile" / "reconciler.prom"
    prom.parent.mkdir()

    planned = cli("plan", str(tree), "--metrics-file", str(prom))
    assert planned.exit_code == 0, planned.output
    assert metric(prom, "reconciler_planned_operations", action="create") == 7
    assert metric(prom, "reconciler_resources", kind="Integration", state="drifted") == 3  # missing: drifted
    assert metric(prom, "reconciler_api_requests_total", method="GET", status="200") > 0
    assert metric(prom, "reconciler_cycles_total", outcome="ok") == 1
    assert metric(prom, "reconciler_cycle_duration_seconds_count") == 1
    first_success = metric(prom, "reconciler_last_successful_cycle_timestamp_seconds")
    assert first_success > 0

    applied = cli("apply", str(tree), "--auto-approve", "--metrics-file", str(prom))
    assert applied.exit_code == 0, applied.output
    assert metric(prom, "reconciler_apply_operations_total", action="create", outcome="applied") == 9
    posts = sum(v for (name, labels), v in parse_metrics(prom.read_text()).items()
                if name == "reconciler_api_requests_total" and ("method", "POST") in labels)
    assert posts >= 8  # 7 creates and a prompt's restriction
    assert metric(prom, "reconciler_resources", kind="Integration", state="in_sync") == 3  # after the apply

    api = httpx.Client(base_url=server[0], headers={"Authorization": "Bearer admin-key"})
    space = next(s for s in api.get("/v2/spaces").json()["spaces"] if s["name"] == "research")
    api.post("/v2/prompts", json={"space_id": space["id"], "name": "stray", "version": {
        "commit_message": "x", "provider": "VENDOR_A", "messages": [{"role": "user", "content": "hi"}]}}
    ).raise_for_status()
    drifted = cli("drift", str(tree), "--metrics-file", str(prom))
    assert drifted.exit_code == 0, drifted.output  # an unmanaged resource is not drift
    assert metric(prom, "reconciler_resources", kind="Prompt", state="unmanaged") == 1
    assert metric(prom, "reconciler_resources", kind="Prompt", state="in_sync") == 1
    assert metric(prom, "reconciler_apply_operations_total", action="create", outcome="applied") == 0  # this run's

    # A failed run (the key is refused) still writes its figures, and keeps the last success time.
    last_good = metric(prom, "reconciler_last_successful_cycle_timestamp_seconds")
    failed = cli("drift", str(tree), "--metrics-file", str(prom), key="revoked-key")
    assert failed.exit_code == 1
    assert metric(prom, "reconciler_cycles_total", outcome="error") == 1
    assert metric(prom, "reconciler_last_successful_cycle_timestamp_seconds") == last_good >= first_success
    assert sorted(p.name for p in prom.parent.iterdir()) == ["reconciler.prom"]  # written atomically: no leftovers


def test_metrics_file_in_a_missing_directory_is_refused_before_any_request(cli: Cli, tmp_path: Path) -> None:
    tree = copy_tree(tmp_path / "manifests")
    result = cli("plan", str(tree), "--metrics-file", str(tmp_path / "nope" / "x.prom"))
    assert result.exit_code == 1 and "does not exist" in result.stderr


def test_log_format_json_writes_one_event_a_line_with_resource_action_outcome_and_timing(
        cli: Cli, tmp_path: Path) -> None:
    tree = copy_tree(tmp_path / "manifests")
    applied = cli("apply", str(tree), "--auto-approve", "--log-format", "json", "-v")
    assert applied.exit_code == 0, applied.output
    found = events(applied)
    resources = [e for e in found if e["event"] == "resource"]
    assert len(resources) == 9 and all(e["outcome"] == "applied" for e in resources)
    assert {"ts", "resource", "action", "outcome", "duration_s"} <= set(resources[0])
    assert ("Integration/vendor-a-prod", "create") in {(e["resource"], e["action"]) for e in resources}
    planned = [e for e in found if e["event"] == "plan"]  # what the plan would do, one event an object
    assert len(planned) == 7 and {e["outcome"] for e in planned} == {"planned"}
    requests = [e for e in found if e["event"] == "request"]  # -v: each request as an event
    assert requests and {"method", "path", "status", "duration_s"} <= set(requests[0])
    assert found[-1]["event"] == "command" and found[-1]["outcome"] == "ok" and found[-1]["exit_code"] == 0
    assert ENV["VENDOR_A_KEY"] not in applied.output and ENV["AGENT_TOKEN"] not in applied.output

    failing = cli("plan", str(tree), "--log-format", "json", key="revoked-key")
    assert failing.exit_code == 1
    error, command = events(failing)[-2:]  # the error is an event too, not a loose line
    assert error["event"] == "error" and "401" in error["message"] and "revoked-key" not in failing.output
    assert command == {**command, "event": "command", "outcome": "error", "exit_code": 1}


def test_every_command_accepts_log_format(cli: Cli, tmp_path: Path) -> None:
    for name, command in main.commands.items():
        assert any(p.name == "log_format" for p in command.params), name
    tree = copy_tree(tmp_path / "manifests")
    valid = cli("validate", str(tree), "--log-format", "json")
    assert valid.exit_code == 0 and events(valid)[-1]["outcome"] == "ok"
    (tree / "bad.yaml").write_text("kind: Integration\nname: x\n")
    invalid = cli("validate", str(tree), "--log-format", "json")
    assert invalid.exit_code == 1 and events(invalid)[-1]["outcome"] == "manifest_error"
    schema = cli("schema", "--log-format", "json")
    assert schema.exit_code == 0 and json.loads(schema.stdout)["$schema"]
    assert events(schema)[-1]["command"] == "schema"


def test_watch_once_reports_drift_by_its_exit_code(cli: Cli, tmp_path: Path) -> None:
    tree = copy_tree(tmp_path / "manifests")
    assert cli("watch", str(tree), "--once").exit_code == 2  # nothing applied yet: drift left
    assert cli("watch", str(tree), "--once", "--apply").exit_code == 0  # healed
    assert cli("watch", str(tree), "--once").exit_code == 0


@pytest.mark.parametrize(("args", "message"), [
    (["--interval", "0s"], "positive duration"),
    (["--interval", "soon"], "positive duration"),
    (["--metrics-addr", "localhost"], "HOST:PORT"),
    (["--rotate-secrets"], "on every cycle"),
    (["--since", "HEAD~1"], "on every cycle"),
])
def test_watch_refuses_bad_options_before_it_starts(cli: Cli, tmp_path: Path, args: list[str], message: str) -> None:
    result = cli("watch", str(tmp_path), *args)
    assert result.exit_code == 1 and message in result.stderr


def test_watch_git_pull_needs_a_git_work_tree(cli: Cli, tmp_path: Path) -> None:
    tree = copy_tree(tmp_path / "manifests")
    result = cli("watch", str(tree), "--git-pull", "--once")
    assert result.exit_code == 1 and "not in a git work tree" in result.stderr


def test_watch_prunes_only_with_prune(cli: Cli, tmp_path: Path, server: tuple[str, Any]) -> None:
    tree = copy_tree(tmp_path / "manifests")
    assert cli("watch", str(tree), "--once", "--apply").exit_code == 0
    api = httpx.Client(base_url=server[0], headers={"Authorization": "Bearer admin-key"})
    space = next(s for s in api.get("/v2/spaces").json()["spaces"] if s["name"] == "research")
    api.post("/v2/prompts", json={"space_id": space["id"], "name": "stray", "version": {
        "commit_message": "x", "provider": "VENDOR_A", "messages": [{"role": "user", "content": "hi"}]}}
    ).raise_for_status()

    def prompts() -> list[str]:
        return sorted(p["name"] for p in api.get("/v2/prompts", params={"space_id": space["id"]}).json()["prompts"])

    kept = cli("watch", str(tree), "--once", "--apply", "--log-format", "json")
    assert kept.exit_code == 0 and prompts() == ["stray", "summarize-ticket"]  # unmanaged: listed, left alone
    cycle = [e for e in events(kept) if e["event"] == "cycle"][-1]
    assert cycle["unmanaged"] == 1 and cycle["drifted"] == 0
    listed = [e for e in events(kept) if e["event"] == "plan"]
    assert listed == [{**listed[0], "cycle": 1, "resource": "Prompt/research/stray", "outcome": "unmanaged"}]
    pruned = cli("watch", str(tree), "--once", "--apply", "--prune")
    assert pruned.exit_code == 0, pruned.output
    assert prompts() == ["summarize-ticket"]


def test_a_signal_just_outside_the_executors_phases_still_ends_watch_cleanly(
        cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import signal

    from reconciler import watch

    real_run_apply = watch.run_apply

    def signalled_before_any_call(*args: Any, **kwargs: Any) -> Any:
        os.kill(os.getpid(), signal.SIGTERM)  # the signal comes as the apply begins: no call may start
        return real_run_apply(*args, **kwargs)

    monkeypatch.setattr(watch, "run_apply", signalled_before_any_call)
    tree = copy_tree(tmp_path / "manifests")
    before = signal.getsignal(signal.SIGTERM)
    result = cli("watch", str(tree), "--apply", "--interval", "1h")
    assert result.exit_code == 0, result.output
    assert "apply interrupted: 0 calls applied, " in result.stderr
    assert "SIGTERM: stopped after 1 cycle(s)" in result.stderr
    assert signal.getsignal(signal.SIGTERM) == before  # its handlers are put back


def test_watch_git_pull_fast_forwards_before_each_cycle_and_survives_a_failed_pull(
        cli: Cli, tmp_path: Path, server: tuple[str, Any]) -> None:
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git is not installed")

    def git(*args: str, cwd: Path) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main",
                        *args], cwd=cwd, check=True, capture_output=True, timeout=60)

    origin = tmp_path / "origin"
    copy_tree(origin / "manifests")
    git("init", cwd=origin)
    git("add", ".", cwd=origin)
    git("commit", "-m", "first", cwd=origin)
    git("clone", str(origin), str(tmp_path / "clone"), cwd=tmp_path)
    tree = tmp_path / "clone" / "manifests"
    assert cli("watch", str(tree), "--once", "--apply", "--git-pull").exit_code == 0

    prompts = origin / "manifests/research/prompts.yaml"
    prompts.write_text(prompts.read_text().replace("Summarize a support ticket", "Pulled from git"))
    git("commit", "-am", "second", cwd=origin)
    assert cli("watch", str(tree), "--once", "--git-pull").exit_code == 2  # pulled: the new commit is drift
    assert "Pulled from git" in (tree / "research/prompts.yaml").read_text()

    shutil.rmtree(origin)  # the remote is gone: the pull fails, the cycle goes on with the files as they are
    result = cli("watch", str(tree), "--once", "--apply", "--git-pull", "--log-format", "json")
    assert result.exit_code == 0, result.output
    pulls = [e for e in events(result) if e["event"] == "git_pull"]
    assert pulls and pulls[0]["outcome"] == "error"


def test_watch_takes_variables_as_plan_does(cli: Cli, tmp_path: Path, server: tuple[str, Any]) -> None:
    tree = copy_tree(tmp_path / "manifests")
    prompts = tree / "research/prompts.yaml"
    prompts.write_text(prompts.read_text().replace("Summarize a support ticket", "Summaries for ${var.env}"))
    (tmp_path / "vars.yaml").write_text("env: staging\n")
    result = cli("watch", str(tree), "--once", "--apply", "--var-file", str(tmp_path / "vars.yaml"))
    assert result.exit_code == 0, result.output
    api = httpx.Client(base_url=server[0], headers={"Authorization": "Bearer admin-key"})
    space = next(s for s in api.get("/v2/spaces").json()["spaces"] if s["name"] == "research")
    (prompt,) = api.get("/v2/prompts", params={"space_id": space["id"]}).json()["prompts"]
    assert prompt["description"] == "Summaries for staging"
    assert cli("watch", str(tree), "--once", "--var", "env=prod").exit_code == 2  # another value: drift


def test_a_notice_that_cannot_be_delivered_is_logged_and_the_cycle_goes_on(cli: Cli, tmp_path: Path) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Refusing(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(500)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    hook = ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    try:
        tree = copy_tree(tmp_path / "manifests")
        url = f"http://127.0.0.1:{hook.server_address[1]}/secret-path"
        result = cli("watch", str(tree), "--once", "--notify", url, "--log-format", "json")
    finally:
        hook.shutdown()
        hook.server_close()
    assert result.exit_code == 2  # drift left: the failed notice changes nothing else
    notices = [e for e in events(result) if e["event"] == "notify"]
    assert notices == [{**notices[0], "kind": "drift", "outcome": "HTTP 500"}]
    assert "secret-path" not in result.output


def test_watch_refuses_a_metrics_address_in_use(cli: Cli, tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli("watch", str(tmp_path), "--metrics-addr", f"127.0.0.1:{port}")
    assert result.exit_code == 1 and "cannot listen" in result.stderr


def test_log_format_json_says_a_saved_plan_and_a_load_warning_as_events_too(cli: Cli, tmp_path: Path) -> None:
    tree = copy_tree(tmp_path / "manifests")
    out = tmp_path / "plan.json"
    result = cli("plan", str(tree), "--log-format", "json", "--out", str(out), "--var", "unused=1")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    found = [json.loads(line) for line in lines]  # every stderr line is an event: none is plain text
    saved = [e for e in found if e["event"] == "plan_saved"]
    assert saved and saved[0]["path"] == str(out)
    warned = [e for e in found if e["event"] == "warning"]
    assert warned and "unused" in warned[0]["message"]
    text = cli("plan", str(tree), "--out", str(out), "--var", "unused=1")
    assert "Saved the plan to" in text.stderr and "Warning:" in text.stderr
