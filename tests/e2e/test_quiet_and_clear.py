"""Quiet when nothing happens, clear when something does, end to end over the emulator's socket:
in sync is one line, --quiet says nothing unless something changed or failed, apply lists each call
once with the ids it really used, refuses off a terminal before showing or reading anything, and
the live read shows its progress per kind on a terminal."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

from reconciler.cli.progress import read_progress, request_kind
from reconciler.client.http import open_client
from reconciler.client.live import read_live
from reconciler.client.settings import Endpoint
from reconciler.manifests import load_manifests
from tests.conftest import EMULATOR_ADMIN
from tests.e2e.test_cli_e2e import edit

Cli = Callable[..., Result]


def test_a_plan_in_sync_is_one_line(cli: Cli, tree: Path) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    result = cli("plan", str(tree))
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "No changes. Live state matches the manifests (2 write-only secrets cannot be compared: --rotate KIND/NAME "
        "or --since REF sends them; -v lists them)."]
    assert "Plan: 0 to create" not in result.stdout
    verbose = cli("plan", str(tree), "-v")
    assert "Integration/vendor-a-prod: config.api_key" in verbose.stdout


def test_quiet_says_nothing_in_sync_and_shows_drift_when_there_is_some(cli: Cli, tree: Path) -> None:
    applied = cli("apply", str(tree), "--auto-approve", "--quiet")
    assert applied.exit_code == 0, applied.output
    assert applied.stdout == "" and applied.stderr == ""  # cron: a successful apply is silent
    for command in ("plan", "drift"):
        result = cli(command, str(tree), "--quiet")
        assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    edit(tree / "research/prompts.yaml", "description: Summarize a support ticket", "description: Summaries")
    drifted = cli("drift", str(tree), "-q")
    assert drifted.exit_code == 2 and "~ Prompt/research/summarize-ticket" in drifted.stdout


def test_quiet_apply_still_reports_what_failed(cli: Cli, tree: Path, server: tuple[str, Any]) -> None:
    import httpx

    httpx.post(f"{server[0]}/_emulator/faults", headers=EMULATOR_ADMIN, json={"route": "POST /v2/prompts", "status": 422, "times": 5}
               ).raise_for_status()
    result = cli("apply", str(tree), "--auto-approve", "--quiet")
    assert result.exit_code == 1
    assert "Failed: 1" in result.stdout and "Prompt/research/summarize-ticket POST /v2/prompts: 422" in result.stdout
    assert "applied  " not in result.stdout  # not the calls that went well


def test_apply_lists_each_call_once_with_the_ids_it_used(cli: Cli, tree: Path) -> None:
    result = cli("apply", str(tree), "--auto-approve")
    assert result.exit_code == 0, result.output
    after_plan = result.stdout[result.stdout.index("Plan: "):]
    assert after_plan.count("Integration/vendor-a-prod POST /v2/integrations") == 1
    assert after_plan.count("Prompt/research/summarize-ticket PUT /v2/prompt-versions/") == 1
    assert "(known after apply)" not in after_plan  # the report shows the ids the calls used
    assert "Applied: 9" in after_plan


def test_apply_off_a_terminal_refuses_before_reading_or_showing_anything(cli: Cli, tree: Path, stats: Any,
                                                                        reset_stats: Callable[[], None]) -> None:
    reset_stats()
    result = cli("apply", str(tree))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "not a terminal" in result.stderr and "--auto-approve" in result.stderr
    assert stats() == {}


def test_the_live_read_counts_its_requests_per_kind(tmp_path: Path) -> None:
    import os

    os.environ.setdefault("VENDOR_A_KEY", "x")
    manifests = load_manifests([str(Path(__file__).resolve().parents[2] / "manifests")])
    with open_client(Endpoint(base_url=None, emulator_db=str(tmp_path / "s.db")), "admin-key") as client:
        with read_progress(client, enabled=True) as counts:
            client.run(read_live(client, manifests.read_scope()))
        assert client.on_request is None  # unhooked after the read
    assert counts["integrations"] == 2 and counts["spaces"] == 1
    assert {"prompts", "datasets", "evaluators", "resource restrictions"} <= set(counts)


def test_request_kinds_are_named_in_words() -> None:
    assert request_kind("/v2/datasets/RGF0OjE/examples") == "examples"
    assert request_kind("/v2/prompts/UHI6MQ/versions") == "prompt versions"
    assert request_kind("/v2/resource-restrictions") == "resource restrictions"
    assert request_kind("/v2/evaluators/RXY6MQ") == "evaluators"


def test_no_progress_is_drawn_off_a_terminal(cli: Cli, tree: Path) -> None:
    result = cli("plan", str(tree))
    assert "Reading live state" not in result.stderr


def test_on_a_terminal_the_live_read_is_drawn_on_stderr(tree: Path, server: tuple[str, Any]) -> None:
    """The CLI as a process whose stderr is a terminal (a pty): rich draws the read there."""
    import os
    import pty
    import subprocess
    import sys
    import threading

    from tests.e2e.conftest import ENV, ROOT

    controller, terminal = pty.openpty()
    drawn: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:
                return
            if not chunk:
                return
            drawn.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        proc = subprocess.run([sys.executable, "-m", "reconciler", "plan", str(tree), "--base-url", server[0]],
                              stderr=terminal, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                              timeout=120, env={**os.environ, **ENV, "TERM": "xterm-256color", "NO_COLOR": "1"},
                              cwd=ROOT)
    finally:
        os.close(terminal)
        reader.join(timeout=10)
        os.close(controller)
    assert proc.returncode == 0
    text = b"".join(drawn).decode(errors="replace")
    assert "Reading live state" in text
    assert "Reading live state" not in proc.stdout  # stdout stays the plan alone
