"""Running ``reconciler watch`` as a user does: a subprocess against an emulator on a real socket,
its metrics read back over HTTP with prometheus_client's own parser."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from reconciler.cli.main import main
from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
ENV = {"RECONCILER_API_KEY": "admin-key", "VENDOR_A_KEY": "canary-vendor-a-5f2c", "AGENT_TOKEN": "canary-agent-9b7e"}
#: How long a condition may take before the test gives up (a deadline, not a speed assertion).
PATIENCE = 60.0


def copy_tree(dest: Path) -> Path:
    shutil.copytree(ROOT / "manifests", dest)
    return dest


def apply_tree(tree: Path, url: str) -> None:
    from click.testing import CliRunner

    result = CliRunner(env=ENV).invoke(main, ["apply", str(tree), "--auto-approve", "--base-url", url])
    assert result.exit_code == 0, result.output


def parse_metrics(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


class Watch:
    """``reconciler watch TREE --base-url URL --interval 500ms --metrics-addr ... --log-format json``."""

    def __init__(self, tree: Path, url: str, logs: Path, *extra: str, log_format: str = "json",
                 env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.stdout_path, self.stderr_path = logs / f"watch-{self.port}.out", logs / f"watch-{self.port}.err"
        full = {**os.environ, **ENV, **(env or {})}
        full.pop("RECONCILER_BASE_URL", None)
        command = [sys.executable, "-m", "reconciler", "watch", str(tree), "--base-url", url, "--interval", "500ms",
                   "--metrics-addr", f"127.0.0.1:{self.port}", "--log-format", log_format, *extra]
        with open(self.stdout_path, "w") as out, open(self.stderr_path, "w") as err:
            self.proc = subprocess.Popen(command, stdout=out, stderr=err, env=full, text=True)

    # ------------------------------------------------------------------ reading it

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.base + path, timeout=10)

    def metrics(self) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        response = self.get("/metrics")
        assert response.status_code == 200
        return parse_metrics(response.text)

    def value(self, name: str, **labels: str) -> float:
        return self.metrics().get((name, frozenset(labels.items())), 0.0)

    def cycles(self, outcome: str | None = None) -> float:
        found = self.metrics()
        return sum(v for (name, labels), v in found.items() if name == "reconciler_cycles_total"
                   and (outcome is None or ("outcome", outcome) in labels))

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        lines = self.stderr_path.read_text().splitlines()
        parsed = [json.loads(line) for line in lines if line.startswith("{")]
        return [e for e in parsed if kind is None or e["event"] == kind]

    def logs(self) -> str:
        return self.stdout_path.read_text() + self.stderr_path.read_text()

    # ------------------------------------------------------------------ waiting and stopping

    def wait_for(self, what: str, condition: Callable[[], bool]) -> None:
        deadline = time.monotonic() + PATIENCE
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"watch exited ({self.proc.returncode}) waiting for {what}:\n{self.logs()}")
            try:
                if condition():
                    return
            except httpx.TransportError:
                pass  # the metrics server is not listening yet
            if time.monotonic() > deadline:
                raise AssertionError(f"gave up waiting for {what}:\n{self.logs()}")
            time.sleep(0.1)

    def wait_cycles(self, n: float) -> float:
        """Wait until ``n`` cycles more than now have finished; with n=2, one cycle started after
        this call and finished (what happened before the call is seen by then)."""
        self.wait_for("the metrics server", lambda: self.get("/metrics").status_code == 200)
        target = self.cycles() + n
        self.wait_for(f"{n} more cycles", lambda: self.cycles() >= target)
        return target

    def terminate(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=PATIENCE)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=PATIENCE)


@contextlib.contextmanager
def receiving_notices() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A tiny webhook receiver on 127.0.0.1: (its URL, the JSON bodies posted to it)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hooks/secret-token", received
    finally:
        server.shutdown()
        server.server_close()
