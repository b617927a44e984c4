"""The command's telemetry is passed in (never a process-global), and the requests it logs come from
the client's structured exchanges: ``-v`` under ``--log-format json`` names the same requests that
``-v`` prints as text. In-process with click's runner, against the emulator over a real socket."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main
from tests.watch.helpers import ENV, copy_tree

LINE = re.compile(r"^(GET|POST|PATCH|PUT|DELETE) (\S+) -> (\d{3}) \(\d+ ms\)$")  # the test reads text; telemetry does not


def run(server: tuple[str, Any], monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("RECONCILER_LOG_FORMAT", raising=False)
    return CliRunner().invoke(main, [*args, "--base-url", server[0]], catch_exceptions=False)


def test_json_request_events_name_the_requests_the_text_lines_name(
        server: tuple[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tree = copy_tree(tmp_path / "manifests")
    text = run(server, monkeypatch, "plan", str(tree), "-v")
    as_json = run(server, monkeypatch, "plan", str(tree), "-v", "--log-format", "json")
    assert text.exit_code == as_json.exit_code == 0
    lines = [m.groups() for line in text.stderr.splitlines() if (m := LINE.match(line))]
    events = [json.loads(line) for line in as_json.stderr.splitlines() if line.strip()]
    requests = [e for e in events if e["event"] == "request"]
    assert lines and sorted(lines) == sorted((e["method"], e["path"], str(e["status"])) for e in requests)
    assert all(list(e) == ["ts", "event", "method", "path", "status", "duration_s"] for e in requests)
    assert not [e for e in events if e["event"] == "client" and " -> " in e["message"]]  # no line as a message


def test_a_run_without_telemetry_after_one_with_it_logs_nothing_of_the_first(
        server: tuple[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tree = copy_tree(tmp_path / "manifests")
    first = run(server, monkeypatch, "plan", str(tree), "-v", "--log-format", "json",
                "--metrics-file", str(tmp_path / "x.prom"))
    second = run(server, monkeypatch, "plan", str(tree), "-v")
    assert first.exit_code == second.exit_code == 0
    assert second.stderr and not any(line.startswith("{") for line in second.stderr.splitlines())
