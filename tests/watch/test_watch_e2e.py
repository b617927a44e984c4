"""``reconciler watch`` end to end: a subprocess against the emulator over a real socket, with a
1-second interval; what it reports is read from its /metrics with prometheus_client's parser.

"Within one interval" is shown by counting cycles, never by timing: after a change, the watcher is
waited for until one cycle that *started after the change* has finished (two more cycles than when
the change was made), and that cycle must already report it."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from reconciler.emulator.core import Emulator
from tests.conftest import EMULATOR_ADMIN, running_emulator
from tests.watch.helpers import ENV, Watch, apply_tree, copy_tree, receiving_notices

pytestmark = pytest.mark.socket


def admin(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": "Bearer admin-key"}, timeout=10)


def integration(url: str, name: str) -> dict[str, Any]:
    with admin(url) as api:
        found = api.get("/v2/integrations", params={"name": name, "limit": 100}).json()["integrations"]
    return next(i for i in found if i["name"] == name)


def patch_behind_its_back(url: str, name: str, body: dict[str, Any]) -> None:
    current = integration(url, name)
    with admin(url) as api:
        api.patch(f"/v2/integrations/{current['id']}", json={"type": current["type"], **body}).raise_for_status()


@pytest.fixture
def watches() -> Iterator[list[Watch]]:
    started: list[Watch] = []
    yield started
    for w in started:
        w.kill()


@pytest.fixture
def notices() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A tiny webhook receiver on 127.0.0.1: (its URL, the JSON bodies posted to it)."""
    with receiving_notices() as found:
        yield found


def test_drift_made_behind_its_back_shows_within_one_interval_and_apply_heals_it(
        server: tuple[str, Emulator], tmp_path: Path, watches: list[Watch],
        notices: tuple[str, list[dict[str, Any]]]) -> None:
    url = server[0]
    tree = copy_tree(tmp_path / "manifests")
    apply_tree(tree, url)
    hook, received = notices

    watcher = Watch(tree, url, tmp_path, "--notify", hook)
    watches.append(watcher)
    watcher.wait_cycles(1)
    assert watcher.get("/readyz").status_code == 200 and watcher.get("/healthz").status_code == 200
    assert watcher.value("reconciler_resources", kind="Integration", state="in_sync") == 3
    assert watcher.value("reconciler_resources", kind="Integration", state="drifted") == 0
    assert watcher.value("reconciler_last_successful_cycle_timestamp_seconds") > 0

    patch_behind_its_back(url, "vendor-a-prod", {"config": {"provider": "VENDOR_A",
                                                            "is_function_calling_enabled": False}})
    watcher.wait_cycles(2)  # the first cycle that started after the change has finished
    assert watcher.value("reconciler_resources", kind="Integration", state="drifted") == 1
    assert watcher.value("reconciler_resources", kind="Integration", state="in_sync") == 2
    assert watcher.value("reconciler_planned_operations", action="update") == 1
    watcher.wait_cycles(2)  # still drifted: noticed once, not on every cycle
    assert [n["event"] for n in received] == ["drift"]
    assert "vendor-a-prod" in received[0]["text"] and received[0]["drifted"] == ["Integration/vendor-a-prod"]
    assert integration(url, "vendor-a-prod")["config"]["is_function_calling_enabled"] is False  # plan only
    assert watcher.value("reconciler_api_requests_total", method="GET", status="200") > 0
    assert not any(("method", m) in labels for (_, labels) in watcher.metrics() for m in ("PATCH", "POST"))
    assert watcher.terminate() == 0
    assert "hooks/secret-token" not in watcher.logs()  # the webhook URL is a secret

    healer = Watch(tree, url, tmp_path, "--apply", "--notify", hook)
    watches.append(healer)
    healer.wait_cycles(1)
    assert integration(url, "vendor-a-prod")["config"]["is_function_calling_enabled"] is True
    assert healer.value("reconciler_apply_operations_total", action="update", outcome="applied") == 1
    assert healer.value("reconciler_resources", kind="Integration", state="in_sync") == 3
    assert healer.value("reconciler_resources", kind="Integration", state="drifted") == 0
    assert [n["event"] for n in received] == ["drift", "drift", "healed"]
    assert received[2]["healed"] == ["Integration/vendor-a-prod"] and "healed" in received[2]["text"]
    healer.wait_cycles(2)
    assert len(received) == 3  # in sync since: nothing more to say
    applied = [e for e in healer.events("resource") if e["outcome"] == "applied"]
    assert [(e["resource"], e["action"], e["cycle"]) for e in applied] == [("Integration/vendor-a-prod", "update", 1)]
    assert all({"ts", "cycle", "outcome", "duration_s"} <= set(e) for e in healer.events("cycle"))
    assert healer.terminate() == 0
    assert healer.events("stopped")[-1]["signal"] == "SIGTERM"
    assert ENV["VENDOR_A_KEY"] not in healer.logs()


def test_a_bad_manifest_keeps_the_last_good_state_applied_and_raises_the_manifest_error_metric(
        server: tuple[str, Emulator], tmp_path: Path, watches: list[Watch]) -> None:
    url = server[0]
    tree = copy_tree(tmp_path / "manifests")
    apply_tree(tree, url)
    watcher = Watch(tree, url, tmp_path, "--apply")
    watches.append(watcher)
    watcher.wait_cycles(1)
    assert watcher.value("reconciler_manifest_error") == 0

    # One commit: a valid change and a broken document. Neither may be applied (no half-loaded tree).
    llm = tree / "integrations/llm.yaml"
    llm.write_text(llm.read_text().replace("is_function_calling_enabled: true", "is_function_calling_enabled: false"))
    (tree / "integrations/broken.yaml").write_text("kind: Integration\nname: half-done\ntype: LLM\nconfig:\n"
                                                   "  provider: VENDOR_A\n  api_key: sk-literal-secret\n")
    watcher.wait_cycles(2)
    assert watcher.value("reconciler_manifest_error") == 1
    assert watcher.value("reconciler_manifest_errors_total") >= 1
    assert watcher.get("/readyz").status_code == 200  # it still reconciles, against the last good state
    assert integration(url, "vendor-a-prod")["config"]["is_function_calling_enabled"] is True
    with admin(url) as api:
        names = {i["name"] for i in api.get("/v2/integrations", params={"limit": 100}).json()["integrations"]}
    assert "half-done" not in names
    errors = watcher.events("manifest_error")
    assert errors and "broken.yaml" in errors[-1]["message"] and errors[-1]["outcome"] == "kept_last_good"
    assert "sk-literal-secret" not in watcher.logs()

    # Drift behind its back meanwhile is healed back to the last good desired state.
    patch_behind_its_back(url, "self-hosted-nim", {"config": {"provider": "NIM_F", "model_names": ["other"]}})
    watcher.wait_cycles(2)
    assert integration(url, "self-hosted-nim")["config"]["model_names"] == ["llama-guard", "mixtral-small"]
    assert integration(url, "vendor-a-prod")["config"]["is_function_calling_enabled"] is True
    assert watcher.value("reconciler_manifest_error") == 1

    # The fix lands: the new desired state, all of it, is applied.
    (tree / "integrations/broken.yaml").unlink()
    watcher.wait_cycles(2)
    assert watcher.value("reconciler_manifest_error") == 0
    assert integration(url, "vendor-a-prod")["config"]["is_function_calling_enabled"] is False
    assert watcher.terminate() == 0


def test_an_api_failing_for_a_while_is_backed_off_from_and_survived(
        server: tuple[str, Emulator], tmp_path: Path, watches: list[Watch]) -> None:
    url = server[0]
    tree = copy_tree(tmp_path / "manifests")
    apply_tree(tree, url)
    httpx.post(f"{url}/_emulator/faults", headers=EMULATOR_ADMIN, json={"route": "GET /v2/integrations", "status": 503, "times": 100000}
               ).raise_for_status()
    watcher = Watch(tree, url, tmp_path, "--request-retries", "0", "--max-backoff", "2s")
    watches.append(watcher)
    watcher.wait_for("three failed cycles", lambda: watcher.cycles("error") >= 3)
    assert watcher.get("/healthz").status_code == 200  # alive
    assert watcher.get("/readyz").status_code == 503  # no cycle has succeeded
    assert watcher.value("reconciler_consecutive_failures") >= 3
    assert watcher.value("reconciler_api_requests_total", method="GET", status="503") >= 3
    assert watcher.value("reconciler_last_successful_cycle_timestamp_seconds") == 0

    httpx.delete(f"{url}/_emulator/faults", headers=EMULATOR_ADMIN).raise_for_status()  # the API is back
    watcher.wait_for("a successful cycle", lambda: watcher.get("/readyz").status_code == 200)
    assert watcher.value("reconciler_consecutive_failures") == 0
    assert watcher.value("reconciler_resources", kind="Integration", state="in_sync") == 3
    backoffs = watcher.events("backoff")
    assert [b["failures"] for b in backoffs[:3]] == [1, 2, 3]  # exponential ...
    assert all(0 < b["duration_s"] <= 2.0 for b in backoffs)  # ... capped at --max-backoff, jittered
    failed = watcher.events("cycle")[0]
    assert failed["outcome"] == "error" and "503" in failed["message"]
    assert watcher.terminate() == 0


class _SlowWrites:
    """An ASGI layer that holds every write (a second), and says when the first one arrives."""

    def __init__(self, app: Any, hold: float = 1.0) -> None:
        self.app = app
        self.hold = hold
        self.first_write = threading.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] in ("POST", "PATCH", "PUT", "DELETE") \
                and scope["path"].startswith("/v2/"):
            self.first_write.set()
            await asyncio.sleep(self.hold)
        await self.app(scope, receive, send)


def test_sigterm_during_an_apply_lets_the_call_in_flight_finish_reports_and_exits_0(
        tmp_path: Path, watches: list[Watch]) -> None:
    layers: list[_SlowWrites] = []

    def wrap(app: Any) -> Any:
        layers.append(_SlowWrites(app))
        return layers[-1]

    tree = copy_tree(tmp_path / "manifests")
    with running_emulator(wrap=wrap) as (url, _emu):
        watcher = Watch(tree, url, tmp_path, "--apply", "--parallelism", "1", "-v", log_format="text")
        watches.append(watcher)
        assert layers[0].first_write.wait(60), watcher.logs()
        code = watcher.terminate()  # the first create is in flight
        out = watcher.stdout_path.read_text()
        err = watcher.stderr_path.read_text()
        assert code == 0, out + err
        assert "Applied: 1" in out and "not started: interrupted" in out, out + err
        assert "SIGTERM: stopped after 1 cycle(s)" in err and "Traceback" not in err
        with admin(url) as api:  # the call in flight finished: it exists, and nothing else does
            live = [i["name"] for i in api.get("/v2/integrations", params={"limit": 100}).json()["integrations"]]
        applied = out.split("Applied: 1", 1)[1].splitlines()[1]
        assert len(live) == 1 and live[0] in applied


def catches(pid: int, signum: int) -> bool:
    """Whether the process has a handler of its own for ``signum`` (Linux: ``SigCgt`` in /proc)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught, 16) >> (signum - 1) & 1)


def test_a_second_sigterm_ends_watch_at_once_as_the_signal_does_without_a_traceback(
        tmp_path: Path, watches: list[Watch]) -> None:
    """The first SIGTERM asks the loop to stop (the call in flight would finish); a second one is
    the signal's default action again: the process ends while the call is still held, without the
    loop's report, no ``KeyboardInterrupt`` raised."""
    layers: list[_SlowWrites] = []

    def wrap(app: Any) -> Any:
        layers.append(_SlowWrites(app, hold=5.0))
        return layers[-1]

    tree = copy_tree(tmp_path / "manifests")
    with running_emulator(wrap=wrap) as (url, _emu):
        watcher = Watch(tree, url, tmp_path, "--apply", "--parallelism", "1", log_format="text")
        watches.append(watcher)
        assert layers[0].first_write.wait(60), watcher.logs()
        watcher.proc.send_signal(signal.SIGTERM)  # the first create is in flight: it is held for 5 seconds
        watcher.wait_for("the first signal handled", lambda: not catches(watcher.proc.pid, signal.SIGTERM))
        code = watcher.terminate()
        err = watcher.stderr_path.read_text()
        assert code == -signal.SIGTERM, watcher.logs()
        assert "stopped after" not in err  # it did not wait for the call in flight
        assert "Traceback" not in err and "KeyboardInterrupt" not in err and "Aborted" not in err
