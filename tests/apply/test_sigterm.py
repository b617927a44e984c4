"""SIGTERM in the middle of ``apply`` (a CI job cancelled, ``kill``) does what Ctrl-C does: no call
starts, the calls in flight finish, then the report of what was done and what was not; a re-run
converges. The CLI runs as its own process against an emulator over a loopback socket."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from tests.reliability.generators import API_KEY_ENV, desired_state
from tests.reliability.harness import WRITES, cli_process, run_cli, serve


def test_sigterm_mid_apply_finishes_the_calls_in_flight_reports_and_a_rerun_converges(tmp_path: Path) -> None:
    state = desired_state(40, 5)
    tree = str(state.write(tmp_path / "m"))
    env = {**state.env(), API_KEY_ENV: "admin-key"}
    with serve(faults="latency_ms=300") as served:
        proc = cli_process(["apply", tree, "--auto-approve", "--base-url", served.url], env)
        deadline = time.monotonic() + 30
        while not any(e.method == "POST" for e in served.recorder.api()) and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 1, err[-2000:]
        assert "apply interrupted:" in err and "Traceback" not in err, err[-2000:]
        assert "not started: interrupted (Ctrl-C or SIGTERM)" in out + err
        answered = [e for e in served.recorder.api() if e.method in WRITES and e.status is not None]
        applied = [line for line in (out + err).splitlines() if line.startswith("applied")]
        assert answered and len(applied) == sum(1 for e in answered if 200 <= (e.status or 0) < 300)

        rerun = run_cli(["apply", tree, "--auto-approve", "--base-url", served.url], env)
        assert rerun.exit_code == 0, rerun.output[-2000:]
        assert "Apply complete: live state matches the manifests." in rerun.output
